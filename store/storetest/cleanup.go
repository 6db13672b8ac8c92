package storetest

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/layoverhq/layover/job"
	"github.com/layoverhq/layover/store"
)

// The part of the suite that covers cleanup commands (docs/lifecycle.md,
// Cleanup): a job submitted with one has its cleanup armed, and it is
// pending (PendingCleanups) once the job ended cancelled or failed, however
// it got there, until a host claims it.

// withCleanup is newJob(id) with a cleanup command.
func withCleanup(id string) job.Job {
	j := newJob(id)
	j.Spec.CleanupCmd = "gh issue edit 7 --remove-assignee @me"
	return j
}

// mustPending fails t unless PendingCleanups(limit) lists want, in order.
func mustPending(t *testing.T, ctx context.Context, s store.Store, limit int, want ...string) []job.Job {
	t.Helper()
	got, err := s.PendingCleanups(ctx, limit)
	if err != nil {
		t.Fatalf("PendingCleanups(%d): %v", limit, err)
	}
	if !slices.Equal(ids(got), want) {
		t.Fatalf("PendingCleanups(%d) = %v, want %v", limit, ids(got), want)
	}
	return got
}

// claimCleanup is a host's claim of id's cleanup: armed to running by
// host, on an ended job, with no fence.
func claimCleanup(ctx context.Context, s store.Store, id, host string, now time.Time) (job.Job, error) {
	return s.ApplyJob(ctx, id, job.NoFence, job.Change{From: []job.State{job.Cancelled, job.Failed}, Now: now,
		Mutate: func(j *job.Job) {
			if j.Cleanup == job.CleanupArmed {
				j.Cleanup = job.CleanupRunning(host)
			}
		}})
}

