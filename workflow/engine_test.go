package workflow_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/layoverhq/layover/clock"
	"github.com/layoverhq/layover/host"
	"github.com/layoverhq/layover/provider"
	"github.com/layoverhq/layover/quota"
	"github.com/layoverhq/layover/store"
	"github.com/layoverhq/layover/store/postgres"
	"github.com/layoverhq/layover/store/postgres/pgtest"
	"github.com/layoverhq/layover/store/sqlite"
	"github.com/layoverhq/layover/workflow"
	"github.com/layoverhq/layover/workflow/record"
)

// t0 is when every test's run is created.
var t0 = time.Date(2026, 9, 28, 2, 0, 0, 0, time.UTC)

// stalled bounds a test's wait for the next thing it waits on (an event,
// a result): a minute without it fails the test rather than leaving it to
// hang until go test's timeout. A test's own context is not that bound: it
// ends only once the test has.
func stalled() <-chan time.Time { return time.After(time.Minute) }

// eachStore runs f on a fresh SQLite store and, when LAYOVER_TEST_POSTGRES
// is set, on a fresh PostgreSQL schema.
func eachStore(t *testing.T, f func(t *testing.T, st store.Store)) {
	t.Helper()
	t.Run("sqlite", func(t *testing.T) {
		t.Parallel()
		st, err := sqlite.Open(t.Context(), filepath.Join(t.TempDir(), "layover.db"))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = st.Close() })
		f(t, st)
	})
	t.Run("postgres", func(t *testing.T) {
		t.Parallel()
		if os.Getenv(pgtest.EnvDSN) == "" {
			t.Skip(pgtest.EnvDSN + " is not set")
		}
		st, err := postgres.Open(t.Context(), pgtest.Schema(t))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = st.Close() })
		f(t, st)
	})
}

// bundle is one test's run: its store, clock, runner and the events seen.
type bundle struct {
	t      *testing.T
	st     store.Store
	clk    *clock.Fake
	runner *fakeRunner
	runID  string
	// advance picks, for an event, the time to move the clock to (zero:
	// leave it); nil follows every wait to its end.
	advance func(workflow.Event) time.Time

	context context.Context // Start's; nil: Background
	// opts, when set, changes the Options of each Start.
	opts func(*workflow.Options)

	mu     sync.Mutex
	events []workflow.Event
}

func (b *bundle) ctx() context.Context {
	if b.context != nil {
		return b.context
	}
	return context.Background()
}

func setup(t *testing.T, st store.Store) *bundle {
	return &bundle{t: t, st: st, clk: clock.NewFake(t0), runner: &fakeRunner{}, runID: "nightly-1"}
}

// testPolicy has no margin or jitter, so waits end at the resets.
var testPolicy = quota.Policy{UnknownReset: 15 * time.Minute, SecondaryWait: time.Minute, MaxTotalWait: 2 * time.Hour}

// start runs def to its end, moving the fake clock to each wait's end
// (or b.advance's time) as the run reports the wait.
func (b *bundle) start(def workflow.Definition) workflow.Result {
	b.t.Helper()
	res, err := b.startErr(def)
	if err != nil {
		b.t.Fatalf("Start: %v", err)
	}
	return res
}

func (b *bundle) startErr(def workflow.Definition) (workflow.Result, error) {
	events := make(chan workflow.Event, 10_000)
	type out struct {
		res workflow.Result
		err error
	}
	done := make(chan out, 1)
	go func() {
		o := workflow.Options{
			RunID: b.runID, Store: b.st, Clock: b.clk, Policy: testPolicy, Runner: b.runner, Shell: "/bin/sh",
			Env:    []string{"HOME=/home/u", "LAYOVER_TASK=stale"},
			Events: func(ev workflow.Event) { events <- ev },
		}
		if b.opts != nil {
			b.opts(&o)
		}
		res, err := workflow.Start(b.ctx(), def, o)
		done <- out{res, err}
	}()
	for {
		select {
		case ev := <-events:
			b.mu.Lock()
			b.events = append(b.events, ev)
			b.mu.Unlock()
			to := ev.Until
			if b.advance != nil {
				to = b.advance(ev)
			}
			if !to.IsZero() {
				b.clk.Set(to)
			}
		case o := <-done:
			for {
				select {
				case ev := <-events:
					b.events = append(b.events, ev)
				default:
					return o.res, o.err
				}
			}
		}
	}
}

// moves lists the events of task as "from>to: reason".
func (b *bundle) moves(task string) []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []string
	for _, ev := range b.events {
		if ev.Task == task {
			out = append(out, fmt.Sprintf("%s>%s: %s", ev.From, ev.To, ev.Reason))
		}
	}
	return out
}

func task(t *testing.T, res workflow.Result, name string) record.Task {
	t.Helper()
	for _, rt := range res.Tasks {
		if rt.Name == name {
			return rt
		}
	}
	t.Fatalf("no task %s in %+v", name, res.Tasks)
	return record.Task{}
}

func wantState(t *testing.T, res workflow.Result, want map[string]record.TaskState) {
	t.Helper()
	for name, s := range want {
		if got := task(t, res, name).State; got != s {
			t.Errorf("task %s is %s, want %s", name, got, s)
		}
	}
}

