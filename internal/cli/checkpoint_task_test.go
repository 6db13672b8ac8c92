package cli_test

import (
	"bytes"
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/layoverhq/layover/clock"
	"github.com/layoverhq/layover/internal/cli"
	"github.com/layoverhq/layover/store/sqlite"
	"github.com/layoverhq/layover/workflow/record"
)

// `layover checkpoint` inside a workflow task that flow run runs
// (LAYOVER_RUN_ID and LAYOVER_TASK, no job) records the task's checkpoint
// with an event of its attempt; a task that is not running is refused
// (exit 1) and keeps what it had.
func TestCheckpointInsideAWorkflowTask(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	now := time.Date(2026, 12, 2, 3, 0, 0, 0, time.UTC)
	path := filepath.Join(t.TempDir(), "layover.db")
	st, err := sqlite.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if _, _, err := st.CreateRun(ctx, record.Run{ID: "nightly-1", Name: "nightly", Definition: json.RawMessage(`{"name":"nightly"}`)},
		[]record.Task{{Name: "build"}, {Name: "ship"}}, now); err != nil {
		t.Fatal(err)
	}
	tasks, err := st.RunTasks(ctx, "nightly-1")
	if err != nil {
		t.Fatal(err)
	}
	build := tasks[0]
	build.State, build.Starts = record.TaskRunning, 1
	if _, err := st.UpdateTask(ctx, build, &record.TaskEvent{From: record.TaskPending, To: record.TaskRunning}, now); err != nil {
		t.Fatal(err)
	}
	checkpoint := func(task string) result {
		var out, errb bytes.Buffer
		vars := map[string]string{"LAYOVER_STORE": path, "LAYOVER_RUN_ID": "nightly-1", "LAYOVER_TASK": task,
			"LAYOVER_ATTEMPT_ID": "nightly-1:" + task + ":1"}
		env := &cli.Env{Stdout: &out, Stderr: &errb, Clock: clock.NewFake(now.Add(time.Minute)),
			Getenv: func(k string) string { return vars[k] }}
		code := cli.Main(ctx, env, []string{"checkpoint", "--stage", "compiled", "--data", `{"step":2}`})
		return result{code: code, stdout: out.String(), stderr: errb.String()}
	}

	if r := checkpoint("build"); r.code != 0 {
		t.Fatalf("checkpoint in a running task: exit %d %s", r.code, r.stderr)
	}
	tasks, err = st.RunTasks(ctx, "nightly-1")
	if err != nil {
		t.Fatal(err)
	}
	got := tasks[0]
	if cp := got.Checkpoint; cp == nil || cp.Stage != "compiled" || string(cp.Data) != `{"step":2}` ||
		!cp.At.Equal(now.Add(time.Minute)) || got.Stage != "compiled" || got.State != record.TaskRunning {
		t.Errorf("build after checkpoint: %s %q %+v", got.State, got.Stage, got.Checkpoint)
	}
	evs, err := st.TaskEvents(ctx, "nightly-1", "build")
	if err != nil {
		t.Fatal(err)
	}
	if last := evs[len(evs)-1]; last.Reason != "checkpoint compiled" || last.AttemptID != "nightly-1:build:1" ||
		last.From != record.TaskRunning || last.To != record.TaskRunning {
		t.Errorf("build's last event %+v, want the checkpoint of attempt nightly-1:build:1", last)
	}

	r := checkpoint("ship")
	if r.code != 1 || !strings.Contains(r.stderr, "task ship of run nightly-1 is pending, not running; nothing was stored") {
		t.Errorf("checkpoint in a pending task: exit %d %s", r.code, r.stderr)
	}
	if r := checkpoint("nope"); r.code != 1 || !strings.Contains(r.stderr, "run nightly-1 has no task nope") {
		t.Errorf("checkpoint in an unknown task: exit %d %s", r.code, r.stderr)
	}
	if tasks, err := st.RunTasks(ctx, "nightly-1"); err != nil || tasks[1].Checkpoint != nil {
		t.Errorf("ship after a refused checkpoint: %+v, %v", tasks[1].Checkpoint, err)
	}
}
