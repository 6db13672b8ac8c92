package quota_test

import (
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/layoverhq/layover/quota"
)

func TestBudget(t *testing.T) {
	t.Parallel()

	const capTotal = 2 * time.Hour
	type step struct {
		refund    bool          // Refund instead of Take
		d         time.Duration // the wait taken or refunded
		wantCap   bool          // Take must fail with *CapError
		wantSpent time.Duration // Spent after the step
	}
	tests := []struct {
		name  string
		max   time.Duration
		steps []step
	}{
		{"one wait under the cap", capTotal, []step{
			{d: 47 * time.Minute, wantSpent: 47 * time.Minute},
		}},
		{"exactly at the cap is allowed", capTotal, []step{
			{d: 2 * time.Hour, wantSpent: 2 * time.Hour},
			{d: 0, wantSpent: 2 * time.Hour},
		}},
		{"one nanosecond past the cap is refused", capTotal, []step{
			{d: 2*time.Hour + 1, wantCap: true, wantSpent: 0},
		}},
		{"waits add up to the cap", capTotal, []step{
			{d: 70 * time.Minute, wantSpent: 70 * time.Minute},
			{d: 50 * time.Minute, wantSpent: 2 * time.Hour},
			{d: time.Second, wantCap: true, wantSpent: 2 * time.Hour},
		}},
		{"a refused wait charges nothing", capTotal, []step{
			{d: 90 * time.Minute, wantSpent: 90 * time.Minute},
			{d: 31 * time.Minute, wantCap: true, wantSpent: 90 * time.Minute},
			{d: 30 * time.Minute, wantSpent: 2 * time.Hour},
		}},
		{"a wait that would overflow is refused", capTotal, []step{
			{d: 90 * time.Minute, wantSpent: 90 * time.Minute},
			{d: math.MaxInt64, wantCap: true, wantSpent: 90 * time.Minute},
		}},
		{"negative wait is taken as zero", capTotal, []step{
			{d: -time.Hour, wantSpent: 0},
			{d: 2 * time.Hour, wantSpent: 2 * time.Hour},
		}},
		{"refund of a wait that ended early", capTotal, []step{
			{d: 60 * time.Minute, wantSpent: 60 * time.Minute},
			{refund: true, d: 20 * time.Minute, wantSpent: 40 * time.Minute},
			{d: 80 * time.Minute, wantSpent: 2 * time.Hour},
		}},
		{"refund never goes below zero", capTotal, []step{
			{d: 10 * time.Minute, wantSpent: 10 * time.Minute},
			{refund: true, d: time.Hour, wantSpent: 0},
		}},
		{"negative refund changes nothing", capTotal, []step{
			{d: 10 * time.Minute, wantSpent: 10 * time.Minute},
			{refund: true, d: -time.Hour, wantSpent: 10 * time.Minute},
		}},
		{"refund makes room after a refusal", capTotal, []step{
			{d: 2 * time.Hour, wantSpent: 2 * time.Hour},
			{d: time.Minute, wantCap: true, wantSpent: 2 * time.Hour},
			{refund: true, d: time.Minute, wantSpent: 2*time.Hour - time.Minute},
			{d: time.Minute, wantSpent: 2 * time.Hour},
		}},
		{"zero cap refuses any positive wait", 0, []step{
			{d: 0, wantSpent: 0},
			{d: time.Nanosecond, wantCap: true, wantSpent: 0},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()

			b := &quota.Budget{Max: tt.max}
			for i, s := range tt.steps {
				before := b.Spent
				if s.refund {
					b.Refund(s.d)
				} else {
					err := b.Take(s.d)
					var ce *quota.CapError
					switch {
					case s.wantCap && !errors.As(err, &ce):
						t.Fatalf("step %d: Take(%s) = %v, want *CapError", i, s.d, err)
					case s.wantCap:
						if ce.Wait != s.d || ce.Spent != before || ce.Max != tt.max {
							t.Errorf("step %d: CapError = %+v, want Wait %s Spent %s Max %s", i, *ce, s.d, before, tt.max)
						}
					case err != nil:
						t.Fatalf("step %d: Take(%s) = %v, want nil", i, s.d, err)
					}
				}
				if b.Spent != s.wantSpent {
					t.Fatalf("step %d: Spent = %s, want %s", i, b.Spent, s.wantSpent)
				}
			}
		})
	}
}

func TestNewBudget(t *testing.T) {
	t.Parallel()

	b := quota.NewBudget(quota.DefaultPolicy())
	if b.Max != 2*time.Hour || b.Spent != 0 {
		t.Errorf("NewBudget(DefaultPolicy()) = %+v, want Max 2h, Spent 0", *b)
	}
	var zero quota.Budget
	if err := zero.Take(time.Second); err == nil {
		t.Error("zero Budget took a positive wait")
	}
}

func TestCapErrorMessage(t *testing.T) {
	t.Parallel()

	err := &quota.CapError{Wait: 31*time.Minute + 400*time.Millisecond, Spent: 90 * time.Minute, Max: 2 * time.Hour}
	msg := err.Error()
	for _, want := range []string{"31m0s", "2h1m0s", "2h0m0s cap"} {
		if !strings.Contains(msg, want) {
			t.Errorf("Error() = %q, want it to contain %q", msg, want)
		}
	}
}
