package host_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/layoverhq/layover/host"
	"github.com/layoverhq/layover/job"
	"github.com/layoverhq/layover/quota"
	"github.com/layoverhq/layover/receipt"
	"github.com/layoverhq/layover/store"
)

// checks renders a job's recorded reconcile checks as trigger:result.
func checks(h job.History) string {
	var parts []string
	for _, c := range h.Checks {
		parts = append(parts, c.Trigger+":"+c.Result)
	}
	return strings.Join(parts, " ")
}

// A transient retry reconciles first: the check runs before the second
// attempt and is recorded; its exit 0 completes the job without running it.
func TestTransientRetryReconcilesFirst(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, check string
		runs        int
		want        job.State
		checks      string
	}{
		{"not done: runs", "exit 1", 2, job.Complete, "transient retry:run"},
		{"done already: completes", "exit 0", 1, job.Complete, "transient retry:complete"},
		{"unsafe: blocks", "exit 3", 1, job.Blocked, "transient retry:blocked"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			b.script.push(func(context.Context, host.Run) error { return errors.New("connection reset") }, ok)
			b.submit("j", job.Spec{CheckCmd: tc.check})
			b.await("j", func(j job.Job) bool { return j.State == job.Ready && j.Attempts == 1 }, "ready after a transient failure")
			b.clock.Advance(host.DefaultBackoff)
			b.awaitState("j", tc.want)
			h := b.history("j")
			if got := checks(h); got != tc.checks {
				t.Errorf("checks %q, want %q", got, tc.checks)
			}
			if b.script.count() != tc.runs {
				t.Errorf("%d runs, want %d", b.script.count(), tc.runs)
			}
			if c := h.Checks[0]; c.ExitCode == nil || c.Fence != 2 {
				t.Errorf("check %+v: want its exit code, under the second claim's fence", c)
			}
		})
	}
}

// The first attempt of a job never reconciles: there is nothing to check
// yet.
func TestFirstAttemptRunsWithoutCheck(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.submit("j", job.Spec{CheckCmd: "exit 0"})
	b.awaitState("j", job.Complete)
	if h := b.history("j"); len(h.Checks) != 0 || b.script.count() != 1 {
		t.Fatalf("checks %q, runs %d: the first attempt runs, unchecked", checks(h), b.script.count())
	}
}

// A job taken back from its attempt (its progress deadline passed, and its
// lease with it: no heartbeat renews it on the fake clock) reconciles
// before the re-claim runs it again.
func TestReclaimReconcilesFirst(t *testing.T) {
	t.Parallel()
	b := setup(t)
	stopped := make(chan struct{})
	b.script.push(func(ctx context.Context, _ host.Run) error {
		<-ctx.Done()
		close(stopped)
		return ctx.Err()
	})
	b.submit("j", job.Spec{ProgressTimeout: time.Minute, CheckCmd: "exit 0"})
	b.await("j", func(j job.Job) bool { return j.State == job.Running }, "running")
	b.clock.Advance(61 * time.Second)
	<-stopped
	b.reclaimAfterLapse("j")
	b.awaitState("j", job.Complete)
	h := b.history("j")
	if len(h.Checks) != 1 || h.Checks[0].Result != job.CheckComplete ||
		(h.Checks[0].Trigger != host.TriggerLeaseLost && h.Checks[0].Trigger != host.TriggerProgress) {
		t.Fatalf("checks %q: the re-claim must reconcile first", checks(h))
	}
	if b.script.count() != 1 {
		t.Fatalf("%d runs: the check said the outcome holds", b.script.count())
	}
}

// A resume reconciles too, and its check is recorded.
func TestResumeRecordsItsCheck(t *testing.T) {
	t.Parallel()
	b := setup(t)
	reset := t0.Add(10 * time.Minute)
	b.script.push(func(context.Context, host.Run) error { return host.Quota("github", "core", reset) }, ok)
	b.submit("j", job.Spec{Quota: []string{"github"}, CheckCmd: "exit 1"})
	j := b.awaitState("j", job.Deferred)
	b.clock.Advance(j.RunAt.Sub(t0))
	b.awaitState("j", job.Complete)
	if got := checks(b.history("j")); got != "resume:run" {
		t.Fatalf("checks %q", got)
	}
}

