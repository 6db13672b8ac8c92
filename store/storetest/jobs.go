package storetest

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/layoverhq/layover/job"
	"github.com/layoverhq/layover/store"
)

// RunJobs runs the part of the conformance suite that covers store.Store's
// jobs and durable hosts. open must return a new, empty store each time it
// is called, and close it when t ends. Every
// subtest runs in parallel with the others.
//
// Beyond the doc comments of store.Store, the suite holds every backend to
// these rules:
//   - Times come back in UTC at millisecond precision, the spec's deadline
//     too; a zero time stays zero.
//   - A job is submitted ready (State "" means ready) or deferred, at fence
//     0 and unclaimed; the store sets CreatedAt and UpdatedAt to now.
//   - ID, Spec, CreatedAt, State, Fence and the lease are the store's:
//     Mutate cannot change them. ApplyJob sets UpdatedAt to the change's Now.
//   - Moving a job to any state but running ends its lease and progress
//     deadline, so a job sent back to ready can be claimed again at once. A
//     job can be running only while claimed: a holder whose claim the sweep
//     took gets job.ErrStaleFence when it tries to run it.
//   - When the store takes a job from its holder (an operator change, a
//     sweep), the holder's open attempts of that claim are closed at that
//     time: outcome "killed" when the job is cancelled, else "lease-lost".
//   - A deadline, resume_by or progress deadline has passed once now is
//     after it (a receipt is still resumable at its resume_by), so
//     NextJobDue reports it plus one millisecond. A lease is lost at its
//     end; a RunAt comes at it.
//   - The sweep wakes only retained deferrals; a running job past its
//     progress deadline goes back to ready with RunAt no earlier than the
//     end of the lease it had, so that the old process is gone before a new
//     one starts.
//   - RenewLeases reports lost ids sorted; Hosts are ordered by id; a
//     heartbeat never moves LastSeen back; HostHeartbeat of an unknown host
//     is job.ErrNotFound; UnregisterHost of an unknown one is no error.
//   - CountJobs has no entry for a state without jobs.
//   - An auth-wait job is never claimed nor woken; the sweep fails it once
//     its deadline has passed (counted in PastDue), and NextJobDue reports
//     its RunAt (its next credential re-check; none when zero) and its
//     deadline.
//   - A change's reconcile check is appended with it, or not at all; a
//     receipt keeps the host and fence it was issued with.
//   - A job's cleanup is armed at its submission when its spec names a
//     cleanup command; PendingCleanups lists it once the job is cancelled
//     or failed (by a host, the operator or the sweep) until a change
//     moves it on. An ended job may still change its cleanup (To "").
func RunJobs(t *testing.T, open func(t *testing.T) store.Store) {
	t.Helper()

	setup := func(t *testing.T) (context.Context, store.Store) {
		t.Helper()
		return t.Context(), open(t)
	}
	tests := []struct {
		name string
		fn   func(*testing.T, jobsSetup)
	}{
		{"SubmitJob", testSubmitJob},
		{"Job", testJob},
		{"JobsByID", testJobsByID},
		{"ListAndCount", testListAndCount},
		{"Lifecycle", testLifecycle},
		{"ApplyJob", testApplyJob},
		{"Fence", testFence},
		{"History", testHistory},
		{"ClaimJobs", testClaimJobs},
		{"RenewLeases", testRenewLeases},
		{"SweepJobs", testSweepJobs},
		{"NextJobDue", testNextJobDue},
		{"AuthWait", testAuthWait},
		{"Checks", testChecks},
		{"ReceiptOrigin", testReceiptOrigin},
		{"Counters", testCounters},
		{"Cleanups", testCleanups},
		{"Hosts", testHosts},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			tt.fn(t, setup)
		})
	}
}

type jobsSetup func(t *testing.T) (context.Context, store.Store)

const (
	hostA = "host-a"
	hostB = "host-b"
	lease = 30 * time.Second
)

// at is base plus d: the suite's clock.
func at(d time.Duration) time.Time { return base.Add(d) }

// receiptJSON is a receipt as a host stores it; the store keeps its bytes.
func receiptJSON(n int) []byte {
	return fmt.Appendf(nil, `{"bindings":{"plan_digest":null,"request_digest":"%064x","scope_digest":"%064x"},`+
		`"fresh_approval_required":false,"issued_at_ms":1794319445123,"ownership":{"cancellation_digest":"%064x",`+
		`"disposition":"retained","mode":"durable-host","wakeup_digest":"%064x"},"reason":"rest-reserve",`+
		`"resume_after_ms":1794321905000,"resume_by_ms":1794343505000,"schema":1,"status":"deferred",`+
		`"version":"deferred-receipt-v1"}`, n, n+1, n+2, n+3)
}

// newSpec sets every field of job.Spec but Deadline, ProgressTimeout and
// Priority, which the sweep and claim read.
func newSpec(name string) job.Spec {
	return job.Spec{
		Name:                  name,
		Argv:                  []string{"gh", "pr", "create", "--fill"},
		Workdir:               "/srv/repo",
		EnvNames:              []string{"GH_TOKEN"},
		Quota:                 []string{"github", "github:graphql"},
		Provider:              "github",
		ResumeCmd:             "claude --resume {session_id}",
		CheckCmd:              "test -f done",
		VerifyCmd:             "make verify",
		PlanCmd:               "make plan",
		FreshApprovalRequired: true,
		MaxAttempts:           3,
	}
}

func newJob(id string) job.Job {
	return job.Job{ID: id, Spec: newSpec("job " + id), State: job.Ready}
}

// deferredJob is a job submitted deferred with retained ownership, waking at
// wake and expiring an hour later.
func deferredJob(id string, wake time.Time) job.Job {
	j := newJob(id)
	j.State, j.Ownership, j.RunAt, j.ResumeBy = job.Deferred, job.Retained, wake, wake.Add(time.Hour)
	j.Stage = "Quota wait until " + wake.UTC().Format(time.RFC3339)
	return j
}

// msUTC is t as a store returns it.
func msUTC(t time.Time) time.Time {
	if t.IsZero() {
		return t
	}
	return t.Truncate(time.Millisecond).UTC()
}

// storedJob is j as a store returns it.
func storedJob(j job.Job) job.Job {
	j.Spec.Deadline = msUTC(j.Spec.Deadline)
	j.CreatedAt, j.UpdatedAt, j.RunAt = msUTC(j.CreatedAt), msUTC(j.UpdatedAt), msUTC(j.RunAt)
	j.ResumeBy, j.LeaseUntil, j.ProgressBy = msUTC(j.ResumeBy), msUTC(j.LeaseUntil), msUTC(j.ProgressBy)
	if j.Checkpoint != nil {
		cp := *j.Checkpoint
		cp.At = msUTC(cp.At)
		j.Checkpoint = &cp
	}
	return j
}

// diffJob lists every field in which got differs from want, which must be
// as a store returns it.
func diffJob(got, want job.Job) []string {
	var d []string
	add := func(field string, g, w any) {
		if g != w {
			d = append(d, fmt.Sprintf("%s = %v, want %v", field, g, w))
		}
	}
	add("ID", got.ID, want.ID)
	add("State", got.State, want.State)
	add("Stage", got.Stage, want.Stage)
	add("Ownership", got.Ownership, want.Ownership)
	add("Fence", got.Fence, want.Fence)
	add("LeaseOwner", got.LeaseOwner, want.LeaseOwner)
	add("Attempts", got.Attempts, want.Attempts)
	add("Probes", got.Probes, want.Probes)
	add("Runs", got.Runs, want.Runs)
	add("Secondaries", got.Secondaries, want.Secondaries)
	add("Approved", got.Approved, want.Approved)
	add("SessionID", got.SessionID, want.SessionID)
	add("Cleanup", got.Cleanup, want.Cleanup)
	if !got.Spec.Equal(want.Spec) {
		d = append(d, fmt.Sprintf("Spec = %+v, want %+v", got.Spec, want.Spec))
	}
	for _, s := range []string{
		diffTime("Spec.Deadline", got.Spec.Deadline, want.Spec.Deadline),
		diffTime("CreatedAt", got.CreatedAt, want.CreatedAt),
		diffTime("UpdatedAt", got.UpdatedAt, want.UpdatedAt),
		diffTime("RunAt", got.RunAt, want.RunAt),
		diffTime("ResumeBy", got.ResumeBy, want.ResumeBy),
		diffTime("LeaseUntil", got.LeaseUntil, want.LeaseUntil),
		diffTime("ProgressBy", got.ProgressBy, want.ProgressBy),
	} {
		if s != "" {
			d = append(d, s)
		}
	}
	switch g, w := got.Checkpoint, want.Checkpoint; {
	case g == nil && w == nil:
	case g == nil || w == nil:
		d = append(d, fmt.Sprintf("Checkpoint = %+v, want %+v", g, w))
	default:
		add("Checkpoint.Stage", g.Stage, w.Stage)
		add("Checkpoint.Data", string(g.Data), string(w.Data))
		if s := diffTime("Checkpoint.At", g.At, w.At); s != "" {
			d = append(d, s)
		}
	}
	return d
}

func checkJob(t *testing.T, what string, got, want job.Job) {
	t.Helper()
	if d := diffJob(got, want); d != nil {
		t.Errorf("%s (%s):\n\t%s", what, want.ID, strings.Join(d, "\n\t"))
	}
}

// checkStored fails t unless the store holds want for want.ID.
func checkStored(t *testing.T, ctx context.Context, s store.Store, want job.Job) {
	t.Helper()
	checkJob(t, "Job", mustJob(t, ctx, s, want.ID), want)
}

func mustSubmit(t *testing.T, ctx context.Context, s store.Store, j job.Job, rc *job.Receipt, now time.Time) job.Job {
	t.Helper()
	got, created, err := s.SubmitJob(ctx, j, rc, now)
	if err != nil || !created {
		t.Fatalf("SubmitJob(%s) = created %v, %v; want a new job", j.ID, created, err)
	}
	return got
}

func mustJob(t *testing.T, ctx context.Context, s store.Store, id string) job.Job {
	t.Helper()
	j, err := s.Job(ctx, id)
	if err != nil {
		t.Fatalf("Job(%s): %v", id, err)
	}
	return j
}

func mustApply(t *testing.T, ctx context.Context, s store.Store, id string, fence int64, ch job.Change) job.Job {
	t.Helper()
	j, err := s.ApplyJob(ctx, id, fence, ch)
	if err != nil {
		t.Fatalf("ApplyJob(%s, fence %d, to %q): %v", id, fence, ch.To, err)
	}
	return j
}

