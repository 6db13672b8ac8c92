package workflow_test

import (
	"slices"
	"testing"
	"time"

	"github.com/layoverhq/layover/host"
	"github.com/layoverhq/layover/store"
	"github.com/layoverhq/layover/workflow"
	"github.com/layoverhq/layover/workflow/record"
)

// A check that exits 0 completes the task only when verify exits 0 too;
// when verify fails, the task runs (and is verified after).
func TestCheckThenVerify(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		verify host.Result
		want   []string
	}{
		{"verified", ok(), []string{"./work.sh", "./check.sh", "./verify.sh"}},
		{"not verified", exit(1), []string{"./work.sh", "./check.sh", "./verify.sh", "./work.sh", "./verify.sh"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			eachStore(t, func(t *testing.T, st store.Store) {
				b := setup(t, st)
				b.runner.on("./work.sh", limit("github", t0.Add(time.Hour), ""))
				b.runner.on("./check.sh", ok())
				b.runner.on("./verify.sh", tc.verify)
				def := workflow.Definition{Name: "nightly", Tasks: []workflow.Task{{Name: "work", Run: "./work.sh", Check: "./check.sh", Verify: "./verify.sh"}}}
				b.start(def)
				b.clk.Set(t0.Add(2 * time.Hour))
				res := b.start(def)
				wantState(t, res, map[string]record.TaskState{"work": record.TaskComplete})
				if got := b.runner.commands(); !slices.Equal(got, tc.want) {
					t.Errorf("commands %q, want %q", got, tc.want)
				}
				if tc.name == "not verified" && !slices.Contains(b.moves("work"), "running>running: check exited 0 but verify exited 1: run it") {
					t.Errorf("work's moves %q", b.moves("work"))
				}
			})
		})
	}
}
