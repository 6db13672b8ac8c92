package workflow_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/layoverhq/layover/host"
	"github.com/layoverhq/layover/job"
	"github.com/layoverhq/layover/store"
	"github.com/layoverhq/layover/workflow"
	"github.com/layoverhq/layover/workflow/record"
)

// overtaking is a store whose JobsByID first calls before: a Sync on it
// reads the tasks, then lets another writer go, then reads the jobs.
type overtaking struct {
	store.Store
	before func()
}

func (o *overtaking) JobsByID(ctx context.Context, ids []string) (map[string]job.Job, error) {
	o.before()
	return o.Store.JobsByID(ctx, ids)
}

// A Sync that another Sync overtakes between its read of a run and its
// write, the other making the very moves it was about to make (two serves
// on one store, or a Sync and serve's own), finds them made and goes on:
// no error, no move made twice, and no second pass over the run. Here
// every pass is overtaken: before the Sync under test reads the jobs, one
// more job ends and the other coordinator records it, so a Sync that only
// read the run again after a refused write would be overtaken on each
// read and give up.
func TestDurableSyncOvertaken(t *testing.T) {
	t.Parallel()
	eachStore(t, func(t *testing.T, st store.Store) {
		const n = 6
		ids := make([]string, n)
		release := map[string]chan struct{}{}
		def := workflow.Definition{Name: "n"}
		for i := range ids {
			name := fmt.Sprintf("t%d", i+1)
			ids[i] = "night." + name
			release[ids[i]] = make(chan struct{})
			def.Tasks = append(def.Tasks, workflow.Task{Name: name, Run: name})
		}
		started := make(chan string, n)
		d := newDurable(t, st, func(ctx context.Context, r host.Run) error {
			started <- r.Job.ID
			select {
			case <-release[r.Job.ID]:
				return nil
			case <-ctx.Done():
				return ctx.Err()
			}
		})
		d.submit(def)
		timeout := time.After(10 * time.Second)
		for range n {
			select {
			case <-started:
			case <-timeout:
				t.Fatal("the jobs never all started")
			}
		}
		peer := &workflow.Coordinator{Store: st, Jobs: d.h.Jobs, Clock: d.clk}
		if err := peer.Sync(t.Context()); err != nil {
			t.Fatal(err)
		}

		passes, ended := 0, 0 // the passes over the run; the jobs ended, one a pass
		overtake := func() {
			passes++
			if ended == n {
				return
			}
			id := ids[ended]
			ended++
			close(release[id])
			for completed := false; !completed; {
				select {
				case ev := <-d.sub.C():
					completed = ev.JobID == id && ev.To == job.Complete
				case <-time.After(10 * time.Second):
					t.Fatalf("job %s never completed", id)
				}
			}
			if err := peer.Sync(t.Context()); err != nil {
				t.Error(err)
			}
		}
		c := &workflow.Coordinator{Store: &overtaking{Store: st, before: overtake}, Jobs: d.h.Jobs, Clock: d.clk}
		for k := 1; k <= n; k++ {
			if err := c.Sync(t.Context()); err != nil {
				t.Fatalf("sync %d, overtaken: %v", k, err)
			}
			if passes != k {
				t.Fatalf("sync %d passed over the run %d times, want once", k, passes-k+1)
			}
		}
		r, tasks := d.read()
		if r.Status != record.RunComplete || r.Starts != n {
			t.Fatalf("run %s with %d starts, want complete with %d", r.Status, r.Starts, n)
		}
		if ran := d.ran(); len(ran) != n {
			t.Fatalf("ran %q, want each task once", ran)
		}
		for _, tk := range def.Tasks {
			if tasks[tk.Name].State != record.TaskComplete {
				t.Errorf("task %s %s", tk.Name, tasks[tk.Name].State)
			}
			evs, err := st.TaskEvents(t.Context(), "night", tk.Name)
			if err != nil {
				t.Fatal(err)
			}
			done := 0
			for _, ev := range evs {
				if ev.To == record.TaskComplete {
					done++
				}
			}
			if done != 1 {
				t.Errorf("task %s: %d completions in its history, want 1: %+v", tk.Name, done, evs)
			}
		}
	})
}