// fakeRunner answers each command with the next outcome its script gives
// for it, and records what it ran.
type fakeRunner struct {
	mu      sync.Mutex
	answers map[string][]host.Result // by the command's first word or agent program
	calls   []host.Run
}

func (f *fakeRunner) on(prefix string, rs ...host.Result) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.answers == nil {
		f.answers = map[string][]host.Result{}
	}
	f.answers[prefix] = append(f.answers[prefix], rs...)
}

func (f *fakeRunner) Run(_ context.Context, r host.Run) host.Result {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, r)
	word, _, _ := strings.Cut(r.Argv[2], " ")
	rs := f.answers[word]
	if len(rs) == 0 {
		return host.Result{Outcome: provider.Unknown("process", provider.ClassOK, "exit 0")}
	}
	f.answers[word] = rs[1:]
	return rs[0]
}

// commands are the shell commands run, in order.
func (f *fakeRunner) commands() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []string
	for _, r := range f.calls {
		out = append(out, r.Argv[2])
	}
	return out
}

func ok() host.Result {
	return host.Result{Outcome: provider.Unknown("process", provider.ClassOK, "exit 0")}
}

func exit(code int) host.Result {
	return host.Result{ExitCode: code, Outcome: provider.Unknown("process", provider.ClassPermanent, fmt.Sprintf("exit %d", code))}
}

func limit(p string, reset time.Time, session string) host.Result {
	o := provider.Unknown(p, provider.ClassQuota, "usage limit reached")
	o.Resource, o.ResetAt = "five_hour", reset
	return host.Result{ExitCode: 1, Outcome: o, SessionID: session}
}

// counted is a Go task that answers each call with the next error of errs
// (nil past their end), counting its calls and keeping its attempts.
type counted struct {
	mu       sync.Mutex
	errs     []error
	calls    atomic.Int32
	attempts []workflow.Attempt
}

func (c *counted) fn(_ context.Context, a *workflow.Attempt) error {
	c.calls.Add(1)
	c.mu.Lock()
	defer c.mu.Unlock()
	c.attempts = append(c.attempts, *a)
	if len(c.errs) == 0 {
		return nil
	}
	err := c.errs[0]
	c.errs = c.errs[1:]
	return err
}

func (c *counted) ids() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []string
	for _, a := range c.attempts {
		out = append(out, a.AttemptID)
	}
	return out
}

// A task that hits a quota pauses; an independent task goes on and
// completes; the dependent waits, naming its need. The pause never
// counts as an attempt.
func TestPauseIndependentGoesOn(t *testing.T) {
	t.Parallel()
	eachStore(t, func(t *testing.T, st store.Store) {
		b := setup(t, st)
		review := &counted{errs: []error{fmt.Errorf("review: %w", host.Quota("anthropic", "tokens", time.Time{}))}}
		docs, publish := &counted{}, &counted{}
		def := workflow.Definition{Name: "nightly", Tasks: []workflow.Task{
			{Name: "review", Func: review.fn},
			{Name: "docs", Func: docs.fn},
			{Name: "publish", Needs: []string{"review", "docs"}, Func: publish.fn},
		}}
		res := b.start(def)
		if res.Status != record.RunPaused {
			t.Fatalf("status %s (%s), want paused", res.Status, res.Reason)
		}
		wantState(t, res, map[string]record.TaskState{"review": record.TaskPaused, "docs": record.TaskComplete, "publish": record.TaskPending})
		r := task(t, res, "review")
		if r.Attempts != 0 || r.Starts != 1 {
			t.Errorf("review: attempts %d starts %d, want 0 and 1", r.Attempts, r.Starts)
		}
		if q := r.Quota; q == nil || q.Provider != "anthropic" || q.Resource != "tokens" || !q.ResetAt.IsZero() || q.Message == "" {
			t.Errorf("review's quota record %+v", r.Quota)
		}
		if p := task(t, res, "publish"); p.WaitingOn != "needs review, docs" {
			t.Errorf("publish waits on %q", p.WaitingOn)
		}
		if !res.EarliestReset.IsZero() {
			t.Errorf("EarliestReset %v with an unknown reset", res.EarliestReset)
		}
		if n := publish.calls.Load(); n != 0 {
			t.Errorf("publish ran %d times", n)
		}
		evs, err := st.TaskEvents(t.Context(), b.runID, "review")
		if err != nil {
			t.Fatal(err)
		}
		last := evs[len(evs)-1]
		if last.To != record.TaskPaused || last.AttemptID != "nightly-1:review:1" || last.Outcome != string(provider.ClassQuota) {
			t.Errorf("review's last event %+v", last)
		}
		stored, err := st.Run(t.Context(), b.runID)
		if err != nil || stored.Status != record.RunPaused || stored.Starts != 2 {
			t.Errorf("stored run %+v (%v), want paused with 2 starts", stored, err)
		}
	})
}