func mustClaim(t *testing.T, ctx context.Context, s store.Store, host string, now time.Time, limit int) []job.Job {
	t.Helper()
	js, err := s.ClaimJobs(ctx, host, now, lease, limit)
	if err != nil {
		t.Fatalf("ClaimJobs(%s, %s, %d): %v", host, now, limit, err)
	}
	return js
}

func mustHistory(t *testing.T, ctx context.Context, s store.Store, id string) job.History {
	t.Helper()
	h, err := s.JobHistory(ctx, id)
	if err != nil {
		t.Fatalf("JobHistory(%s): %v", id, err)
	}
	return h
}

func mustSweep(t *testing.T, ctx context.Context, s store.Store, now time.Time, want store.SweepResult) {
	t.Helper()
	got, err := s.SweepJobs(ctx, now)
	if err != nil {
		t.Fatalf("SweepJobs(%s): %v", now, err)
	}
	counts := func(r store.SweepResult) [5]int {
		return [5]int{r.Woken, r.Expired, r.PastDue, r.Reclaimed, r.AuthFailed}
	}
	if counts(got) != counts(want) || !slices.Equal(got.Failed, want.Failed) {
		t.Errorf("SweepJobs(%s) = %+v, want %+v", now, got, want)
	}
}

func ids(js []job.Job) []string {
	var out []string
	for _, j := range js {
		out = append(out, j.ID)
	}
	return out
}

// checkTransitions fails t unless id's transitions are want, oldest first.
func checkTransitions(t *testing.T, ctx context.Context, s store.Store, id string, want ...job.Transition) {
	t.Helper()
	got := mustHistory(t, ctx, s, id).Transitions
	if len(got) != len(want) {
		t.Fatalf("transitions of %s = %+v, want %+v", id, got, want)
	}
	for i, w := range want {
		g := got[i]
		if g.From != w.From || g.To != w.To || g.Reason != w.Reason {
			t.Errorf("transition %d of %s = %s -> %s (%q), want %s -> %s (%q)",
				i, id, g.From, g.To, g.Reason, w.From, w.To, w.Reason)
		}
		if d := diffTime("At", g.At, msUTC(w.At)); d != "" {
			t.Errorf("transition %d of %s: %s", i, id, d)
		}
	}
}

// lastTransition is the newest transition of id.
func lastTransition(t *testing.T, ctx context.Context, s store.Store, id string) job.Transition {
	t.Helper()
	trs := mustHistory(t, ctx, s, id).Transitions
	if len(trs) == 0 {
		t.Fatalf("%s has no transitions", id)
	}
	return trs[len(trs)-1]
}

// running submits id, claims it for hostA at now and starts it with an open
// attempt; it returns the running job (fence 1, leased until now+lease).
func running(t *testing.T, ctx context.Context, s store.Store, id string, now time.Time) job.Job {
	t.Helper()
	mustSubmit(t, ctx, s, newJob(id), nil, now)
	claimed := mustClaim(t, ctx, s, hostA, now, 1)
	if len(claimed) != 1 || claimed[0].ID != id {
		t.Fatalf("claim of %s = %v", id, ids(claimed))
	}
	return mustApply(t, ctx, s, id, claimed[0].Fence, job.Change{
		To: job.Running, Reason: "claimed", Now: now, From: []job.State{job.Ready},
		Attempt: &job.Attempt{ID: id + "-a1", Fence: claimed[0].Fence, StartedAt: now},
	})
}

func testSubmitJob(t *testing.T, setup jobsSetup) {
	t.Run("RoundTripsEveryField", func(t *testing.T) {
		t.Parallel()
		ctx, s := setup(t)

		j := deferredJob("j1", at(41*time.Minute+500*time.Microsecond))
		j.Spec.Priority, j.Spec.Deadline, j.Spec.ProgressTimeout = 7, at(24*time.Hour+time.Microsecond), 5*time.Minute
		j.Probes, j.Attempts, j.Approved, j.SessionID = 2, 1, true, "sess-123"
		j.Runs, j.Secondaries = 4, 3
		j.Checkpoint = &job.Checkpoint{Stage: "tests pass", Data: []byte(`{"commit":"abc"}`), At: at(-time.Minute + 1)}
		rc := &job.Receipt{JSON: receiptJSON(1), IssuedAt: at(0), HostID: hostA}
		// The store's own fields are the store's: these are ignored.
		j.Fence, j.LeaseOwner, j.LeaseUntil = 9, "someone", at(time.Hour)
		j.CreatedAt, j.UpdatedAt = at(-time.Hour), at(-time.Hour)

		got, created, err := s.SubmitJob(ctx, j, rc, at(time.Microsecond))
		if err != nil || !created {
			t.Fatalf("SubmitJob = created %v, %v; want true, nil", created, err)
		}
		want := j
		want.Fence, want.LeaseOwner, want.LeaseUntil = 0, "", time.Time{}
		want.CreatedAt, want.UpdatedAt = at(time.Microsecond), at(time.Microsecond)
		want = storedJob(want)
		checkJob(t, "SubmitJob", got, want)
		checkStored(t, ctx, s, want)

		h := mustHistory(t, ctx, s, "j1")
		checkTransitions(t, ctx, s, "j1", job.Transition{From: "", To: job.Deferred, At: at(time.Microsecond), Reason: "submitted"})
		if len(h.Attempts) != 0 {
			t.Errorf("attempts = %+v, want none", h.Attempts)
		}
		if len(h.Receipts) != 1 || h.Receipts[0].Seq != 1 || h.Receipts[0].JobID != "j1" ||
			string(h.Receipts[0].JSON) != string(rc.JSON) || h.Receipts[0].HostID != hostA || h.Receipts[0].Fence != 0 {
			t.Fatalf("receipts = %+v, want the one submitted, seq 1", h.Receipts)
		}
		if d := diffTime("IssuedAt", h.Receipts[0].IssuedAt, msUTC(rc.IssuedAt)); d != "" {
			t.Error(d)
		}
	})

	t.Run("ZeroFieldsRoundTrip", func(t *testing.T) {
		t.Parallel()
		ctx, s := setup(t)

		// State "" is ready; empty lists, zero times and no checkpoint.
		j := job.Job{ID: "bare", Spec: job.Spec{Argv: []string{"true"}}}
		got := mustSubmit(t, ctx, s, j, nil, at(0))
		want := storedJob(j)
		want.State, want.CreatedAt, want.UpdatedAt = job.Ready, msUTC(at(0)), msUTC(at(0))
		checkJob(t, "SubmitJob", got, want)
		checkStored(t, ctx, s, want)
		if h := mustHistory(t, ctx, s, "bare"); len(h.Receipts) != 0 || len(h.Attempts) != 0 || len(h.Checks) != 0 {
			t.Errorf("history = %+v, want no receipts, attempts nor checks", h)
		}
	})

	t.Run("IdempotentByID", func(t *testing.T) {
		t.Parallel()
		ctx, s := setup(t)

		j := newJob("j1")
		j.Spec.Deadline = time.Date(2026, 11, 11, 16, 0, 0, 0, time.FixedZone("CET", 3600))
		first := mustSubmit(t, ctx, s, j, nil, at(0))

		// The same spec again, its deadline in another zone, other record
		// fields and a receipt: the stored job, unchanged, and nothing
		// recorded.
		again := j
		again.Spec.Deadline = j.Spec.Deadline.UTC()
		again.Spec.EnvNames = append([]string{}, j.Spec.EnvNames...)
		again.State, again.Stage = job.Deferred, "other"
		got, created, err := s.SubmitJob(ctx, again, &job.Receipt{JSON: receiptJSON(2), IssuedAt: at(time.Minute)}, at(time.Minute))
		if err != nil || created {
			t.Fatalf("SubmitJob again = created %v, %v; want false, nil", created, err)
		}
		checkJob(t, "SubmitJob again", got, first)
		checkStored(t, ctx, s, first)
		checkTransitions(t, ctx, s, "j1", job.Transition{To: job.Ready, At: at(0), Reason: "submitted"})
		if rs := mustHistory(t, ctx, s, "j1").Receipts; len(rs) != 0 {
			t.Errorf("receipts after an idempotent submit = %+v, want none", rs)
		}
	})

	t.Run("ConflictingSpec", func(t *testing.T) {
		t.Parallel()
		ctx, s := setup(t)

		j := newJob("j1")
		first := mustSubmit(t, ctx, s, j, nil, at(0))
		changes := map[string]func(*job.Spec){
			"argv":     func(sp *job.Spec) { sp.Argv = append(sp.Argv, "--draft") },
			"priority": func(sp *job.Spec) { sp.Priority = 1 },
			"deadline": func(sp *job.Spec) { sp.Deadline = at(time.Hour) },
			"approval": func(sp *job.Spec) { sp.FreshApprovalRequired = false },
			"env":      func(sp *job.Spec) { sp.EnvNames = nil },
		}
		for _, name := range slices.Sorted(maps.Keys(changes)) {
			other := newJob("j1")
			changes[name](&other.Spec)
			_, created, err := s.SubmitJob(ctx, other, nil, at(time.Minute))
			if !errors.Is(err, job.ErrConflict) || created {
				t.Errorf("SubmitJob with another %s = created %v, %v; want job.ErrConflict", name, created, err)
			}
		}
		checkStored(t, ctx, s, first)
		checkTransitions(t, ctx, s, "j1", job.Transition{To: job.Ready, At: at(0), Reason: "submitted"})
	})

	t.Run("InitialStates", func(t *testing.T) {
		t.Parallel()
		ctx, s := setup(t)

		for _, st := range job.States {
			j := newJob(string(st))
			j.State = st
			got, created, err := s.SubmitJob(ctx, j, nil, at(0))
			if st == job.Ready || st == job.Deferred {
				if err != nil || !created || got.State != st {
					t.Errorf("SubmitJob as %s = %s, created %v, %v; want it stored", st, got.State, created, err)
				}
				continue
			}
			if !errors.Is(err, job.ErrTransition) || created {
				t.Errorf("SubmitJob as %s = created %v, %v; want job.ErrTransition", st, created, err)
			}
			if _, err := s.Job(ctx, j.ID); !errors.Is(err, job.ErrNotFound) {
				t.Errorf("Job(%s) after a refused submit = %v, want job.ErrNotFound", j.ID, err)
			}
		}
	})

	t.Run("EmptyID", func(t *testing.T) {
		t.Parallel()
		ctx, s := setup(t)

		if _, created, err := s.SubmitJob(ctx, job.Job{}, nil, at(0)); err == nil || created {
			t.Errorf("SubmitJob without an id = created %v, %v; want an error", created, err)
		}
	})
}

