package host_test

import (
	"context"
	"errors"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/layoverhq/layover/clock"
	"github.com/layoverhq/layover/host"
	"github.com/layoverhq/layover/job"
	"github.com/layoverhq/layover/quota"
	"github.com/layoverhq/layover/receipt"
	"github.com/layoverhq/layover/store"
	"github.com/layoverhq/layover/store/postgres"
	"github.com/layoverhq/layover/store/postgres/pgtest"
	"github.com/layoverhq/layover/store/sqlite"
)

var t0 = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

var coreKey = quota.Key{Host: "api.github.com", Principal: "octocat", Resource: "core"}

// fakeQuotas resolves "github[:RES]" for octocat and answers Fresh from a
// settable list.
type fakeQuotas struct {
	mu    sync.Mutex
	fresh []quota.State
	err   error
}

func (f *fakeQuotas) Keys(_ context.Context, names []string) ([]quota.Key, error) {
	var out []quota.Key
	for _, n := range names {
		_, res, ok := strings.Cut(n, ":")
		if !ok {
			res = "core"
		}
		out = append(out, quota.Key{Host: "api.github.com", Principal: "octocat", Resource: res})
	}
	return out, nil
}

func (f *fakeQuotas) Fresh(context.Context, []quota.Key) ([]quota.State, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]quota.State(nil), f.fresh...), f.err
}

func (f *fakeQuotas) set(states ...quota.State) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.fresh = states
}

// script is a FuncRunner whose answers the test queues, one per attempt.
type script struct {
	mu      sync.Mutex
	answers []func(ctx context.Context, r host.Run) error
	runs    []host.Run
}

func (s *script) push(fs ...func(ctx context.Context, r host.Run) error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.answers = append(s.answers, fs...)
}

func (s *script) run(ctx context.Context, r host.Run) error {
	s.mu.Lock()
	s.runs = append(s.runs, r)
	var f func(ctx context.Context, r host.Run) error
	if len(s.answers) > 0 {
		f, s.answers = s.answers[0], s.answers[1:]
	}
	s.mu.Unlock()
	if f == nil {
		return nil
	}
	return f(ctx, r)
}

func (s *script) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.runs)
}

func ok(context.Context, host.Run) error { return nil }

type bundle struct {
	t      *testing.T
	cfg    host.Config
	st     store.Store
	clock  *clock.Fake
	quotas *fakeQuotas
	script *script
	host   *host.Host
	// ops is an operator's front door to the same store, as the CLI's.
	ops *host.Jobs
	// events merges the events of the host, ops and every host the test
	// follows.
	events chan host.Event
}

// follow merges f's events into b.events until the test ends.
func (b *bundle) follow(f *host.Jobs) {
	sub := f.Subscribe(4096)
	done := make(chan struct{})
	b.t.Cleanup(func() { close(done); sub.Close() })
	go func() {
		for ev := range sub.C() {
			select {
			case b.events <- ev:
			case <-done:
				return
			}
		}
	}()
}

func setup(t *testing.T, mutate ...func(*host.Config)) *bundle {
	t.Helper()
	st, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "l.db"))
	if err != nil {
		t.Fatal(err)
	}
	return setupOn(t, st, mutate...)
}

// stores runs f on a SQLite store and, when LAYOVER_TEST_POSTGRES names a
// server, on a PostgreSQL schema of its own.
func stores(t *testing.T, f func(t *testing.T, st store.Store)) {
	t.Run("sqlite", func(t *testing.T) {
		t.Parallel()
		st, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "l.db"))
		if err != nil {
			t.Fatal(err)
		}
		f(t, st)
	})
	t.Run("postgres", func(t *testing.T) {
		t.Parallel()
		st, err := postgres.Open(context.Background(), pgtest.Schema(t))
		if err != nil {
			t.Fatal(err)
		}
		f(t, st)
	})
}

