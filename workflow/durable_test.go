package workflow_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/layoverhq/layover/clock"
	"github.com/layoverhq/layover/host"
	"github.com/layoverhq/layover/job"
	"github.com/layoverhq/layover/quota"
	"github.com/layoverhq/layover/store"
	"github.com/layoverhq/layover/store/sqlite"
	"github.com/layoverhq/layover/workflow"
	"github.com/layoverhq/layover/workflow/record"
)

// durable is one test's durable run: a real host on the store running
// the jobs with a FuncRunner, on the fake clock, and a Coordinator.
type durable struct {
	t     *testing.T
	st    store.Store
	clk   *clock.Fake
	h     *host.Host
	sub   *host.Subscription
	coord *workflow.Coordinator
	runID string

	mu   sync.Mutex
	runs []string // the job ids the runner ran, in order
}

func newDurable(t *testing.T, st store.Store, work func(context.Context, host.Run) error) *durable {
	t.Helper()
	p := testPolicy
	p.ResetMargin, p.Jitter = 0, 0
	return newDurablePolicy(t, st, p, work)
}

// newDurablePolicy is newDurable with the host's policy p.
func newDurablePolicy(t *testing.T, st store.Store, p quota.Policy, work func(context.Context, host.Run) error) *durable {
	t.Helper()
	d := &durable{t: t, st: st, clk: clock.NewFake(t0), runID: "night"}
	h, err := host.New(host.Config{Store: st, Clock: d.clk, Policy: p, ID: "host-a", Env: []string{"PATH=/usr/bin:/bin"},
		CheckpointDir: t.TempDir(), Runner: host.FuncRunner(func(ctx context.Context, r host.Run) error {
			d.mu.Lock()
			d.runs = append(d.runs, r.Job.ID)
			d.mu.Unlock()
			return work(ctx, r)
		})})
	if err != nil {
		t.Fatal(err)
	}
	d.h, d.sub = h, h.Subscribe(4096)
	if err := h.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(h.Stop)
	d.coord = &workflow.Coordinator{Store: st, Jobs: h.Jobs, Clock: d.clk}
	return d
}

func (d *durable) submit(def workflow.Definition) []record.Task {
	d.t.Helper()
	tasks, err := workflow.Submit(d.t.Context(), def, workflow.SubmitOptions{RunID: d.runID, Store: d.st, Jobs: d.h.Jobs, Dir: d.t.TempDir(), Clock: d.clk})
	if err != nil {
		d.t.Fatal(err)
	}
	return tasks
}

// until syncs after each host event until cond holds of the run and its
// tasks, and returns them.
func (d *durable) until(what string, cond func(record.Run, map[string]record.Task) bool) (record.Run, map[string]record.Task) {
	d.t.Helper()
	for {
		if err := d.coord.Sync(d.t.Context()); err != nil {
			d.t.Fatal(err)
		}
		r, tasks := d.read()
		if cond(r, tasks) {
			return r, tasks
		}
		select {
		case _, ok := <-d.sub.C():
			if !ok {
				d.t.Fatalf("the host stopped before %s", what)
			}
		case <-stalled():
			var jobs []string
			for _, tk := range tasks {
				if j, err := d.st.Job(context.Background(), tk.JobID); err == nil {
					jobs = append(jobs, fmt.Sprintf("%s %s fence %d lease %s..%s deadline %s", j.ID, j.State, j.Fence, j.LeaseOwner, j.LeaseUntil.Format(time.TimeOnly), j.Spec.Deadline.Format(time.TimeOnly)))
				}
			}
			still, _ := d.h.Still()
			d.t.Fatalf("never %s: run %s, tasks %+v; jobs %q; clock %s, host still %v", what, r.Status, tasks, jobs, d.clk.Now().Format(time.TimeOnly), still)
		}
	}
}

func (d *durable) read() (record.Run, map[string]record.Task) {
	d.t.Helper()
	r, err := d.st.Run(d.t.Context(), d.runID)
	if err != nil {
		d.t.Fatal(err)
	}
	recs, err := d.st.RunTasks(d.t.Context(), d.runID)
	if err != nil {
		d.t.Fatal(err)
	}
	tasks := map[string]record.Task{}
	for _, t := range recs {
		tasks[t.Name] = t
	}
	return r, tasks
}