// A known reset within max_wait is waited out in the process (a waiting
// event until the reset), then the task runs again with a quota rerun's
// attempt id, and its dependent runs.
func TestWaitWithinMaxWait(t *testing.T) {
	t.Parallel()
	eachStore(t, func(t *testing.T, st store.Store) {
		b := setup(t, st)
		reset := t0.Add(time.Hour)
		fetch := &counted{errs: []error{host.Quota("github", "core", reset)}}
		def := workflow.Definition{Name: "nightly", OnQuota: workflow.OnQuota{MaxWait: 6 * time.Hour}, Tasks: []workflow.Task{
			{Name: "fetch", Func: fetch.fn},
			{Name: "publish", Needs: []string{"fetch"}, Run: "./publish.sh"},
		}}
		res := b.start(def)
		if res.Status != record.RunComplete {
			t.Fatalf("status %s (%s)", res.Status, res.Reason)
		}
		if got, want := fetch.ids(), []string{"nightly-1:fetch:1", "nightly-1:fetch:quota:2"}; !slices.Equal(got, want) {
			t.Errorf("attempt ids %q, want %q", got, want)
		}
		var waited *workflow.Event
		for _, ev := range b.events {
			if ev.Task == "fetch" && ev.To == record.TaskWaiting {
				waited = &ev
			}
		}
		if waited == nil || !waited.Until.Equal(reset) || waited.From != record.TaskRunning {
			t.Fatalf("no waiting event until the reset: %q", b.moves("fetch"))
		}
		if f := task(t, res, "fetch"); f.Attempts != 0 || f.Starts != 2 {
			t.Errorf("fetch: attempts %d starts %d", f.Attempts, f.Starts)
		}
		if b.clk.Now().Before(reset) {
			t.Errorf("the clock is at %v: the wait did not last to the reset", b.clk.Now())
		}
		// The command task's environment names its run, task and attempt.
		calls := b.runner.calls
		if len(calls) != 1 {
			t.Fatalf("runner calls %d", len(calls))
		}
		env := calls[0].Env
		for _, want := range []string{"HOME=/home/u", "LAYOVER_RUN_ID=nightly-1", "LAYOVER_TASK=publish",
			"LAYOVER_IDEMPOTENCY_KEY=nightly-1:publish", "LAYOVER_ATTEMPT_ID=nightly-1:publish:1"} {
			if !slices.Contains(env, want) {
				t.Errorf("env %q lacks %s", env, want)
			}
		}
		if slices.Contains(env, "LAYOVER_TASK=stale") {
			t.Errorf("env %q keeps the caller's LAYOVER_TASK", env)
		}
	})
}

// A durable pause (max_wait 0) ends the first Start paused; a second Start
// with the same run id before the reset runs nothing; one after the reset
// resumes the paused task and its dependent, and never re-runs the
// complete task (whose record is not written again).
func TestDurablePauseResumes(t *testing.T) {
	t.Parallel()
	eachStore(t, func(t *testing.T, st store.Store) {
		b := setup(t, st)
		reset := t0.Add(2 * time.Hour)
		review := &counted{errs: []error{host.Quota("claude-code", "five_hour", reset)}}
		docs, publish := &counted{}, &counted{}
		def := workflow.Definition{Name: "nightly", Tasks: []workflow.Task{
			{Name: "review", Func: review.fn},
			{Name: "docs", Func: docs.fn},
			{Name: "publish", Needs: []string{"review", "docs"}, Func: publish.fn},
		}}
		res := b.start(def)
		if res.Status != record.RunPaused || !res.EarliestReset.Equal(reset) {
			t.Fatalf("first start: %s, earliest reset %v; want paused until %v", res.Status, res.EarliestReset, reset)
		}
		docsEvents, _ := st.TaskEvents(t.Context(), b.runID, "docs")

		b.clk.Set(t0.Add(time.Hour)) // before the reset: nothing runs
		res = b.start(def)
		if res.Status != record.RunPaused || review.calls.Load() != 1 || publish.calls.Load() != 0 {
			t.Fatalf("before the reset: %s, review ran %d times, publish %d", res.Status, review.calls.Load(), publish.calls.Load())
		}

		b.clk.Set(reset.Add(time.Minute))
		res = b.start(def)
		if res.Status != record.RunComplete {
			t.Fatalf("after the reset: %s (%s)", res.Status, res.Reason)
		}
		if docs.calls.Load() != 1 || review.calls.Load() != 2 || publish.calls.Load() != 1 {
			t.Errorf("calls: docs %d review %d publish %d, want 1 2 1", docs.calls.Load(), review.calls.Load(), publish.calls.Load())
		}
		if got := review.ids(); got[1] != "nightly-1:review:quota:2" {
			t.Errorf("the resumed attempt's id %q", got[1])
		}
		after, _ := st.TaskEvents(t.Context(), b.runID, "docs")
		if len(after) != len(docsEvents) {
			t.Errorf("the complete task was written again: %d events, then %d", len(docsEvents), len(after))
		}
		// A fourth Start finds nothing to do.
		res = b.start(def)
		if res.Status != record.RunComplete || review.calls.Load() != 2 {
			t.Errorf("again: %s, review ran %d times", res.Status, review.calls.Load())
		}
		// The same id with another definition is refused.
		other := def
		other.Attempts = 5
		if _, err := b.startErr(other); !errors.Is(err, record.ErrConflict) {
			t.Errorf("another definition under the run id: %v", err)
		}
	})
}

