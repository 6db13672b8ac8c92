package transport_test

import (
	"context"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/layoverhq/layover/quota"
	"github.com/layoverhq/layover/store"
	"github.com/layoverhq/layover/transport"
)

// heldStore holds the first write of a state with room (the background
// write of a 200) until release is closed or a later write is done.
type heldStore struct {
	store.Store
	release chan struct{}

	mu          sync.Mutex
	held, later bool
	laterDone   chan struct{}
}

func (h *heldStore) RecordStates(ctx context.Context, states []quota.State) error {
	h.mu.Lock()
	hold := !h.held && len(states) > 0 && states[0].HasRoom()
	h.held = h.held || hold
	first := !hold && !h.later
	h.later = h.later || !hold
	h.mu.Unlock()
	if hold {
		select {
		case <-h.release:
		case <-h.laterDone:
		}
		return h.Store.RecordStates(ctx, states)
	}
	err := h.Store.RecordStates(ctx, states)
	if first {
		close(h.laterDone)
	}
	return err
}

// A 200 and then a quota rejection of one key at the same clock reading:
// the rejection is what the store keeps, though the 200's background write
// was in flight when the rejection was observed. SQLite and PostgreSQL.
func TestRejectionOutlivesEarlierWriteAtSameTime(t *testing.T) {
	t.Parallel()
	eachStore(t, func(t *testing.T, st store.Store) {
		h := &heldStore{Store: st, release: make(chan struct{}), laterDone: make(chan struct{})}
		b := setup(t, setupOpts{opts: transport.Options{Store: h, Mode: transport.ModeDefer}})
		transport.OnUrgentQueued(b.tr, func() { close(h.release) })
		ctx := context.Background()
		reset := t0.Add(10 * time.Minute)

		b.gh.SetQuota(token, "core", 5, reset)
		if status, _, err := b.do(t, b.request(t, ctx, http.MethodGet, "/repos/o/r", nil)); err != nil || status != http.StatusOK {
			t.Fatalf("first Do = %d, %v; want 200", status, err)
		}
		b.gh.SetQuota(token, "core", 0, reset) // the clock has not moved
		if status, _, err := b.do(t, b.request(t, ctx, http.MethodGet, "/repos/o/r", nil)); err != nil || status != http.StatusForbidden {
			t.Fatalf("second Do = %d, %v; want 403", status, err)
		}
		if err := b.tr.Flush(ctx); err != nil {
			t.Fatalf("Flush: %v", err)
		}
		got, err := st.States(ctx, []quota.Key{b.key("core")})
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != 1 || !got[0].Exhausted(t0) || !got[0].ResetAt.Equal(reset) {
			t.Fatalf("stored = %v (remaining %v); want core exhausted until %s", got, remainingOf(got), reset)
		}
	})
}

func remainingOf(states []quota.State) []int64 {
	out := make([]int64, len(states))
	for i, s := range states {
		out[i] = s.Remaining
	}
	return out
}