func testJob(t *testing.T, setup jobsSetup) {
	t.Run("NotFound", func(t *testing.T) {
		t.Parallel()
		ctx, s := setup(t)

		mustSubmit(t, ctx, s, newJob("j1"), nil, at(0))
		if _, err := s.Job(ctx, "nope"); !errors.Is(err, job.ErrNotFound) {
			t.Errorf("Job(nope) = %v, want job.ErrNotFound", err)
		}
		if _, err := s.JobHistory(ctx, "nope"); !errors.Is(err, job.ErrNotFound) {
			t.Errorf("JobHistory(nope) = %v, want job.ErrNotFound", err)
		}
		for _, fence := range []int64{-1, 0} {
			_, err := s.ApplyJob(ctx, "nope", fence, job.Change{To: job.Cancelled, Now: at(0), Reason: "cancel"})
			if !errors.Is(err, job.ErrNotFound) {
				t.Errorf("ApplyJob(nope, %d) = %v, want job.ErrNotFound", fence, err)
			}
		}
	})
}

func testListAndCount(t *testing.T, setup jobsSetup) {
	t.Run("Empty", func(t *testing.T) {
		t.Parallel()
		ctx, s := setup(t)

		if js, err := s.ListJobs(ctx, ""); err != nil || len(js) != 0 {
			t.Errorf("ListJobs of an empty store = %v, %v", ids(js), err)
		}
		if n, err := s.CountJobs(ctx); err != nil || len(n) != 0 {
			t.Errorf("CountJobs of an empty store = %v, %v; want an empty map", n, err)
		}
	})

	t.Run("OldestFirstPerState", func(t *testing.T) {
		t.Parallel()
		ctx, s := setup(t)

		// Submitted out of order; "b" and "c" in the same millisecond sort
		// by id.
		subs := []struct {
			id    string
			at    time.Time
			state job.State
		}{
			{"d", at(4 * time.Minute), job.Ready},
			{"c", at(2 * time.Minute), job.Deferred},
			{"a", at(time.Minute), job.Ready},
			{"e", at(5 * time.Minute), job.Deferred},
			{"b", at(2*time.Minute + 100*time.Microsecond), job.Ready},
			{"f", at(6 * time.Minute), job.Ready},
		}
		for _, sub := range subs {
			j := newJob(sub.id)
			j.State = sub.state
			mustSubmit(t, ctx, s, j, nil, sub.at)
		}
		mustApply(t, ctx, s, "f", -1, job.Change{To: job.Cancelled, Reason: "cancel", Now: at(7 * time.Minute)})

		tests := []struct {
			state job.State
			want  []string
		}{
			{"", []string{"a", "b", "c", "d", "e", "f"}},
			{job.Ready, []string{"a", "b", "d"}},
			{job.Deferred, []string{"c", "e"}},
			{job.Cancelled, []string{"f"}},
			{job.Running, nil},
			{"no-such-state", nil},
		}
		for _, tt := range tests {
			js, err := s.ListJobs(ctx, tt.state)
			if err != nil || !slices.Equal(ids(js), tt.want) {
				t.Errorf("ListJobs(%q) = %v, %v; want %v", tt.state, ids(js), err, tt.want)
			}
			for _, j := range js {
				if tt.state != "" && j.State != tt.state {
					t.Errorf("ListJobs(%q) listed %s in state %s", tt.state, j.ID, j.State)
				}
			}
		}
		all, _ := s.ListJobs(ctx, "")
		for _, j := range all {
			checkStored(t, ctx, s, j) // the listed record is the whole record
		}

		counts, err := s.CountJobs(ctx)
		want := map[job.State]int{job.Ready: 3, job.Deferred: 2, job.Cancelled: 1}
		if err != nil || !maps.Equal(counts, want) {
			t.Errorf("CountJobs = %v, %v; want %v", counts, err, want)
		}
	})
}

// bring submits ids and brings them all to state from, at base. Ready and
// resumable jobs are left claimed by hostA, so that they may start running.
// It returns each job's fence.
func bring(t *testing.T, ctx context.Context, s store.Store, from job.State, ids ...string) map[string]int64 {
	t.Helper()
	fences := map[string]int64{}
	deferred := from == job.Deferred || from == job.Resumable
	for _, id := range ids {
		j := newJob(id)
		if deferred {
			j = deferredJob(id, at(0))
		}
		mustSubmit(t, ctx, s, j, nil, at(0))
		fences[id] = 0
	}
	if from == job.Resumable {
		mustSweep(t, ctx, s, at(0), store.SweepResult{Woken: len(ids)})
	}
	if from == job.Deferred {
		return fences
	}
	if from == job.Cancelled {
		for _, id := range ids {
			mustApply(t, ctx, s, id, 0, job.Change{To: job.Cancelled, Reason: "cancel", Now: at(0)})
		}
		return fences
	}
	for _, j := range mustClaim(t, ctx, s, hostA, at(0), len(ids)+1) {
		fences[j.ID] = j.Fence
	}
	if from == job.Ready || from == job.Resumable {
		return fences
	}
	for _, id := range ids {
		mustApply(t, ctx, s, id, fences[id], job.Change{To: job.Running, Reason: "start", Now: at(0)})
		if from != job.Running {
			mustApply(t, ctx, s, id, fences[id], job.Change{To: from, Reason: "end", Now: at(0)})
		}
	}
	return fences
}

func testLifecycle(t *testing.T, setup jobsSetup) {
	// Every (from, to) pair: allowed exactly when job.CanMove says so; a
	// refused change writes nothing.
	for _, from := range job.States {
		t.Run(string(from), func(t *testing.T) {
			t.Parallel()
			ctx, s := setup(t)

			var jobIDs []string
			for _, to := range job.States {
				jobIDs = append(jobIDs, "to-"+string(to))
			}
			fences := bring(t, ctx, s, from, jobIDs...)
			for _, to := range job.States {
				id := "to-" + string(to)
				before := mustJob(t, ctx, s, id)
				if before.State != from {
					t.Fatalf("%s is %s, want %s", id, before.State, from)
				}
				nTrans := len(mustHistory(t, ctx, s, id).Transitions)
				now := at(time.Minute)
				got, err := s.ApplyJob(ctx, id, fences[id], job.Change{To: to, Reason: "test " + string(to), Now: now})
				if !job.CanMove(from, to) {
					if !errors.Is(err, job.ErrTransition) {
						t.Errorf("%s -> %s = %v, want job.ErrTransition", from, to, err)
					}
					checkStored(t, ctx, s, before)
					if n := len(mustHistory(t, ctx, s, id).Transitions); n != nTrans {
						t.Errorf("%s -> %s refused, but %d transitions recorded", from, to, n-nTrans)
					}
					continue
				}
				if err != nil {
					t.Errorf("%s -> %s = %v, want it allowed", from, to, err)
					continue
				}
				if got.State != to || !got.UpdatedAt.Equal(msUTC(now)) {
					t.Errorf("%s -> %s: job is %s updated %s", from, to, got.State, got.UpdatedAt)
				}
				checkStored(t, ctx, s, got)
				tr := lastTransition(t, ctx, s, id)
				if tr.From != from || tr.To != to || tr.Reason != "test "+string(to) || !tr.At.Equal(msUTC(now)) {
					t.Errorf("%s -> %s recorded as %+v", from, to, tr)
				}
			}
		})
	}
}

func testApplyJob(t *testing.T, setup jobsSetup) {
	t.Run("KeepStateRecordsNoTransition", func(t *testing.T) {
		t.Parallel()
		ctx, s := setup(t)

		r := running(t, ctx, s, "j1", at(0))
		cp := &job.Checkpoint{Stage: "built", Data: []byte(`{"step":2}`), At: at(time.Minute + 1)}
		got := mustApply(t, ctx, s, "j1", r.Fence, job.Change{
			Now: at(time.Minute), From: []job.State{job.Running},
			Mutate: func(j *job.Job) {
				j.Stage, j.Checkpoint, j.ProgressBy = "built", cp, at(6*time.Minute)
			},
		})
		want := r
		want.Stage, want.Checkpoint, want.ProgressBy, want.UpdatedAt = "built", cp, at(6*time.Minute), at(time.Minute)
		want = storedJob(want)
		checkJob(t, "ApplyJob", got, want)
		checkStored(t, ctx, s, want)
		checkTransitions(t, ctx, s, "j1",
			job.Transition{To: job.Ready, At: at(0), Reason: "submitted"},
			job.Transition{From: job.Ready, To: job.Running, At: at(0), Reason: "claimed"})
	})

	t.Run("MutateEditsTheRecord", func(t *testing.T) {
		t.Parallel()
		ctx, s := setup(t)

		r := running(t, ctx, s, "j1", at(0))
		got := mustApply(t, ctx, s, "j1", r.Fence, job.Change{
			To: job.Deferred, Reason: "quota", Now: at(time.Minute),
			Mutate: func(j *job.Job) {
				j.Stage, j.Ownership = "Quota wait until 16:00", job.Retained
				j.RunAt, j.ResumeBy = at(55*time.Minute), at(6*time.Hour)
				j.Attempts, j.Probes, j.Approved, j.SessionID = 2, 1, true, "s-1"
				// The store's fields: ignored.
				j.ID, j.State, j.Fence, j.LeaseOwner, j.LeaseUntil = "other", job.Complete, 99, "x", at(time.Hour)
				j.Spec.Argv, j.CreatedAt = []string{"rm", "-rf"}, at(-time.Hour)
			},
		})
		want := r
		want.State, want.Stage, want.Ownership = job.Deferred, "Quota wait until 16:00", job.Retained
		want.RunAt, want.ResumeBy = at(55*time.Minute), at(6*time.Hour)
		want.Attempts, want.Probes, want.Approved, want.SessionID = 2, 1, true, "s-1"
		want.UpdatedAt = at(time.Minute)
		// Leaving running ends the lease.
		want.LeaseOwner, want.LeaseUntil = "", time.Time{}
		want = storedJob(want)
		checkJob(t, "ApplyJob", got, want)
		checkStored(t, ctx, s, want)
		if _, err := s.Job(ctx, "other"); !errors.Is(err, job.ErrNotFound) {
			t.Errorf("Job(other) = %v, want job.ErrNotFound", err)
		}
	})

	t.Run("FromIsACompareAndSet", func(t *testing.T) {
		t.Parallel()
		ctx, s := setup(t)

		before := mustSubmit(t, ctx, s, newJob("j1"), nil, at(0))
		_, err := s.ApplyJob(ctx, "j1", 0, job.Change{
			To: job.Deferred, Reason: "quota", Now: at(time.Minute), From: []job.State{job.Running},
			Receipt: &job.Receipt{JSON: receiptJSON(1), IssuedAt: at(time.Minute)},
		})
		if !errors.Is(err, job.ErrTransition) {
			t.Fatalf("ApplyJob from running on a ready job = %v, want job.ErrTransition", err)
		}
		checkStored(t, ctx, s, before)
		if h := mustHistory(t, ctx, s, "j1"); len(h.Receipts) != 0 || len(h.Transitions) != 1 {
			t.Errorf("a refused change left %+v", h)
		}
		// From alone, with no To: the same check.
		if _, err := s.ApplyJob(ctx, "j1", 0, job.Change{Now: at(time.Minute), From: []job.State{job.Blocked, job.Deferred}}); !errors.Is(err, job.ErrTransition) {
			t.Errorf("ApplyJob keeping the state, From blocked or deferred = %v, want job.ErrTransition", err)
		}
		mustApply(t, ctx, s, "j1", 0, job.Change{Now: at(time.Minute), From: []job.State{job.Blocked, job.Ready}})
	})

	t.Run("BackToReadyIsClaimableAtOnce", func(t *testing.T) {
		t.Parallel()
		ctx, s := setup(t)

		r := running(t, ctx, s, "j1", at(0))
		got := mustApply(t, ctx, s, "j1", r.Fence, job.Change{
			To: job.Ready, Reason: "transient failure", Now: at(time.Second),
			Mutate: func(j *job.Job) { j.Attempts++; j.RunAt = at(10 * time.Second) },
		})
		if got.LeaseOwner != "" || !got.LeaseUntil.IsZero() || got.Fence != r.Fence {
			t.Errorf("after running -> ready: lease %q until %s, fence %d; want none, fence %d",
				got.LeaseOwner, got.LeaseUntil, got.Fence, r.Fence)
		}
		if c := mustClaim(t, ctx, s, hostB, at(10*time.Second), 5); !slices.Equal(ids(c), []string{"j1"}) || c[0].Fence != r.Fence+1 {
			t.Errorf("claim after the backoff = %+v, want j1 at fence %d", c, r.Fence+1)
		}
	})

	t.Run("OnlyAClaimedJobRuns", func(t *testing.T) {
		t.Parallel()
		ctx, s := setup(t)

		mustSubmit(t, ctx, s, newJob("j1"), nil, at(0))
		mustSubmit(t, ctx, s, newJob("j2"), nil, at(0))
		// j1 is not claimed: no fence lets it run.
		for _, fence := range []int64{-1, 0} {
			if _, err := s.ApplyJob(ctx, "j1", fence, job.Change{To: job.Running, Reason: "start", Now: at(0)}); err == nil {
				t.Errorf("ApplyJob(j1, %d) to running without a claim = nil error", fence)
			}
		}
		c := mustClaim(t, ctx, s, hostA, at(0), 1)
		// The claim expires and the sweep takes it: the holder's fence is
		// still the job's, but the claim is gone.
		mustSweep(t, ctx, s, at(lease), store.SweepResult{Reclaimed: 1})
		_, err := s.ApplyJob(ctx, c[0].ID, c[0].Fence, job.Change{To: job.Running, Reason: "start", Now: at(lease)})
		if !errors.Is(err, job.ErrStaleFence) {
			t.Errorf("starting a job whose claim the sweep took = %v, want job.ErrStaleFence", err)
		}
		if j := mustJob(t, ctx, s, c[0].ID); j.State != job.Ready {
			t.Errorf("%s is %s, want ready", j.ID, j.State)
		}
	})

	t.Run("AttemptWithoutID", func(t *testing.T) {
		t.Parallel()
		ctx, s := setup(t)

		before := mustSubmit(t, ctx, s, newJob("j1"), nil, at(0))
		if _, err := s.ApplyJob(ctx, "j1", 0, job.Change{Now: at(0), Attempt: &job.Attempt{}}); err == nil {
			t.Error("ApplyJob with an attempt without an id = nil error")
		}
		checkStored(t, ctx, s, before)
	})
}