// A second Start waits for a reset within max_wait before it runs the
// paused task; an unknown reset runs it at once.
func TestResumeWaitsOrRunsAtOnce(t *testing.T) {
	t.Parallel()
	eachStore(t, func(t *testing.T, st store.Store) {
		b := setup(t, st)
		reset := t0.Add(3 * time.Hour)
		a := &counted{errs: []error{host.Quota("github", "core", reset)}}
		u := &counted{errs: []error{host.Quota("openai", "", time.Time{})}}
		def := workflow.Definition{Name: "nightly", OnQuota: workflow.OnQuota{MaxWait: 2 * time.Hour}, Tasks: []workflow.Task{
			{Name: "a", Func: a.fn},
			{Name: "u", Func: u.fn},
		}}
		res := b.start(def) // a: beyond max_wait; u: unknown
		wantState(t, res, map[string]record.TaskState{"a": record.TaskPaused, "u": record.TaskPaused})
		b.clk.Set(t0.Add(90 * time.Minute)) // a's reset is 90 min away: within max_wait
		res = b.start(def)
		if res.Status != record.RunComplete {
			t.Fatalf("status %s (%s)", res.Status, res.Reason)
		}
		if !slices.Contains(b.moves("a"), "paused>waiting: waiting for the reset of github/core (within max_wait 2h0m0s)") {
			t.Errorf("a's moves %q", b.moves("a"))
		}
		if a.calls.Load() != 2 || u.calls.Load() != 2 {
			t.Errorf("calls a %d u %d", a.calls.Load(), u.calls.Load())
		}
	})
}

const brief = "Review the night's changes; don't push."

// Fallback: a quota on one candidate switches to the next, which gets the
// brief; with every candidate limited the task pauses with the earliest
// reset and that candidate's quota record. A later Start skips the
// candidates still limited.
func TestFallbackCandidates(t *testing.T) {
	t.Parallel()
	eachStore(t, func(t *testing.T, st store.Store) {
		b := setup(t, st)
		b.runner.on("claude", limit("claude-code", t0.Add(3*time.Hour), "c-1"))
		b.runner.on("codex", limit("codex", t0.Add(time.Hour), "x-1"), ok())
		b.runner.on("gemini", limit("gemini-cli", t0.Add(2*time.Hour), "g-1"))
		def := workflow.Definition{Name: "nightly", Tasks: []workflow.Task{
			{Name: "review", Agent: []string{"claude", "codex", "gemini"}, Prompt: brief},
		}}
		res := b.start(def)
		if res.Status != record.RunPaused || !res.EarliestReset.Equal(t0.Add(time.Hour)) {
			t.Fatalf("status %s, earliest %v", res.Status, res.EarliestReset)
		}
		r := task(t, res, "review")
		if r.Quota == nil || r.Quota.Provider != "codex" || r.Attempts != 0 || r.Starts != 3 || r.Candidate != "gemini" || r.SessionID != "g-1" {
			t.Errorf("review %+v quota %+v", r, r.Quota)
		}
		if len(r.Limited) != 3 || !r.Limited["claude"].Equal(t0.Add(3*time.Hour)) {
			t.Errorf("limited %v", r.Limited)
		}
		cmds := b.runner.commands()
		if len(cmds) != 3 {
			t.Fatalf("commands %q", cmds)
		}
		for i, prog := range []string{"claude", "codex", "gemini"} {
			if !strings.HasPrefix(cmds[i], prog+" ") || !strings.Contains(cmds[i], `'Review the night'\''s changes; don'\''t push.'`) {
				t.Errorf("command %d %q: not %s with the brief", i, cmds[i], prog)
			}
		}
		// After codex's reset, claude is still limited: codex runs, with the
		// brief (the captured session was gemini's).
		b.clk.Set(t0.Add(time.Hour + time.Minute))
		res = b.start(def)
		if res.Status != record.RunComplete {
			t.Fatalf("status %s (%s)", res.Status, res.Reason)
		}
		cmds = b.runner.commands()
		if len(cmds) != 4 || !strings.HasPrefix(cmds[3], "codex exec --json 'Review") {
			t.Errorf("the resumed command %q", cmds[3:])
		}
		if r := task(t, res, "review"); r.Candidate != "codex" {
			t.Errorf("candidate %q", r.Candidate)
		}
	})
}

