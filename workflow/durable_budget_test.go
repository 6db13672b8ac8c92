package workflow_test

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/layoverhq/layover/host"
	"github.com/layoverhq/layover/job"
	"github.com/layoverhq/layover/store"
	"github.com/layoverhq/layover/workflow"
	"github.com/layoverhq/layover/workflow/record"
)

// A flapping quota ends a durable run: each rerun after the reset counts
// as a start, and once budget.runs starts are made the task's job is
// cancelled, the task stays paused with its quota, and the run is failed.
// A second coordinator (serve restarted, or another host) counts the same
// starts from the jobs.
func TestDurableBudgetEndsAFlappingQuota(t *testing.T) {
	t.Parallel()
	eachStore(t, func(t *testing.T, st store.Store) {
		var d *durable
		d = newDurable(t, st, func(context.Context, host.Run) error {
			return host.Quota("github", "core", d.clk.Now().Add(time.Minute))
		})
		d.submit(workflow.Definition{Name: "n", Budget: workflow.Budget{Runs: 3}, Tasks: []workflow.Task{
			{Name: "fetch", Run: "gh api x", Quota: []string{"github"}},
		}})
		for starts := 1; starts < 3; starts++ {
			d.until("paused", func(r record.Run, ts map[string]record.Task) bool {
				return ts["fetch"].State == record.TaskPaused && ts["fetch"].Starts == starts
			})
			d.clk.Advance(time.Minute + time.Second)
		}
		r, got := d.until("failed", statusIs(record.RunFailed))
		f := got["fetch"]
		if f.State != record.TaskPaused || f.Stage != "the budget is spent" || f.Starts != 3 || f.Quota == nil || f.Quota.Provider != "github" {
			t.Fatalf("fetch %+v quota %+v", f, f.Quota)
		}
		if r.Starts != 3 {
			t.Fatalf("the run counts %d starts, want 3", r.Starts)
		}
		j, err := st.Job(t.Context(), "night.fetch")
		if err != nil || j.State != job.Cancelled || j.Runs != 3 {
			t.Fatalf("fetch's job %s after %d runs (%v), want cancelled after 3", j.State, j.Runs, err)
		}
		// Past the next reset nothing starts again, whoever syncs.
		d.clk.Advance(time.Hour)
		other := &workflow.Coordinator{Store: st, Jobs: d.h.Jobs, Clock: d.clk}
		if err := other.Sync(t.Context()); err != nil {
			t.Fatal(err)
		}
		r, got = d.read()
		if r.Status != record.RunFailed || r.Starts != 3 || got["fetch"].State != record.TaskPaused {
			t.Fatalf("after another sync: run %s (%d starts), fetch %s", r.Status, r.Starts, got["fetch"].State)
		}
		if n := len(d.ran()); n != 3 {
			t.Fatalf("the job ran %d times, want 3", n)
		}
	})
}

// The budget counts the starts of the whole run: with room for two, two
// independent tasks run and the third is never released; it stays
// pending, saying why, and the run is failed.
func TestDurableBudgetCapsReleases(t *testing.T) {
	t.Parallel()
	eachStore(t, func(t *testing.T, st store.Store) {
		d := newDurable(t, st, func(context.Context, host.Run) error { return nil })
		tasks := d.submit(workflow.Definition{Name: "n", Budget: workflow.Budget{Runs: 2}, Tasks: []workflow.Task{
			{Name: "a", Run: "a"}, {Name: "b", Run: "b"}, {Name: "c", Run: "c"},
		}})
		if tasks[2].JobID != "" || tasks[2].State != record.TaskPending {
			t.Fatalf("c was released with the budget reserved: %+v", tasks[2])
		}
		r, got := d.until("failed", statusIs(record.RunFailed))
		if got["a"].State != record.TaskComplete || got["b"].State != record.TaskComplete {
			t.Fatalf("a %s, b %s", got["a"].State, got["b"].State)
		}
		if c := got["c"]; c.State != record.TaskPending || c.Stage != "the budget is spent" || c.JobID != "" {
			t.Fatalf("c %+v", c)
		}
		ran := d.ran()
		slices.Sort(ran)
		if strings.Join(ran, " ") != "night.a night.b" || r.Starts != 2 {
			t.Fatalf("ran %q, the run counts %d starts", ran, r.Starts)
		}
	})
}

// A paused durable task's quota record keeps the reset the provider
// declared; its stage shows the job's wake-up, the reset plus the host's
// margin, which the record does not take for the reset. The record stands
// after the reset has passed, until the job wakes.
func TestDurablePauseRecordsTheDeclaredReset(t *testing.T) {
	t.Parallel()
	eachStore(t, func(t *testing.T, st store.Store) {
		reset := t0.Add(2 * time.Hour)
		p := testPolicy
		p.ResetMargin, p.Jitter = 5*time.Minute, 0
		var once sync.Once
		d := newDurablePolicy(t, st, p, func(_ context.Context, r host.Run) error {
			var err error
			once.Do(func() { err = host.Quota("github", "core", reset) })
			return err
		})
		d.submit(workflow.Definition{Name: "n", Tasks: []workflow.Task{{Name: "fetch", Run: "gh api x", Quota: []string{"github"}}}})
		_, got := d.until("paused", statusIs(record.RunPaused))
		wake := "Quota wait until " + reset.Add(5*time.Minute).Format(time.RFC3339)
		f := got["fetch"]
		if f.Quota == nil || !f.Quota.ResetAt.Equal(reset) || f.Stage != wake {
			t.Fatalf("fetch: stage %q, quota %+v; want reset %s and stage %q", f.Stage, f.Quota, reset, wake)
		}
		d.clk.Advance(2*time.Hour + time.Minute) // past the reset, before the wake-up
		if err := d.coord.Sync(t.Context()); err != nil {
			t.Fatal(err)
		}
		if _, got = d.read(); got["fetch"].State != record.TaskPaused || !got["fetch"].Quota.ResetAt.Equal(reset) {
			t.Fatalf("before the wake-up: fetch %s, quota %+v", got["fetch"].State, got["fetch"].Quota)
		}
		d.clk.Advance(5 * time.Minute)
		d.until("complete", statusIs(record.RunComplete))
	})
}