func testFence(t *testing.T, setup jobsSetup) {
	t.Run("StaleFenceRefused", func(t *testing.T) {
		t.Parallel()
		ctx, s := setup(t)

		mustSubmit(t, ctx, s, newJob("j1"), nil, at(0))
		c := mustClaim(t, ctx, s, hostA, at(0), 1)
		if c[0].Fence != 1 {
			t.Fatalf("first claim fence = %d, want 1", c[0].Fence)
		}
		before := mustJob(t, ctx, s, "j1")
		for _, fence := range []int64{0, 2, 100} {
			_, err := s.ApplyJob(ctx, "j1", fence, job.Change{
				To: job.Running, Reason: "start", Now: at(time.Second),
				Attempt: &job.Attempt{ID: "a1", Fence: fence, StartedAt: at(time.Second)},
				Receipt: &job.Receipt{JSON: receiptJSON(1), IssuedAt: at(time.Second)},
			})
			if !errors.Is(err, job.ErrStaleFence) {
				t.Errorf("ApplyJob with fence %d on fence 1 = %v, want job.ErrStaleFence", fence, err)
			}
		}
		checkStored(t, ctx, s, before)
		if h := mustHistory(t, ctx, s, "j1"); len(h.Attempts)+len(h.Receipts) != 0 || len(h.Transitions) != 1 {
			t.Errorf("refused changes left %+v", h)
		}
		mustApply(t, ctx, s, "j1", 1, job.Change{To: job.Running, Reason: "start", Now: at(time.Second)})
		// A fence < 0 skips the check (an operator's change).
		mustApply(t, ctx, s, "j1", -1, job.Change{Now: at(2 * time.Second), Mutate: func(j *job.Job) { j.Approved = true }})
		if j := mustJob(t, ctx, s, "j1"); j.Fence != 1 || j.State != job.Running || !j.Approved || j.LeaseOwner != hostA {
			t.Errorf("after an operator change keeping the state: %+v; want running at fence 1, approved, held", j)
		}
	})

	t.Run("OperatorCancelTakesARunningJob", func(t *testing.T) {
		t.Parallel()
		ctx, s := setup(t)

		r := running(t, ctx, s, "j1", at(0))
		got := mustApply(t, ctx, s, "j1", -1, job.Change{To: job.Cancelled, Reason: "cancelled by operator", Now: at(time.Minute)})
		if got.State != job.Cancelled || got.Fence != r.Fence+1 || got.LeaseOwner != "" || !got.LeaseUntil.IsZero() {
			t.Errorf("after cancel: %s at fence %d, lease %q until %s; want cancelled at fence %d, no lease",
				got.State, got.Fence, got.LeaseOwner, got.LeaseUntil, r.Fence+1)
		}
		checkStored(t, ctx, s, got)
		// The holder's writes fail and its heartbeat finds the lease lost.
		_, err := s.ApplyJob(ctx, "j1", r.Fence, job.Change{
			Now: at(2 * time.Minute), Attempt: &job.Attempt{ID: "j1-a1", Fence: r.Fence, Outcome: "ok"},
		})
		if !errors.Is(err, job.ErrStaleFence) {
			t.Errorf("the old holder's write = %v, want job.ErrStaleFence", err)
		}
		lost, err := s.RenewLeases(ctx, hostA, map[string]int64{"j1": r.Fence}, at(2*time.Minute), lease)
		if err != nil || !slices.Equal(lost, []string{"j1"}) {
			t.Errorf("RenewLeases by the old holder = %v, %v; want [j1] lost", lost, err)
		}
		// Its open attempt is closed as killed.
		as := mustHistory(t, ctx, s, "j1").Attempts
		if len(as) != 1 || as[0].Outcome != "killed" || !as[0].EndedAt.Equal(msUTC(at(time.Minute))) || as[0].ExitCode != nil {
			t.Errorf("attempts after cancel = %+v, want j1-a1 killed at %s", as, at(time.Minute))
		}
	})

	t.Run("OperatorCancelTakesAClaim", func(t *testing.T) {
		t.Parallel()
		ctx, s := setup(t)

		mustSubmit(t, ctx, s, newJob("j1"), nil, at(0))
		c := mustClaim(t, ctx, s, hostA, at(0), 1)
		got := mustApply(t, ctx, s, "j1", -1, job.Change{To: job.Cancelled, Reason: "cancel", Now: at(time.Second)})
		if got.Fence != c[0].Fence+1 || got.LeaseOwner != "" {
			t.Errorf("cancel of a claimed ready job: fence %d, lease %q; want fence %d, no lease", got.Fence, got.LeaseOwner, c[0].Fence+1)
		}
	})

	t.Run("OperatorChangeOfAnUnclaimedJobKeepsTheFence", func(t *testing.T) {
		t.Parallel()
		ctx, s := setup(t)

		r := running(t, ctx, s, "j1", at(0))
		// The holder blocks it (its own change: the fence stays), the
		// operator unblocks and later cancels it: no claim, no new fence.
		steps := []struct {
			fence int64
			to    job.State
		}{{r.Fence, job.Blocked}, {-1, job.Ready}, {-1, job.Cancelled}}
		for i, st := range steps {
			got := mustApply(t, ctx, s, "j1", st.fence, job.Change{To: st.to, Reason: "step", Now: at(time.Duration(i+1) * time.Minute)})
			if got.Fence != r.Fence || got.LeaseOwner != "" {
				t.Errorf("step %d to %s: fence %d, lease %q; want fence %d, no lease", i, st.to, got.Fence, got.LeaseOwner, r.Fence)
			}
		}
		// An operator's adopt of a handoff deferral: deferred -> deferred.
		j := deferredJob("j2", at(time.Hour))
		j.Ownership = job.Handoff
		mustSubmit(t, ctx, s, j, &job.Receipt{JSON: receiptJSON(1), IssuedAt: at(0)}, at(0))
		got := mustApply(t, ctx, s, "j2", -1, job.Change{
			To: job.Deferred, Reason: "adopted", Now: at(time.Minute), From: []job.State{job.Deferred},
			Mutate:  func(j *job.Job) { j.Ownership = job.Retained },
			Receipt: &job.Receipt{JSON: receiptJSON(2), IssuedAt: at(time.Minute)},
		})
		if got.Fence != 0 || got.Ownership != job.Retained {
			t.Errorf("adopt: fence %d, ownership %q; want 0, retained", got.Fence, got.Ownership)
		}
		if rs := mustHistory(t, ctx, s, "j2").Receipts; len(rs) != 2 || rs[1].Seq != 2 || string(rs[1].JSON) != string(receiptJSON(2)) {
			t.Errorf("receipts after adopt = %+v, want the new one appended as seq 2", rs)
		}
	})

	t.Run("HolderChangesKeepTheFence", func(t *testing.T) {
		t.Parallel()
		ctx, s := setup(t)

		r := running(t, ctx, s, "j1", at(0))
		got := mustApply(t, ctx, s, "j1", r.Fence, job.Change{
			To: job.Deferred, Reason: "quota", Now: at(time.Minute), From: []job.State{job.Running},
			Mutate: func(j *job.Job) { j.Ownership, j.RunAt, j.ResumeBy = job.Retained, at(time.Hour), at(2*time.Hour) },
		})
		if got.Fence != r.Fence || got.LeaseOwner != "" || !got.LeaseUntil.IsZero() {
			t.Errorf("the holder's deferral: fence %d, lease %q until %s; want fence %d, no lease",
				got.Fence, got.LeaseOwner, got.LeaseUntil, r.Fence)
		}
	})
}

