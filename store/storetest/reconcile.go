package storetest

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/layoverhq/layover/job"
	"github.com/layoverhq/layover/store"
)

// The parts of the suite that cover waiting for credentials, reconcile
// checks, receipts' origin and the run counters (docs/lifecycle.md).

// authWaiting submits id with deadline, runs it (claimed by hostA at
// base) and moves it to auth-wait, its first attempt ended by the auth
// failure, its next credential re-check at recheck. It returns the job.
func authWaiting(t *testing.T, ctx context.Context, s store.Store, id string, deadline, recheck time.Time) job.Job {
	t.Helper()
	j := newJob(id)
	j.Spec.Deadline = deadline
	mustSubmit(t, ctx, s, j, nil, at(0))
	c := mustClaim(t, ctx, s, hostA, at(0), 1)
	if len(c) != 1 || c[0].ID != id {
		t.Fatalf("claim of %s = %v", id, ids(c))
	}
	att := job.Attempt{ID: id + "-a1", Fence: c[0].Fence, StartedAt: at(0)}
	mustApply(t, ctx, s, id, c[0].Fence, job.Change{To: job.Running, Reason: "claimed", Now: at(0), Attempt: &att,
		Mutate: func(j *job.Job) { j.Runs++ }})
	exit := 1
	att.EndedAt, att.Outcome, att.ExitCode = at(time.Second), "auth", &exit
	return mustApply(t, ctx, s, id, c[0].Fence, job.Change{
		To: job.AuthWait, Reason: "auth: bad credentials", Now: at(time.Second), From: []job.State{job.Running}, Attempt: &att,
		Mutate: func(j *job.Job) {
			j.RunAt, j.Stage = recheck, "Waiting for credentials since "+at(time.Second).Format(time.RFC3339)
		},
	})
}