// An authentication failure waits for credentials, apart from the quota
// waits: a quota reset does not end it, a credentials check that passes
// does, on the capped backoff.
func TestAuthWaitEndsWhenCredentialsWork(t *testing.T) {
	t.Parallel()
	creds := &fakeCredentials{answers: []bool{false, true}}
	b := setup(t, func(c *host.Config) { c.Credentials = creds })
	b.script.push(func(context.Context, host.Run) error { return host.Auth("bad credentials") }, ok)
	b.submit("j", job.Spec{Quota: []string{"github"}})
	j := b.awaitState("j", job.AuthWait)
	if !strings.HasPrefix(j.Stage, "Waiting for credentials since ") {
		t.Fatalf("stage %q", j.Stage)
	}
	if !j.RunAt.Equal(t0.Add(host.DefaultAuthRecheck)) {
		t.Fatalf("first check at %s, want a minute on", j.RunAt)
	}
	// The quota resets: nothing changes.
	if err := b.st.RecordStates(context.Background(), []quota.State{{Key: coreKey, Limit: 5000, Remaining: 5000,
		ResetAt: t0.Add(time.Hour), ResetKnown: true, ObservedAt: t0}}); err != nil {
		t.Fatal(err)
	}
	b.clock.Advance(time.Minute)
	j = b.await("j", func(j job.Job) bool { return j.Probes == 1 }, "checked once")
	if j.State != job.AuthWait || !j.RunAt.Equal(t0.Add(6*time.Minute)) {
		t.Fatalf("after a failed check: %s, next check %s; want auth-wait, 5 minutes on", j.State, j.RunAt)
	}
	b.clock.Advance(5 * time.Minute)
	b.awaitState("j", job.Complete)
	if creds.calls() != 2 || b.script.count() != 2 {
		t.Fatalf("%d checks, %d runs", creds.calls(), b.script.count())
	}
	if got := transitions(b.history("j")); !strings.Contains(got, "running>auth-wait auth-wait>ready ready>running") {
		t.Fatalf("transitions %s", got)
	}
}

// Without a credentials check, a job waits for credentials until
// `layover unblock`, and the stage says so.
func TestAuthWaitWithoutCheckWaitsForUnblock(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.script.push(func(context.Context, host.Run) error { return host.Auth("expired") }, ok)
	b.submit("j", job.Spec{})
	b.awaitState("j", job.AuthWait)
	b.clock.Advance(time.Minute)
	j := b.await("j", func(j job.Job) bool { return strings.Contains(j.Stage, "layover unblock j") }, "told to unblock")
	if j.State != job.AuthWait {
		t.Fatalf("state %s", j.State)
	}
	if _, err := b.ops.Unblock(context.Background(), "j"); err != nil {
		t.Fatal(err)
	}
	b.host.Nudge() // another front door's change: the host sees it at its next look
	b.awaitState("j", job.Complete)
}

// An auth-wait job past its deadline fails.
func TestAuthWaitFailsAtTheDeadline(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.script.push(func(context.Context, host.Run) error { return host.Auth("expired") })
	b.submit("j", job.Spec{Deadline: t0.Add(30 * time.Minute)})
	b.awaitState("j", job.AuthWait)
	b.clock.Advance(31 * time.Minute)
	b.awaitState("j", job.Failed)
}

