package transport_test

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/layoverhq/layover/quota"
	"github.com/layoverhq/layover/store/sqlite"
	"github.com/layoverhq/layover/transport"
)

// An exhaustion (a 403 with remaining 0, or a 2xx that spent the last
// unit) is in the store when RoundTrip returns, with no Flush.
func TestExhaustionIsStoredBeforeReturn(t *testing.T) {
	t.Parallel()

	tests := []struct {
		name      string
		remaining int64
		status    int
	}{
		{"rejected for quota", 0, http.StatusForbidden},
		{"spent the last unit", 1, http.StatusOK},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			st, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "layover.db"))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { st.Close() })
			b := setup(t, setupOpts{opts: transport.Options{Store: st, Mode: transport.ModeDefer}})
			reset := t0.Add(10 * time.Minute)
			b.gh.SetQuota(token, "core", tt.remaining, reset)

			status, _, err := b.do(t, b.request(t, ctx, http.MethodGet, "/repos/o/r", nil))
			if err != nil || status != tt.status {
				t.Fatalf("Do = %d, %v; want %d", status, err, tt.status)
			}
			got, err := st.States(ctx, []quota.Key{b.key("core")})
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != 1 {
				t.Fatalf("stored states = %+v, want core", got)
			}
			s := got[0]
			if s.Remaining != 0 || s.Cause != quota.CauseExhausted || !s.ResetAt.Equal(reset) || s.ObservedBy != "test-host" {
				t.Errorf("stored = %+v, want core exhausted until %s, observed by test-host", s, reset)
			}
		})
	}
}

// Ordinary observations do not block the request: they are queued, only
// the latest per key is kept while a write is in flight, and Close writes
// what is left.
func TestOrdinaryObservationsAreCoalescedAndFlushedByClose(t *testing.T) {
	t.Parallel()
	st := newMemStore()
	st.hold = true
	b := setup(t, setupOpts{opts: transport.Options{Store: st}})
	ctx := context.Background()

	get := func() {
		t.Helper()
		status, _, err := b.do(t, b.request(t, ctx, http.MethodGet, "/repos/o/r", nil))
		if err != nil || status != http.StatusOK {
			t.Fatalf("Do = %d, %v", status, err)
		}
	}
	get() // remaining 4999: its write starts and is held
	<-st.entered
	get() // 4998, 4997, 4996: returned while the store is held
	get()
	get()
	if w := st.recordedWrites(); len(w) != 0 {
		t.Fatalf("writes done while held: %+v", w)
	}
	if s, _ := stateOf(b.tr, b.key("core")); s.Remaining != 4996 {
		t.Errorf("in-memory remaining = %d, want 4996 at once", s.Remaining)
	}
	close(st.release)
	if err := b.tr.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	writes := st.recordedWrites()
	if len(writes) != 2 {
		t.Fatalf("writes = %+v, want 2 (the held one, then one coalesced)", writes)
	}
	if len(writes[0]) != 1 || writes[0][0].Remaining != 4999 {
		t.Errorf("first write = %+v, want remaining 4999", writes[0])
	}
	if len(writes[1]) != 1 || writes[1][0].Remaining != 4996 {
		t.Errorf("second write = %+v, want only the latest state, remaining 4996", writes[1])
	}
	if s, _ := st.state(b.key("core")); s.Remaining != 4996 {
		t.Errorf("stored remaining = %d, want 4996", s.Remaining)
	}
	if err := b.tr.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
}