func testAuthWait(t *testing.T, setup jobsSetup) {
	t.Run("NeverClaimedNorWoken", func(t *testing.T) {
		t.Parallel()
		ctx, s := setup(t)

		a := authWaiting(t, ctx, s, "a", at(time.Hour), at(time.Minute))
		if a.State != job.AuthWait || a.LeaseOwner != "" || !a.LeaseUntil.IsZero() || a.Runs != 1 {
			t.Fatalf("moved to auth-wait: %+v; want unclaimed, one run", a)
		}
		checkStored(t, ctx, s, a)
		mustSubmit(t, ctx, s, newJob("r"), nil, at(0))

		// Its re-check time has come, yet only the ready job is claimed,
		// and the sweep has nothing to do.
		now := at(10 * time.Minute)
		if c := mustClaim(t, ctx, s, hostB, now, 10); !slices.Equal(ids(c), []string{"r"}) {
			t.Errorf("ClaimJobs = %v, want only r", ids(c))
		}
		mustSweep(t, ctx, s, now, store.SweepResult{})
		checkStored(t, ctx, s, a)

		counts, err := s.CountJobs(ctx)
		if want := map[job.State]int{job.AuthWait: 1, job.Ready: 1}; err != nil || !maps.Equal(counts, want) {
			t.Errorf("CountJobs = %v, %v; want %v", counts, err, want)
		}
		if js, err := s.ListJobs(ctx, job.AuthWait); err != nil || !slices.Equal(ids(js), []string{"a"}) {
			t.Errorf("ListJobs(auth-wait) = %v, %v; want a", ids(js), err)
		}

		// A re-check that fails again keeps the state: a new RunAt, no
		// transition.
		n := len(mustHistory(t, ctx, s, "a").Transitions)
		got := mustApply(t, ctx, s, "a", a.Fence, job.Change{Now: now, From: []job.State{job.AuthWait},
			Mutate: func(j *job.Job) { j.RunAt = at(15 * time.Minute) }})
		want := a
		want.RunAt, want.UpdatedAt = msUTC(at(15*time.Minute)), msUTC(now)
		checkJob(t, "re-check", got, want)
		checkStored(t, ctx, s, want)
		if m := len(mustHistory(t, ctx, s, "a").Transitions); m != n {
			t.Errorf("keeping auth-wait recorded %d transitions", m-n)
		}
	})

	t.Run("FailsPastDeadline", func(t *testing.T) {
		t.Parallel()
		ctx, s := setup(t)

		deadline := at(time.Hour)
		a := authWaiting(t, ctx, s, "a", deadline, at(2*time.Hour))
		late := newJob("r")
		late.Spec.Deadline = deadline
		mustSubmit(t, ctx, s, late, nil, at(0))

		mustSweep(t, ctx, s, deadline, store.SweepResult{})
		// The sweep names the job it failed (for its job-failed event), not
		// the one it cancelled.
		mustSweep(t, ctx, s, deadline.Add(time.Millisecond), store.SweepResult{PastDue: 2, AuthFailed: 1, Failed: []string{"a"}})
		want := a
		want.State, want.Stage, want.UpdatedAt = job.Failed, "", msUTC(deadline.Add(time.Millisecond))
		checkStored(t, ctx, s, want)
		if tr := lastTransition(t, ctx, s, "a"); tr.From != job.AuthWait || tr.To != job.Failed ||
			tr.Reason != job.ReasonPastDue || !tr.At.Equal(msUTC(deadline.Add(time.Millisecond))) {
			t.Errorf("a's failure recorded as %+v", tr)
		}
		if j := mustJob(t, ctx, s, "r"); j.State != job.Cancelled {
			t.Errorf("the ready job past its deadline is %s, want cancelled", j.State)
		}
		// The attempt the auth failure ended stays as it ended.
		if h := mustHistory(t, ctx, s, "a"); len(h.Attempts) != 1 || h.Attempts[0].Outcome != "auth" {
			t.Errorf("a's attempts after the sweep = %+v, want its one auth attempt", h.Attempts)
		}
		mustSweep(t, ctx, s, deadline.Add(time.Hour), store.SweepResult{})
	})

	t.Run("FailedIDsAreBounded", func(t *testing.T) {
		t.Parallel()
		ctx, s := setup(t)
		deadline := at(time.Hour)
		n := store.MaxSweptFailed + 3
		var all []string
		for i := range n {
			id := fmt.Sprintf("w%02d", n-1-i) // submitted out of id order
			authWaiting(t, ctx, s, id, deadline, at(2*time.Hour))
			all = append(all, id)
		}
		slices.Sort(all)
		mustSweep(t, ctx, s, deadline.Add(time.Millisecond), store.SweepResult{PastDue: n, AuthFailed: n, Failed: all[:store.MaxSweptFailed]})
		for _, id := range all {
			if j := mustJob(t, ctx, s, id); j.State != job.Failed {
				t.Errorf("%s after the sweep: %s, want failed", id, j.State)
			}
		}
	})

	t.Run("OperatorMoves", func(t *testing.T) {
		t.Parallel()
		ctx, s := setup(t)

		// An unblock, as of a blocked job, and a cancel: the job holds no
		// claim, so neither takes one.
		a1 := authWaiting(t, ctx, s, "a1", time.Time{}, at(time.Hour))
		a2 := authWaiting(t, ctx, s, "a2", time.Time{}, at(time.Hour))
		got := mustApply(t, ctx, s, "a1", job.NoFence, job.Change{To: job.Ready, Reason: "unblocked", Now: at(time.Minute),
			From: []job.State{job.Blocked, job.AuthWait}, Mutate: func(j *job.Job) { j.RunAt = time.Time{} }})
		if got.State != job.Ready || got.Fence != a1.Fence {
			t.Errorf("unblocked: %s at fence %d, want ready at fence %d", got.State, got.Fence, a1.Fence)
		}
		if c := mustClaim(t, ctx, s, hostB, at(time.Minute), 10); !slices.Equal(ids(c), []string{"a1"}) {
			t.Errorf("ClaimJobs after the unblock = %v, want a1", ids(c))
		}
		got = mustApply(t, ctx, s, "a2", job.NoFence, job.Change{To: job.Cancelled, Reason: "cancel", Now: at(time.Minute)})
		if got.State != job.Cancelled || got.Fence != a2.Fence {
			t.Errorf("cancelled: %s at fence %d, want cancelled at fence %d", got.State, got.Fence, a2.Fence)
		}
		if h := mustHistory(t, ctx, s, "a2"); len(h.Attempts) != 1 || h.Attempts[0].Outcome != "auth" {
			t.Errorf("a2's attempts after the cancel = %+v, want its one auth attempt", h.Attempts)
		}
	})
}

// sameExit reports whether two exit codes are the same, nil (none) included.
func sameExit(a, b *int) bool { return (a == nil) == (b == nil) && (a == nil || *a == *b) }

