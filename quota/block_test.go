package quota_test

import (
	"testing"
	"time"

	"github.com/layoverhq/layover/quota"
)

// reserveOf returns the default policy with every resource's reserve n.
func reserveOf(n int64) quota.Policy {
	p := quota.DefaultPolicy()
	p.Reserve.All = &n
	return p
}

func TestPolicyBlocks(t *testing.T) {
	t.Parallel()

	reset := t0.Add(30 * time.Minute)
	before, after := reset.Add(-time.Millisecond), reset.Add(time.Millisecond)

	rejected := state(quota.Unknown, reset)
	rejected.Limit, rejected.Source, rejected.Cause = quota.Unknown, quota.SourceRejected, quota.CauseExhausted
	unknownLimit := state(499, reset)
	unknownLimit.Limit = quota.Unknown
	// A row an older layover wrote with the writer's reserve in it.
	recorded := state(4000, reset)
	recorded.Cause = quota.CauseBelowReserve
	search := state(2, reset)
	search.Resource, search.Limit = "search", 30

	type want struct {
		cause   quota.Cause // CauseNone: nothing blocks
		reserve int64
	}
	tests := []struct {
		name   string
		policy quota.Policy
		state  quota.State
		now    time.Time
		want   want
	}{
		{"remaining 0", quota.DefaultPolicy(), state(0, reset), before, want{quota.CauseExhausted, 500}},
		{"remaining 0 with a zero reserve", reserveOf(0), state(0, reset), before, want{quota.CauseExhausted, 0}},
		{"rejected, remaining unknown", quota.DefaultPolicy(), rejected, before, want{quota.CauseExhausted, 500}},
		{"one below the reserve", quota.DefaultPolicy(), state(499, reset), before, want{quota.CauseBelowReserve, 500}},
		{"remaining == reserve is room", quota.DefaultPolicy(), state(500, reset), before, want{}},
		{"room", quota.DefaultPolicy(), state(4000, reset), before, want{}},
		{"one left, zero reserve", reserveOf(0), state(1, reset), before, want{}},
		{"remaining unknown", quota.DefaultPolicy(), state(quota.Unknown, reset), before, want{}},
		{"unknown limit: reserve 500", quota.DefaultPolicy(), unknownLimit, before, want{quota.CauseBelowReserve, 500}},
		{"10 % of a small limit", quota.DefaultPolicy(), search, before, want{quota.CauseBelowReserve, 3}},
		{"per-resource reserve", reserveOf(1), search, before, want{}},
		{"recorded below-reserve is not read", quota.DefaultPolicy(), recorded, before, want{}},
		{"exhausted at the reset", quota.DefaultPolicy(), state(0, reset), reset, want{}},
		{"exhausted after the reset", quota.DefaultPolicy(), state(0, reset), after, want{}},
		{"below reserve after the reset", quota.DefaultPolicy(), state(1, reset), after, want{}},
		{"rejected, stale reset in the past", quota.DefaultPolicy(), rejected, reset.Add(24 * time.Hour), want{}},
		{"zero reset is always expired", quota.DefaultPolicy(), state(0, time.Time{}), before, want{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()

			b, ok := tt.policy.Blocks(tt.state, tt.now)
			if ok != (tt.want.cause != quota.CauseNone) || b.Cause != tt.want.cause {
				t.Fatalf("Blocks = %+v, %v; want cause %q", b, ok, tt.want.cause)
			}
			if !ok {
				return
			}
			if b.Reserve != tt.want.reserve || b.State != tt.state {
				t.Errorf("Blocks = reserve %d, state %+v; want reserve %d and the state asked about", b.Reserve, b.State, tt.want.reserve)
			}
			// An exhaustion holds back a running command; a key below its
			// reserve only what can start later.
			if got, want := b.Holds(quota.Running), b.Cause == quota.CauseExhausted; got != want {
				t.Errorf("Holds(Running) = %v, want %v", got, want)
			}
			if !b.Holds(quota.Scheduled) {
				t.Error("Holds(Scheduled) = false")
			}
		})
	}
}

func TestPolicyBlocking(t *testing.T) {
	t.Parallel()

	key := func(resource string, remaining int64, resetIn time.Duration) quota.State {
		return st(gh, "octocat", resource, remaining, resetIn)
	}
	tests := []struct {
		name   string
		states []quota.State
		work   quota.Work
		want   string // the blocking resource, "" for none
	}{
		{"nothing known", nil, quota.Scheduled, ""},
		{"below reserve holds back a pass", []quota.State{key("core", 10, time.Hour)}, quota.Scheduled, "core"},
		{"below reserve lets a command go on", []quota.State{key("core", 10, time.Hour)}, quota.Running, ""},
		{"an exhaustion holds back a command", []quota.State{key("core", 10, time.Hour), key("graphql", 0, time.Minute)},
			quota.Running, "graphql"},
		{"an exhaustion outranks a later shortfall", []quota.State{key("core", 10, time.Hour), key("graphql", 0, time.Minute)},
			quota.Scheduled, "graphql"},
		{"the latest reset among exhaustions", []quota.State{key("core", 0, time.Minute), key("graphql", 0, time.Hour),
			key("search", 0, 2*time.Minute)}, quota.Running, "graphql"},
		{"the latest reset among shortfalls", []quota.State{key("core", 10, time.Minute), key("graphql", 10, time.Hour)},
			quota.Scheduled, "graphql"},
		{"expired states say nothing", []quota.State{key("core", 0, -time.Minute)}, quota.Scheduled, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()

			b, ok := quota.DefaultPolicy().Blocking(t0, tt.states, tt.work)
			if got := map[bool]string{true: b.State.Resource}[ok]; got != tt.want {
				t.Fatalf("Blocking = %q (%+v), want %q", got, b, tt.want)
			}
		})
	}
}

func TestResumeDrawnOnce(t *testing.T) {
	t.Parallel()

	p := quota.DefaultPolicy()
	reset := t0.Add(17 * time.Minute)
	var n int64
	r := p.Resume(reset, fixedRand{top: true, n: &n})
	if r.Jitter != p.Jitter || r.Margin != p.ResetMargin || !r.Reset.Equal(reset) {
		t.Fatalf("Resume = %+v, want the highest draw of %s after a %s margin", r, p.Jitter, p.ResetMargin)
	}
	// The value is read, never drawn again: At and Base agree each time.
	if !r.At().Equal(reset.Add(2*time.Minute)) || !r.Base().Equal(reset.Add(time.Minute)) || !r.At().Equal(r.At()) {
		t.Errorf("At = %s, Base = %s; want reset+2m and reset+1m", r.At(), r.Base())
	}
}