func (d *durable) ran() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]string(nil), d.runs...)
}

func statusIs(s record.RunStatus) func(record.Run, map[string]record.Task) bool {
	return func(r record.Run, _ map[string]record.Task) bool { return r.Status == s }
}

// A dependent's job is submitted only once its need completed; the run
// completes with each task run once, and the jobs carry the flow's names.
func TestDurableReleaseOrder(t *testing.T) {
	t.Parallel()
	eachStore(t, func(t *testing.T, st store.Store) {
		d := newDurable(t, st, func(context.Context, host.Run) error { return nil })
		tasks := d.submit(workflow.Definition{Name: "n", Tasks: []workflow.Task{
			{Name: "build", Run: "make"}, {Name: "test", Needs: []string{"build"}, Run: "make test"},
		}})
		if tasks[0].JobID != "night.build" || tasks[0].State != record.TaskRunning || tasks[1].JobID != "" || tasks[1].State != record.TaskPending {
			t.Fatalf("after submit: %+v", tasks)
		}
		_, got := d.until("complete", statusIs(record.RunComplete))
		if got["test"].JobID != "night.test" || got["test"].State != record.TaskComplete {
			t.Fatalf("test task %+v", got["test"])
		}
		if ran := strings.Join(d.ran(), " "); ran != "night.build night.test" {
			t.Fatalf("ran %q", ran)
		}
		j, err := st.Job(t.Context(), "night.test")
		if err != nil {
			t.Fatal(err)
		}
		if j.Spec.Flow == nil || j.Spec.Flow.Task != "test" || strings.Join(j.Spec.Argv, " ") != "sh -c make test" || j.Spec.MaxAttempts != workflow.DefaultAttempts {
			t.Fatalf("job spec %+v", j.Spec)
		}
		if _, err := workflow.Start(t.Context(), workflow.Definition{Name: "n", Tasks: []workflow.Task{
			{Name: "build", Run: "make"}, {Name: "test", Needs: []string{"build"}, Run: "make test"},
		}}, workflow.Options{RunID: "night", Store: st, Clock: d.clk}); !errors.Is(err, workflow.ErrDurable) {
			t.Fatalf("flow run of a durable run: %v", err)
		}
	})
}

// A task that hits a quota is paused with the declared reset while the
// other task completes; after the reset the host resumes it and
// its dependent runs.
func TestDurablePausedTaskResumesAfterReset(t *testing.T) {
	t.Parallel()
	eachStore(t, func(t *testing.T, st store.Store) {
		reset := t0.Add(2 * time.Hour)
		var once sync.Once
		d := newDurable(t, st, func(_ context.Context, r host.Run) error {
			var err error
			if r.Job.ID == "night.fetch" {
				once.Do(func() { err = host.Quota("github", "core", reset) })
			}
			return err
		})
		d.submit(workflow.Definition{Name: "n", Tasks: []workflow.Task{
			{Name: "fetch", Run: "gh api x", Quota: []string{"github"}}, {Name: "lint", Run: "lint"},
			{Name: "report", Needs: []string{"fetch"}, Run: "report"},
		}})
		r, got := d.until("paused", statusIs(record.RunPaused))
		f := got["fetch"]
		if f.State != record.TaskPaused || f.Quota == nil || !f.Quota.ResetAt.Equal(reset) || f.Quota.Provider != "github" {
			t.Fatalf("fetch %+v quota %+v", f, f.Quota)
		}
		if got["lint"].State != record.TaskComplete || got["report"].State != record.TaskPending {
			t.Fatalf("lint %s, report %s (run %s)", got["lint"].State, got["report"].State, r.Status)
		}
		jf, err := st.JobHistory(t.Context(), "night.fetch")
		if err != nil || len(jf.Receipts) != 1 {
			t.Fatalf("fetch's job receipts: %d (%v)", len(jf.Receipts), err)
		}
		d.clk.Advance(2*time.Hour + time.Second)
		d.until("complete", statusIs(record.RunComplete))
		if ran := strings.Join(d.ran(), " "); strings.Count(ran, "night.fetch") != 2 || !strings.HasSuffix(ran, "night.fetch night.report") {
			t.Fatalf("ran %q", ran)
		}
	})
}

