package record_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/layoverhq/layover/job"
	"github.com/layoverhq/layover/workflow/record"
)

func TestTerminal(t *testing.T) {
	t.Parallel()

	want := map[record.TaskState]bool{
		record.TaskPending: false, record.TaskRunning: false, record.TaskWaiting: false,
		record.TaskPaused: false, record.TaskAuthWait: false, record.TaskBlocked: false,
		record.TaskComplete: true, record.TaskFailed: true, record.TaskCancelled: true, record.TaskSkipped: true,
	}
	for s, terminal := range want {
		if !s.Known() || s.Terminal() != terminal {
			t.Errorf("%s: Known %v, Terminal %v; want true, %v", s, s.Known(), s.Terminal(), terminal)
		}
	}
	if record.TaskState("done").Known() || record.RunStatus("done").Known() {
		t.Error(`"done" is known`)
	}
}

func validRun() record.Run {
	return record.Run{ID: "nightly-2026-12-02", Name: "nightly", Definition: json.RawMessage(`{"name":"nightly"}`),
		Status: record.RunRunning}
}

func validTask() record.Task {
	return record.Task{RunID: "nightly-2026-12-02", Name: "review", State: record.TaskPaused,
		Quota:   &record.Quota{Provider: "claude-code", Resource: "five_hour", Message: "limit reached"},
		Limited: map[string]time.Time{"claude": time.Unix(1764633600, 0)}, Workdir: "/src/" + strings.Repeat("d", 2000)}
}

func TestValidate(t *testing.T) {
	t.Parallel()

	long := strings.Repeat("x", record.MaxTextBytes+1)
	tests := []struct {
		name string
		err  error
		want string // in the error; "" for none
	}{
		{"run", validRun().Validate(), ""},
		{"run without id", func() error { r := validRun(); r.ID = ""; return r.Validate() }(), "no id"},
		{"run without name", func() error { r := validRun(); r.Name = ""; return r.Validate() }(), "no name"},
		{"run status", func() error { r := validRun(); r.Status = "done"; return r.Validate() }(), `unknown status "done"`},
		{"run definition", func() error { r := validRun(); r.Definition = []byte("{"); return r.Validate() }(), "not JSON"},
		{"run without definition", func() error { r := validRun(); r.Definition = nil; return r.Validate() }(), "not JSON"},
		{"run starts", func() error { r := validRun(); r.Starts = -1; return r.Validate() }(), "starts is -1"},
		{"task", validTask().Validate(), ""},
		{"task state", func() error { k := validTask(); k.State = ""; return k.Validate() }(), `unknown state ""`},
		{"task without run", func() error { k := validTask(); k.RunID = ""; return k.Validate() }(), "no run id"},
		{"task stage", func() error { k := validTask(); k.Stage = long; return k.Validate() }(), "the stage is 1025 bytes"},
		{"task stage at the bound", func() error { k := validTask(); k.Stage = long[1:]; return k.Validate() }(), ""},
		{"task UTF-8", func() error { k := validTask(); k.WaitingOn = "needs \xff"; return k.Validate() }(), "not valid UTF-8"},
		{"task NUL", func() error { k := validTask(); k.SessionID = "a\x00b"; return k.Validate() }(), "holds a NUL byte"},
		{"task control characters kept", func() error { k := validTask(); k.Stage = "a\x1b[2Jb"; return k.Validate() }(), ""},
		{"quota message", func() error { k := validTask(); k.Quota.Message = long; return k.Validate() }(), "message is 1025 bytes"},
		{"quota provider", func() error { k := validTask(); k.Quota.Provider = ""; return k.Validate() }(), "needs a provider"},
		{"limited name", func() error { k := validTask(); k.Limited[""] = time.Time{}; return k.Validate() }(), "needs a name"},
		{"attempts", func() error { k := validTask(); k.Attempts = -2; return k.Validate() }(), "attempts is -2"},
		{"checkpoint", func() error {
			k := validTask()
			k.Checkpoint = &job.Checkpoint{Stage: "", Data: json.RawMessage(`{}`)}
			return k.Validate()
		}(), "checkpoint: a checkpoint needs a stage"},
		{"event", record.TaskEvent{From: "", To: record.TaskPending}.Validate(), ""},
		{"event to", record.TaskEvent{From: record.TaskPending, To: "gone"}.Validate(), `unknown state "gone"`},
		{"event reason", record.TaskEvent{To: record.TaskPaused, Reason: long}.Validate(), "the reason is 1025 bytes"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			switch {
			case tt.want == "" && tt.err != nil:
				t.Errorf("Validate: %v, want nil", tt.err)
			case tt.want != "" && (!errors.Is(tt.err, record.ErrInvalid) || !strings.Contains(tt.err.Error(), tt.want)):
				t.Errorf("Validate: %v, want ErrInvalid saying %q", tt.err, tt.want)
			}
		})
	}
}
