package sim

import (
	"context"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/layoverhq/layover/quota"
	"github.com/layoverhq/layover/store"
)

// The ledgers a fleet can run on (FleetConfig.Ledger).
const (
	// LedgerMemory keeps the fleet's ledger in memory (memLedger): a day
	// in seconds.
	LedgerMemory = "memory"
	// LedgerSQLite is store/sqlite on a temporary file: the real store,
	// one transaction per provider response, about a minute a day.
	LedgerSQLite = "sqlite"
)

// memLedger is the quota ledger part of store.Store in memory, written to
// store/sqlite's rules (store/sqlite/ledger.go, activity.go) for what a
// fleet run asks of it: a state is replaced by one observed at the same
// millisecond or later; an observation goes to its key's 10 s bucket,
// replacing the bucket's when observed at the same millisecond or later,
// and a key keeps only the buckets no more than store.ObservationsKept
// older than its newest; a skip is recorded once per reason for its
// scope. TestFleetLedgers checks that a run on it reports what a run on
// SQLite does. Any other method of store.Store panics (the embedded nil
// interface): a fleet run calls none. Safe for concurrent use.
type memLedger struct {
	store.Store
	mu     sync.Mutex
	states map[quota.Key]quota.State
	obs    map[quota.Key][]memObs // by bucket, oldest first
	skips  map[string]string      // scope → reason key
	lines  int                    // activity lines written
}

type memObs struct {
	bucket int64
	o      store.Observation
}

func newMemLedger() *memLedger {
	return &memLedger{states: map[quota.Key]quota.State{}, obs: map[quota.Key][]memObs{}, skips: map[string]string{}}
}

// RecordStates implements store.Store.
func (l *memLedger) RecordStates(_ context.Context, states []quota.State) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, st := range states {
		st.ResetAt, st.ObservedAt = store.MSTime(st.ResetAt), store.MSTime(st.ObservedAt)
		if old, ok := l.states[st.Key]; !ok || !st.ObservedAt.Before(old.ObservedAt) {
			l.states[st.Key] = st
		}
		l.observe(st)
	}
	return nil
}

func (l *memLedger) observe(st quota.State) {
	o := store.ObservationOf(st)
	b := store.ObservationBucket(st.ObservedAt)
	h := l.obs[st.Key]
	i, found := slices.BinarySearchFunc(h, b, func(x memObs, b int64) int { return compareInt(x.bucket, b) })
	switch {
	case found && !o.ObservedAt.Before(h[i].o.ObservedAt):
		h[i].o = o
	case !found:
		h = slices.Insert(h, i, memObs{bucket: b, o: o})
	}
	if newest := h[len(h)-1].bucket; h[0].bucket <= newest-store.ObservationsKept {
		cut, _ := slices.BinarySearchFunc(h, newest-store.ObservationsKept+1, func(x memObs, b int64) int { return compareInt(x.bucket, b) })
		h = slices.Delete(h, 0, cut)
	}
	l.obs[st.Key] = h
}

func compareInt(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func compareKey(a, b quota.Key) int {
	if c := strings.Compare(a.Host, b.Host); c != 0 {
		return c
	}
	if c := strings.Compare(a.Principal, b.Principal); c != 0 {
		return c
	}
	return strings.Compare(a.Resource, b.Resource)
}

// States implements store.Store: the states of keys that have one, in
// key order.
func (l *memLedger) States(_ context.Context, keys []quota.Key) ([]quota.State, error) {
	uniq := slices.Clone(keys)
	slices.SortFunc(uniq, compareKey)
	uniq = slices.Compact(uniq)
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []quota.State
	for _, k := range uniq {
		if st, ok := l.states[k]; ok {
			out = append(out, st)
		}
	}
	return out, nil
}

// AllStates implements store.Store.
func (l *memLedger) AllStates(context.Context) ([]quota.State, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make([]quota.State, 0, len(l.states))
	for _, st := range l.states {
		out = append(out, st)
	}
	slices.SortFunc(out, func(a, b quota.State) int { return compareKey(a.Key, b.Key) })
	return out, nil
}

// Observations implements store.Store: key's observations made at since
// or later, the newest limit of them (all when limit <= 0), oldest first.
func (l *memLedger) Observations(_ context.Context, key quota.Key, since time.Time, limit int) ([]store.Observation, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	h := l.obs[key]
	var out []store.Observation
	for i := len(h) - 1; i >= 0 && (limit <= 0 || len(out) < limit); i-- {
		if !h[i].o.ObservedAt.Before(store.MSTime(since)) {
			out = append(out, h[i].o)
		}
	}
	slices.Reverse(out)
	return out, nil
}

// RecordSkip implements store.Store.
func (l *memLedger) RecordSkip(_ context.Context, scope, reasonKey string, _ store.Activity) (bool, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if last, ok := l.skips[scope]; ok && last == reasonKey {
		return false, nil
	}
	l.skips[scope] = reasonKey
	l.lines++
	return true, nil
}

// ClearSkip implements store.Store.
func (l *memLedger) ClearSkip(_ context.Context, scope string) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.skips, scope)
	return nil
}
