package transport

import (
	"cmp"
	"context"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/layoverhq/layover/quota"
	"github.com/layoverhq/layover/store"
)

// maxPaceSamples bounds the history the Transport keeps per key for
// pacing: one sample per store.ObservationSpacing over quota.BurnSpan is
// 90; the rest is slack.
const maxPaceSamples = 128

// pacer keeps, per key, the recent history that paces low-priority
// requests (Options.Pace, docs/pacing.md): this process's own
// observations and, with a store, every host's, read again at most once
// per store.ObservationSpacing. Safe for concurrent use.
type pacer struct {
	st  store.Store
	log func(msg string, args ...any) // Warn logger

	mu   sync.Mutex
	keys map[quota.Key]*paceHistory
}

// paceHistory is one key's samples, one per store.ObservationBucket (the
// newest observed in it), oldest first.
type paceHistory struct {
	samples []quota.Sample
	readAt  time.Time // when the store was last read; zero: never
	reading bool
}

func newPacer(st store.Store, warn func(string, ...any)) *pacer {
	return &pacer{st: st, log: warn, keys: map[quota.Key]*paceHistory{}}
}

// observe adds states with a known count to their keys' histories.
func (p *pacer) observe(states []quota.State) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, s := range states {
		if s.Remaining < 0 {
			continue
		}
		h := p.historyLocked(s.Key)
		h.add(quota.Sample{At: s.ObservedAt, Remaining: s.Remaining, ResetAt: s.ResetAt}, s.ObservedAt)
	}
}

func (p *pacer) historyLocked(k quota.Key) *paceHistory {
	h := p.keys[k]
	if h == nil {
		h = &paceHistory{}
		p.keys[k] = h
	}
	return h
}

// add keeps s, unless its bucket holds a newer sample, and drops what is
// older than quota.BurnSpan before newest (and past maxPaceSamples).
func (h *paceHistory) add(s quota.Sample, newest time.Time) {
	b := store.ObservationBucket(s.At)
	i, found := slices.BinarySearchFunc(h.samples, b, func(x quota.Sample, b int64) int {
		return cmp.Compare(store.ObservationBucket(x.At), b)
	})
	switch {
	case found && !h.samples[i].At.After(s.At):
		h.samples[i] = s
	case !found:
		h.samples = slices.Insert(h.samples, i, s)
	}
	cut := newest.Add(-quota.BurnSpan - store.ObservationSpacing)
	drop := 0
	for drop < len(h.samples) && (h.samples[drop].At.Before(cut) || len(h.samples)-drop > maxPaceSamples) {
		drop++
	}
	h.samples = slices.Delete(h.samples, 0, drop)
}

// history returns key's samples at now, reading the store's first when it
// was not read in the last store.ObservationSpacing (one reader at a
// time; the others use what is there). A store that fails is logged and
// the samples known go on (fail open).
func (p *pacer) history(ctx context.Context, key quota.Key, now time.Time) []quota.Sample {
	p.mu.Lock()
	h := p.historyLocked(key)
	read := p.st != nil && !h.reading && (h.readAt.IsZero() || now.Sub(h.readAt) >= store.ObservationSpacing)
	if read {
		h.reading = true
	}
	p.mu.Unlock()
	if read {
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), storeTimeout)
		obs, err := p.st.Observations(sctx, key, now.Add(-quota.BurnSpan), maxPaceSamples)
		cancel()
		if err != nil {
			p.log("layover: read quota history", "key", key.String(), "err", err)
		}
		p.mu.Lock()
		for _, s := range store.Samples(obs) {
			h.add(s, now)
		}
		h.reading, h.readAt = false, now
		p.mu.Unlock()
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(h.samples)
}

// applying returns the states of k's resources that apply to req
// (Provider.applies), as blocking reads them.
func (v *view) applying(k scopeKey, p *Provider, req *http.Request, charged string) []quota.State {
	if charged == "" {
		return nil
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	sc := v.scopes[k]
	if sc == nil {
		return nil
	}
	var out []quota.State
	for res, s := range sc.states {
		if p.applies(req, charged, res) {
			out = append(out, s)
		}
	}
	slices.SortFunc(out, func(a, b quota.State) int { return cmp.Compare(a.Resource, b.Resource) })
	return out
}

// pace returns the deferral of a low-priority request that pacing
// refuses at now: a key of it whose recent burn would take it to its
// reserve before its reset. nil when the request may go.
func (c *call) pace(k scopeKey, now time.Time) error {
	states := c.t.view.applying(k, c.p, c.req, c.charged)
	if len(states) == 0 {
		return nil
	}
	d := c.t.policy.PaceAll(states, func(key quota.Key) []quota.Sample { return c.t.pacer.history(c.ctx, key, now) }, now)
	if d.Admit {
		return nil
	}
	key := d.State.Key
	r := c.t.policy.Resume(d.State.ResetAt, c.t.rand)
	reason := c.clean(d.Reason() + "; low-priority request")
	err := &quota.DeferralError{Key: key, ResumeAt: r.At(), Cause: quota.CausePacing, Reason: reason}
	c.t.log.Info("layover: deferred", "key", key.String(), "cause", string(quota.CausePacing),
		"resume_at", err.ResumeAt.UTC().Format(time.RFC3339), "reason", reason)
	return err
}
