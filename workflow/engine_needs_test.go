package workflow_test

import (
	"context"
	"testing"
	"time"

	"github.com/layoverhq/layover/host"
	"github.com/layoverhq/layover/store"
	"github.com/layoverhq/layover/workflow"
	"github.com/layoverhq/layover/workflow/record"
)

// guard bounds a wait for something the engine must do on its own; it only
// ends a test that would otherwise hang.
const guard = 10 * time.Second

// A failed need skips its dependent at once, while another need still
// runs.
func TestFailedNeedSkipsWhileAnotherRuns(t *testing.T) {
	t.Parallel()
	eachStore(t, func(t *testing.T, st store.Store) {
		b := setup(t, st)
		skipped := make(chan struct{})
		b.advance = func(ev workflow.Event) time.Time {
			if ev.Task == "ship" && ev.To == record.TaskSkipped {
				close(skipped)
			}
			return ev.Until
		}
		slow := func(ctx context.Context, _ *workflow.Attempt) error {
			select {
			case <-skipped:
				return nil
			case <-time.After(guard):
				return host.Permanent("ship was not skipped while slow ran")
			}
		}
		def := workflow.Definition{Name: "nightly", Attempts: 1, Tasks: []workflow.Task{
			{Name: "slow", Func: slow},
			{Name: "broken", Func: func(context.Context, *workflow.Attempt) error { return host.Permanent("exit 3") }},
			{Name: "ship", Needs: []string{"slow", "broken"}, Func: func(context.Context, *workflow.Attempt) error { return nil }},
		}}
		res := b.start(def)
		wantState(t, res, map[string]record.TaskState{"slow": record.TaskComplete, "broken": record.TaskFailed, "ship": record.TaskSkipped})
		if got := b.moves("ship"); len(got) != 1 || got[0] != "pending>skipped: needs broken, which is failed" {
			t.Errorf("ship's moves %q", got)
		}
	})
}