// checkChecks fails t unless id's checks are want, oldest first.
func checkChecks(t *testing.T, ctx context.Context, s store.Store, id string, want ...job.Check) {
	t.Helper()
	got := mustHistory(t, ctx, s, id).Checks
	if len(got) != len(want) {
		t.Fatalf("checks of %s = %+v, want %+v", id, got, want)
	}
	for i, w := range want {
		g := got[i]
		if g.Fence != w.Fence || g.Trigger != w.Trigger || g.Result != w.Result || g.Detail != w.Detail ||
			!sameExit(g.ExitCode, w.ExitCode) {
			t.Errorf("check %d of %s = %+v, want %+v", i, id, g, w)
		}
		if d := diffTime("At", g.At, msUTC(w.At)); d != "" {
			t.Errorf("check %d of %s: %s", i, id, d)
		}
	}
}

func testChecks(t *testing.T, setup jobsSetup) {
	t.Run("AppendedWithTheirChange", func(t *testing.T) {
		t.Parallel()
		ctx, s := setup(t)

		// A transient failure, then the retry reconciles (run), then the
		// check of a later re-run could not run (blocked): one with a
		// transition, one keeping the state.
		r := running(t, ctx, s, "j1", at(0))
		mustApply(t, ctx, s, "j1", r.Fence, job.Change{To: job.Ready, Reason: "transient", Now: at(time.Second)})
		c := mustClaim(t, ctx, s, hostA, at(time.Minute), 1)
		one := 1
		run := job.Check{Fence: c[0].Fence, At: at(time.Minute + time.Microsecond), Trigger: "transient retry",
			ExitCode: &one, Result: job.CheckRun, Detail: "not done yet"}
		mustApply(t, ctx, s, "j1", c[0].Fence, job.Change{To: job.Running, Reason: "reconciled: run", Now: at(time.Minute),
			Checked: &run})
		blocked := job.Check{Fence: c[0].Fence, At: at(2 * time.Minute), Trigger: "lease lost", Result: job.CheckBlocked,
			Detail: "sh: test: not found"}
		mustApply(t, ctx, s, "j1", c[0].Fence, job.Change{Now: at(2 * time.Minute), Checked: &blocked})

		// Another job's checks are its own (j1 still holds its lease).
		d := mustSubmit(t, ctx, s, deferredJob("j2", at(time.Minute)), nil, at(0))
		mustSweep(t, ctx, s, at(70*time.Second), store.SweepResult{Woken: 1})
		c = mustClaim(t, ctx, s, hostB, at(70*time.Second), 1)
		if len(c) != 1 || c[0].ID != d.ID {
			t.Fatalf("claimed %v, want j2", ids(c))
		}
		zero := 0
		done := job.Check{Fence: c[0].Fence, At: at(70 * time.Second), Trigger: "resume", ExitCode: &zero,
			Result: job.CheckComplete}
		mustApply(t, ctx, s, "j2", c[0].Fence, job.Change{To: job.Complete, Reason: "reconciled: complete",
			Now: at(70 * time.Second), From: []job.State{job.Resumable}, Checked: &done})

		checkChecks(t, ctx, s, "j1", run, blocked)
		checkChecks(t, ctx, s, "j2", done)
	})

	t.Run("RefusedChangeRecordsNone", func(t *testing.T) {
		t.Parallel()
		ctx, s := setup(t)

		r := running(t, ctx, s, "j1", at(0))
		check := job.Check{Fence: r.Fence, At: at(time.Minute), Trigger: "resume", Result: job.CheckRun}
		for name, ch := range map[string]struct {
			fence int64
			to    job.State
			err   error
		}{
			"stale fence":   {r.Fence - 1, "", job.ErrStaleFence},
			"no such move":  {r.Fence, job.Resumable, job.ErrTransition},
			"not its state": {r.Fence, job.AuthWait, job.ErrTransition},
		} {
			change := job.Change{To: ch.to, Reason: name, Now: at(time.Minute), Checked: &check}
			if name == "not its state" {
				change.From = []job.State{job.Ready}
			}
			if _, err := s.ApplyJob(ctx, "j1", ch.fence, change); !errors.Is(err, ch.err) {
				t.Errorf("%s: ApplyJob = %v, want %v", name, err, ch.err)
			}
		}
		checkChecks(t, ctx, s, "j1")
	})
}