// The first attempt after a pause on the same candidate continues the
// captured session; resume: restart, or no captured session, sends the
// brief (and the task's event says so).
func TestContinueOrRestart(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, resume, session string
		want, reason          string
	}{
		{"continue", "", "5f0e-1", `claude -p --resume '5f0e-1' --output-format stream-json --verbose 'Continue`, "continuing session 5f0e-1"},
		{"restart", workflow.ResumeRestart, "5f0e-1", `claude -p 'Review`, "resume restart, with the brief"},
		{"no session", "", "", `claude -p 'Review`, "no session was captured, so the task restarts from its brief"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			eachStore(t, func(t *testing.T, st store.Store) {
				b := setup(t, st)
				b.runner.on("claude", limit("claude-code", t0.Add(time.Hour), tc.session))
				def := workflow.Definition{Name: "nightly", OnQuota: workflow.OnQuota{MaxWait: 2 * time.Hour}, Tasks: []workflow.Task{
					{Name: "review", Agent: []string{"claude"}, Prompt: brief, Resume: tc.resume},
				}}
				res := b.start(def)
				if res.Status != record.RunComplete {
					t.Fatalf("status %s (%s)", res.Status, res.Reason)
				}
				cmds := b.runner.commands()
				if len(cmds) != 2 || !strings.HasPrefix(cmds[1], tc.want) {
					t.Fatalf("commands %q, want the second to start %q", cmds, tc.want)
				}
				if !slices.ContainsFunc(b.moves("review"), func(m string) bool { return strings.Contains(m, tc.reason) }) {
					t.Errorf("no event says %q: %q", tc.reason, b.moves("review"))
				}
				if b.runner.calls[0].Job.Spec.Agent != "claude" {
					t.Errorf("the attempt's job does not name its agent (its session would not be captured)")
				}
			})
		})
	}
}

// budget.runs caps task starts, quota reruns included: a flapping quota
// ends the run failed, saying so.
func TestBudget(t *testing.T) {
	t.Parallel()
	eachStore(t, func(t *testing.T, st store.Store) {
		b := setup(t, st)
		flap := &counted{}
		for range 10 {
			flap.errs = append(flap.errs, host.Secondary("github", "core", 30*time.Second))
		}
		later := &counted{}
		def := workflow.Definition{Name: "nightly", Budget: workflow.Budget{Runs: 3}, OnQuota: workflow.OnQuota{MaxWait: time.Hour},
			Tasks: []workflow.Task{{Name: "flap", Func: flap.fn}, {Name: "later", Needs: []string{"flap"}, Func: later.fn}}}
		res := b.start(def)
		if res.Status != record.RunFailed || !strings.Contains(res.Reason, "budget of 3 task starts is spent") {
			t.Fatalf("status %s (%s)", res.Status, res.Reason)
		}
		if n := flap.calls.Load(); n != 3 {
			t.Errorf("flap ran %d times, want 3", n)
		}
		stored, _ := st.Run(t.Context(), b.runID)
		if stored.Starts != 3 || stored.Status != record.RunFailed {
			t.Errorf("stored run %+v", stored)
		}
		if f := task(t, res, "flap"); f.Attempts != 0 || f.Starts != 3 {
			t.Errorf("flap attempts %d starts %d", f.Attempts, f.Starts)
		}
		// Resuming a spent run starts nothing.
		res = b.start(def)
		if res.Status != record.RunFailed || flap.calls.Load() != 3 {
			t.Errorf("again: %s, %d calls", res.Status, flap.calls.Load())
		}
	})
}

// The run's timeout ends a wait: the task stays paused with its quota
// record, and the run is failed, saying when the timeout passed; a Start
// after the deadline starts nothing and says so again.
func TestTimeoutEndsWait(t *testing.T) {
	t.Parallel()
	eachStore(t, func(t *testing.T, st store.Store) {
		b := setup(t, st)
		b.advance = func(ev workflow.Event) time.Time {
			if ev.To == record.TaskWaiting {
				return t0.Add(time.Hour) // the deadline, before the wait's end
			}
			return time.Time{}
		}
		a := &counted{errs: []error{host.Quota("github", "core", t0.Add(3*time.Hour))}}
		def := workflow.Definition{Name: "nightly", Timeout: time.Hour, OnQuota: workflow.OnQuota{MaxWait: 6 * time.Hour},
			Tasks: []workflow.Task{{Name: "a", Func: a.fn}}}
		res := b.start(def)
		want := "the run's timeout passed at 2026-09-28T03:00:00Z; start a new run id"
		if res.Status != record.RunFailed || !strings.HasPrefix(res.Reason, want) {
			t.Fatalf("status %s (%s)", res.Status, res.Reason)
		}
		wantState(t, res, map[string]record.TaskState{"a": record.TaskPaused})
		if q := task(t, res, "a").Quota; q == nil || q.Resource != "core" {
			t.Errorf("a's quota record %+v", q)
		}
		if got := b.moves("a"); !slices.Contains(got, "waiting>paused: the run's timeout ended the wait") {
			t.Errorf("a's moves %q", got)
		}
		b.clk.Set(t0.Add(4 * time.Hour)) // past the reset, past the deadline
		res = b.start(def)
		if res.Status != record.RunFailed || !strings.HasPrefix(res.Reason, want) || a.calls.Load() != 1 {
			t.Errorf("after the deadline: %s (%s), %d calls", res.Status, res.Reason, a.calls.Load())
		}
		wantState(t, res, map[string]record.TaskState{"a": record.TaskPaused})
		if run, err := st.Run(t.Context(), b.runID); err != nil || run.Status != record.RunFailed {
			t.Errorf("the stored run: %+v %v", run.Status, err)
		}
	})
}

