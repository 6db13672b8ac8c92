package cli_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/layoverhq/layover/store/sqlite"
	"github.com/layoverhq/layover/workflow/record"
)

// storedRun writes a run of three tasks as a paused run leaves them: one
// complete, one paused on a quota, one pending on it.
func storedRun(t *testing.T, now time.Time) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "layover.db")
	ctx := context.Background()
	st, err := sqlite.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	_, _, err = st.CreateRun(ctx, record.Run{ID: "pair-1", Name: "pair", Definition: json.RawMessage(`{"name":"pair"}`)},
		[]record.Task{{Name: "review"}, {Name: "docs"}, {Name: "publish"}}, now)
	if err != nil {
		t.Fatal(err)
	}
	tasks, err := st.RunTasks(ctx, "pair-1")
	if err != nil {
		t.Fatal(err)
	}
	review, docs, publish := tasks[0], tasks[1], tasks[2]
	review.State, review.Starts, review.Candidate, review.SessionID = record.TaskPaused, 1, "claude", "5f0c8a52"
	review.Quota = &record.Quota{Provider: "claude-code", Resource: "five_hour", ResetAt: now.Add(2 * time.Hour), Message: "usage limit reached"}
	review.Limited = map[string]time.Time{"claude": now.Add(2 * time.Hour)}
	review.WaitingOn = "quota claude-code/five_hour"
	exit := 1
	if _, err := st.UpdateTask(ctx, review, &record.TaskEvent{From: record.TaskPending, To: record.TaskPaused,
		Reason: "claude-code five_hour", AttemptID: "pair-1:review:1", ExitCode: &exit, Outcome: "quota", Candidate: "claude"}, now); err != nil {
		t.Fatal(err)
	}
	docs.State, docs.Starts = record.TaskComplete, 1
	if _, err := st.UpdateTask(ctx, docs, &record.TaskEvent{From: record.TaskPending, To: record.TaskComplete}, now); err != nil {
		t.Fatal(err)
	}
	publish.WaitingOn = "needs review"
	if _, err := st.UpdateTask(ctx, publish, nil, now); err != nil {
		t.Fatal(err)
	}
	r, err := st.Run(ctx, "pair-1")
	if err != nil {
		t.Fatal(err)
	}
	r.Status, r.Starts = record.RunPaused, 2
	if _, err := st.UpdateRun(ctx, r, now); err != nil {
		t.Fatal(err)
	}
	return path
}

// flow status lists the runs with their tasks counted by state, and with a
// run its tasks: state, stage, attempts, starts, candidate, quota record
// and what each waits on; --json as docs/workflows.md's Commands says,
// RFC 3339 UTC times and null for unknowns.
func TestFlowStatusShowsRunsAndTasks(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 12, 2, 3, 0, 0, 0, time.UTC)
	path := storedRun(t, now)

	r := flowMain(t, now, path, "flow", "status")
	if r.code != 0 || !strings.Contains(r.stdout, "pair-1") || !strings.Contains(r.stdout, "paused") ||
		!strings.Contains(r.stdout, "1 complete, 1 paused, 1 pending") {
		t.Fatalf("flow status: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	r = flowMain(t, now, path, "flow", "status", "pair-1")
	for _, want := range []string{
		"run pair-1 (pair): paused, 1 complete, 1 paused, 1 pending; 2 task starts",
		"review   paused    -      0         1       claude     claude-code five_hour until 2026-12-02T05:00:00Z  quota claude-code/five_hour",
		"publish  pending   -      0         0       -          -                                                 needs review",
	} {
		if r.code != 0 || !strings.Contains(r.stdout, want) {
			t.Errorf("flow status pair-1 lacks %q: exit %d\n%s%s", want, r.code, r.stdout, r.stderr)
		}
	}

	r = flowMain(t, now, path, "flow", "status", "pair-1", "--json")
	var out struct {
		Run   map[string]any   `json:"run"`
		Tasks []map[string]any `json:"tasks"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &out); err != nil {
		t.Fatalf("%v\n%s", err, r.stdout)
	}
	if out.Run["status"] != "paused" || out.Run["deadline"] != nil || out.Run["updated_at"] != "2026-12-02T03:00:00Z" {
		t.Errorf("run %v", out.Run)
	}
	if len(out.Tasks) != 3 {
		t.Fatalf("tasks %v", out.Tasks)
	}
	review := out.Tasks[0]
	q, _ := review["quota"].(map[string]any)
	if review["state"] != "paused" || review["candidate"] != "claude" || review["session_id"] != "5f0c8a52" ||
		q["provider"] != "claude-code" || q["resource"] != "five_hour" || q["reset_at"] != "2026-12-02T05:00:00Z" {
		t.Errorf("review %v", review)
	}
	evs, _ := review["events"].([]any)
	if len(evs) != 1 || evs[0].(map[string]any)["attempt_id"] != "pair-1:review:1" || evs[0].(map[string]any)["exit_code"] != 1.0 {
		t.Errorf("review's events %v", review["events"])
	}
	publish := out.Tasks[2]
	if publish["candidate"] != nil || publish["quota"] != nil || publish["waiting_on"] != "needs review" || publish["checkpoint"] != nil {
		t.Errorf("publish %v: null for what is unknown", publish)
	}
}

// flow cancel marks the run and its unfinished tasks cancelled and keeps
// the completed one; a second cancel, or an unknown run, is exit 1.
func TestFlowCancelMarksUnfinishedTasks(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 12, 2, 3, 0, 0, 0, time.UTC)
	path := storedRun(t, now)
	r := flowMain(t, now, path, "flow", "cancel", "pair-1")
	if r.code != 0 || r.stdout != "pair-1: cancelled (2 unfinished tasks cancelled)\n" {
		t.Fatalf("flow cancel: exit %d %q %s", r.code, r.stdout, r.stderr)
	}
	r = flowMain(t, now, path, "flow", "status", "pair-1", "--json")
	var out struct {
		Run   struct{ Status string } `json:"run"`
		Tasks []struct {
			Name, State string
			Events      []struct{ From, To, Reason string }
		} `json:"tasks"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &out); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, task := range out.Tasks {
		got = append(got, task.Name+"="+task.State)
	}
	if out.Run.Status != "cancelled" || strings.Join(got, " ") != "review=cancelled docs=complete publish=cancelled" {
		t.Fatalf("after cancel: run %s, tasks %v", out.Run.Status, got)
	}
	last := out.Tasks[0].Events[len(out.Tasks[0].Events)-1]
	if last.From != "paused" || last.To != "cancelled" || last.Reason != "flow cancel" {
		t.Errorf("review's last event %+v", last)
	}
	if r := flowMain(t, now, path, "flow", "cancel", "pair-1"); r.code != 1 || !strings.Contains(r.stderr, "cancelled already") {
		t.Errorf("a second cancel: exit %d %s", r.code, r.stderr)
	}
	if r := flowMain(t, now, path, "flow", "cancel", "nope"); r.code != 1 || !strings.Contains(r.stderr, `no run "nope"`) {
		t.Errorf("an unknown run: exit %d %s", r.code, r.stderr)
	}
}