// setupOn is setup on st, which the bundle closes.
func setupOn(t *testing.T, st store.Store, mutate ...func(*host.Config)) *bundle {
	t.Helper()
	b := &bundle{t: t, st: st, clock: clock.NewFake(t0), quotas: &fakeQuotas{}, script: &script{}}
	p := quota.DefaultPolicy()
	p.Jitter = 0
	cfg := host.Config{Store: st, Runner: host.FuncRunner(b.script.run), Quotas: b.quotas, Policy: p,
		Clock: b.clock, ID: "host-a", Env: []string{"PATH=/usr/bin:/bin", "HOME=/tmp"}, CheckpointDir: t.TempDir(),
		Logger: slog.New(slog.NewTextHandler(testWriter{t}, nil))}
	for _, m := range mutate {
		m(&cfg)
	}
	h, err := host.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	b.host, b.cfg = h, cfg
	if b.ops, err = host.NewJobs(host.Config{Store: st, Clock: b.clock}); err != nil {
		t.Fatal(err)
	}
	b.events = make(chan host.Event, 4096)
	b.follow(h.Jobs)
	b.follow(b.ops)
	if err := h.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Stop(); st.Close() })
	return b
}

func (b *bundle) submit(id string, spec job.Spec) {
	b.t.Helper()
	if len(spec.Argv) == 0 {
		spec.Argv = []string{"true"}
	}
	if _, _, err := b.host.Submit(context.Background(), id, spec); err != nil {
		b.t.Fatal(err)
	}
}

// await waits until the job satisfies cond: the host's own goroutines
// move it, so the test reads the job once, then again on each event that
// may have changed it (one of this job's, or a sweep's).
func (b *bundle) await(id string, cond func(job.Job) bool, what string) job.Job {
	b.t.Helper()
	timeout := time.After(10 * time.Second)
	for {
		j, err := b.st.Job(context.Background(), id)
		if err == nil && cond(j) {
			return j
		}
		for changed := false; !changed; {
			select {
			case ev := <-b.events:
				changed = ev.JobID == id || ev.JobID == ""
			case <-timeout:
				b.t.Fatalf("job %s never became %s; last: %+v (err %v)", id, what, j, err)
			}
		}
	}
}

// awaitStill waits until the host is still (Host.Still): nothing it does
// can move a job before the clock moves, so a test may read the store and
// then decide how far to move the clock.
func (b *bundle) awaitStill() {
	b.t.Helper()
	timeout := time.After(10 * time.Second)
	for {
		if still, _ := b.host.Still(); still {
			return
		}
		select {
		case <-b.host.Stilled():
		case <-timeout:
			b.t.Fatal("the host never became still")
		}
	}
}

// reclaimAfterLapse moves the clock a lease further when the job's
// stopped attempt left its claim (fence 1) standing, renewed before the
// progress deadline stopped it: the sweep takes the job back once that
// lease runs out. Had the sweep taken it back already, a move would let
// the new claim's own lease lapse under its check.
func (b *bundle) reclaimAfterLapse(id string) {
	b.t.Helper()
	b.awaitStill()
	j, err := b.st.Job(context.Background(), id)
	if err != nil {
		b.t.Fatal(err)
	}
	if j.Fence < 2 {
		b.clock.Advance(host.DefaultLease)
	}
}

func (b *bundle) awaitState(id string, s job.State) job.Job {
	b.t.Helper()
	return b.await(id, func(j job.Job) bool { return j.State == s && j.LeaseOwner == "" }, string(s))
}

func (b *bundle) history(id string) job.History {
	b.t.Helper()
	h, err := b.st.JobHistory(context.Background(), id)
	if err != nil {
		b.t.Fatal(err)
	}
	return h
}

func transitions(h job.History) string {
	var parts []string
	for _, tr := range h.Transitions {
		parts = append(parts, string(tr.From)+">"+string(tr.To))
	}
	return strings.Join(parts, " ")
}