func testHistory(t *testing.T, setup jobsSetup) {
	t.Run("AttemptsUpsertedByID", func(t *testing.T) {
		t.Parallel()
		ctx, s := setup(t)

		r := running(t, ctx, s, "j1", at(0))
		zero, two := 0, 2
		upd := []job.Attempt{
			// j1-a1 ends; a2 and a3 come; a2 changes again.
			{ID: "j1-a1", Fence: r.Fence, StartedAt: at(0), EndedAt: at(time.Minute), Outcome: "transient", ExitCode: &two, WaitedS: 1.5},
			{ID: "a2", Fence: r.Fence, StartedAt: at(2 * time.Minute)},
			{ID: "a3", Fence: r.Fence, StartedAt: at(3 * time.Minute), EndedAt: at(4 * time.Minute), Outcome: "ok", ExitCode: &zero},
			{ID: "a2", Fence: r.Fence, StartedAt: at(2 * time.Minute), EndedAt: at(5 * time.Minute), Outcome: "quota", WaitedS: 60.25},
		}
		for i := range upd {
			mustApply(t, ctx, s, "j1", r.Fence, job.Change{Now: at(time.Duration(i) * time.Minute), Attempt: &upd[i]})
		}
		want := []job.Attempt{upd[0], upd[3], upd[2]}
		got := mustHistory(t, ctx, s, "j1").Attempts
		if len(got) != len(want) {
			t.Fatalf("attempts = %+v, want %+v", got, want)
		}
		for i, w := range want {
			g := got[i]
			if g.ID != w.ID || g.Fence != w.Fence || g.Outcome != w.Outcome || g.WaitedS != w.WaitedS ||
				!sameExit(g.ExitCode, w.ExitCode) {
				t.Errorf("attempt %d = %+v, want %+v", i, g, w)
			}
			for _, d := range []string{diffTime("StartedAt", g.StartedAt, msUTC(w.StartedAt)), diffTime("EndedAt", g.EndedAt, msUTC(w.EndedAt))} {
				if d != "" {
					t.Errorf("attempt %d: %s", i, d)
				}
			}
		}
	})

	t.Run("ReceiptsAppendOnly", func(t *testing.T) {
		t.Parallel()
		ctx, s := setup(t)

		j := deferredJob("j1", at(time.Minute))
		mustSubmit(t, ctx, s, j, &job.Receipt{JSON: receiptJSON(1), IssuedAt: at(0)}, at(0))
		mustSubmit(t, ctx, s, deferredJob("j2", at(time.Minute)), &job.Receipt{JSON: receiptJSON(9), IssuedAt: at(0)}, at(0))
		// Woken, claimed, deferred again with a new receipt: seq 2; a
		// re-deferral of the same deferral: seq 3.
		mustSweep(t, ctx, s, at(time.Minute), store.SweepResult{Woken: 2})
		c := mustClaim(t, ctx, s, hostA, at(time.Minute), 1)
		if c[0].ID != "j1" {
			t.Fatalf("claimed %s, want j1", c[0].ID)
		}
		mustApply(t, ctx, s, "j1", c[0].Fence, job.Change{
			To: job.Deferred, Reason: "reserve still short", Now: at(2 * time.Minute),
			Receipt: &job.Receipt{JSON: receiptJSON(2), IssuedAt: at(2*time.Minute + 1), JobID: "ignored", Seq: 77},
		})
		mustApply(t, ctx, s, "j1", -1, job.Change{
			To: job.Deferred, Reason: "adopted", Now: at(3 * time.Minute),
			Receipt: &job.Receipt{JSON: receiptJSON(3), IssuedAt: at(3 * time.Minute)},
		})
		rs := mustHistory(t, ctx, s, "j1").Receipts
		if len(rs) != 3 {
			t.Fatalf("receipts = %+v, want 3", rs)
		}
		for i, rc := range rs {
			issued := []time.Time{at(0), at(2*time.Minute + 1), at(3 * time.Minute)}[i]
			if rc.Seq != i+1 || rc.JobID != "j1" || string(rc.JSON) != string(receiptJSON(i+1)) || !rc.IssuedAt.Equal(msUTC(issued)) {
				t.Errorf("receipt %d = seq %d of %s issued %s: %s; want seq %d of j1 issued %s: %s",
					i, rc.Seq, rc.JobID, rc.IssuedAt, rc.JSON, i+1, msUTC(issued), receiptJSON(i+1))
			}
		}
		if rs := mustHistory(t, ctx, s, "j2").Receipts; len(rs) != 1 || rs[0].Seq != 1 {
			t.Errorf("j2's receipts = %+v, want its own seq 1", rs)
		}
	})

	t.Run("TransitionsInOrder", func(t *testing.T) {
		t.Parallel()
		ctx, s := setup(t)

		r := running(t, ctx, s, "j1", at(0))
		mustApply(t, ctx, s, "j1", r.Fence, job.Change{To: job.Deferred, Reason: "quota", Now: at(time.Minute),
			Mutate: func(j *job.Job) { j.Ownership, j.RunAt, j.ResumeBy = job.Retained, at(time.Hour), at(2*time.Hour) }})
		mustSweep(t, ctx, s, at(time.Hour), store.SweepResult{Woken: 1})
		c := mustClaim(t, ctx, s, hostB, at(time.Hour), 1)
		mustApply(t, ctx, s, "j1", c[0].Fence, job.Change{To: job.Running, Reason: "preflight ok", Now: at(time.Hour + time.Second)})
		mustApply(t, ctx, s, "j1", c[0].Fence, job.Change{To: job.Complete, Reason: "exit 0, verified", Now: at(time.Hour + time.Minute)})
		checkTransitions(t, ctx, s, "j1",
			job.Transition{From: "", To: job.Ready, At: at(0), Reason: "submitted"},
			job.Transition{From: job.Ready, To: job.Running, At: at(0), Reason: "claimed"},
			job.Transition{From: job.Running, To: job.Deferred, At: at(time.Minute), Reason: "quota"},
			job.Transition{From: job.Deferred, To: job.Resumable, At: at(time.Hour), Reason: "wake-up"},
			job.Transition{From: job.Resumable, To: job.Running, At: at(time.Hour + time.Second), Reason: "preflight ok"},
			job.Transition{From: job.Running, To: job.Complete, At: at(time.Hour + time.Minute), Reason: "exit 0, verified"},
		)
	})
}

func testClaimJobs(t *testing.T, setup jobsSetup) {
	t.Run("OrderAndLimit", func(t *testing.T) {
		t.Parallel()
		ctx, s := setup(t)

		subs := []struct {
			id       string
			priority int
			runAt    time.Time
			created  time.Time
		}{
			{"low", -1, time.Time{}, at(0)},
			{"p0-late", 0, at(3 * time.Minute), at(0)},
			{"p0-early", 0, at(time.Minute), at(time.Second)},
			{"p0-early-newer", 0, at(time.Minute), at(2 * time.Second)},
			{"p5", 5, at(4 * time.Minute), at(3 * time.Second)},
			{"p0-now", 0, time.Time{}, at(4 * time.Second)},
		}
		for _, sub := range subs {
			j := newJob(sub.id)
			j.Spec.Priority, j.RunAt = sub.priority, sub.runAt
			mustSubmit(t, ctx, s, j, nil, sub.created)
		}
		now := at(5 * time.Minute)
		var got []string
		for _, limit := range []int{2, 1, 3, 5} {
			c := mustClaim(t, ctx, s, hostA, now, limit)
			if len(c) > limit {
				t.Errorf("ClaimJobs(limit %d) = %d jobs", limit, len(c))
			}
			for _, j := range c {
				if j.State != job.Ready || j.Fence != 1 || j.LeaseOwner != hostA || !j.LeaseUntil.Equal(msUTC(now.Add(lease))) {
					t.Errorf("claimed %s: %s, fence %d, lease %q until %s; want ready, fence 1, leased to %s until %s",
						j.ID, j.State, j.Fence, j.LeaseOwner, j.LeaseUntil, hostA, msUTC(now.Add(lease)))
				}
				checkStored(t, ctx, s, j)
			}
			got = append(got, ids(c)...)
		}
		want := []string{"p5", "p0-now", "p0-early", "p0-early-newer", "p0-late", "low"}
		if !slices.Equal(got, want) {
			t.Errorf("claim order = %v, want %v", got, want)
		}
		if c := mustClaim(t, ctx, s, hostA, now, 0); len(c) != 0 {
			t.Errorf("ClaimJobs(limit 0) = %v", ids(c))
		}
	})

	t.Run("OnlyDueUnleasedReadyAndResumable", func(t *testing.T) {
		t.Parallel()
		ctx, s := setup(t)

		bring(t, ctx, s, job.Blocked, "blocked")
		bring(t, ctx, s, job.Complete, "complete")
		later := newJob("later")
		later.RunAt = at(time.Hour)
		mustSubmit(t, ctx, s, later, nil, at(0))
		mustSubmit(t, ctx, s, deferredJob("deferred", at(time.Hour)), nil, at(0))
		// Woken early: resumable jobs are claimed whatever their RunAt.
		mustSubmit(t, ctx, s, deferredJob("resumable", at(2*time.Hour)), nil, at(0))
		mustApply(t, ctx, s, "resumable", -1, job.Change{To: job.Resumable, Reason: "test", Now: at(0)})
		mustSubmit(t, ctx, s, newJob("ready"), nil, at(0))

		c := mustClaim(t, ctx, s, hostA, at(0), 10)
		if got, want := slices.Sorted(slices.Values(ids(c))), []string{"ready", "resumable"}; !slices.Equal(got, want) {
			t.Fatalf("ClaimJobs = %v, want %v", got, want)
		}
		for _, j := range c {
			if j.State != mustJob(t, ctx, s, j.ID).State || (j.ID == "resumable") != (j.State == job.Resumable) {
				t.Errorf("claim changed %s's state to %s", j.ID, j.State)
			}
		}
		// Leased: no other host gets them until the lease ends.
		if c := mustClaim(t, ctx, s, hostB, at(lease-time.Millisecond), 10); len(c) != 0 {
			t.Errorf("ClaimJobs during the leases = %v, want none", ids(c))
		}
		c = mustClaim(t, ctx, s, hostB, at(lease), 10)
		if got, want := slices.Sorted(slices.Values(ids(c))), []string{"ready", "resumable"}; !slices.Equal(got, want) {
			t.Errorf("ClaimJobs at the leases' end = %v, want %v", got, want)
		}
		for _, j := range c {
			if j.Fence != 2 || j.LeaseOwner != hostB {
				t.Errorf("re-claimed %s at fence %d by %q, want fence 2 by %s", j.ID, j.Fence, j.LeaseOwner, hostB)
			}
		}
		// "later" comes due at its RunAt, not a millisecond before (when
		// the others' leases have long ended).
		c = mustClaim(t, ctx, s, hostB, at(time.Hour-time.Millisecond), 10)
		if got, want := slices.Sorted(slices.Values(ids(c))), []string{"ready", "resumable"}; !slices.Equal(got, want) {
			t.Errorf("ClaimJobs before later's RunAt = %v, want %v", got, want)
		}
		if c := mustClaim(t, ctx, s, hostB, at(time.Hour), 10); !slices.Equal(ids(c), []string{"later"}) {
			t.Errorf("ClaimJobs at later's RunAt = %v, want [later]", ids(c))
		}
	})

	t.Run("ConcurrentClaimersNeverShare", func(t *testing.T) {
		t.Parallel()
		ctx, s := setup(t)

		const jobs, claimers = 200, 8
		for i := range jobs {
			j := newJob(fmt.Sprintf("j%03d", i))
			j.Spec.Priority = i % 3
			mustSubmit(t, ctx, s, j, nil, at(0))
		}
		claimed := make([][]job.Job, claimers)
		errs := make([]error, claimers)
		var wg sync.WaitGroup
		for c := range claimers {
			wg.Go(func() {
				host := fmt.Sprintf("host-%d", c)
				for {
					js, err := s.ClaimJobs(ctx, host, at(0), time.Hour, 7)
					if err != nil {
						errs[c] = err
						return
					}
					if len(js) == 0 {
						return
					}
					claimed[c] = append(claimed[c], js...)
				}
			})
		}
		wg.Wait()
		if err := errors.Join(errs...); err != nil {
			t.Fatalf("ClaimJobs: %v", err)
		}
		seen := map[string]int{}
		for c, js := range claimed {
			for _, j := range js {
				seen[j.ID]++
				if j.Fence != 1 || j.LeaseOwner != fmt.Sprintf("host-%d", c) {
					t.Errorf("%s claimed at fence %d by %q", j.ID, j.Fence, j.LeaseOwner)
				}
			}
		}
		if len(seen) != jobs {
			t.Errorf("%d jobs claimed, want %d", len(seen), jobs)
		}
		for id, n := range seen {
			if n != 1 {
				t.Errorf("%s claimed %d times", id, n)
			}
		}
	})
}

