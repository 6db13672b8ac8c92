package workflow_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/layoverhq/layover/host"
	"github.com/layoverhq/layover/job"
	"github.com/layoverhq/layover/store"
	"github.com/layoverhq/layover/workflow"
	"github.com/layoverhq/layover/workflow/record"
)

// For a durable run every pause is a deferral that the host wakes at the
// reset, whatever max_wait says: a reset within max_wait pauses the task
// (not waiting in any process) and it resumes after the reset, as with
// max_wait 0. Under on_quota fail, max_wait changes nothing either: the
// quota fails the task, durably as in the process.
func TestDurableMaxWait(t *testing.T) {
	t.Parallel()
	reset := t0.Add(time.Hour)
	def := func(action string, maxWait time.Duration) workflow.Definition {
		return workflow.Definition{Name: "n", OnQuota: workflow.OnQuota{Action: action, MaxWait: maxWait}, Tasks: []workflow.Task{
			{Name: "fetch", Run: "gh api x", Quota: []string{"github"}},
		}}
	}
	for _, maxWait := range []time.Duration{0, 6 * time.Hour} {
		t.Run("pause within "+maxWait.String(), func(t *testing.T) {
			t.Parallel()
			eachStore(t, func(t *testing.T, st store.Store) {
				var once sync.Once
				d := newDurable(t, st, func(context.Context, host.Run) error {
					var err error
					once.Do(func() { err = host.Quota("github", "core", reset) })
					return err
				})
				d.submit(def(workflow.ActionPause, maxWait))
				_, got := d.until("paused", statusIs(record.RunPaused))
				if f := got["fetch"]; f.State != record.TaskPaused || f.Quota == nil || !f.Quota.ResetAt.Equal(reset) {
					t.Fatalf("fetch %+v", f)
				}
				d.clk.Advance(time.Hour + time.Second)
				d.until("complete", statusIs(record.RunComplete))
			})
		})
	}
	t.Run("fail within max_wait", func(t *testing.T) {
		t.Parallel()
		eachStore(t, func(t *testing.T, st store.Store) {
			d := newDurable(t, st, func(context.Context, host.Run) error { return host.Quota("github", "core", reset) })
			d.submit(def(workflow.ActionFail, 6*time.Hour))
			_, got := d.until("failed", statusIs(record.RunFailed))
			if f := got["fetch"]; f.State != record.TaskFailed || f.Starts != 1 {
				t.Fatalf("durable: fetch %+v", f)
			}
			// The same definition in the process: the same outcome.
			inProc := def(workflow.ActionFail, 6*time.Hour)
			inProc.Tasks[0].Run, inProc.Tasks[0].Func = "", func(context.Context, *workflow.Attempt) error {
				return host.Quota("github", "core", reset)
			}
			b := setup(t, st)
			res := b.start(inProc)
			if f := task(t, res, "fetch"); res.Status != record.RunFailed || f.State != record.TaskFailed || f.Starts != 1 {
				t.Fatalf("in process: run %s, fetch %+v", res.Status, f)
			}
		})
	})
}

// The run's timeout ends a durable run as it ends flow run's: a task whose
// quota resets after the deadline is paused with its quota record (the
// host cancels its job rather than wake it too late); at the deadline the
// host cancels the running job, whose task is paused, a dependent is never
// released, and the run is failed.
func TestDurableTimeoutLeavesTasksPaused(t *testing.T) {
	t.Parallel()
	eachStore(t, func(t *testing.T, st store.Store) {
		reset := t0.Add(2 * time.Hour)
		d := newDurable(t, st, func(ctx context.Context, r host.Run) error {
			if r.Job.ID == "night.fetch" {
				return host.Quota("github", "core", reset)
			}
			<-ctx.Done() // slow runs until the host stops it
			return ctx.Err()
		})
		d.submit(workflow.Definition{Name: "n", Timeout: time.Hour, Tasks: []workflow.Task{
			{Name: "fetch", Run: "gh api x", Quota: []string{"github"}}, {Name: "slow", Run: "sleep 7200"},
			{Name: "report", Needs: []string{"fetch"}, Run: "r"},
		}})
		d.until("fetch paused, slow running", func(_ record.Run, ts map[string]record.Task) bool {
			return ts["fetch"].State == record.TaskPaused && ts["slow"].State == record.TaskRunning && ts["slow"].Starts == 1
		})
		d.clk.Advance(time.Hour + time.Second)
		r, got := d.until("failed", func(r record.Run, ts map[string]record.Task) bool {
			return r.Status == record.RunFailed && ts["slow"].State == record.TaskPaused
		})
		f, s, rep := got["fetch"], got["slow"], got["report"]
		if f.State != record.TaskPaused || f.Quota == nil || !f.Quota.ResetAt.Equal(reset) || f.Stage != "its quota resets after the run's timeout" {
			t.Fatalf("fetch %+v quota %+v", f, f.Quota)
		}
		if s.Stage != "the run's timeout passed" || rep.State != record.TaskPending || rep.JobID != "" {
			t.Fatalf("slow %+v, report %+v", s, rep)
		}
		for _, id := range []string{"night.fetch", "night.slow"} {
			if j, err := st.Job(t.Context(), id); err != nil || j.State != job.Cancelled {
				t.Fatalf("job %s %s (%v), want cancelled", id, j.State, err)
			}
		}
		// After the reset nothing runs again: the run is over.
		d.clk.Advance(2 * time.Hour)
		if err := d.coord.Sync(t.Context()); err != nil {
			t.Fatal(err)
		}
		r2, got := d.read()
		if r2.Status != record.RunFailed || got["fetch"].State != record.TaskPaused || len(d.ran()) != 2 {
			t.Fatalf("after the reset: run %s, fetch %s, ran %q (run was %s)", r2.Status, got["fetch"].State, d.ran(), r.Status)
		}
	})
}
