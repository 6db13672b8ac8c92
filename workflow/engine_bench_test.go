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
// SQLite: the engine's scheduling and its three writes a task (the run's
// start count, running, complete).
func BenchmarkStart1000(b *testing.B) {
	def := randomDAG(1000, 1)
	for i := 0; b.Loop(); i++ {
		st, err := sqlite.Open(b.Context(), filepath.Join(b.TempDir(), "layover.db"))
		if err != nil {
			b.Fatal(err)
		}
		res, err := workflow.Start(b.Context(), def, workflow.Options{
			RunID: fmt.Sprintf("dag-%d", i), Store: st, Clock: clock.NewFake(time.Unix(0, 0)),
		})
		if err != nil || res.Status != record.RunComplete {
			b.Fatalf("%v %s %s", err, res.Status, res.Reason)
		}
		_ = st.Close()
	}
	b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N)/1000, "µs/task")
}