// Secondary limits in a row are bounded as for run: past the policy's
// retries the job fails.
func TestSecondaryLimitsAreBounded(t *testing.T) {
	t.Parallel()
	b := setup(t)
	retries := b.cfg.Policy.SecondaryRetries
	for range retries + 1 {
		b.script.push(func(context.Context, host.Run) error { return host.Secondary("github", "core", time.Second) })
	}
	b.submit("j", job.Spec{Quota: []string{"github"}})
	for i := 0; ; i++ {
		j := b.await("j", func(j job.Job) bool { return j.State == job.Deferred || j.State == job.Failed }, "deferred or failed")
		if j.State == job.Failed {
			if i != retries || !strings.Contains(j.Stage, "secondary limit again") {
				t.Fatalf("failed after %d deferrals (%q), want %d", i, j.Stage, retries)
			}
			return
		}
		b.clock.Advance(j.RunAt.Sub(b.clock.Now()))
		b.await("j", func(x job.Job) bool { return x.State != job.Deferred || x.Secondaries != j.Secondaries }, "resumed")
	}
}

// A Go-API job submitted without a deadline gets the default one, and the
// same submission again is the same job.
func TestDefaultDeadline(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.host.Stop()
	j, _, err := b.ops.Submit(context.Background(), "j", job.Spec{Argv: []string{"true"}})
	if err != nil {
		t.Fatal(err)
	}
	if !j.Spec.Deadline.Equal(t0.Add(host.DefaultDeadline)) {
		t.Fatalf("deadline %s", j.Spec.Deadline)
	}
	b.clock.Advance(time.Hour)
	if _, created, err := b.ops.Submit(context.Background(), "j", job.Spec{Argv: []string{"true"}}); err != nil || created {
		t.Fatalf("again: created %v, err %v", created, err)
	}
}

// A retained receipt's ownership digests bind what the store keeps with
// it: the host and the fence it was issued under, and its wake-up.
func TestReceiptOwnershipIsEvidence(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.script.push(func(context.Context, host.Run) error { return host.Quota("github", "core", t0.Add(time.Hour)) })
	b.submit("j", job.Spec{Quota: []string{"github"}})
	b.awaitState("j", job.Deferred)
	rows := b.history("j").Receipts
	rc := decodeReceipts(t, b.history("j"))[0]
	if rows[0].HostID != "host-a" || rows[0].Fence != 1 {
		t.Fatalf("receipt kept with host %q fence %d", rows[0].HostID, rows[0].Fence)
	}
	o := receipt.Owner{JobID: "j", HostID: rows[0].HostID, Fence: rows[0].Fence, WakeAt: rc.ResumeAfter()}
	if !o.Names(rc) {
		t.Fatal("the receipt's digests are not those of the wake-up the store keeps")
	}
	o.HostID = "host-b"
	if o.Names(rc) {
		t.Fatal("another host's wake-up matches too")
	}
}

// fakeCredentials answers credentials checks from a list (the last answer
// repeats), counting them.
type fakeCredentials struct {
	mu      sync.Mutex
	answers []bool
	n       int
}

func (f *fakeCredentials) CheckCredentials(context.Context, []quota.Key) (ok, known bool, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	ok = f.answers[min(f.n, len(f.answers)-1)]
	f.n++
	return ok, true, nil
}

func (f *fakeCredentials) calls() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.n
}

// A host stopping while a re-run's check runs gives the job back: the
// killed check is no verdict, and nothing is recorded of it.
func TestStopDuringCheckGivesTheJobBack(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.script.push(func(context.Context, host.Run) error { return errors.New("connection reset") })
	b.submit("j", job.Spec{CheckCmd: "sleep 30"})
	b.await("j", func(j job.Job) bool { return j.State == job.Ready && j.Attempts == 1 }, "ready after a transient failure")
	b.clock.Advance(host.DefaultBackoff)
	b.await("j", func(j job.Job) bool { return j.State == job.Running && j.Runs == 1 }, "running its check")
	b.host.Stop()
	j, err := b.st.Job(context.Background(), "j")
	if err != nil || j.State != job.Ready || j.LeaseOwner != "" {
		t.Fatalf("after the stop: %s held by %q (%v); want ready, unclaimed", j.State, j.LeaseOwner, err)
	}
	if h := b.history("j"); len(h.Checks) != 0 {
		t.Fatalf("checks %q: a check the stop killed is no verdict", checks(h))
	}
}