func testRenewLeases(t *testing.T, setup jobsSetup) {
	t.Run("ExtendsHeldReportsLost", func(t *testing.T) {
		t.Parallel()
		ctx, s := setup(t)

		for _, id := range []string{"held", "cancelled", "retaken", "other-host", "completed"} {
			mustSubmit(t, ctx, s, newJob(id), nil, at(0))
		}
		held := map[string]int64{}
		for _, j := range mustClaim(t, ctx, s, hostA, at(0), 10) {
			held[j.ID] = j.Fence
		}
		mustApply(t, ctx, s, "cancelled", -1, job.Change{To: job.Cancelled, Reason: "cancel", Now: at(time.Second)})
		mustApply(t, ctx, s, "completed", held["completed"], job.Change{To: job.Running, Reason: "start", Now: at(time.Second)})
		mustApply(t, ctx, s, "completed", held["completed"], job.Change{To: job.Complete, Reason: "done", Now: at(2 * time.Second)})
		// "retaken": hostA's lease ran out and hostB claimed it (fence 2).
		mustApply(t, ctx, s, "retaken", held["retaken"], job.Change{Now: at(time.Second)})
		mustSweep(t, ctx, s, at(lease), store.SweepResult{Reclaimed: 3}) // held, retaken, other-host
		// Re-claim what hostA keeps, then hostB takes "retaken" and "other-host".
		for _, j := range mustClaim(t, ctx, s, hostA, at(lease), 1) {
			held[j.ID] = j.Fence
		}
		if _, ok := held["held"]; !ok || held["held"] != 2 {
			t.Fatalf("hostA did not re-claim held: %v", held)
		}
		mustClaim(t, ctx, s, hostB, at(lease), 10)
		held["unknown"] = 1

		renewAt := at(lease + 5*time.Second)
		lost, err := s.RenewLeases(ctx, hostA, held, renewAt, lease)
		want := []string{"cancelled", "completed", "other-host", "retaken", "unknown"}
		if err != nil || !slices.Equal(lost, want) {
			t.Fatalf("RenewLeases = %v, %v; want %v", lost, err, want)
		}
		j := mustJob(t, ctx, s, "held")
		if !j.LeaseUntil.Equal(msUTC(renewAt.Add(lease))) || j.LeaseOwner != hostA || j.Fence != 2 {
			t.Errorf("held after renew: lease %q until %s fence %d; want %s until %s fence 2",
				j.LeaseOwner, j.LeaseUntil, j.Fence, hostA, msUTC(renewAt.Add(lease)))
		}
		for _, id := range []string{"retaken", "other-host"} {
			if j := mustJob(t, ctx, s, id); j.LeaseOwner != hostB || !j.LeaseUntil.Equal(msUTC(at(2*lease))) {
				t.Errorf("%s: lease %q until %s; want hostB's untouched", id, j.LeaseOwner, j.LeaseUntil)
			}
		}
		// The wrong host renews nothing.
		lost, err = s.RenewLeases(ctx, hostB, map[string]int64{"held": 2}, renewAt, lease)
		if err != nil || !slices.Equal(lost, []string{"held"}) {
			t.Errorf("RenewLeases by another host = %v, %v; want [held]", lost, err)
		}
		if lost, err := s.RenewLeases(ctx, hostA, nil, renewAt, lease); err != nil || len(lost) != 0 {
			t.Errorf("RenewLeases(nothing) = %v, %v", lost, err)
		}
	})
}

