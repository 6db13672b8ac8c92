package workflow_test

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/layoverhq/layover/host"
	"github.com/layoverhq/layover/job"
	"github.com/layoverhq/layover/store"
	"github.com/layoverhq/layover/workflow"
	"github.com/layoverhq/layover/workflow/record"
)

// jobReads is a store that counts the Coordinator's job reads.
type jobReads struct {
	store.Store
	mu       sync.Mutex
	one      int        // Job calls
	together [][]string // JobsByID calls, their ids
}

func (s *jobReads) Job(ctx context.Context, id string) (job.Job, error) {
	s.mu.Lock()
	s.one++
	s.mu.Unlock()
	return s.Store.Job(ctx, id)
}

func (s *jobReads) JobsByID(ctx context.Context, ids []string) (map[string]job.Job, error) {
	s.mu.Lock()
	s.together = append(s.together, slices.Clone(ids))
	s.mu.Unlock()
	return s.Store.JobsByID(ctx, ids)
}

// oneJobAtATime is a durable store with neither JobsByID nor UpdateTasks:
// the Coordinator reads and writes one record at a time.
type oneJobAtATime struct{ workflow.DurableStore }

func fanIn() workflow.Definition {
	return workflow.Definition{Name: "n", Tasks: []workflow.Task{
		{Name: "a", Run: "a"}, {Name: "b", Run: "b"}, {Name: "c", Run: "c"},
		{Name: "join", Needs: []string{"a", "b", "c"}, Run: "join"},
	}}
}

// Sync reads the jobs of a pass's released tasks in one call, never one
// by one, and the run ends as it would: each task run once, the join
// after its three needs.
func TestDurableSyncReadsJobsTogether(t *testing.T) {
	t.Parallel()
	eachStore(t, func(t *testing.T, st store.Store) {
		d := newDurable(t, st, func(context.Context, host.Run) error { return nil })
		reads := &jobReads{Store: st}
		d.coord.Store = reads
		d.submit(fanIn())
		_, got := d.until("complete", statusIs(record.RunComplete))
		for name, rt := range got {
			if rt.State != record.TaskComplete || rt.Starts != 1 {
				t.Errorf("task %s: %s, %d starts; want complete, 1", name, rt.State, rt.Starts)
			}
		}
		ran := d.ran()
		if len(ran) != 4 || ran[3] != "night.join" {
			t.Fatalf("ran %v; want a, b, c, then join, each once", ran)
		}
		reads.mu.Lock()
		defer reads.mu.Unlock()
		if reads.one != 0 {
			t.Errorf("Sync read %d jobs one at a time; want all in JobsByID calls", reads.one)
		}
		if len(reads.together) == 0 || !slices.Equal(sorted(reads.together[0]), []string{"night.a", "night.b", "night.c"}) {
			t.Errorf("first JobsByID call asked %v; want the three released tasks' jobs", reads.together)
		}
	})
}

// A store that reads one job at a time runs the same run to the same end.
func TestDurableSyncOnAStoreWithoutBatches(t *testing.T) {
	t.Parallel()
	eachStore(t, func(t *testing.T, st store.Store) {
		d := newDurable(t, st, func(context.Context, host.Run) error { return nil })
		d.coord.Store = oneJobAtATime{st}
		d.submit(fanIn())
		_, got := d.until("complete", statusIs(record.RunComplete))
		if got["join"].State != record.TaskComplete || got["join"].Starts != 1 {
			t.Errorf("join: %+v", got["join"])
		}
		if ran := d.ran(); len(ran) != 4 || ran[3] != "night.join" {
			t.Fatalf("ran %s; want a, b, c, then join, each once", strings.Join(ran, " "))
		}
	})
}

func sorted(s []string) []string {
	s = slices.Clone(s)
	slices.Sort(s)
	return s
}