func testReceiptOrigin(t *testing.T, setup jobsSetup) {
	t.Run("KeptAsGiven", func(t *testing.T) {
		t.Parallel()
		ctx, s := setup(t)

		// Submitted deferred with no host; deferred by hostA under its
		// claim; woken and deferred again by hostB under its own; adopted
		// by an operator's change naming a host and fence of its own.
		mustSubmit(t, ctx, s, deferredJob("j1", at(0)), &job.Receipt{JSON: receiptJSON(1), IssuedAt: at(0)}, at(0))
		mustSweep(t, ctx, s, at(0), store.SweepResult{Woken: 1})
		c := mustClaim(t, ctx, s, hostA, at(0), 1)
		defer1 := job.Receipt{JSON: receiptJSON(2), IssuedAt: at(time.Second), HostID: hostA, Fence: c[0].Fence}
		mustApply(t, ctx, s, "j1", c[0].Fence, job.Change{To: job.Deferred, Reason: "reserve still short",
			Now: at(time.Second), Receipt: &defer1, Mutate: func(j *job.Job) { j.RunAt = at(time.Minute) }})
		mustSweep(t, ctx, s, at(time.Minute), store.SweepResult{Woken: 1})
		c = mustClaim(t, ctx, s, hostB, at(time.Minute), 1)
		defer2 := job.Receipt{JSON: receiptJSON(3), IssuedAt: at(time.Minute), HostID: hostB, Fence: c[0].Fence}
		mustApply(t, ctx, s, "j1", c[0].Fence, job.Change{To: job.Deferred, Reason: "reserve still short",
			Now: at(time.Minute), Receipt: &defer2, Mutate: func(j *job.Job) { j.RunAt = at(time.Hour) }})
		adopt := job.Receipt{JSON: receiptJSON(4), IssuedAt: at(2 * time.Minute), HostID: "host-c", Fence: 41}
		mustApply(t, ctx, s, "j1", job.NoFence, job.Change{To: job.Deferred, Reason: "adopted",
			Now: at(2 * time.Minute), Receipt: &adopt})

		want := []struct {
			host  string
			fence int64
		}{{"", 0}, {hostA, 1}, {hostB, 2}, {"host-c", 41}}
		rs := mustHistory(t, ctx, s, "j1").Receipts
		if len(rs) != len(want) {
			t.Fatalf("receipts = %+v, want %d", rs, len(want))
		}
		for i, w := range want {
			if rs[i].Seq != i+1 || rs[i].HostID != w.host || rs[i].Fence != w.fence ||
				string(rs[i].JSON) != string(receiptJSON(i+1)) {
				t.Errorf("receipt %d = seq %d from %q at fence %d, want seq %d from %q at fence %d",
					i, rs[i].Seq, rs[i].HostID, rs[i].Fence, i+1, w.host, w.fence)
			}
		}
	})
}

func testCounters(t *testing.T, setup jobsSetup) {
	t.Run("RoundTrip", func(t *testing.T) {
		t.Parallel()
		ctx, s := setup(t)

		// Each start counts a run; a secondary-limit deferral counts one
		// in a row, and the counts come back from every read.
		r := running(t, ctx, s, "j1", at(0))
		if r.Runs != 0 || r.Secondaries != 0 {
			t.Fatalf("a new job counts %d runs, %d secondaries; want none", r.Runs, r.Secondaries)
		}
		got := mustApply(t, ctx, s, "j1", r.Fence, job.Change{To: job.Deferred, Reason: "secondary", Now: at(time.Second),
			Mutate: func(j *job.Job) { j.Runs, j.Secondaries, j.Ownership, j.RunAt = 1, 1, job.Retained, at(time.Minute) }})
		if got.Runs != 1 || got.Secondaries != 1 {
			t.Errorf("ApplyJob returned %d runs, %d secondaries; want 1, 1", got.Runs, got.Secondaries)
		}
		checkStored(t, ctx, s, got)
		mustSweep(t, ctx, s, at(time.Minute), store.SweepResult{Woken: 1})
		c := mustClaim(t, ctx, s, hostA, at(time.Minute), 1)
		if len(c) != 1 || c[0].Runs != 1 || c[0].Secondaries != 1 {
			t.Fatalf("claimed %+v, want j1 with 1 run and 1 secondary", c)
		}
		got = mustApply(t, ctx, s, "j1", c[0].Fence, job.Change{To: job.Running, Reason: "resume", Now: at(time.Minute),
			Mutate: func(j *job.Job) { j.Runs, j.Secondaries = 2, 0 }})
		if js, err := s.ListJobs(ctx, job.Running); err != nil || len(js) != 1 || js[0].Runs != 2 || js[0].Secondaries != 0 {
			t.Errorf("ListJobs(running) = %+v, %v; want j1 with 2 runs, no secondaries", js, err)
		}
		checkStored(t, ctx, s, got)
	})
}
