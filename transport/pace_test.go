package transport_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/layoverhq/layover/quota"
	"github.com/layoverhq/layover/store"
	"github.com/layoverhq/layover/transport"
)

// burnMinutes sends one normal request a minute on the fake clock with
// core at each count in turn (the fake answers one less: the request's
// own unit), resetting at reset, so the Transport observes the burn.
func burnMinutes(t *testing.T, b *testBundle, reset time.Time, counts ...int64) {
	t.Helper()
	for i, n := range counts {
		if i > 0 {
			b.clock.Advance(time.Minute)
		}
		b.gh.SetQuota(token, "core", n, reset)
		if status, _, err := b.do(t, b.request(t, context.Background(), http.MethodGet, "/repos/o/r", nil)); err != nil || status != 200 {
			t.Fatalf("burn request: %d %v", status, err)
		}
	}
}

// With Pace, after core burned 100 a minute for 2 minutes with 1,300
// left and the reset 30 minutes off (the reserve of 500 is 8 minutes
// away), a low-priority request is deferred for pacing without being sent;
// a normal one is sent. Without Pace the low-priority request is sent.
func TestPaceDefersLowPriorityOnAFastBurn(t *testing.T) {
	t.Parallel()
	reset := t0.Add(30 * time.Minute)
	low := transport.WithLowPriority(context.Background())
	for _, pace := range []bool{true, false} {
		b := setup(t, setupOpts{opts: transport.Options{Pace: pace}})
		burnMinutes(t, b, reset, 1501, 1401, 1301)
		sent := b.calls()
		_, _, err := b.do(t, b.request(t, low, http.MethodGet, "/repos/o/r", nil))
		var de *quota.DeferralError
		if !pace {
			if err != nil || b.calls() != sent+1 {
				t.Fatalf("without Pace: err %v, %d sent; want the low-priority request sent", err, b.calls()-sent)
			}
			continue
		}
		if !errors.As(err, &de) {
			t.Fatalf("err = %v; want a DeferralError", err)
		}
		if de.Cause != quota.CausePacing || de.Key != b.key("core") ||
			!strings.Contains(de.Reason, "pacing: core would run out at 10:15, before its reset at 10:30") || de.ResumeAt.Before(reset) {
			t.Errorf("deferral %+v; want core paced, running out at 10:15 before the reset at 10:30", de)
		}
		if b.calls() != sent {
			t.Errorf("the paced request was sent")
		}
		if status, _, err := b.do(t, b.request(t, context.Background(), http.MethodGet, "/repos/o/r", nil)); err != nil || status != 200 {
			t.Errorf("normal priority: %d %v; want it sent", status, err)
		}
		if evs := b.drainEvents(); len(evs) != 0 {
			t.Errorf("waits: %+v; want none", evs)
		}
	}
}

// With too little history (two observations a minute apart) a paced
// low-priority request falls back to the reserve rule: 1,400 left is room.
func TestPaceFallsBackOnTooLittleHistory(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{opts: transport.Options{Pace: true}})
	burnMinutes(t, b, t0.Add(30*time.Minute), 1501, 1401)
	low := transport.WithLowPriority(context.Background())
	if _, _, err := b.do(t, b.request(t, low, http.MethodGet, "/repos/o/r", nil)); err != nil {
		t.Fatalf("err = %v; want the request sent", err)
	}
}

// The burn other hosts recorded in the store paces this process's first
// low-priority request, before it sends anything: SQLite and PostgreSQL.
func TestPaceReadsEveryHostsHistory(t *testing.T) {
	t.Parallel()
	eachStore(t, func(t *testing.T, st store.Store) {
		b := setup(t, setupOpts{opts: transport.Options{Pace: true, Store: st}})
		reset := t0.Add(30 * time.Minute)
		for i, left := range []int64{1500, 1400, 1300} {
			s := quota.State{Key: b.key("core"), Limit: 5000, Remaining: left, ResetAt: reset, ResetKnown: true,
				ObservedAt: t0.Add(time.Duration(i-2) * time.Minute), ObservedBy: "other-host", Source: quota.SourceHeaders}
			if err := st.RecordStates(t.Context(), []quota.State{s}); err != nil {
				t.Fatal(err)
			}
		}
		_, _, err := b.do(t, b.request(t, transport.WithLowPriority(context.Background()), http.MethodGet, "/repos/o/r", nil))
		var de *quota.DeferralError
		if !errors.As(err, &de) || de.Cause != quota.CausePacing {
			t.Fatalf("err = %v; want a pacing deferral", err)
		}
		if b.calls() != 0 {
			t.Errorf("%d requests sent", b.calls())
		}
	})
}
