package job

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"time"
)

// next lists, for each state, the states the lifecycle of docs/lifecycle.md lets it move
// to. A state may also be kept (To == "") while other fields change.
var next = map[State][]State{
	Ready:     {Running, Deferred, Cancelled},
	Running:   {Complete, Ready, Failed, Deferred, AuthWait, Blocked, Cancelled},
	Deferred:  {Resumable, Deferred, Cancelled},
	Resumable: {Running, Complete, Deferred, Blocked, Cancelled},
	AuthWait:  {Ready, Failed, Cancelled},
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
	// Checked is a reconcile check, appended to the job's checks.
	Checked *Check
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

// Apply returns old as c changes it, for a store to write. fence is the
// writer's claim (negative: an operator's change, which holds none): a
// fence other than old's is ErrStaleFence. c must pass Check. Mutate edits
// a copy, and may not change the id, spec, creation time, state, fence or
// lease; UpdatedAt becomes c.Now. A move out of Running, or an operator's
// move of a claimed job, clears the lease and the progress deadline; the
// operator's move also grows the fence, so the holder's writes fail, and
// taken reports it (the store closes the holder's attempt). A job may be
// Running only while claimed.
func (c Change) Apply(old Job, fence int64) (j Job, taken bool, err error) {
	if fence >= 0 && fence != old.Fence {
		return Job{}, false, fmt.Errorf("%w: its fence is %d, not %d", ErrStaleFence, old.Fence, fence)
	}
	if err := c.Check(old); err != nil {
		return Job{}, false, err
	}
	j = old
	if c.Mutate != nil {
		// Mutate edits a copy: what it does to the spec's lists or the
		// checkpoint in place does not reach old.
		j.Spec.Argv, j.Spec.EnvNames = slices.Clone(j.Spec.Argv), slices.Clone(j.Spec.EnvNames)
		j.Spec.Quota = slices.Clone(j.Spec.Quota)
		if old.Checkpoint != nil {
			cp := *old.Checkpoint
			j.Checkpoint = &cp
		}
		c.Mutate(&j)
	}
	j.ID, j.Spec, j.CreatedAt, j.State = old.ID, old.Spec, old.CreatedAt, old.State
	j.Fence, j.LeaseOwner, j.LeaseUntil = old.Fence, old.LeaseOwner, old.LeaseUntil
	j.UpdatedAt = c.Now

	claimed := old.State == Running || old.LeaseOwner != ""
	taken = fence < 0 && claimed && c.To != "" && c.To != old.State
	if c.To != "" {
		j.State = c.To
		if c.To != Running || taken {
			j.LeaseOwner, j.LeaseUntil, j.ProgressBy = "", time.Time{}, time.Time{}
		}
	}
	if taken {
		j.Fence++
	}
	if j.State == Running && j.LeaseOwner == "" {
		if fence >= 0 {
			return Job{}, false, fmt.Errorf("%w: its lease was lost before it could run", ErrStaleFence)
		}
		return Job{}, false, fmt.Errorf("%w: it is not claimed, so it cannot run", ErrTransition)
	}
	if c.Attempt != nil && c.Attempt.ID == "" {
		return Job{}, false, errors.New("an attempt without an id")
	}
	return j, taken, nil
}

// Submitted returns j as a store records it when it is submitted at now,
// the one rule both stores apply to a SubmitJob. A new job is ready (State
// "" means ready) or deferred, any other state is ErrTransition; it is
// created and updated at now, at fence 0 and unclaimed (no lease owner nor
// lease), its cleanup armed when its spec names a cleanup command and none
// otherwise. Everything else (its spec, stage, ownership, wake-up, receipt
// window, counters and checkpoint) is kept as given; the store cuts the
// times to what it keeps. j needs an id.
func (j Job) Submitted(now time.Time) (Job, error) {
	if j.ID == "" {
		return Job{}, errors.New("submit job: empty id")
	}
	j.State = cmp.Or(j.State, Ready)
	if j.State != Ready && j.State != Deferred {
		return Job{}, fmt.Errorf("submit job %s: %w: a new job is ready or deferred, not %s", j.ID, ErrTransition, j.State)
	}
	j.CreatedAt, j.UpdatedAt = now, now
	j.Fence, j.LeaseOwner, j.LeaseUntil = 0, "", time.Time{}
	j.Cleanup = CleanupNone
	if j.Spec.CleanupCmd != "" {
		j.Cleanup = CleanupArmed
	}
	return j, nil
}

// History is everything recorded about a job, oldest first.
type History struct {
	Attempts    []Attempt
	Transitions []Transition
	Receipts    []Receipt
	Checks      []Check
}

// WithWaits returns h with each attempt's WaitedS filled from the
// transitions: the seconds the job spent deferred or resumable (waiting for
// a quota) between the end of the attempt before it, or the submission for
// the first, and its start. A job is in the state of its last transition
// at or before a moment. h is not changed; an attempt with no start waited
// nothing.
func (h History) WithWaits() History {
	if len(h.Attempts) == 0 {
		return h
	}
	out := h
	out.Attempts = slices.Clone(h.Attempts)
	var since time.Time
	if len(h.Transitions) > 0 {
		since = h.Transitions[0].At
	}
	for i := range out.Attempts {
		a := &out.Attempts[i]
		a.WaitedS = 0
		if !a.StartedAt.IsZero() && !since.IsZero() {
			a.WaitedS = h.quotaWait(since, a.StartedAt).Seconds()
		}
		since = cmp.Or(a.EndedAt, a.StartedAt, since)
	}
	return out
}

// quotaWait is how long within [from, to) the job was deferred or
// resumable, by h's transitions.
func (h History) quotaWait(from, to time.Time) time.Duration {
	var d time.Duration
	for i, tr := range h.Transitions {
		if tr.To != Deferred && tr.To != Resumable {
			continue
		}
		start, end := tr.At, to
		if i+1 < len(h.Transitions) {
			end = h.Transitions[i+1].At
		}
		if start.Before(from) {
			start = from
		}
		if end.After(to) {
			end = to
		}
		if end.After(start) {
			d += end.Sub(start)
		}
	}
	return d
}