func testSweepJobs(t *testing.T, setup jobsSetup) {
	t.Run("WakesRetainedDeferrals", func(t *testing.T) {
		t.Parallel()
		ctx, s := setup(t)

		mustSubmit(t, ctx, s, deferredJob("due", at(time.Minute)), nil, at(0))
		mustSubmit(t, ctx, s, deferredJob("exactly-due", at(2*time.Minute)), nil, at(0))
		mustSubmit(t, ctx, s, deferredJob("not-yet", at(2*time.Minute+time.Millisecond)), nil, at(0))
		handoff := deferredJob("handoff", at(time.Minute))
		handoff.Ownership = job.Handoff
		mustSubmit(t, ctx, s, handoff, nil, at(0))
		probe := deferredJob("no-ownership", at(time.Minute))
		probe.Ownership = job.NoOwnership
		mustSubmit(t, ctx, s, probe, nil, at(0))

		mustSweep(t, ctx, s, at(2*time.Minute), store.SweepResult{Woken: 2})
		for id, want := range map[string]job.State{
			"due": job.Resumable, "exactly-due": job.Resumable, "not-yet": job.Deferred,
			"handoff": job.Deferred, "no-ownership": job.Deferred,
		} {
			j := mustJob(t, ctx, s, id)
			if j.State != want {
				t.Errorf("%s is %s after the sweep, want %s", id, j.State, want)
			}
			if want == job.Resumable {
				if j.Fence != 0 || !j.UpdatedAt.Equal(msUTC(at(2*time.Minute))) {
					t.Errorf("%s woken: fence %d, updated %s", id, j.Fence, j.UpdatedAt)
				}
				if tr := lastTransition(t, ctx, s, id); tr.From != job.Deferred || tr.To != job.Resumable ||
					tr.Reason != "wake-up" || !tr.At.Equal(msUTC(at(2*time.Minute))) {
					t.Errorf("%s's wake-up recorded as %+v", id, tr)
				}
			}
		}
		// Nothing more to do at the same time.
		mustSweep(t, ctx, s, at(2*time.Minute), store.SweepResult{})
	})

	t.Run("ExpiresPassedResumeBy", func(t *testing.T) {
		t.Parallel()
		ctx, s := setup(t)

		// deferredJob expires an hour after its wake-up.
		handoff := deferredJob("handoff", at(0))
		handoff.Ownership = job.Handoff
		mustSubmit(t, ctx, s, handoff, nil, at(0))
		mustSubmit(t, ctx, s, deferredJob("resumable", at(0)), nil, at(0))
		mustSweep(t, ctx, s, at(0), store.SweepResult{Woken: 1})
		mustSubmit(t, ctx, s, deferredJob("claimed", at(0)), nil, at(0))
		mustSweep(t, ctx, s, at(0), store.SweepResult{Woken: 1})
		mustSubmit(t, ctx, s, deferredJob("later", at(time.Minute)), nil, at(0))
		c := mustClaim(t, ctx, s, hostA, at(time.Hour), 10)
		if len(c) != 2 {
			t.Fatalf("claimed %v, want resumable and claimed", ids(c))
		}
		mustApply(t, ctx, s, "resumable", c[slices.IndexFunc(c, func(j job.Job) bool { return j.ID == "resumable" })].Fence,
			job.Change{To: job.Deferred, Reason: "reserve short", Now: at(time.Hour),
				Mutate: func(j *job.Job) { j.RunAt, j.ResumeBy = at(2*time.Hour), at(90*time.Minute) }})
		// At resume_by a receipt is still valid: nothing expires.
		res := store.SweepResult{Woken: 1} // "later", due at 1m
		mustSweep(t, ctx, s, at(time.Hour), res)
		mustSweep(t, ctx, s, at(time.Hour+time.Millisecond), store.SweepResult{Expired: 2}) // handoff, claimed
		for id, want := range map[string]job.State{"handoff": job.Cancelled, "claimed": job.Cancelled, "resumable": job.Deferred, "later": job.Resumable} {
			j := mustJob(t, ctx, s, id)
			if j.State != want {
				t.Errorf("%s is %s, want %s", id, j.State, want)
			}
			if want == job.Cancelled {
				if tr := lastTransition(t, ctx, s, id); tr.To != job.Cancelled || tr.Reason != "expired" {
					t.Errorf("%s's expiry recorded as %+v", id, tr)
				}
			}
		}
		// The claim on "claimed" is taken with it: new fence, no lease.
		if j := mustJob(t, ctx, s, "claimed"); j.Fence != 2 || j.LeaseOwner != "" {
			t.Errorf("expired claimed job: fence %d, lease %q; want fence 2, none", j.Fence, j.LeaseOwner)
		}
		// "resumable", deferred again until 90m, and "later", woken, until 61m.
		mustSweep(t, ctx, s, at(90*time.Minute+time.Millisecond), store.SweepResult{Expired: 2})
	})

	t.Run("CancelsPastDeadline", func(t *testing.T) {
		t.Parallel()
		ctx, s := setup(t)

		deadline := at(time.Hour)
		withDeadline := func(j job.Job) job.Job { j.Spec.Deadline = deadline; return j }
		mustSubmit(t, ctx, s, withDeadline(newJob("ready")), nil, at(0))
		mustSubmit(t, ctx, s, withDeadline(deferredJob("deferred", at(2*time.Hour))), nil, at(0))
		mustSubmit(t, ctx, s, withDeadline(newJob("running")), nil, at(0))
		mustSubmit(t, ctx, s, withDeadline(newJob("complete")), nil, at(0))
		mustSubmit(t, ctx, s, withDeadline(newJob("blocked")), nil, at(0))
		mustSubmit(t, ctx, s, newJob("no-deadline"), nil, at(0))
		held := map[string]int64{}
		for _, j := range mustClaim(t, ctx, s, hostA, at(0), 10) {
			held[j.ID] = j.Fence
		}
		for _, id := range []string{"running", "complete", "blocked"} {
			mustApply(t, ctx, s, id, held[id], job.Change{To: job.Running, Reason: "start", Now: at(0),
				Attempt: &job.Attempt{ID: id + "-a", Fence: held[id], StartedAt: at(0)}})
		}
		mustApply(t, ctx, s, "complete", held["complete"], job.Change{To: job.Complete, Reason: "done", Now: at(time.Minute)})
		mustApply(t, ctx, s, "blocked", held["blocked"], job.Change{To: job.Blocked, Reason: "auth", Now: at(time.Minute)})
		// Keep the running job's lease alive past the deadline.
		if lost, err := s.RenewLeases(ctx, hostA, map[string]int64{"running": held["running"]}, deadline, time.Hour); err != nil || len(lost) != 0 {
			t.Fatalf("RenewLeases = %v, %v", lost, err)
		}
		if lost, err := s.RenewLeases(ctx, hostA, map[string]int64{"ready": held["ready"], "no-deadline": held["no-deadline"]}, deadline, time.Hour); err != nil || len(lost) != 0 {
			t.Fatalf("RenewLeases = %v, %v", lost, err)
		}

		mustSweep(t, ctx, s, deadline, store.SweepResult{})
		mustSweep(t, ctx, s, deadline.Add(time.Millisecond), store.SweepResult{PastDue: 4})
		for id, want := range map[string]job.State{
			"ready": job.Cancelled, "deferred": job.Cancelled, "running": job.Cancelled, "blocked": job.Cancelled,
			"complete": job.Complete, "no-deadline": job.Ready,
		} {
			j := mustJob(t, ctx, s, id)
			if j.State != want {
				t.Errorf("%s is %s, want %s", id, j.State, want)
				continue
			}
			if want == job.Cancelled {
				if tr := lastTransition(t, ctx, s, id); tr.To != job.Cancelled || tr.Reason != "deadline passed" {
					t.Errorf("%s's cancel recorded as %+v", id, tr)
				}
				if j.LeaseOwner != "" {
					t.Errorf("%s cancelled still leased to %q", id, j.LeaseOwner)
				}
			}
		}
		// The running job's holder loses it: new fence, its attempt killed.
		if j := mustJob(t, ctx, s, "running"); j.Fence != held["running"]+1 {
			t.Errorf("cancelled running job at fence %d, want %d", j.Fence, held["running"]+1)
		}
		lost, err := s.RenewLeases(ctx, hostA, map[string]int64{"running": held["running"]}, deadline.Add(time.Second), lease)
		if err != nil || !slices.Equal(lost, []string{"running"}) {
			t.Errorf("the holder's renew = %v, %v; want [running] lost", lost, err)
		}
		if as := mustHistory(t, ctx, s, "running").Attempts; len(as) != 1 || as[0].Outcome != "killed" ||
			!as[0].EndedAt.Equal(msUTC(deadline.Add(time.Millisecond))) {
			t.Errorf("attempts of the cancelled running job = %+v, want it killed at the sweep", as)
		}
		if as := mustHistory(t, ctx, s, "blocked").Attempts; len(as) != 1 || !as[0].EndedAt.IsZero() || as[0].Outcome != "" {
			t.Errorf("attempts of the blocked job = %+v, want its attempt untouched", as)
		}
	})

	t.Run("LeaseExpiry", func(t *testing.T) {
		t.Parallel()
		ctx, s := setup(t)

		r := running(t, ctx, s, "running", at(0))
		mustSubmit(t, ctx, s, newJob("claimed"), nil, at(0))
		mustSubmit(t, ctx, s, deferredJob("resumable", at(0)), nil, at(0))
		mustSweep(t, ctx, s, at(0), store.SweepResult{Woken: 1})
		c := mustClaim(t, ctx, s, hostA, at(time.Second), 10)
		if len(c) != 2 {
			t.Fatalf("claimed %v, want claimed and resumable", ids(c))
		}
		mustSubmit(t, ctx, s, newJob("renewed"), nil, at(time.Second))
		c = mustClaim(t, ctx, s, hostB, at(time.Second), 1)
		if lost, err := s.RenewLeases(ctx, hostB, map[string]int64{"renewed": c[0].Fence}, at(lease), lease); err != nil || len(lost) != 0 {
			t.Fatalf("RenewLeases = %v, %v", lost, err)
		}

		// "running"'s lease ends at lease; the claims at lease+1s.
		mustSweep(t, ctx, s, at(lease-time.Millisecond), store.SweepResult{})
		mustSweep(t, ctx, s, at(lease), store.SweepResult{Reclaimed: 1})
		j := mustJob(t, ctx, s, "running")
		if j.State != job.Ready || j.Fence != r.Fence || j.LeaseOwner != "" || !j.LeaseUntil.IsZero() {
			t.Errorf("after lease loss: %s at fence %d leased %q until %s; want ready at fence %d, no lease",
				j.State, j.Fence, j.LeaseOwner, j.LeaseUntil, r.Fence)
		}
		checkTransitions(t, ctx, s, "running",
			job.Transition{To: job.Ready, At: at(0), Reason: "submitted"},
			job.Transition{From: job.Ready, To: job.Running, At: at(0), Reason: "claimed"},
			job.Transition{From: job.Running, To: job.Ready, At: at(lease), Reason: "lease lost"})
		if as := mustHistory(t, ctx, s, "running").Attempts; len(as) != 1 || as[0].Outcome != "lease-lost" || !as[0].EndedAt.Equal(msUTC(at(lease))) {
			t.Errorf("attempts after lease loss = %+v, want running-a1 lease-lost at %s", as, at(lease))
		}

		mustSweep(t, ctx, s, at(lease+time.Second), store.SweepResult{Reclaimed: 2})
		for _, id := range []string{"claimed", "resumable"} {
			j := mustJob(t, ctx, s, id)
			if j.LeaseOwner != "" || j.Fence != 1 || len(mustHistory(t, ctx, s, id).Transitions) != map[string]int{"claimed": 1, "resumable": 2}[id] {
				t.Errorf("%s after its lease ended: %s leased %q at fence %d; want its state, no lease, fence 1, no transition",
					id, j.State, j.LeaseOwner, j.Fence)
			}
		}
		if j := mustJob(t, ctx, s, "renewed"); j.LeaseOwner != hostB {
			t.Errorf("a renewed lease was taken: %+v", j)
		}
		// The next claim gives the fences their next values.
		c = mustClaim(t, ctx, s, hostB, at(lease+time.Second), 10)
		for _, j := range c {
			if want := map[string]int64{"running": r.Fence + 1, "claimed": 2, "resumable": 2}[j.ID]; j.Fence != want {
				t.Errorf("re-claimed %s at fence %d, want %d", j.ID, j.Fence, want)
			}
		}
		if len(c) != 3 {
			t.Errorf("re-claimed %v, want running, claimed, resumable", ids(c))
		}
	})

	t.Run("ProgressDeadline", func(t *testing.T) {
		t.Parallel()
		ctx, s := setup(t)

		r := running(t, ctx, s, "j1", at(0))
		mustApply(t, ctx, s, "j1", r.Fence, job.Change{Now: at(time.Second), Mutate: func(j *job.Job) { j.ProgressBy = at(10 * time.Second) }})
		// The heartbeat keeps the lease; it never renews progress.
		if lost, err := s.RenewLeases(ctx, hostA, map[string]int64{"j1": r.Fence}, at(20*time.Second), lease); err != nil || len(lost) != 0 {
			t.Fatalf("RenewLeases = %v, %v", lost, err)
		}
		mustSweep(t, ctx, s, at(10*time.Second), store.SweepResult{})
		mustSweep(t, ctx, s, at(10*time.Second+time.Millisecond), store.SweepResult{Reclaimed: 1})
		j := mustJob(t, ctx, s, "j1")
		leaseEnd := msUTC(at(20*time.Second + lease))
		if j.State != job.Ready || j.Fence != r.Fence || j.LeaseOwner != "" || !j.ProgressBy.IsZero() || !j.RunAt.Equal(leaseEnd) {
			t.Errorf("after the progress deadline: %s fence %d lease %q progress %s run at %s; want ready, fence %d, no lease, run at %s",
				j.State, j.Fence, j.LeaseOwner, j.ProgressBy, j.RunAt, r.Fence, leaseEnd)
		}
		if tr := lastTransition(t, ctx, s, "j1"); tr.From != job.Running || tr.To != job.Ready || tr.Reason != "progress deadline passed" {
			t.Errorf("recorded as %+v", tr)
		}
		lost, err := s.RenewLeases(ctx, hostA, map[string]int64{"j1": r.Fence}, at(11*time.Second), lease)
		if err != nil || !slices.Equal(lost, []string{"j1"}) {
			t.Errorf("the holder's renew = %v, %v; want [j1] lost", lost, err)
		}
		if c := mustClaim(t, ctx, s, hostB, leaseEnd.Add(-time.Millisecond), 10); len(c) != 0 {
			t.Errorf("claimed %v before the old lease would have ended", ids(c))
		}
		if c := mustClaim(t, ctx, s, hostB, leaseEnd, 10); len(c) != 1 || c[0].Fence != r.Fence+1 {
			t.Errorf("claim at the old lease's end = %+v, want j1 at fence %d", c, r.Fence+1)
		}
	})

	t.Run("EachJobCountedOnce", func(t *testing.T) {
		t.Parallel()
		ctx, s := setup(t)

		// Past its deadline and its resume_by, and due to wake: cancelled
		// for the deadline only.
		j := deferredJob("j1", at(0))
		j.Spec.Deadline = at(time.Minute)
		mustSubmit(t, ctx, s, j, nil, at(0))
		mustSweep(t, ctx, s, at(2*time.Hour), store.SweepResult{PastDue: 1})
		checkTransitions(t, ctx, s, "j1",
			job.Transition{To: job.Deferred, At: at(0), Reason: "submitted"},
			job.Transition{From: job.Deferred, To: job.Cancelled, At: at(2 * time.Hour), Reason: "deadline passed"})
		mustSweep(t, ctx, s, at(3*time.Hour), store.SweepResult{})
	})
}

