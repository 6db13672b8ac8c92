package workflow_test

import (
	"context"
	"encoding/json"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/layoverhq/layover/host"
	"github.com/layoverhq/layover/job"
	"github.com/layoverhq/layover/provider"
	"github.com/layoverhq/layover/store"
	"github.com/layoverhq/layover/workflow"
	"github.com/layoverhq/layover/workflow/record"
)

// checkpointingRunner is a command task whose first attempt records a
// checkpoint in the store as `layover checkpoint` inside it does (another
// writer of the running task), then fails transiently; later attempts
// read $LAYOVER_CHECKPOINT and succeed.
type checkpointingRunner struct {
	st store.Store

	mu    sync.Mutex
	calls int
	env   [][]string // each attempt's environment
	seen  []string   // what each attempt read from $LAYOVER_CHECKPOINT ("" for unset)
}

func (c *checkpointingRunner) Run(ctx context.Context, r host.Run) host.Result {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.calls++
	c.env = append(c.env, r.Env)
	seen := ""
	for _, kv := range r.Env {
		if path, ok := strings.CutPrefix(kv, "LAYOVER_CHECKPOINT="); ok {
			data, err := os.ReadFile(path)
			if err != nil {
				seen = "unreadable: " + err.Error()
			} else {
				seen = string(data)
			}
		}
	}
	c.seen = append(c.seen, seen)
	if c.calls > 1 {
		return ok()
	}
	tasks, err := c.st.RunTasks(ctx, "nightly-1")
	if err != nil {
		return exit(125)
	}
	t := tasks[0]
	at := time.Now()
	t.Stage = "compiled"
	t.Checkpoint = &job.Checkpoint{Stage: "compiled", Data: json.RawMessage(`{"step":2}`), At: at}
	if _, err := c.st.UpdateTask(ctx, t, &record.TaskEvent{From: t.State, To: t.State, Reason: "checkpoint compiled"}, at); err != nil {
		return exit(125)
	}
	return host.Result{ExitCode: 1, Outcome: provider.Unknown("process", provider.ClassTransient, "exit 1: 502")}
}

// A command task's checkpoint written from inside its attempt (by
// `layover checkpoint`) is kept by the engine's next write of the task
// rather than refused as another process's, and the task's next attempt
// reads its data from $LAYOVER_CHECKPOINT; the first attempt had none.
func TestCommandTaskCheckpointReachesTheNextAttempt(t *testing.T) {
	t.Parallel()
	eachStore(t, func(t *testing.T, st store.Store) {
		b := setup(t, st)
		run := &checkpointingRunner{st: st}
		b.opts = func(o *workflow.Options) {
			o.Runner = run
			o.StoreLocation = "sqlite:/var/lib/layover/layover.db"
		}
		res := b.start(workflow.Definition{Name: "nightly", Tasks: []workflow.Task{{Name: "build", Run: "make"}}})
		if res.Status != record.RunComplete {
			t.Fatalf("status %s: %s", res.Status, res.Reason)
		}
		build := task(t, res, "build")
		if build.Checkpoint == nil || build.Checkpoint.Stage != "compiled" || string(build.Checkpoint.Data) != `{"step":2}` {
			t.Errorf("build's checkpoint %+v, want compiled {\"step\":2}", build.Checkpoint)
		}
		if run.calls != 2 || run.seen[0] != "" || run.seen[1] != `{"step":2}` {
			t.Fatalf("attempts %d read %q from $LAYOVER_CHECKPOINT; want none, then the checkpoint's data", run.calls, run.seen)
		}
		if !contains(run.env[0], "LAYOVER_STORE=sqlite:/var/lib/layover/layover.db") {
			t.Errorf("the attempt's environment %q lacks the run's store", run.env[0])
		}
		evs, err := st.TaskEvents(t.Context(), "nightly-1", "build")
		if err != nil {
			t.Fatal(err)
		}
		var reasons []string
		for _, ev := range evs {
			reasons = append(reasons, ev.Reason)
		}
		if got := strings.Join(reasons, " | "); !strings.Contains(got, "checkpoint compiled | exit 1: 502") {
			t.Errorf("build's history %q: want the checkpoint, then the failed attempt", got)
		}
	})
}

func contains(env []string, kv string) bool {
	for _, e := range env {
		if e == kv {
			return true
		}
	}
	return false
}