// A failed need skips its dependents (and theirs); an independent task
// completes; transient failures are retried after 10 s × 2ⁿ and count.
func TestFailedNeedSkipsDependents(t *testing.T) {
	t.Parallel()
	eachStore(t, func(t *testing.T, st store.Store) {
		b := setup(t, st)
		flaky := &counted{errs: []error{errors.New("502"), errors.New("503"), errors.New("504")}}
		mid, last, side := &counted{}, &counted{}, &counted{}
		def := workflow.Definition{Name: "nightly", Tasks: []workflow.Task{
			{Name: "flaky", Func: flaky.fn},
			{Name: "mid", Needs: []string{"flaky"}, Func: mid.fn},
			{Name: "last", Needs: []string{"mid"}, Func: last.fn},
			{Name: "side", Func: side.fn},
		}}
		res := b.start(def)
		if res.Status != record.RunFailed {
			t.Fatalf("status %s", res.Status)
		}
		wantState(t, res, map[string]record.TaskState{"flaky": record.TaskFailed, "mid": record.TaskSkipped, "last": record.TaskSkipped, "side": record.TaskComplete})
		if f := task(t, res, "flaky"); f.Attempts != 3 || flaky.calls.Load() != 3 {
			t.Errorf("flaky: attempts %d calls %d", f.Attempts, flaky.calls.Load())
		}
		if b.clk.Now() != t0.Add(30*time.Second) {
			t.Errorf("retries waited until %v, want 10 s then 20 s", b.clk.Now())
		}
		if mid.calls.Load()+last.calls.Load() != 0 {
			t.Error("a skipped task ran")
		}
		if got := b.moves("mid"); len(got) != 1 || got[0] != "pending>skipped: needs flaky, which is failed" {
			t.Errorf("mid's moves %q", got)
		}
	})
}

// Before any re-run the task's check reconciles: 1 runs it, 0 completes it
// without running, another exit blocks it (and the run fails).
func TestCheckBeforeRerun(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		check host.Result
		want  record.TaskState
		runs  int
	}{
		{"run", exit(1), record.TaskComplete, 2},
		{"done", ok(), record.TaskComplete, 1},
		{"blocked", exit(3), record.TaskBlocked, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			eachStore(t, func(t *testing.T, st store.Store) {
				b := setup(t, st)
				b.runner.on("./work.sh", limit("github", t0.Add(time.Hour), ""))
				b.runner.on("./check.sh", tc.check)
				def := workflow.Definition{Name: "nightly", Tasks: []workflow.Task{{Name: "work", Run: "./work.sh", Check: "./check.sh", Verify: "./verify.sh"}}}
				b.start(def)
				if got := b.runner.commands(); !slices.Equal(got, []string{"./work.sh"}) {
					t.Fatalf("first start ran %q: a first run takes no check", got)
				}
				b.clk.Set(t0.Add(2 * time.Hour))
				res := b.start(def)
				wantState(t, res, map[string]record.TaskState{"work": tc.want})
				cmds := b.runner.commands()
				if cmds[1] != "./check.sh" {
					t.Errorf("the re-run did not check first: %q", cmds)
				}
				if n := strings.Count(strings.Join(cmds, "\n"), "./work.sh"); n != tc.runs {
					t.Errorf("work ran %d times, want %d: %q", n, tc.runs, cmds)
				}
				if tc.want == record.TaskBlocked && res.Status != record.RunFailed {
					t.Errorf("a blocked task leaves the run %s", res.Status)
				}
				if tc.name == "run" && cmds[len(cmds)-1] != "./verify.sh" {
					t.Errorf("verify did not follow the exit 0: %q", cmds)
				}
			})
		})
	}
}

// verify decides after exit 0; a credentials failure leaves the task in
// auth-wait and the run failed.
func TestVerifyAndAuth(t *testing.T) {
	t.Parallel()
	eachStore(t, func(t *testing.T, st store.Store) {
		b := setup(t, st)
		b.runner.on("./verify.sh", exit(1))
		login := &counted{errs: []error{host.Auth("401 Bad credentials")}}
		def := workflow.Definition{Name: "nightly", Tasks: []workflow.Task{
			{Name: "build", Run: "./build.sh", Verify: "./verify.sh"},
			{Name: "login", Func: login.fn},
		}}
		res := b.start(def)
		if res.Status != record.RunFailed {
			t.Fatalf("status %s", res.Status)
		}
		wantState(t, res, map[string]record.TaskState{"build": record.TaskFailed, "login": record.TaskAuthWait})
		if got := b.moves("build"); got[len(got)-1] != "running>failed: verify exited 1" {
			t.Errorf("build's moves %q", got)
		}
	})
}

// A Go task records checkpoints while it runs; the record keeps the last.
func TestCheckpoint(t *testing.T) {
	t.Parallel()
	eachStore(t, func(t *testing.T, st store.Store) {
		b := setup(t, st)
		def := workflow.Definition{Name: "nightly", Tasks: []workflow.Task{{Name: "a", Func: func(_ context.Context, a *workflow.Attempt) error {
			if err := a.Checkpoint("fetched", []byte(`{"n":3}`)); err != nil {
				return err
			}
			return a.Checkpoint("built", nil)
		}}}}
		res := b.start(def)
		a := task(t, res, "a")
		if res.Status != record.RunComplete || a.Checkpoint == nil || a.Checkpoint.Stage != "built" {
			t.Errorf("status %s, checkpoint %+v", res.Status, a.Checkpoint)
		}
	})
}