func testNextJobDue(t *testing.T, setup jobsSetup) {
	tests := []struct {
		name   string
		build  func(t *testing.T, ctx context.Context, s store.Store)
		want   time.Time
		wantOK bool
	}{
		{"Empty", func(*testing.T, context.Context, store.Store) {}, time.Time{}, false},
		{"OnlyEnded", func(t *testing.T, ctx context.Context, s store.Store) {
			bring(t, ctx, s, job.Complete, "c")
			bring(t, ctx, s, job.Cancelled, "x")
		}, time.Time{}, false},
		{"ReadyRunAt", func(t *testing.T, ctx context.Context, s store.Store) {
			j := newJob("r")
			j.RunAt = at(5*time.Minute + time.Microsecond)
			mustSubmit(t, ctx, s, j, nil, at(0))
		}, at(5 * time.Minute), true},
		{"ClaimedReadyLease", func(t *testing.T, ctx context.Context, s store.Store) {
			mustSubmit(t, ctx, s, newJob("r"), nil, at(0))
			mustClaim(t, ctx, s, hostA, at(time.Minute), 1)
		}, at(time.Minute + lease), true},
		{"RetainedWakeUp", func(t *testing.T, ctx context.Context, s store.Store) {
			mustSubmit(t, ctx, s, deferredJob("d", at(10*time.Minute)), nil, at(0))
		}, at(10 * time.Minute), true},
		{"HandoffExpiry", func(t *testing.T, ctx context.Context, s store.Store) {
			j := deferredJob("d", at(10*time.Minute))
			j.Ownership = job.Handoff
			mustSubmit(t, ctx, s, j, nil, at(0))
		}, at(70*time.Minute + time.Millisecond), true},
		{"ResumableClaimable", func(t *testing.T, ctx context.Context, s store.Store) {
			mustSubmit(t, ctx, s, deferredJob("d", at(time.Minute)), nil, at(0))
			mustSweep(t, ctx, s, at(2*time.Minute), store.SweepResult{Woken: 1})
		}, at(time.Minute), true},
		{"ClaimedResumableExpiry", func(t *testing.T, ctx context.Context, s store.Store) {
			mustSubmit(t, ctx, s, deferredJob("d", at(time.Minute)), nil, at(0))
			mustSweep(t, ctx, s, at(2*time.Minute), store.SweepResult{Woken: 1})
			c := mustClaim(t, ctx, s, hostA, at(2*time.Minute), 1)
			mustRenew(t, ctx, s, c[0], at(2*time.Minute), 2*time.Hour)
		}, at(61*time.Minute + time.Millisecond), true},
		{"RunningLease", func(t *testing.T, ctx context.Context, s store.Store) {
			r := running(t, ctx, s, "r", at(0))
			mustApply(t, ctx, s, "r", r.Fence, job.Change{Now: at(0), Mutate: func(j *job.Job) { j.ProgressBy = at(time.Hour) }})
		}, at(lease), true},
		{"RunningProgress", func(t *testing.T, ctx context.Context, s store.Store) {
			r := running(t, ctx, s, "r", at(0))
			mustApply(t, ctx, s, "r", r.Fence, job.Change{Now: at(0), Mutate: func(j *job.Job) { j.ProgressBy = at(5 * time.Minute) }})
			mustRenew(t, ctx, s, r, at(0), time.Hour)
		}, at(5*time.Minute + time.Millisecond), true},
		{"BlockedDeadline", func(t *testing.T, ctx context.Context, s store.Store) {
			bring(t, ctx, s, job.Blocked, "b")
			j := newJob("later")
			j.RunAt, j.Spec.Deadline = at(3*time.Hour), at(2*time.Hour)
			mustSubmit(t, ctx, s, j, nil, at(0))
			// A blocked job waits for an operator; only its deadline is due.
			j = newJob("blocked")
			j.Spec.Deadline = at(time.Hour)
			mustSubmit(t, ctx, s, j, nil, at(0))
			c := mustClaim(t, ctx, s, hostA, at(0), 1)
			mustApply(t, ctx, s, "blocked", c[0].Fence, job.Change{To: job.Running, Reason: "start", Now: at(0)})
			mustApply(t, ctx, s, "blocked", c[0].Fence, job.Change{To: job.Blocked, Reason: "auth", Now: at(0)})
		}, at(time.Hour + time.Millisecond), true},
		{"AuthWaitRecheck", func(t *testing.T, ctx context.Context, s store.Store) {
			authWaiting(t, ctx, s, "a", at(2*time.Hour), at(15*time.Minute+time.Microsecond))
		}, at(15 * time.Minute), true},
		{"AuthWaitDeadline", func(t *testing.T, ctx context.Context, s store.Store) {
			// A re-check after the deadline: the deadline comes first.
			authWaiting(t, ctx, s, "a", at(time.Hour), at(2*time.Hour))
		}, at(time.Hour + time.Millisecond), true},
		{"AuthWaitNoRecheck", func(t *testing.T, ctx context.Context, s store.Store) {
			// No RunAt: no re-check is scheduled, only the deadline is due.
			authWaiting(t, ctx, s, "a", at(3*time.Hour), time.Time{})
		}, at(3*time.Hour + time.Millisecond), true},
		{"AuthWaitNothingScheduled", func(t *testing.T, ctx context.Context, s store.Store) {
			authWaiting(t, ctx, s, "a", time.Time{}, time.Time{})
		}, time.Time{}, false},
		{"Earliest", func(t *testing.T, ctx context.Context, s store.Store) {
			mustSubmit(t, ctx, s, deferredJob("d1", at(10*time.Minute)), nil, at(0))
			mustSubmit(t, ctx, s, deferredJob("d2", at(4*time.Minute)), nil, at(0))
			j := newJob("r")
			j.RunAt = at(7 * time.Minute)
			mustSubmit(t, ctx, s, j, nil, at(0))
		}, at(4 * time.Minute), true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ctx, s := setup(t)

			tt.build(t, ctx, s)
			got, ok, err := s.NextJobDue(ctx)
			if err != nil || ok != tt.wantOK {
				t.Fatalf("NextJobDue = %s, %v, %v; want %s, %v", got, ok, err, tt.want, tt.wantOK)
			}
			if d := diffTime("NextJobDue", got, msUTC(tt.want)); d != "" {
				t.Error(d)
			}
		})
	}
}

func mustRenew(t *testing.T, ctx context.Context, s store.Store, j job.Job, now time.Time, d time.Duration) {
	t.Helper()
	if lost, err := s.RenewLeases(ctx, j.LeaseOwner, map[string]int64{j.ID: j.Fence}, now, d); err != nil || len(lost) != 0 {
		t.Fatalf("RenewLeases(%s) = %v, %v", j.ID, lost, err)
	}
}

func testHosts(t *testing.T, setup jobsSetup) {
	t.Run("RegisterHeartbeatUnregister", func(t *testing.T) {
		t.Parallel()
		ctx, s := setup(t)

		check := func(what string, want ...job.Host) {
			t.Helper()
			got, err := s.Hosts(ctx)
			if err != nil || len(got) != len(want) {
				t.Fatalf("%s: Hosts = %+v, %v; want %+v", what, got, err, want)
			}
			for i, w := range want {
				g := got[i]
				if g.ID != w.ID || g.Hostname != w.Hostname || g.PID != w.PID || g.Lease != w.Lease {
					t.Errorf("%s: Hosts[%d] = %+v, want %+v", what, i, g, w)
				}
				for _, d := range []string{diffTime("StartedAt", g.StartedAt, msUTC(w.StartedAt)), diffTime("LastSeen", g.LastSeen, msUTC(w.LastSeen))} {
					if d != "" {
						t.Errorf("%s: Hosts[%d]: %s", what, i, d)
					}
				}
			}
		}
		check("empty")
		b := job.Host{ID: "h-b", Hostname: "box-b", PID: 42, StartedAt: at(time.Microsecond), LastSeen: at(time.Second), Lease: 90 * time.Second}
		a := job.Host{ID: "h-a", Hostname: "box-a", PID: 7, StartedAt: at(0), LastSeen: at(0), Lease: 30 * time.Second}
		for _, h := range []job.Host{b, a} {
			if err := s.RegisterHost(ctx, h); err != nil {
				t.Fatalf("RegisterHost(%s): %v", h.ID, err)
			}
		}
		check("registered", a, b)

		if err := s.HostHeartbeat(ctx, "h-a", at(10*time.Second)); err != nil {
			t.Fatalf("HostHeartbeat: %v", err)
		}
		// A heartbeat that commits late never moves LastSeen back.
		if err := s.HostHeartbeat(ctx, "h-a", at(5*time.Second)); err != nil {
			t.Fatalf("HostHeartbeat: %v", err)
		}
		a.LastSeen = at(10 * time.Second)
		check("after heartbeats", a, b)
		if err := s.HostHeartbeat(ctx, "h-nope", at(0)); !errors.Is(err, job.ErrNotFound) {
			t.Errorf("HostHeartbeat of an unknown host = %v, want job.ErrNotFound", err)
		}

		// Registering again (a restart) replaces the record, its lease too.
		a2 := job.Host{ID: "h-a", Hostname: "box-a", PID: 8, StartedAt: at(time.Minute), LastSeen: at(time.Minute), Lease: 5 * time.Second}
		if err := s.RegisterHost(ctx, a2); err != nil {
			t.Fatalf("RegisterHost again: %v", err)
		}
		check("re-registered", a2, b)

		// A host with no lease would never be live while its claims held:
		// it is refused, and the record it would replace is kept.
		for _, bad := range []job.Host{{ID: "h-a", Lease: 0}, {ID: "h-a", Lease: -time.Second}, {ID: "", Lease: time.Second}} {
			if err := s.RegisterHost(ctx, bad); err == nil {
				t.Errorf("RegisterHost(%+v) = nil, want an error", bad)
			}
		}
		check("after refused registrations", a2, b)

		for _, id := range []string{"h-b", "h-b", "h-nope"} {
			if err := s.UnregisterHost(ctx, id); err != nil {
				t.Errorf("UnregisterHost(%s) = %v, want nil", id, err)
			}
		}
		check("after unregister", a2)
	})
}