// A failed task's dependents are skipped and the run is failed; an
// independent task still completes.
func TestDurableFailureSkipsDependents(t *testing.T) {
	t.Parallel()
	eachStore(t, func(t *testing.T, st store.Store) {
		d := newDurable(t, st, func(_ context.Context, r host.Run) error {
			if r.Job.ID == "night.build" {
				return host.Permanent("compile error")
			}
			return nil
		})
		d.submit(workflow.Definition{Name: "n", Tasks: []workflow.Task{
			{Name: "build", Run: "make"}, {Name: "test", Needs: []string{"build"}, Run: "t"},
			{Name: "deploy", Needs: []string{"test"}, Run: "d"}, {Name: "docs", Run: "doc"},
		}})
		_, got := d.until("failed", func(r record.Run, ts map[string]record.Task) bool {
			return r.Status == record.RunFailed && ts["docs"].State == record.TaskComplete
		})
		if got["build"].State != record.TaskFailed || got["test"].State != record.TaskSkipped || got["deploy"].State != record.TaskSkipped {
			t.Fatalf("build %s test %s deploy %s", got["build"].State, got["test"].State, got["deploy"].State)
		}
		for _, id := range []string{"night.test", "night.deploy"} {
			if _, err := st.Job(t.Context(), id); !errors.Is(err, job.ErrNotFound) {
				t.Errorf("job %s of a skipped task exists (%v)", id, err)
			}
		}
	})
}

// An agent task whose candidate hits a quota switches to the next one:
// the deferred job is cancelled and a new job runs the next candidate
// with the brief.
func TestDurableCandidateSwitch(t *testing.T) {
	t.Parallel()
	eachStore(t, func(t *testing.T, st store.Store) {
		d := newDurable(t, st, func(_ context.Context, r host.Run) error {
			if r.Job.Spec.Agent == "claude" {
				return host.Quota("anthropic", "five_hour", t0.Add(5*time.Hour))
			}
			return nil
		})
		d.submit(workflow.Definition{Name: "n", Tasks: []workflow.Task{{Name: "fix", Agent: []string{"claude", "codex"}, Prompt: "fix the bug"}}})
		_, got := d.until("complete", statusIs(record.RunComplete))
		fx := got["fix"]
		if fx.JobID != "night.fix.2" || fx.Candidate != "codex" || fx.Limited["claude"].IsZero() || fx.Starts != 2 {
			t.Fatalf("fix %+v", fx)
		}
		old, err := st.Job(t.Context(), "night.fix")
		if err != nil || old.State != job.Cancelled {
			t.Fatalf("the first candidate's job: %s (%v)", old.State, err)
		}
		nj, err := st.Job(t.Context(), "night.fix.2")
		if err != nil || nj.Spec.Agent != "codex" || !strings.Contains(nj.Spec.Argv[2], "fix the bug") {
			t.Fatalf("the next candidate's job %+v (%v)", nj.Spec, err)
		}
	})
}

// Sync again, and two coordinators at once, submit no job twice and lose
// no task: every task runs exactly once.
func TestDurableSyncIdempotent(t *testing.T) {
	t.Parallel()
	eachStore(t, func(t *testing.T, st store.Store) {
		d := newDurable(t, st, func(context.Context, host.Run) error { return nil })
		def := workflow.Definition{Name: "n", Tasks: []workflow.Task{
			{Name: "a", Run: "a"}, {Name: "b", Run: "b"},
			{Name: "c", Needs: []string{"a", "b"}, Run: "c"}, {Name: "d", Needs: []string{"c"}, Run: "d"},
		}}
		d.submit(def)
		d.submit(def) // the same submission
		other := &workflow.Coordinator{Store: st, Jobs: d.h.Jobs, Clock: d.clk}
		var wg sync.WaitGroup
		stop := make(chan struct{})
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				if err := other.Sync(t.Context()); err != nil {
					t.Error(err)
					return
				}
			}
		})
		d.until("complete", statusIs(record.RunComplete))
		close(stop)
		wg.Wait()
		if err := d.coord.Sync(t.Context()); err != nil {
			t.Fatal(err)
		}
		ran := d.ran()
		if len(ran) != 4 {
			t.Fatalf("ran %q, want each of the 4 tasks once", ran)
		}
		for _, name := range []string{"a", "b", "c", "d"} {
			evs, err := st.TaskEvents(t.Context(), "night", name)
			if err != nil {
				t.Fatal(err)
			}
			n := 0
			for _, ev := range evs {
				if ev.To == record.TaskComplete && ev.From != record.TaskComplete {
					n++
				}
			}
			if n != 1 {
				t.Errorf("task %s completed %d times in its history", name, n)
			}
		}
	})
}