func testCleanups(t *testing.T, setup jobsSetup) {
	t.Run("SubmissionArms", func(t *testing.T) {
		t.Parallel()
		ctx, s := setup(t)

		c := mustSubmit(t, ctx, s, withCleanup("c"), nil, at(0))
		n := mustSubmit(t, ctx, s, newJob("n"), nil, at(0))
		if c.Cleanup != job.CleanupArmed || n.Cleanup != job.CleanupNone {
			t.Errorf("SubmitJob returned cleanups %q and %q; want %q for the job with a cleanup command, none else",
				c.Cleanup, n.Cleanup, job.CleanupArmed)
		}
		if got := mustJob(t, ctx, s, "c").Cleanup; got != job.CleanupArmed {
			t.Errorf("stored cleanup = %q, want %q", got, job.CleanupArmed)
		}
		// Armed while the job waits: nothing is pending.
		mustPending(t, ctx, s, 10)
	})

	t.Run("ArmedWhileRunningIsNotPending", func(t *testing.T) {
		t.Parallel()
		ctx, s := setup(t)

		mustSubmit(t, ctx, s, withCleanup("c"), nil, at(0))
		claimed := mustClaim(t, ctx, s, hostA, at(0), 1)
		if len(claimed) != 1 || claimed[0].Cleanup != job.CleanupArmed {
			t.Fatalf("claimed %+v; want c with its cleanup armed", claimed)
		}
		r := mustApply(t, ctx, s, "c", claimed[0].Fence, job.Change{To: job.Running, Reason: "claimed", Now: at(0)})
		if r.Cleanup != job.CleanupArmed {
			t.Errorf("running: cleanup %q, want it still armed", r.Cleanup)
		}
		mustPending(t, ctx, s, 10)
		// A job that completes never runs its cleanup.
		mustApply(t, ctx, s, "c", r.Fence, job.Change{To: job.Complete, Reason: "exit 0", Now: at(time.Second)})
		mustPending(t, ctx, s, 10)
	})

	t.Run("FailedIsPending", func(t *testing.T) {
		t.Parallel()
		ctx, s := setup(t)

		mustSubmit(t, ctx, s, withCleanup("c"), nil, at(0))
		claimed := mustClaim(t, ctx, s, hostA, at(0), 1)
		r := mustApply(t, ctx, s, "c", claimed[0].Fence, job.Change{To: job.Running, Reason: "claimed", Now: at(0)})
		mustApply(t, ctx, s, "c", r.Fence, job.Change{To: job.Failed, Reason: "permanent failure", Now: at(time.Second)})
		got := mustPending(t, ctx, s, 10, "c")
		if got[0].State != job.Failed || got[0].Cleanup != job.CleanupArmed || !got[0].Spec.Equal(withCleanup("c").Spec) {
			t.Errorf("pending %+v; want the failed job, armed, with its spec", got[0])
		}
	})

	t.Run("SweepDeadlineMakesPending", func(t *testing.T) {
		t.Parallel()
		ctx, s := setup(t)

		j := withCleanup("c")
		j.Spec.Deadline = at(time.Minute)
		mustSubmit(t, ctx, s, j, nil, at(0))
		claimed := mustClaim(t, ctx, s, hostA, at(0), 1)
		mustApply(t, ctx, s, "c", claimed[0].Fence, job.Change{To: job.Running, Reason: "claimed", Now: at(0)})
		mustPending(t, ctx, s, 10)
		mustSweep(t, ctx, s, at(2*time.Minute), store.SweepResult{PastDue: 1})
		got := mustPending(t, ctx, s, 10, "c")
		if got[0].State != job.Cancelled {
			t.Errorf("pending after the deadline: %s, want cancelled", got[0].State)
		}
	})

	t.Run("OperatorCancelMakesPending", func(t *testing.T) {
		t.Parallel()
		ctx, s := setup(t)

		j := withCleanup("c")
		j.State, j.Ownership, j.RunAt, j.ResumeBy = job.Deferred, job.Retained, at(time.Hour), at(2*time.Hour)
		mustSubmit(t, ctx, s, j, nil, at(0))
		mustPending(t, ctx, s, 10)
		mustApply(t, ctx, s, "c", job.NoFence, job.Change{To: job.Cancelled, Reason: "cancelled by the operator",
			Now: at(time.Minute)})
		mustPending(t, ctx, s, 10, "c")
	})

	t.Run("OldestUpdateFirst", func(t *testing.T) {
		t.Parallel()
		ctx, s := setup(t)

		// Submitted in one order, cancelled in another; one without a
		// cleanup command, one cancelled already cleaned.
		for _, id := range []string{"a", "b", "c", "d"} {
			mustSubmit(t, ctx, s, withCleanup(id), nil, at(0))
		}
		mustSubmit(t, ctx, s, newJob("n"), nil, at(0))
		for i, id := range []string{"c", "a", "n", "d", "b"} {
			mustApply(t, ctx, s, id, job.NoFence, job.Change{To: job.Cancelled, Reason: "cancelled by the operator",
				Now: at(time.Duration(i+1) * time.Second)})
		}
		mustApply(t, ctx, s, "d", job.NoFence, job.Change{Now: at(10 * time.Second),
			Mutate: func(j *job.Job) { j.Cleanup = job.CleanupDone }})
		mustPending(t, ctx, s, 10, "c", "a", "b")
		mustPending(t, ctx, s, 2, "c", "a")
		mustPending(t, ctx, s, 0)
		if got := mustJob(t, ctx, s, "d").Cleanup; got != job.CleanupDone {
			t.Errorf("cleanup of d = %q, want %q", got, job.CleanupDone)
		}
	})

	t.Run("OneClaimWins", func(t *testing.T) {
		t.Parallel()
		ctx, s := setup(t)

		mustSubmit(t, ctx, s, withCleanup("c"), nil, at(0))
		mustApply(t, ctx, s, "c", job.NoFence, job.Change{To: job.Cancelled, Reason: "cancelled by the operator", Now: at(time.Second)})
		// Two hosts claim at once: the store applies one change after the
		// other, so one sees its claim and the other the first's.
		var wg sync.WaitGroup
		got := make([]job.Job, 2)
		errs := make([]error, 2)
		for i, h := range []string{hostA, hostB} {
			wg.Go(func() { got[i], errs[i] = claimCleanup(ctx, s, "c", h, at(2*time.Second)) })
		}
		wg.Wait()
		won := 0
		for i, h := range []string{hostA, hostB} {
			if errs[i] != nil {
				t.Fatalf("claim by %s: %v", h, errs[i])
			}
			if got[i].Cleanup == job.CleanupRunning(h) {
				won++
			}
		}
		if won != 1 || got[0].Cleanup != got[1].Cleanup {
			t.Errorf("claims returned %q and %q; want one host's claim in both", got[0].Cleanup, got[1].Cleanup)
		}
		mustPending(t, ctx, s, 10)
		stored := mustJob(t, ctx, s, "c")
		if stored.Cleanup != got[0].Cleanup || stored.State != job.Cancelled {
			t.Errorf("stored %s with cleanup %q; want cancelled, %q", stored.State, stored.Cleanup, got[0].Cleanup)
		}
		// A claim put back (a quota wait before it could run) is pending
		// again; an ended job's claim records no transition.
		mustApply(t, ctx, s, "c", job.NoFence, job.Change{From: []job.State{job.Cancelled}, Now: at(3 * time.Second),
			Mutate: func(j *job.Job) { j.Cleanup = job.CleanupArmed }})
		mustPending(t, ctx, s, 10, "c")
		if tr := lastTransition(t, ctx, s, "c"); tr.To != job.Cancelled || tr.Reason != "cancelled by the operator" {
			t.Errorf("last transition %+v; want the cancel", tr)
		}
	})
}