func TestReadyRunsToComplete(t *testing.T) {
	t.Parallel()
	b := setup(t)
	var seen host.Run
	b.script.push(func(_ context.Context, r host.Run) error { seen = r; return nil })
	b.submit("j1", job.Spec{})
	j := b.awaitState("j1", job.Complete)
	if j.Attempts != 0 {
		t.Errorf("attempts %d", j.Attempts)
	}
	if got := transitions(b.history("j1")); got != ">ready ready>running running>complete" {
		t.Errorf("transitions %q", got)
	}
	env := strings.Join(seen.Env, "\n")
	for _, want := range []string{"LAYOVER_JOB_ID=j1", "LAYOVER_ATTEMPT_ID=att-", "LAYOVER_FENCE=1"} {
		if !strings.Contains(env, want) {
			t.Errorf("job env lacks %s", want)
		}
	}
}

func TestVerifyCommandDecidesCompletion(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.submit("good", job.Spec{VerifyCmd: "exit 0"})
	b.submit("bad", job.Spec{VerifyCmd: "exit 3"})
	b.awaitState("good", job.Complete)
	j := b.awaitState("bad", job.Failed)
	if !strings.Contains(j.Stage, "verify-cmd failed (exit 3)") {
		t.Errorf("stage %q", j.Stage)
	}
}

func TestTransientFailuresRetryWithBackoffThenFail(t *testing.T) {
	t.Parallel()
	b := setup(t)
	boom := func(context.Context, host.Run) error { return errors.New("connection reset") }
	b.script.push(boom, boom)
	b.submit("j", job.Spec{MaxAttempts: 2})
	j := b.await("j", func(j job.Job) bool { return j.State == job.Ready && j.Attempts == 1 }, "ready after a failure")
	if !j.RunAt.Equal(t0.Add(10 * time.Second)) {
		t.Fatalf("after one transient failure: attempts %d run at %v; want 1 and +10s", j.Attempts, j.RunAt)
	}
	b.clock.Advance(10 * time.Second)
	j = b.awaitState("j", job.Failed)
	if !strings.Contains(j.Stage, "no attempts left") || b.script.count() != 2 {
		t.Fatalf("stage %q, runs %d", j.Stage, b.script.count())
	}
}

// A permanent failure fails the job; an authentication failure waits for
// credentials (auth-wait), which `layover unblock` ends too.
func TestPermanentFailsAndAuthWaits(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.script.push(func(context.Context, host.Run) error { return host.Permanent("404") })
	b.submit("perm", job.Spec{})
	b.awaitState("perm", job.Failed)

	b.script.push(func(context.Context, host.Run) error { return host.Auth("bad credentials") }, ok)
	b.submit("auth", job.Spec{})
	j := b.awaitState("auth", job.AuthWait)
	if !strings.Contains(j.Stage, "bad credentials") {
		t.Errorf("stage %q", j.Stage)
	}
	if _, err := b.ops.Unblock(context.Background(), "auth"); err != nil {
		t.Fatal(err)
	}
	b.host.Nudge()
	b.awaitState("auth", job.Complete)
}

func TestQuotaDefersWithReceiptAndResumesFresh(t *testing.T) {
	t.Parallel()
	b := setup(t)
	reset := t0.Add(30 * time.Minute)
	b.script.push(func(context.Context, host.Run) error { return host.Quota("github", "core", reset) }, ok)
	b.submit("j", job.Spec{Name: "sync", Quota: []string{"github"}})
	j := b.awaitState("j", job.Deferred)
	if j.Ownership != job.Retained || !j.RunAt.Equal(reset.Add(time.Minute)) || !strings.HasPrefix(j.Stage, "Quota wait until ") {
		t.Fatalf("deferred job %+v", j)
	}
	h := b.history("j")
	if len(h.Receipts) != 1 {
		t.Fatalf("%d receipts", len(h.Receipts))
	}
	rc, err := receipt.Decode(h.Receipts[0].JSON)
	if err != nil {
		t.Fatal(err)
	}
	if rc.Reason != receipt.RESTReserve || !rc.IsRetained() || rc.ResumeAfter() != j.RunAt {
		t.Fatalf("receipt %+v", rc)
	}
	if j.Attempts != 0 {
		t.Errorf("a quota wait counted as an attempt")
	}
	b.clock.Advance(31 * time.Minute)
	j = b.awaitState("j", job.Complete)
	if b.script.count() != 2 {
		t.Fatalf("runs %d", b.script.count())
	}
	if got := transitions(b.history("j")); got != ">ready ready>running running>deferred deferred>resumable resumable>running running>complete" {
		t.Errorf("transitions %q", got)
	}
}

