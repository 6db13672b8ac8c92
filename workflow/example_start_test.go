package workflow_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/layoverhq/layover/clock"
	"github.com/layoverhq/layover/host"
	"github.com/layoverhq/layover/store/sqlite"
	"github.com/layoverhq/layover/workflow"
)

// Two Go tasks, one of which hits a quota: the run pauses with the
// reset, the other task completes, and a second Start after the reset
// resumes the paused task and never runs the complete one again.
func ExampleStart() {
	dir, _ := os.MkdirTemp("", "layover-example")
	defer os.RemoveAll(dir)
	ctx := context.Background()
	st, err := sqlite.Open(ctx, filepath.Join(dir, "layover.db"))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer st.Close()

	clk := clock.NewFake(time.Date(2026, 9, 28, 2, 0, 0, 0, time.UTC))
	reset := clk.Now().Add(5 * time.Hour)
	calls := 0
	def := workflow.Definition{
		Name: "nightly",
		Tasks: []workflow.Task{
			{Name: "review", Func: func(ctx context.Context, a *workflow.Attempt) error {
				if calls++; calls == 1 {
					return fmt.Errorf("review: %w", host.Quota("claude-code", "five_hour", reset))
				}
				fmt.Println("reviewed in", a.AttemptID)
				return nil
			}},
			{Name: "docs", Func: func(ctx context.Context, a *workflow.Attempt) error {
				fmt.Println("docs built in", a.AttemptID)
				return nil
			}},
		},
	}
	opts := workflow.Options{RunID: "nightly-2026-09-28", Store: st, Clock: clk, Concurrency: 1}

	res, err := workflow.Start(ctx, def, opts)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(res.Status, "until", res.EarliestReset.Format(time.RFC3339))
	for _, t := range res.Tasks {
		fmt.Println(" ", t.Name, t.State, "attempts", t.Attempts)
	}

	clk.Set(reset.Add(time.Minute))
	if res, err = workflow.Start(ctx, def, opts); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(res.Status)
	// Output:
	// docs built in nightly-2026-09-28:docs:1
	// paused until 2026-09-28T07:00:00Z
	//   review paused attempts 0
	//   docs complete attempts 0
	// reviewed in nightly-2026-09-28:review:quota:2
	// complete
}
