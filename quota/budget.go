package quota

import (
	"fmt"
	"time"
)

// CapError reports a wait that was not started because it would take the
// command's total quota waiting past its cap.
type CapError struct {
	Wait  time.Duration // the wait that was asked for
	Spent time.Duration // waited so far by this command
	Max   time.Duration // the cap, Policy.MaxTotalWait
}

func (e *CapError) Error() string {
	return fmt.Sprintf("a wait of %s would take the total quota wait to %s, past the %s cap",
		e.Wait.Round(time.Second), SumSat(e.Spent, e.Wait).Round(time.Second), e.Max)
}

// Budget tracks one command's total quota waiting against a cap. The zero
// value has a cap of 0: it refuses every positive wait. Not safe for
// concurrent use.
type Budget struct {
	Max   time.Duration // cap on the total of all waits
	Spent time.Duration // total of the waits taken so far
}

// NewBudget returns a budget capped at p.MaxTotalWait.
func NewBudget(p Policy) *Budget { return &Budget{Max: p.MaxTotalWait} }

// Take charges a wait of d against the budget, or returns a *CapError and
// charges nothing when Spent+d would pass Max. A negative d is taken as 0.
func (b *Budget) Take(d time.Duration) error {
	d = max(d, 0)
	// Compared as d > Max-Spent, not Spent+d > Max, so that a huge d (a
	// reset far ahead) cannot overflow into a small total and be taken.
	if d > b.Max-b.Spent {
		return &CapError{Wait: d, Spent: b.Spent, Max: b.Max}
	}
	b.Spent = SumSat(b.Spent, d)
	return nil
}

// Refund gives back the part of a taken wait that was not spent, as when a
// wait ends early. It never takes Spent below zero.
func (b *Budget) Refund(d time.Duration) {
	b.Spent = max(b.Spent-max(d, 0), 0)
}