// Under on_quota fail a quota fails the task: its deferred job is
// cancelled and its dependent skipped.
func TestDurableQuotaFails(t *testing.T) {
	t.Parallel()
	eachStore(t, func(t *testing.T, st store.Store) {
		d := newDurable(t, st, func(context.Context, host.Run) error {
			return host.Quota("github", "core", t0.Add(time.Hour))
		})
		d.submit(workflow.Definition{Name: "n", OnQuota: workflow.OnQuota{Action: workflow.ActionFail}, Tasks: []workflow.Task{
			{Name: "fetch", Run: "gh api x", Quota: []string{"github"}}, {Name: "report", Needs: []string{"fetch"}, Run: "r"},
		}})
		_, got := d.until("failed", statusIs(record.RunFailed))
		if got["fetch"].State != record.TaskFailed || got["report"].State != record.TaskSkipped {
			t.Fatalf("fetch %s, report %s", got["fetch"].State, got["report"].State)
		}
		j, err := st.Job(t.Context(), "night.fetch")
		if err != nil || j.State != job.Cancelled {
			t.Fatalf("fetch's job %s (%v), want cancelled", j.State, err)
		}
	})
}

// BenchmarkDurableSync is one Sync of 100 durable runs of 3 tasks on
// SQLite, each with one task's job waiting: what serve does at every
// heartbeat with that many runs in flight.
func BenchmarkDurableSync(b *testing.B) {
	st, err := sqlite.Open(b.Context(), filepath.Join(b.TempDir(), "layover.db"))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = st.Close() })
	clk := clock.NewFake(t0)
	jobs, err := host.NewJobs(host.Config{Store: st, Clock: clk})
	if err != nil {
		b.Fatal(err)
	}
	def := workflow.Definition{Name: "n", Tasks: []workflow.Task{
		{Name: "a", Run: "a"}, {Name: "b", Needs: []string{"a"}, Run: "b"}, {Name: "c", Needs: []string{"b"}, Run: "c"},
	}}
	for i := range 100 {
		if _, err := workflow.Submit(b.Context(), def, workflow.SubmitOptions{RunID: fmt.Sprintf("r%d", i), Store: st, Jobs: jobs, Clock: clk}); err != nil {
			b.Fatal(err)
		}
	}
	c := &workflow.Coordinator{Store: st, Jobs: jobs, Clock: clk}
	for b.Loop() {
		if err := c.Sync(b.Context()); err != nil {
			b.Fatal(err)
		}
	}
}

// A job of a run cancelled in the store while it was running is
// cancelled by the next Sync: flow cancel racing a release loses no job.
func TestDurableCancelledRunStopsItsJobs(t *testing.T) {
	t.Parallel()
	eachStore(t, func(t *testing.T, st store.Store) {
		d := newDurable(t, st, func(ctx context.Context, _ host.Run) error {
			<-ctx.Done()
			return ctx.Err()
		})
		d.submit(workflow.Definition{Name: "n", Tasks: []workflow.Task{{Name: "a", Run: "a"}}})
		r, err := st.Run(t.Context(), "night")
		if err != nil {
			t.Fatal(err)
		}
		r.Status = record.RunCancelled
		if _, err := st.UpdateRun(t.Context(), r, d.clk.Now()); err != nil {
			t.Fatal(err)
		}
		if err := d.coord.Sync(t.Context()); err != nil {
			t.Fatal(err)
		}
		j, err := st.Job(t.Context(), "night.a")
		if err != nil || j.State != job.Cancelled {
			t.Fatalf("the cancelled run's job is %s (%v), want cancelled", j.State, err)
		}
	})
}
