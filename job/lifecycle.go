package job

import (
	"fmt"
	"slices"
	"time"
)

// next lists, for each state, the states DESIGN.md's lifecycle lets it move
// to. A state may also be kept (To == "") while other fields change.
var next = map[State][]State{
	Ready:     {Running, Deferred, Cancelled},
	Running:   {Complete, Ready, Failed, Deferred, Blocked, Cancelled},
	Deferred:  {Resumable, Deferred, Cancelled},
	Resumable: {Running, Complete, Deferred, Blocked, Cancelled},
	Blocked:   {Ready, Cancelled},
}

// CanMove reports whether the lifecycle allows from -> to.
func CanMove(from, to State) bool { return slices.Contains(next[from], to) }

// Change is one atomic update of a job, applied by a store in a single
// transaction together with its transition, attempt and receipt.
type Change struct {
	// To is the new state; "" keeps the current one (no transition is
	// recorded then).
	To     State
	Reason string
	Now    time.Time
	// From, when not empty, lists the only states the job may be in; any
	// other is ErrTransition (a compare-and-set on the state).
	From []State
	// Mutate edits the record after the checks and before it is written.
	Mutate func(*Job)
	// Attempt is inserted, or replaces the attempt with the same ID.
	Attempt *Attempt
	// Receipt is appended (receipts are never edited).
	Receipt *Receipt
}

// Check validates c against the job's current record.
func (c Change) Check(j Job) error {
	if len(c.From) > 0 && !slices.Contains(c.From, j.State) {
		return fmt.Errorf("%w: job %s is %s, not %v", ErrTransition, j.ID, j.State, c.From)
	}
	if c.To != "" && !CanMove(j.State, c.To) {
		return fmt.Errorf("%w: job %s cannot go from %s to %s", ErrTransition, j.ID, j.State, c.To)
	}
	return nil
}

// History is everything recorded about a job, oldest first.
type History struct {
	Attempts    []Attempt
	Transitions []Transition
	Receipts    []Receipt
}