func TestUnknownResetProbesOnBackoffWithoutReceipt(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.script.push(func(context.Context, host.Run) error { return host.Quota("github", "core", time.Time{}) })
	b.submit("j", job.Spec{Quota: []string{"github"}})
	j := b.awaitState("j", job.Deferred)
	if !j.RunAt.Equal(t0.Add(15*time.Minute)) || len(b.history("j").Receipts) != 0 {
		t.Fatalf("run at %v, receipts %d; want +15m and none", j.RunAt, len(b.history("j").Receipts))
	}
	// The probe finds the quota still out, with no reset known: 30 min next.
	b.quotas.set(quota.State{Key: coreKey, Limit: 5000, Remaining: 0, ResetAt: t0.Add(time.Hour)})
	b.clock.Advance(15 * time.Minute)
	j = b.await("j", func(j job.Job) bool { return j.State == job.Deferred && j.Probes == 2 }, "probed twice")
	if !j.RunAt.Equal(t0.Add(45 * time.Minute)) {
		t.Fatalf("second probe at %v, want +45m", j.RunAt)
	}
}

func TestResetBeyond24HoursBlocks(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.script.push(func(context.Context, host.Run) error { return host.Quota("github", "core", t0.Add(30*time.Hour)) })
	b.submit("j", job.Spec{})
	if j := b.awaitState("j", job.Blocked); !strings.Contains(j.Stage, "more than 24h") {
		t.Fatalf("stage %q", j.Stage)
	}
}

func TestReadyJobOnExhaustedKeyDefersWithoutRunning(t *testing.T) {
	t.Parallel()
	b := setup(t)
	reset := t0.Add(10 * time.Minute)
	if err := b.st.RecordStates(context.Background(), []quota.State{{Key: coreKey, Limit: 5000, Remaining: 0,
		ResetAt: reset, ResetKnown: true, RawReset: reset.Unix(), ObservedAt: t0, Cause: quota.CauseExhausted}}); err != nil {
		t.Fatal(err)
	}
	b.submit("j", job.Spec{Quota: []string{"github:core"}})
	b.awaitState("j", job.Deferred)
	if b.script.count() != 0 {
		t.Fatal("the job ran into an exhausted quota")
	}
	if got := transitions(b.history("j")); got != ">ready ready>deferred" {
		t.Errorf("transitions %q", got)
	}
}