// A hundred goroutines on one exhausted key wait on one timer, send
// nothing before the reset, and resume spread by their own jitter. The
// store is read once, not once per goroutine.
func TestHundredGoroutinesOnOneExhaustedKey(t *testing.T) {
	t.Parallel()
	const n = 100
	st := newMemStore()
	b := setup(t, setupOpts{opts: transport.Options{Store: st}})
	reset := t0.Add(10 * time.Minute)
	st.states[b.key("core")] = exhausted(b.key("core"), reset)
	b.gh.SetQuota(token, "core", 0, reset)
	ctx := context.Background()

	results := make(chan int, n)
	for range n {
		go func() {
			req, _ := http.NewRequestWithContext(ctx, http.MethodGet, b.srv.URL+"/repos/o/r", nil)
			req.Header.Set("Authorization", "Bearer "+token)
			resp, err := b.client.Do(req)
			if err != nil {
				results <- -1
				return
			}
			resp.Body.Close()
			results <- resp.StatusCode
		}()
	}
	evs := make([]transport.WaitEvent, 0, n)
	for range n {
		evs = append(evs, <-b.events)
	}

	base := reset.Add(quota.DefaultResetMargin)
	if got := b.clock.Pending(); got != 1 {
		t.Errorf("pending timers = %d, want exactly one shared timer", got)
	}
	if got := transport.TimersArmed(b.tr); got != 1 {
		t.Errorf("timers armed = %d, want 1", got)
	}
	if got := b.calls(); got != 0 {
		t.Fatalf("server saw %d requests before the reset", got)
	}
	if all, login := st.reads(); all != 1 || login != 1 {
		t.Errorf("store reads: %d AllStates, %d Login; want 1 each", all, login)
	}
	untils := make([]time.Time, 0, n)
	for _, ev := range evs {
		if ev.Kind != transport.WaitQuota || ev.Key != b.key("core") {
			t.Fatalf("wait = %+v, want a quota wait on core", ev)
		}
		if ev.Until.Before(base) || ev.Until.After(base.Add(quota.DefaultJitter)) {
			t.Errorf("Until = %s, want within [%s, +%s]", ev.Until, base, quota.DefaultJitter)
		}
		untils = append(untils, ev.Until)
	}
	slices.SortFunc(untils, time.Time.Compare)
	if distinct := len(slices.Compact(slices.Clone(untils))); distinct < n*9/10 {
		t.Errorf("%d distinct resume times among %d, want each its own jitter", distinct, n)
	}
	// status lists the process once for the key, not once per request.
	ws, _ := st.Waiters(ctx)
	if len(ws) != 1 || ws[0].Key != b.key("core") || !strings.HasPrefix(ws[0].Stage, "Quota wait until ") ||
		ws[0].PID != os.Getpid() || ws[0].Command == "" || ws[0].Hostname != "test-host" {
		t.Errorf("waiters %+v; want this process listed once, waiting on core", ws)
	}

	// Up to a second before the margin ends, nothing is sent.
	b.clock.Set(base.Add(-time.Second))
	if got := b.calls(); got != 0 {
		t.Fatalf("server saw %d requests before reset + margin", got)
	}
	// Step through the jitter window a second at a time: each step
	// releases exactly the goroutines whose time has come.
	released := 0
	for now := base; released < n; now = now.Add(time.Second) {
		if now.After(base.Add(quota.DefaultJitter + time.Second)) {
			t.Fatalf("%d of %d released by %s", released, n, now)
		}
		b.clock.Set(now)
		due := 0
		for _, u := range untils {
			if !u.After(now) {
				due++
			}
		}
		for ; released < due; released++ {
			if status := <-results; status != http.StatusOK {
				t.Fatalf("status = %d, want 200", status)
			}
		}
		if got := b.calls(); got != due {
			t.Fatalf("at %s the server saw %d requests, want %d", now.Sub(base), got, due)
		}
	}
	starts, _ := b.recorded()
	seconds := map[time.Time]bool{}
	for _, s := range starts {
		if s.Before(base) {
			t.Errorf("a request started at %s, before reset + margin", s)
		}
		seconds[s] = true
	}
	if len(seconds) < 30 {
		t.Errorf("requests started in %d distinct seconds, want them spread over the jitter window", len(seconds))
	}
	if ws, _ := st.Waiters(ctx); len(ws) != 0 || st.listed != 1 {
		t.Errorf("after the waits: waiters %+v, %d listed in all; want one listing, gone", ws, st.listed)
	}
}
