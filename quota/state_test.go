package quota_test

import (
	"testing"
	"time"

	"github.com/layoverhq/layover/quota"
)

// t0 is the fixed "now" of the quota tests.
var t0 = time.Date(2026, 11, 10, 14, 0, 0, 0, time.UTC)

var coreKey = quota.Key{Host: "api.github.com", Principal: "octocat", Resource: "core"}

// state returns a state of coreKey with limit 5000 that resets at reset.
func state(remaining int64, reset time.Time) quota.State {
	return quota.State{
		Key:        coreKey,
		Limit:      5000,
		Remaining:  remaining,
		ResetAt:    reset,
		ResetKnown: true,
		RawReset:   reset.Unix(),
		ObservedAt: t0.Add(-time.Minute),
		ObservedBy: "host-a",
		Source:     quota.SourceHeaders,
	}
}

func TestStateAtReset(t *testing.T) {
	t.Parallel()

	reset := t0.Add(30 * time.Minute)
	before, at, after := reset.Add(-time.Millisecond), reset, reset.Add(time.Millisecond)

	rejected := state(quota.Unknown, reset)
	rejected.Limit, rejected.Source, rejected.Cause = quota.Unknown, quota.SourceRejected, quota.CauseExhausted

	type want struct {
		expired, exhausted bool
		cause              quota.Cause
	}
	tests := []struct {
		name    string
		state   quota.State
		now     time.Time
		reserve int64
		want    want
	}{
		{"exhausted before reset", state(0, reset), before, 500, want{false, true, quota.CauseExhausted}},
		{"exhausted at reset", state(0, reset), at, 500, want{true, false, quota.CauseNone}},
		{"exhausted after reset", state(0, reset), after, 500, want{true, false, quota.CauseNone}},
		{"rejected before reset", rejected, before, 500, want{false, true, quota.CauseExhausted}},
		{"rejected at reset", rejected, at, 500, want{true, false, quota.CauseNone}},
		{"below reserve before reset", state(499, reset), before, 500, want{false, false, quota.CauseBelowReserve}},
		{"below reserve at reset", state(499, reset), at, 500, want{true, false, quota.CauseNone}},
		{"below reserve after reset", state(499, reset), after, 500, want{true, false, quota.CauseNone}},
		{"exactly the reserve", state(500, reset), before, 500, want{false, false, quota.CauseNone}},
		{"room", state(4000, reset), before, 500, want{false, false, quota.CauseNone}},
		{"remaining unknown", state(quota.Unknown, reset), before, 500, want{false, false, quota.CauseNone}},
		{"zero reserve, one left", state(1, reset), before, 0, want{false, false, quota.CauseNone}},
		{"zero reserve, none left", state(0, reset), before, 0, want{false, true, quota.CauseExhausted}},
		{"zero reset is always expired", state(0, time.Time{}), before, 500, want{true, false, quota.CauseNone}},
		{"long past", state(0, reset), reset.Add(24 * time.Hour), 500, want{true, false, quota.CauseNone}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()

			s := tt.state
			if got := s.Expired(tt.now); got != tt.want.expired {
				t.Errorf("Expired = %v, want %v", got, tt.want.expired)
			}
			if got := s.Exhausted(tt.now); got != tt.want.exhausted {
				t.Errorf("Exhausted = %v, want %v", got, tt.want.exhausted)
			}
			b, _ := reserveOf(tt.reserve).Blocks(s, tt.now)
			if got := b.Cause; got != tt.want.cause {
				t.Errorf("Blocks = %q, want %q", got, tt.want.cause)
			}
		})
	}
}

func TestStateDepletedAndRoom(t *testing.T) {
	t.Parallel()

	reset := t0.Add(time.Hour)
	rejected := state(quota.Unknown, reset)
	rejected.Cause = quota.CauseExhausted
	rejectedWithCount := state(7, reset)
	rejectedWithCount.Cause = quota.CauseExhausted
	tests := []struct {
		name           string
		state          quota.State
		depleted, room bool
	}{
		{"none left", state(0, reset), true, false},
		{"one left", state(1, reset), false, true},
		{"remaining unknown", state(quota.Unknown, reset), false, false},
		{"rejected, remaining unknown", rejected, true, false},
		{"rejected although a count remains", rejectedWithCount, true, false},
		// Neither asks the clock: a passed reset is Exhausted's question.
		{"none left, reset passed", state(0, t0.Add(-time.Hour)), true, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()

			if got := tt.state.Depleted(); got != tt.depleted {
				t.Errorf("Depleted = %v, want %v", got, tt.depleted)
			}
			if got := tt.state.HasRoom(); got != tt.room {
				t.Errorf("HasRoom = %v, want %v", got, tt.room)
			}
		})
	}
}