func TestResumeStillShortDefersAgainWithNewReceipt(t *testing.T) {
	t.Parallel()
	b := setup(t)
	reset := t0.Add(5 * time.Minute)
	b.script.push(func(context.Context, host.Run) error { return host.Quota("github", "core", reset) })
	b.submit("j", job.Spec{Quota: []string{"github"}})
	b.awaitState("j", job.Deferred)
	// At the wake-up the fresh check shows the key below its reserve.
	b.quotas.set(quota.State{Key: coreKey, Limit: 5000, Remaining: 200, ResetAt: t0.Add(70 * time.Minute), ResetKnown: true})
	b.clock.Advance(6 * time.Minute)
	j := b.await("j", func(j job.Job) bool { return len(b.history("j").Receipts) == 2 && j.State == job.Deferred }, "deferred again")
	if !j.RunAt.Equal(t0.Add(71 * time.Minute)) {
		t.Fatalf("second wake-up %v", j.RunAt)
	}
	// The second receipt continues the first one's chain: same resume_by
	// (6 h after the first wake-up), not 6 h after the second.
	rcs := decodeReceipts(t, b.history("j"))
	if first, second := rcs[0].ResumeBy(), rcs[1].ResumeBy(); !second.Equal(first) || !first.Equal(t0.Add(6*time.Minute+6*time.Hour)) {
		t.Fatalf("resume_by of the chain: first %v, second %v; want both %v", first, second, t0.Add(6*time.Minute+6*time.Hour))
	}
	b.quotas.set(quota.State{Key: coreKey, Limit: 5000, Remaining: 5000, ResetAt: t0.Add(2 * time.Hour), ResetKnown: true})
	b.clock.Advance(66 * time.Minute)
	b.awaitState("j", job.Complete)
	if b.script.count() != 2 {
		t.Fatalf("runs %d", b.script.count())
	}
}

// A chain of deferrals never outlives its first resume_by: a resume whose
// preflight finds the quota short until after it ends the job instead of
// issuing a receipt that extends the chain.
func TestDeferralChainEndsAtItsFirstResumeBy(t *testing.T) {
	t.Parallel()
	b := setup(t)
	reset := t0.Add(5 * time.Minute)
	b.script.push(func(context.Context, host.Run) error { return host.Quota("github", "core", reset) })
	b.submit("j", job.Spec{Quota: []string{"github"}})
	first := b.awaitState("j", job.Deferred)
	// At the wake-up the key is exhausted again until after the chain's
	// resume_by (t0+6m+6h).
	b.quotas.set(quota.State{Key: coreKey, Limit: 5000, Remaining: 0, ResetAt: first.ResumeBy.Add(time.Hour), ResetKnown: true})
	b.clock.Advance(6 * time.Minute)
	j := b.awaitState("j", job.Cancelled)
	if !strings.Contains(j.Stage, "resume_by") {
		t.Fatalf("stage %q; want the chain's end named", j.Stage)
	}
	if n := len(b.history("j").Receipts); n != 1 || b.script.count() != 1 {
		t.Fatalf("%d receipts, %d runs; want 1 and 1", n, b.script.count())
	}
}

// A probe (reset unknown) inside a chain keeps the chain's resume_by: the
// job is cancelled when the chain ends, not probed for ever.
func TestProbeInsideAChainKeepsItsResumeBy(t *testing.T) {
	t.Parallel()
	b := setup(t)
	reset := t0.Add(5 * time.Minute)
	b.script.push(func(context.Context, host.Run) error { return host.Quota("github", "core", reset) })
	b.submit("j", job.Spec{Quota: []string{"github"}})
	first := b.awaitState("j", job.Deferred)
	b.quotas.set(quota.State{Key: coreKey, Limit: 5000, Remaining: 0, ResetAt: t0.Add(time.Hour)}) // reset assumed, not declared
	b.clock.Advance(6 * time.Minute)
	j := b.await("j", func(j job.Job) bool { return j.State == job.Deferred && j.Probes == 1 }, "probing")
	if !j.ResumeBy.Equal(first.ResumeBy) {
		t.Fatalf("probe's resume_by %v, want the chain's %v", j.ResumeBy, first.ResumeBy)
	}
}

func TestResumeBlocksWhenPlanChanged(t *testing.T) {
	t.Parallel()
	b := setup(t)
	plan := filepath.Join(t.TempDir(), "plan")
	writeFile(t, plan, "v1")
	b.script.push(func(context.Context, host.Run) error { return host.Quota("github", "core", t0.Add(time.Minute)) })
	b.submit("j", job.Spec{PlanCmd: "cat " + plan})
	b.awaitState("j", job.Deferred)
	writeFile(t, plan, "v2")
	b.clock.Advance(3 * time.Minute)
	if j := b.awaitState("j", job.Blocked); !strings.Contains(j.Stage, "binding changed: plan") {
		t.Fatalf("stage %q", j.Stage)
	}
}