// A job whose credentials check passes but whose run fails for
// credentials again waits longer each round.
func TestAuthWaitBacksOffAcrossRounds(t *testing.T) {
	t.Parallel()
	creds := &fakeCredentials{answers: []bool{true}}
	b := setup(t, func(c *host.Config) { c.Credentials = creds })
	for range 3 {
		b.script.push(func(context.Context, host.Run) error { return host.Auth("SAML enforcement") })
	}
	b.submit("j", job.Spec{Quota: []string{"github"}})
	var waits []time.Duration
	for round := range 3 {
		j := b.await("j", func(j job.Job) bool { return j.State == job.AuthWait && j.Runs == round+1 }, "waiting for credentials")
		waits = append(waits, j.RunAt.Sub(b.clock.Now()))
		b.clock.Advance(j.RunAt.Sub(b.clock.Now()))
	}
	if !(waits[0] < waits[1] && waits[1] < waits[2]) {
		t.Fatalf("waits %v: each round must wait longer", waits)
	}
}

// keyedCredentials answers credentials checks by the keys' resource,
// counting the checks of each.
type keyedCredentials struct {
	mu    sync.Mutex
	works map[string]bool
	calls map[string]int
}

func (f *keyedCredentials) CheckCredentials(_ context.Context, keys []quota.Key) (ok, known bool, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	ok = true
	for _, k := range keys {
		f.calls[k.Resource]++
		ok = ok && f.works[k.Resource]
	}
	return ok, true, nil
}

func (f *keyedCredentials) set(res string, works bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.works[res] = works
}

func (f *keyedCredentials) count(res string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls[res]
}

// Jobs waiting on the same credential share one check a round: its answer
// moves each of them on its own backoff, and each runs again on its own;
// a job on another credential has its own check.
func TestAuthWaitJobsOnOneCredentialShareItsCheck(t *testing.T) {
	t.Parallel()
	stores(t, testAuthWaitJobsOnOneCredentialShareItsCheck)
}

func testAuthWaitJobsOnOneCredentialShareItsCheck(t *testing.T, st store.Store) {
	creds := &keyedCredentials{works: map[string]bool{"search": true}, calls: map[string]int{}}
	b := setupOn(t, st, func(c *host.Config) { c.Credentials = creds })
	for range 3 {
		b.script.push(func(context.Context, host.Run) error { return host.Auth("bad credentials") })
	}
	b.submit("a", job.Spec{Quota: []string{"github"}})
	b.submit("b", job.Spec{Quota: []string{"github:core"}})
	b.submit("c", job.Spec{Quota: []string{"github:search"}})
	for _, id := range []string{"a", "b", "c"} {
		b.awaitState(id, job.AuthWait)
	}
	b.clock.Advance(time.Minute)
	b.awaitState("c", job.Complete)
	for _, id := range []string{"a", "b"} {
		j := b.await(id, func(j job.Job) bool { return j.Probes == 1 }, "checked once")
		if j.State != job.AuthWait || !j.RunAt.Equal(t0.Add(6*time.Minute)) {
			t.Fatalf("%s after a failed check: %s, next check %s; want auth-wait, 5 minutes on", id, j.State, j.RunAt)
		}
	}
	if n, m := creds.count("core"), creds.count("search"); n != 1 || m != 1 {
		t.Fatalf("checks: %d of core (a and b), %d of search; want one each", n, m)
	}
	creds.set("core", true)
	b.clock.Advance(5 * time.Minute)
	for _, id := range []string{"a", "b"} {
		b.awaitState(id, job.Complete)
		if got := transitions(b.history(id)); !strings.Contains(got, "running>auth-wait auth-wait>ready ready>running") {
			t.Fatalf("%s: transitions %s", id, got)
		}
	}
	if n := creds.count("core"); n != 2 || b.script.count() != 6 {
		t.Fatalf("%d checks of core, %d runs; want 2 and 6", n, b.script.count())
	}
}