func TestQuotaFault(t *testing.T) {
	t.Parallel()
	reset := t0.Add(time.Hour)
	for _, tc := range []struct {
		err   error
		reset time.Time
		ok    bool
	}{
		{fmt.Errorf("review: %w", fmt.Errorf("call: %w", host.Quota("anthropic", "tokens", reset))), reset, true},
		{host.Secondary("github", "core", time.Minute), time.Time{}, true},
		{errors.Join(errors.New("x"), host.Quota("openai", "", time.Time{})), time.Time{}, true},
		{host.Auth("401"), time.Time{}, false},
		{errors.New("quota exhausted"), time.Time{}, false},
		{nil, time.Time{}, false},
	} {
		at, msg, ok := workflow.QuotaFault(tc.err)
		if ok != tc.ok || !at.Equal(tc.reset) || (ok && msg == "") || (!ok && msg != "") {
			t.Errorf("QuotaFault(%v) = %v, %q, %v", tc.err, at, msg, ok)
		}
	}
}

// Options are checked before anything is stored.
func TestStartOptions(t *testing.T) {
	t.Parallel()
	st, err := sqlite.Open(t.Context(), filepath.Join(t.TempDir(), "layover.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	def := workflow.Definition{Name: "n", Tasks: []workflow.Task{{Name: "a", Run: "true"}}}
	for _, o := range []workflow.Options{{Store: st}, {RunID: "a b", Store: st}, {RunID: "r"}, {RunID: "r", Store: st, Concurrency: -1}} {
		if _, err := workflow.Start(t.Context(), def, o); err == nil {
			t.Errorf("Start(%+v) accepted", o)
		}
	}
	if _, err := workflow.Start(t.Context(), workflow.Definition{Name: "n"}, workflow.Options{RunID: "r", Store: st}); err == nil {
		t.Error("a definition without tasks was accepted")
	}
	if runs, _ := st.Runs(t.Context()); len(runs) != 0 {
		t.Errorf("stored %d runs", len(runs))
	}
}

// Start's context ending stops the attempt under way: its task is pending
// again, not counted as a failure, and a later Start runs it (its check
// first, as it started before).
func TestInterrupted(t *testing.T) {
	t.Parallel()
	eachStore(t, func(t *testing.T, st store.Store) {
		b := setup(t, st)
		ctx, cancel := context.WithCancel(t.Context())
		b.context = ctx
		calls := 0
		def := workflow.Definition{Name: "nightly", Tasks: []workflow.Task{{Name: "a", Check: "./check.sh", Func: func(ctx context.Context, _ *workflow.Attempt) error {
			if calls++; calls == 1 {
				cancel()
				<-ctx.Done()
				return ctx.Err()
			}
			return nil
		}}}}
		res, err := b.startErr(def)
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("Start: %v, want context.Canceled", err)
		}
		if a := task(t, res, "a"); a.State != record.TaskPending || a.Attempts != 0 || a.Starts != 1 || res.Status != record.RunPaused {
			t.Errorf("after the interrupt: run %s, task %+v", res.Status, a)
		}
		b.context = nil
		b.runner.on("./check.sh", exit(1))
		if res = b.start(def); res.Status != record.RunComplete || calls != 2 {
			t.Errorf("again: %s after %d calls", res.Status, calls)
		}
		if got := b.runner.commands(); !slices.Equal(got, []string{"./check.sh"}) {
			t.Errorf("commands %q, want the check", got)
		}
	})
}

// fakeQuotas says every name is one key, exhausted until reset.
type fakeQuotas struct{ reset time.Time }

func (f fakeQuotas) Keys(_ context.Context, names []string) ([]quota.Key, error) {
	var out []quota.Key
	for _, n := range names {
		out = append(out, quota.Key{Host: "api.github.com", Principal: "octocat", Resource: strings.TrimPrefix(n, "github:")})
	}
	return out, nil
}

func (f fakeQuotas) Fresh(_ context.Context, keys []quota.Key) ([]quota.State, error) {
	var out []quota.State
	for _, k := range keys {
		out = append(out, quota.State{Key: k, Limit: 5000, Remaining: 0, ResetAt: f.reset, ResetKnown: true})
	}
	return out, nil
}

// A task whose quota is known to be exhausted does not start: it pauses
// (or waits) on it; a task without quotas runs.
func TestExhaustedQuotaBeforeStart(t *testing.T) {
	t.Parallel()
	eachStore(t, func(t *testing.T, st store.Store) {
		b := setup(t, st)
		b.opts = func(o *workflow.Options) { o.Quotas = fakeQuotas{reset: t0.Add(time.Hour)} }
		fetch, docs := &counted{}, &counted{}
		def := workflow.Definition{Name: "nightly", Tasks: []workflow.Task{
			{Name: "fetch", Quota: []string{"github:core"}, Func: fetch.fn},
			{Name: "docs", Func: docs.fn},
		}}
		res := b.start(def)
		f := task(t, res, "fetch")
		if res.Status != record.RunPaused || f.State != record.TaskPaused || f.Starts != 0 || fetch.calls.Load() != 0 || docs.calls.Load() != 1 {
			t.Fatalf("run %s, fetch %+v, calls fetch %d docs %d", res.Status, f, fetch.calls.Load(), docs.calls.Load())
		}
		if q := f.Quota; q == nil || q.Resource != "core" || !q.ResetAt.Equal(t0.Add(time.Hour)) {
			t.Errorf("quota %+v", f.Quota)
		}
	})
}

// Without a Runner, commands run as sh -c in Dir with the task's
// environment, their check and verify too.
func TestProcessRunner(t *testing.T) {
	t.Parallel()
	eachStore(t, func(t *testing.T, st store.Store) {
		b := setup(t, st)
		dir := t.TempDir()
		b.opts = func(o *workflow.Options) { o.Runner, o.Dir, o.Env = nil, dir, os.Environ() }
		def := workflow.Definition{Name: "nightly", Tasks: []workflow.Task{
			{Name: "build", Run: `printf %s "$LAYOVER_IDEMPOTENCY_KEY/$LAYOVER_ATTEMPT_ID" > out.txt`, Verify: "test -s out.txt"},
			{Name: "broken", Run: "exit 3", Verify: "true"},
		}}
		res := b.start(def)
		wantState(t, res, map[string]record.TaskState{"build": record.TaskComplete, "broken": record.TaskFailed})
		data, err := os.ReadFile(filepath.Join(dir, "out.txt"))
		if err != nil || string(data) != "nightly-1:build/nightly-1:build:1" {
			t.Errorf("out.txt %q (%v)", data, err)
		}
		evs, _ := st.TaskEvents(t.Context(), b.runID, "broken")
		if last := evs[len(evs)-1]; last.ExitCode == nil || *last.ExitCode != 3 {
			t.Errorf("broken's last event %+v", last)
		}
	})
}

// A durable pause keeps the agent's session: the next Start, after the
// reset, continues it on the same candidate.
func TestDurablePauseContinuesSession(t *testing.T) {
	t.Parallel()
	eachStore(t, func(t *testing.T, st store.Store) {
		b := setup(t, st)
		b.runner.on("claude", limit("claude-code", t0.Add(time.Hour), "5f0e-1"))
		def := workflow.Definition{Name: "nightly", Tasks: []workflow.Task{
			{Name: "review", Agent: []string{"claude", "codex"}, Prompt: brief},
		}}
		b.runner.on("codex", limit("codex", t0.Add(2*time.Hour), ""))
		res := b.start(def)
		if r := task(t, res, "review"); res.Status != record.RunPaused || r.Candidate != "codex" || r.SessionID != "" {
			t.Fatalf("status %s, review %+v", res.Status, r)
		}
		// codex ran last and captured nothing; claude's limit passes first.
		b.clk.Set(t0.Add(90 * time.Minute))
		res = b.start(def)
		cmds := b.runner.commands()
		if res.Status != record.RunComplete || len(cmds) != 3 || !strings.HasPrefix(cmds[2], "claude -p 'Review") {
			t.Fatalf("status %s, commands %q", res.Status, cmds)
		}

		// One candidate, paused with its session: the next Start continues it.
		b2 := setup(t, st)
		b2.runID = "nightly-2"
		b2.runner.on("claude", limit("claude-code", t0.Add(time.Hour), "5f0e-2"))
		one := workflow.Definition{Name: "nightly", Tasks: []workflow.Task{{Name: "review", Agent: []string{"claude"}, Prompt: brief}}}
		if res := b2.start(one); res.Status != record.RunPaused {
			t.Fatalf("status %s", res.Status)
		}
		b2.clk.Set(t0.Add(2 * time.Hour))
		res = b2.start(one)
		cmds = b2.runner.commands()
		if res.Status != record.RunComplete || len(cmds) != 2 || !strings.HasPrefix(cmds[1], "claude -p --resume '5f0e-2'") {
			t.Fatalf("status %s, commands %q", res.Status, cmds)
		}
		if r := task(t, res, "review"); r.SessionID != "5f0e-2" {
			t.Errorf("session %q", r.SessionID)
		}
	})
}

// Concurrency bounds the tasks running at once.
func TestConcurrency(t *testing.T) {
	t.Parallel()
	eachStore(t, func(t *testing.T, st store.Store) {
		b := setup(t, st)
		var now, most atomic.Int32
		entered, gate := make(chan struct{}), make(chan struct{})
		work := func(context.Context, *workflow.Attempt) error {
			n := now.Add(1)
			for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
			}
			entered <- struct{}{}
			<-gate
			now.Add(-1)
			return nil
		}
		go func() {
			// Two tasks are in; each release lets one more in.
			<-entered
			<-entered
			for i := range 6 {
				gate <- struct{}{}
				if i < 4 {
					<-entered
				}
			}
		}()
		def := workflow.Definition{Name: "nightly"}
		for i := range 6 {
			def.Tasks = append(def.Tasks, workflow.Task{Name: fmt.Sprintf("t%d", i), Func: work})
		}
		b.opts = func(o *workflow.Options) { o.Concurrency = 2 }
		if res := b.start(def); res.Status != record.RunComplete {
			t.Fatalf("status %s", res.Status)
		}
		if m := most.Load(); m != 2 {
			t.Errorf("%d tasks ran at once, want 2", m)
		}
	})
}