func TestFreshApprovalRequired(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.script.push(func(context.Context, host.Run) error { return host.Quota("github", "core", t0.Add(time.Minute)) }, ok)
	b.submit("j", job.Spec{FreshApprovalRequired: true})
	b.awaitState("j", job.Deferred)
	b.clock.Advance(3 * time.Minute)
	j := b.await("j", func(j job.Job) bool { return strings.HasPrefix(j.Stage, "Awaiting fresh approval") }, "awaiting approval")
	if b.script.count() != 1 {
		t.Fatal("resumed without approval")
	}
	if _, err := b.ops.Approve(context.Background(), "j"); err != nil {
		t.Fatal(err)
	}
	b.host.Nudge()
	j = b.awaitState("j", job.Complete)
	if j.Approved {
		t.Error("the approval was not consumed by the resume")
	}
}

func TestApprovalMissingAtResumeByBlocks(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.script.push(func(context.Context, host.Run) error { return host.Quota("github", "core", t0.Add(time.Minute)) })
	b.submit("j", job.Spec{FreshApprovalRequired: true})
	j := b.awaitState("j", job.Deferred)
	resumeBy := j.ResumeBy
	b.clock.Advance(3 * time.Minute)
	b.await("j", func(j job.Job) bool { return strings.HasPrefix(j.Stage, "Awaiting fresh approval") }, "awaiting approval")
	b.clock.Set(resumeBy.Add(-30 * time.Second))
	if j := b.awaitState("j", job.Blocked); !strings.Contains(j.Stage, "approval still missing") {
		t.Fatalf("stage %q", j.Stage)
	}
}

func TestCheckCommandAtResume(t *testing.T) {
	t.Parallel()
	for name, tc := range map[string]struct {
		check string
		want  job.State
		runs  int
	}{
		"outcome holds": {"exit 0", job.Complete, 1},
		"run":           {"exit 1", job.Complete, 2},
		"unsafe":        {"exit 7", job.Blocked, 1},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			b.script.push(func(context.Context, host.Run) error { return host.Quota("github", "core", t0.Add(time.Minute)) })
			b.submit("j", job.Spec{CheckCmd: tc.check})
			b.awaitState("j", job.Deferred)
			b.clock.Advance(3 * time.Minute)
			b.awaitState("j", tc.want)
			if b.script.count() != tc.runs {
				t.Fatalf("runs %d, want %d", b.script.count(), tc.runs)
			}
		})
	}
}

func TestCancel(t *testing.T) {
	t.Parallel()
	b := setup(t)
	started := make(chan struct{})
	b.script.push(func(ctx context.Context, _ host.Run) error {
		close(started)
		<-ctx.Done() // the host stops the attempt when it loses the lease
		return ctx.Err()
	})
	b.submit("running", job.Spec{})
	<-started
	if _, err := b.ops.Cancel(context.Background(), "running"); err != nil {
		t.Fatal(err)
	}
	b.clock.Advance(host.DefaultHeartbeat) // the heartbeat finds the lease gone
	b.awaitState("running", job.Cancelled)

	b.script.push(func(context.Context, host.Run) error { return host.Quota("github", "core", t0.Add(time.Hour)) })
	b.submit("deferred", job.Spec{})
	b.awaitState("deferred", job.Deferred)
	if _, err := b.ops.Cancel(context.Background(), "deferred"); err != nil {
		t.Fatal(err)
	}
	b.clock.Advance(2 * time.Hour)
	b.awaitState("deferred", job.Cancelled)
	if b.script.count() != 2 {
		t.Fatalf("a cancelled deferral woke: runs %d", b.script.count())
	}
}

