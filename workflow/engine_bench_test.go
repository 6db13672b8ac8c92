package workflow_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/layoverhq/layover/clock"
	"github.com/layoverhq/layover/store/postgres"
	"github.com/layoverhq/layover/store/postgres/pgtest"
	"github.com/layoverhq/layover/store/sqlite"
	"github.com/layoverhq/layover/workflow"
	"github.com/layoverhq/layover/workflow/record"
)

// randomDAG is a workflow of n Go tasks, each needing up to 3 (on average
// about 3, fewer for the first) of the tasks written before it.
func randomDAG(n int, seed uint64) workflow.Definition {
	rnd := rand.New(rand.NewPCG(seed, seed))
	def := workflow.Definition{Name: "dag", Budget: workflow.Budget{Runs: n}}
	noop := func(context.Context, *workflow.Attempt) error { return nil }
	for i := range n {
		t := workflow.Task{Name: fmt.Sprintf("t%04d", i), Func: noop}
		for k := 0; k < 3 && i > 0; k++ {
			need := fmt.Sprintf("t%04d", rnd.IntN(i))
			if !slices.Contains(t.Needs, need) {
				t.Needs = append(t.Needs, need)
			}
		}
		def.Tasks = append(def.Tasks, t)
	}
	return def
}

// BenchmarkStart1000 runs a 1,000-task random DAG of Go tasks to its end on
// each store (PostgreSQL when LAYOVER_TEST_POSTGRES names a server): the
// engine's scheduling and its three writes a task (the run's start count,
// running, complete). docs/benchmarks.md keeps its figures.
func BenchmarkStart1000(b *testing.B) {
	def := randomDAG(1000, 1)
	stores := []struct {
		name string
		open func(b *testing.B) workflow.Store
	}{
		{"sqlite", func(b *testing.B) workflow.Store {
			st, err := sqlite.Open(b.Context(), filepath.Join(b.TempDir(), "layover.db"))
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { _ = st.Close() })
			return st
		}},
		{"postgres", func(b *testing.B) workflow.Store {
			st, err := postgres.Open(b.Context(), pgtest.Schema(b))
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { _ = st.Close() })
			return st
		}},
	}
	for _, s := range stores {
		b.Run(s.name, func(b *testing.B) {
			st := s.open(b)
			for i := 0; b.Loop(); i++ {
				runDAG(b, def, st, fmt.Sprintf("dag-%d", i))
			}
			b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N)/1000, "µs/task")
		})
	}
}

// BenchmarkRelease1000 is BenchmarkStart1000's graph on a store that keeps
// nothing and writes at once: what is left is the engine's own cost of
// deciding, releasing and recording each task, the scheduler overhead per
// task release.
func BenchmarkRelease1000(b *testing.B) {
	def := randomDAG(1000, 1)
	for i := 0; b.Loop(); i++ {
		runDAG(b, def, &nopStore{}, fmt.Sprintf("dag-%d", i))
	}
	b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N)/1000, "µs/task")
}

// runDAG runs def to its end as run id on st, failing b unless it
// completes.
func runDAG(b *testing.B, def workflow.Definition, st workflow.Store, id string) {
	b.Helper()
	res, err := workflow.Start(b.Context(), def, workflow.Options{
		RunID: id, Store: st, Clock: clock.NewFake(time.Unix(0, 0)),
	})
	if err != nil || res.Status != record.RunComplete {
		b.Fatalf("%v %s %s", err, res.Status, res.Reason)
	}
}

// nopStore is a workflow.Store that keeps only the tasks a run is created
// with: every run is new and every write succeeds at the next version.
type nopStore struct{ tasks []record.Task }

func (s *nopStore) CreateRun(_ context.Context, r record.Run, tasks []record.Task, now time.Time) (record.Run, bool, error) {
	r.Version, r.CreatedAt, r.UpdatedAt = 1, now, now
	s.tasks = make([]record.Task, len(tasks))
	for i, t := range tasks {
		t.Version, t.UpdatedAt = 1, now
		s.tasks[i] = t
	}
	return r, true, nil
}

func (s *nopStore) RunTasks(context.Context, string) ([]record.Task, error) { return s.tasks, nil }

func (*nopStore) UpdateRun(_ context.Context, r record.Run, now time.Time) (record.Run, error) {
	r.Version, r.UpdatedAt = r.Version+1, now
	return r, nil
}

func (*nopStore) UpdateTask(_ context.Context, t record.Task, _ *record.TaskEvent, now time.Time) (record.Task, error) {
	t.Version, t.UpdatedAt = t.Version+1, now
	return t, nil
}