func TestExpiredReceiptCancels(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.script.push(func(context.Context, host.Run) error { return host.Quota("github", "core", t0.Add(time.Minute)) })
	b.submit("j", job.Spec{})
	j := b.awaitState("j", job.Deferred)
	b.clock.Set(j.ResumeBy.Add(time.Second))
	b.awaitState("j", job.Cancelled)
	if b.script.count() != 1 {
		t.Fatal("an expired deferral ran")
	}
}

func TestProgressDeadlineTakesTheJobBack(t *testing.T) {
	t.Parallel()
	b := setup(t)
	stopped := make(chan struct{})
	b.script.push(func(ctx context.Context, _ host.Run) error {
		<-ctx.Done()
		close(stopped)
		return ctx.Err()
	}, ok)
	b.submit("j", job.Spec{ProgressTimeout: time.Minute})
	b.await("j", func(j job.Job) bool { return j.State == job.Running }, "running")
	b.clock.Advance(61 * time.Second)
	<-stopped
	b.reclaimAfterLapse("j")
	j := b.awaitState("j", job.Complete)
	if j.Fence < 2 {
		t.Fatalf("fence %d: the retry must hold a new claim", j.Fence)
	}
}

func TestHandoffWaitsForAdopt(t *testing.T) {
	t.Parallel()
	b := setup(t)
	// No host is live when the job is deferred: the host stopped (and
	// unregistered).
	b.host.Stop()
	reset := t0.Add(10 * time.Minute)
	_, rc, err := b.ops.SubmitDeferred(context.Background(), "j", job.Spec{Argv: []string{"true"}, Quota: []string{"github:core"}},
		host.Deferral{Key: coreKey, Provider: "github", ResetAt: reset}, []quota.Key{coreKey})
	if err != nil {
		t.Fatal(err)
	}
	if rc.IsRetained() {
		t.Fatal("a receipt without a live host claimed retained ownership")
	}
	if _, _, err := b.ops.Adopt(context.Background(), "j"); !errors.Is(err, host.ErrNoLiveHost) {
		t.Fatalf("adopt without a live host: %v, want host.ErrNoLiveHost", err)
	}
	// A host comes up; past the reset it still does not wake a handoff job.
	cfg := b.cfg
	cfg.ID = "host-b"
	h2, err := host.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	b.follow(h2.Jobs)
	b.clock.Advance(15 * time.Minute)
	if err := h2.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer h2.Stop()
	h2.Nudge()
	if j, _ := b.st.Job(context.Background(), "j"); j.State != job.Deferred {
		t.Fatalf("a handoff job woke by itself: %s", j.State)
	}
	j, rc2, err := b.ops.Adopt(context.Background(), "j")
	if err != nil {
		t.Fatal(err)
	}
	if !rc2.IsRetained() || j.Ownership != job.Retained {
		t.Fatalf("adopted receipt %+v", rc2)
	}
	h2.Nudge()
	b.awaitState("j", job.Complete)
	if n := len(b.history("j").Receipts); n != 2 {
		t.Fatalf("%d receipts; want the handoff and the adoption", n)
	}
}

func TestStopGivesRunningJobsBack(t *testing.T) {
	t.Parallel()
	b := setup(t)
	started := make(chan struct{})
	b.script.push(func(ctx context.Context, _ host.Run) error { close(started); <-ctx.Done(); return ctx.Err() })
	b.submit("j", job.Spec{})
	<-started
	b.host.Stop()
	j, err := b.st.Job(context.Background(), "j")
	if err != nil || j.State != job.Ready || j.Attempts != 0 {
		t.Fatalf("after stop: %+v %v; want ready, no attempt counted", j, err)
	}
}

func decodeReceipts(t *testing.T, h job.History) []*receipt.Receipt {
	t.Helper()
	var out []*receipt.Receipt
	for _, r := range h.Receipts {
		rc, err := receipt.Decode(r.JSON)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, rc)
	}
	return out
}
