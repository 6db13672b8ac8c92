package storetest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/layoverhq/layover/job"
	"github.com/layoverhq/layover/store"
	"github.com/layoverhq/layover/workflow/record"
)

// RunWorkflows runs the part of the conformance suite that covers the
// records of workflow runs (store.Store's CreateRun to CountRuns). open
// must return a new, empty store each time it is called, and close it when
// t ends. Every subtest runs in parallel with the others.
//
// Beyond the doc comments of store.Store, the suite holds every backend to
// these rules:
//   - Times come back in UTC at millisecond precision (a task's quota
//     reset, its limited candidates' and its checkpoint's too); a zero
//     time stays zero. An empty Limited map comes back nil.
//   - A write the record rules refuse (record.ErrInvalid) changes nothing.
//   - Of concurrent updates carrying one version, exactly one is written;
//     the others are record.ErrConflict and append no event.
//   - RunTasks and TaskEvents of a run or task that does not exist are
//     job.ErrNotFound; of one without tasks or events, empty.
func RunWorkflows(t *testing.T, open func(t *testing.T) store.Store) {
	t.Helper()

	setup := func(t *testing.T) (context.Context, store.Store) {
		t.Helper()
		return t.Context(), open(t)
	}
	tests := []struct {
		name string
		fn   func(*testing.T, jobsSetup)
	}{
		{"CreateRun", testCreateRun},
		{"CreateRunAgain", testCreateRunAgain},
		{"RunsAndCount", testRunsAndCount},
		{"UpdateRun", testUpdateRun},
		{"UpdateTask", testUpdateTask},
		{"UpdateTaskConcurrently", testUpdateTaskConcurrently},
		{"UpdateTasks", testUpdateTasks},
		{"TaskEvents", testTaskEvents},
		{"RefusedRecords", testRefusedRecords},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			tt.fn(t, setup)
		})
	}
}

// definition is a run's definition as the engine stores it.
func definition(name string) json.RawMessage {
	return json.RawMessage(fmt.Sprintf(`{"name":%q,"tasks":{"fetch":{"run":"./fetch.sh"},"review":{"needs":["fetch"],"agent":["claude","codex"]}}}`, name))
}

func newRun(id string) record.Run {
	return record.Run{ID: id, Name: "nightly", Definition: definition("nightly"), Durable: true,
		Deadline: at(12 * time.Hour), Starts: 0}
}

// fullTask sets every field of a task the engine writes to a value that is
// not its zero.
func fullTask(runID, name string) record.Task {
	exitAt := at(90*time.Minute + 250*time.Microsecond)
	return record.Task{RunID: runID, Name: name, State: record.TaskPaused, Stage: "reviewing diff",
		Attempts: 1, Starts: 3, Candidate: "codex", SessionID: "sess-7f3a", Workdir: "/src/layover",
		Quota: &record.Quota{Provider: "claude-code", Resource: "five_hour", ResetAt: exitAt,
			Message: "5-hour limit reached ∙ resets 4pm"},
		Limited:    map[string]time.Time{"claude": exitAt, "gemini": at(time.Hour)},
		WaitingOn:  "quota claude-code/five_hour",
		Checkpoint: &job.Checkpoint{Stage: "fetched", Data: json.RawMessage(`{"page":3}`), At: at(time.Minute)},
		JobID:      runID + ":" + name}
}

// storedTask is k as a store returns it, at version v, updated at now.
func storedTask(k record.Task, v int64, now time.Time) record.Task {
	k.Version, k.UpdatedAt = v, msUTC(now)
	if k.Quota != nil {
		q := *k.Quota
		q.ResetAt = msUTC(q.ResetAt)
		k.Quota = &q
	}
	if len(k.Limited) == 0 {
		k.Limited = nil
	} else {
		l := map[string]time.Time{}
		for c, until := range k.Limited {
			l[c] = msUTC(until)
		}
		k.Limited = l
	}
	if k.Checkpoint != nil {
		cp := *k.Checkpoint
		cp.At = msUTC(cp.At)
		k.Checkpoint = &cp
	}
	return k
}

func checkRecord[T any](t *testing.T, what string, got, want T) {
	t.Helper()
	if !reflect.DeepEqual(got, want) {
		t.Errorf("%s =\n\t%s\nwant\n\t%s", what, show(got), show(want))
	}
}

// show prints a record with its pointers followed.
func show(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprintf("%+v", v)
	}
	return string(b)
}

func mustCreateRun(t *testing.T, ctx context.Context, s store.Store, r record.Run, now time.Time, tasks ...record.Task) record.Run {
	t.Helper()
	got, created, err := s.CreateRun(ctx, r, tasks, now)
	if err != nil || !created {
		t.Fatalf("CreateRun(%s): created %v, %v", r.ID, created, err)
	}
	return got
}

func mustTasks(t *testing.T, ctx context.Context, s store.Store, runID string) []record.Task {
	t.Helper()
	tasks, err := s.RunTasks(ctx, runID)
	if err != nil {
		t.Fatalf("RunTasks(%s): %v", runID, err)
	}
	return tasks
}

func mustUpdateTask(t *testing.T, ctx context.Context, s store.Store, k record.Task, ev *record.TaskEvent, now time.Time) record.Task {
	t.Helper()
	got, err := s.UpdateTask(ctx, k, ev, now)
	if err != nil {
		t.Fatalf("UpdateTask(%s, %s): %v", k.RunID, k.Name, err)
	}
	return got
}

func mustEvents(t *testing.T, ctx context.Context, s store.Store, runID, task string) []record.TaskEvent {
	t.Helper()
	evs, err := s.TaskEvents(ctx, runID, task)
	if err != nil {
		t.Fatalf("TaskEvents(%s, %s): %v", runID, task, err)
	}
	return evs
}

func testCreateRun(t *testing.T, setup jobsSetup) {
	ctx, s := setup(t)

	now := at(0)
	r := newRun("nightly-1")
	first := record.Task{Name: "fetch"}
	full := fullTask("nightly-1", "review")
	last := record.Task{Name: "docs", State: record.TaskRunning}
	got := mustCreateRun(t, ctx, s, r, now, first, full, last)

	want := r
	want.Status, want.Version = record.RunRunning, 1
	want.CreatedAt, want.UpdatedAt, want.Deadline = msUTC(now), msUTC(now), msUTC(r.Deadline)
	checkRecord(t, "CreateRun's run", got, want)
	stored, err := s.Run(ctx, r.ID)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	checkRecord(t, "Run", stored, want)

	// Tasks come back in the order given, each of the run, pending when
	// given no state, at version 1, updated at the creation.
	first.RunID, first.State = r.ID, record.TaskPending
	last.RunID = r.ID
	checkRecord(t, "RunTasks", mustTasks(t, ctx, s, r.ID),
		[]record.Task{storedTask(first, 1, now), storedTask(full, 1, now), storedTask(last, 1, now)})
	if evs := mustEvents(t, ctx, s, r.ID, "review"); len(evs) != 0 {
		t.Errorf("TaskEvents of a new task = %v, want none", evs)
	}

	// A run with no tasks has none; an unknown run is not found.
	mustCreateRun(t, ctx, s, newRun("empty"), now)
	if tasks := mustTasks(t, ctx, s, "empty"); len(tasks) != 0 {
		t.Errorf("RunTasks of a run without tasks = %v, want none", tasks)
	}
	if _, err := s.Run(ctx, "nope"); !errors.Is(err, job.ErrNotFound) {
		t.Errorf("Run of an unknown run: %v, want job.ErrNotFound", err)
	}
	if _, err := s.RunTasks(ctx, "nope"); !errors.Is(err, job.ErrNotFound) {
		t.Errorf("RunTasks of an unknown run: %v, want job.ErrNotFound", err)
	}
	if _, err := s.TaskEvents(ctx, r.ID, "nope"); !errors.Is(err, job.ErrNotFound) {
		t.Errorf("TaskEvents of an unknown task: %v, want job.ErrNotFound", err)
	}

	// Tasks of one name in two runs are two tasks.
	mustCreateRun(t, ctx, s, newRun("nightly-2"), now, record.Task{Name: "fetch", State: record.TaskComplete})
	if tasks := mustTasks(t, ctx, s, r.ID); len(tasks) != 3 || tasks[0].State != record.TaskPending {
		t.Errorf("nightly-1's tasks after nightly-2 was created = %s", show(tasks))
	}
}

func testCreateRunAgain(t *testing.T, setup jobsSetup) {
	ctx, s := setup(t)

	r := newRun("nightly-1")
	first := mustCreateRun(t, ctx, s, r, at(0), record.Task{Name: "fetch"})

	// The same id and definition (spaced otherwise): the stored run, its
	// tasks as they were, whatever tasks come with it.
	again := r
	again.Definition = json.RawMessage(strings.ReplaceAll(string(r.Definition), ",", ", "))
	again.Status = record.RunPaused
	got, created, err := s.CreateRun(ctx, again, []record.Task{{Name: "other"}}, at(time.Hour))
	if err != nil || created {
		t.Fatalf("CreateRun again: created %v, %v; want the stored run", created, err)
	}
	checkRecord(t, "CreateRun again", got, first)
	tasks := mustTasks(t, ctx, s, r.ID)
	if len(tasks) != 1 || tasks[0].Name != "fetch" {
		t.Errorf("tasks after CreateRun again = %s, want fetch only", show(tasks))
	}

	// Another definition under the id: a conflict, and nothing changes.
	other := r
	other.Definition = definition("weekly")
	if _, _, err := s.CreateRun(ctx, other, nil, at(2*time.Hour)); !errors.Is(err, record.ErrConflict) {
		t.Errorf("CreateRun with another definition: %v, want record.ErrConflict", err)
	}
	stored, err := s.Run(ctx, r.ID)
	if err != nil {
		t.Fatal(err)
	}
	checkRecord(t, "run after a conflicting CreateRun", stored, first)

	// Concurrent creations of one run: one creates it, each gets it.
	const n = 8
	var wg sync.WaitGroup
	runs := make([]record.Run, n)
	createdN := make([]bool, n)
	errs := make([]error, n)
	for i := range n {
		wg.Go(func() {
			runs[i], createdN[i], errs[i] = s.CreateRun(ctx, newRun("race"), []record.Task{{Name: "a"}, {Name: "b"}}, at(0))
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	count := 0
	for i := range n {
		if createdN[i] {
			count++
		}
		checkRecord(t, fmt.Sprintf("concurrent CreateRun %d", i), runs[i], runs[0])
	}
	if count != 1 {
		t.Errorf("%d of %d concurrent CreateRun created the run, want 1", count, n)
	}
	if tasks := mustTasks(t, ctx, s, "race"); len(tasks) != 2 {
		t.Errorf("tasks of a run created concurrently = %s, want a and b once", show(tasks))
	}
}

func testRunsAndCount(t *testing.T, setup jobsSetup) {
	ctx, s := setup(t)

	if runs, err := s.Runs(ctx); err != nil || len(runs) != 0 {
		t.Errorf("Runs of an empty store = %v, %v", runs, err)
	}
	if c, err := s.CountRuns(ctx); err != nil || len(c) != 0 {
		t.Errorf("CountRuns of an empty store = %v, %v", c, err)
	}
	// Created out of id order: listed oldest first, then by id.
	mustCreateRun(t, ctx, s, newRun("c"), at(time.Second))
	mustCreateRun(t, ctx, s, newRun("b"), at(2*time.Second))
	mustCreateRun(t, ctx, s, newRun("a"), at(2*time.Second))
	d := mustCreateRun(t, ctx, s, newRun("d"), at(0))
	d.Status = record.RunPaused
	if _, err := s.UpdateRun(ctx, d, at(time.Hour)); err != nil {
		t.Fatal(err)
	}
	runs, err := s.Runs(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var order []string
	for _, r := range runs {
		order = append(order, r.ID)
	}
	if fmt.Sprint(order) != "[d c a b]" {
		t.Errorf("Runs = %v, want [d c a b]", order)
	}
	c, err := s.CountRuns(ctx)
	if want := map[record.RunStatus]int{record.RunRunning: 3, record.RunPaused: 1}; err != nil || !reflect.DeepEqual(c, want) {
		t.Errorf("CountRuns = %v, %v; want %v", c, err, want)
	}
}

func testUpdateRun(t *testing.T, setup jobsSetup) {
	ctx, s := setup(t)

	r := mustCreateRun(t, ctx, s, newRun("nightly-1"), at(0))
	ch := r
	ch.Status, ch.Durable, ch.Deadline, ch.Starts = record.RunPaused, false, time.Time{}, 7
	// The store keeps its own name, definition and creation time.
	ch.Name, ch.Definition, ch.CreatedAt = "renamed", definition("renamed"), at(time.Hour)
	got, err := s.UpdateRun(ctx, ch, at(time.Minute))
	if err != nil {
		t.Fatalf("UpdateRun: %v", err)
	}
	want := r
	want.Status, want.Durable, want.Deadline, want.Starts = record.RunPaused, false, time.Time{}, 7
	want.UpdatedAt, want.Version = msUTC(at(time.Minute)), 2
	// UpdateRun does not read the stored definition back: it returns the
	// one it was given.
	gotDef := want
	gotDef.Definition = ch.Definition
	checkRecord(t, "UpdateRun", got, gotDef)
	if stored, err := s.Run(ctx, r.ID); err != nil {
		t.Fatal(err)
	} else {
		checkRecord(t, "Run after UpdateRun", stored, want)
	}

	// The version read before the update is stale now.
	if _, err := s.UpdateRun(ctx, r, at(2*time.Minute)); !errors.Is(err, record.ErrConflict) {
		t.Errorf("UpdateRun at version 1 after version 2: %v, want record.ErrConflict", err)
	}
	unknown := newRun("nope")
	unknown.Status, unknown.Version = record.RunRunning, 1
	if _, err := s.UpdateRun(ctx, unknown, at(0)); !errors.Is(err, job.ErrNotFound) {
		t.Errorf("UpdateRun of an unknown run: %v, want job.ErrNotFound", err)
	}
	got.Status = "gone"
	if _, err := s.UpdateRun(ctx, got, at(0)); !errors.Is(err, record.ErrInvalid) {
		t.Errorf("UpdateRun to an unknown status: %v, want record.ErrInvalid", err)
	}
	if stored, err := s.Run(ctx, r.ID); err != nil || stored.Version != 2 || stored.Status != record.RunPaused {
		t.Errorf("Run after refused updates = %s, %v; want it at version 2", show(stored), err)
	}
}

func testUpdateTask(t *testing.T, setup jobsSetup) {
	ctx, s := setup(t)

	mustCreateRun(t, ctx, s, newRun("nightly-1"), at(0), record.Task{Name: "fetch"}, record.Task{Name: "review"})
	k := mustTasks(t, ctx, s, "nightly-1")[1]

	// Every field the engine writes is kept, with its event.
	full := fullTask("nightly-1", "review")
	full.Version = k.Version
	exit := 75
	now := at(time.Hour + 999*time.Microsecond)
	got := mustUpdateTask(t, ctx, s, full, &record.TaskEvent{From: record.TaskRunning, To: record.TaskPaused,
		Reason: "quota claude-code/five_hour", AttemptID: "nightly-1:review:1", ExitCode: &exit,
		Outcome: "quota", Candidate: "claude"}, now)
	want := storedTask(full, 2, now)
	checkRecord(t, "UpdateTask", got, want)
	checkRecord(t, "RunTasks after UpdateTask", mustTasks(t, ctx, s, "nightly-1")[1], want)
	checkRecord(t, "TaskEvents", mustEvents(t, ctx, s, "nightly-1", "review"), []record.TaskEvent{{
		RunID: "nightly-1", Task: "review", Seq: 1, At: msUTC(now), From: record.TaskRunning, To: record.TaskPaused,
		Reason: "quota claude-code/five_hour", AttemptID: "nightly-1:review:1", ExitCode: &exit, Outcome: "quota",
		Candidate: "claude"}})

	// Cleared again: no quota, no limits, no checkpoint; no event.
	cleared := got
	cleared.State, cleared.Quota, cleared.Limited, cleared.Checkpoint, cleared.WaitingOn = record.TaskRunning, nil,
		map[string]time.Time{}, nil, ""
	got = mustUpdateTask(t, ctx, s, cleared, nil, at(2*time.Hour))
	checkRecord(t, "UpdateTask clearing", got, storedTask(cleared, 3, at(2*time.Hour)))
	if evs := mustEvents(t, ctx, s, "nightly-1", "review"); len(evs) != 1 {
		t.Errorf("events after an update without one = %s, want the first only", show(evs))
	}
	// The other task did not change.
	if f := mustTasks(t, ctx, s, "nightly-1")[0]; f.Version != 1 || f.State != record.TaskPending {
		t.Errorf("fetch after review's updates = %s", show(f))
	}

	// A stale version is a conflict, and its event is not appended.
	stale := full
	if _, err := s.UpdateTask(ctx, stale, &record.TaskEvent{From: record.TaskPaused, To: record.TaskRunning}, at(3*time.Hour)); !errors.Is(err, record.ErrConflict) {
		t.Errorf("UpdateTask at a stale version: %v, want record.ErrConflict", err)
	}
	if evs := mustEvents(t, ctx, s, "nightly-1", "review"); len(evs) != 1 {
		t.Errorf("events after a conflict = %s, want the first only", show(evs))
	}
	// A task of a run that does not exist, or a task the run lacks.
	for _, k := range []record.Task{{RunID: "nope", Name: "review", State: record.TaskRunning, Version: 1},
		{RunID: "nightly-1", Name: "nope", State: record.TaskRunning, Version: 1}} {
		if _, err := s.UpdateTask(ctx, k, &record.TaskEvent{To: record.TaskRunning}, at(0)); !errors.Is(err, job.ErrNotFound) {
			t.Errorf("UpdateTask of task %s of run %s: %v, want job.ErrNotFound", k.Name, k.RunID, err)
		}
	}
	if _, err := s.TaskEvents(ctx, "nope", "review"); !errors.Is(err, job.ErrNotFound) {
		t.Errorf("TaskEvents of a run that does not exist: %v, want job.ErrNotFound", err)
	}
}

// UpdateTasks writes every task of a batch with its event, or, when one
// write is refused, none of them.
func testUpdateTasks(t *testing.T, setup jobsSetup) {
	ctx, s := setup(t)
	mustCreateRun(t, ctx, s, newRun("batch-1"), at(0), record.Task{Name: "fetch"}, record.Task{Name: "review"}, record.Task{Name: "publish"})
	ks := mustTasks(t, ctx, s, "batch-1")
	fetch, review := ks[0], ks[1]
	fetch.State, fetch.Stage, fetch.JobID = record.TaskComplete, "complete", "batch-1.fetch"
	review.State, review.Stage, review.Starts = record.TaskRunning, "ready", 1
	now := at(time.Hour)
	got, err := s.UpdateTasks(ctx, []record.TaskWrite{
		{Task: fetch, Event: &record.TaskEvent{From: record.TaskPending, To: record.TaskComplete, Reason: "job batch-1.fetch is complete"}},
		{Task: review},
	}, now)
	if err != nil {
		t.Fatalf("UpdateTasks: %v", err)
	}
	want := []record.Task{storedTask(fetch, 2, now), storedTask(review, 2, now)}
	checkRecord(t, "UpdateTasks", got, want)
	stored := mustTasks(t, ctx, s, "batch-1")
	checkRecord(t, "RunTasks after UpdateTasks", stored[:2], want)
	if evs := mustEvents(t, ctx, s, "batch-1", "fetch"); len(evs) != 1 || evs[0].Seq != 1 || evs[0].To != record.TaskComplete {
		t.Errorf("fetch's events = %s, want the one written", show(evs))
	}
	if evs := mustEvents(t, ctx, s, "batch-1", "review"); len(evs) != 0 {
		t.Errorf("review's events = %s, want none", show(evs))
	}

	// One stale write refuses the batch: the write before it is undone,
	// with its event.
	publish := stored[2]
	publish.State = record.TaskRunning
	staleReview := review // version 1, stored 2
	staleReview.Stage = "running"
	_, err = s.UpdateTasks(ctx, []record.TaskWrite{
		{Task: publish, Event: &record.TaskEvent{From: record.TaskPending, To: record.TaskRunning, Reason: "released"}},
		{Task: staleReview},
	}, at(2*time.Hour))
	if !errors.Is(err, record.ErrConflict) {
		t.Fatalf("UpdateTasks with a stale write: %v, want record.ErrConflict", err)
	}
	if p := mustTasks(t, ctx, s, "batch-1")[2]; p.Version != 1 || p.State != record.TaskPending {
		t.Errorf("publish after a refused batch = %s, want as it was", show(p))
	}
	if evs := mustEvents(t, ctx, s, "batch-1", "publish"); len(evs) != 0 {
		t.Errorf("publish's events after a refused batch = %s, want none", show(evs))
	}
	// A task that does not exist refuses it too; an empty batch writes
	// nothing.
	if _, err := s.UpdateTasks(ctx, []record.TaskWrite{{Task: publish}, {Task: record.Task{RunID: "batch-1", Name: "nope", State: record.TaskRunning, Version: 1}}}, at(3*time.Hour)); !errors.Is(err, job.ErrNotFound) {
		t.Errorf("UpdateTasks with a missing task: %v, want job.ErrNotFound", err)
	}
	if p := mustTasks(t, ctx, s, "batch-1")[2]; p.Version != 1 {
		t.Errorf("publish after a refused batch = %s, want version 1", show(p))
	}
	if got, err := s.UpdateTasks(ctx, nil, at(4*time.Hour)); err != nil || len(got) != 0 {
		t.Errorf("an empty UpdateTasks: %v, %d tasks", err, len(got))
	}
}

func testUpdateTaskConcurrently(t *testing.T, setup jobsSetup) {
	ctx, s := setup(t)

	mustCreateRun(t, ctx, s, newRun("nightly-1"), at(0), record.Task{Name: "review"})
	k := mustTasks(t, ctx, s, "nightly-1")[0]
	const n = 16
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		wg.Go(func() {
			ch := k
			ch.State, ch.Candidate = record.TaskRunning, fmt.Sprintf("candidate-%d", i)
			_, errs[i] = s.UpdateTask(ctx, ch, &record.TaskEvent{From: record.TaskPending, To: record.TaskRunning,
				Candidate: ch.Candidate}, at(time.Second))
		})
	}
	wg.Wait()
	winner := -1
	for i, err := range errs {
		switch {
		case err == nil && winner >= 0:
			t.Errorf("updates %d and %d of version 1 both won", winner, i)
		case err == nil:
			winner = i
		case !errors.Is(err, record.ErrConflict):
			t.Errorf("update %d: %v, want nil or record.ErrConflict", i, err)
		}
	}
	if winner < 0 {
		t.Fatal("no update of version 1 won")
	}
	stored := mustTasks(t, ctx, s, "nightly-1")[0]
	if stored.Version != 2 || stored.Candidate != fmt.Sprintf("candidate-%d", winner) {
		t.Errorf("task after the race = %s, want candidate-%d at version 2", show(stored), winner)
	}
	evs := mustEvents(t, ctx, s, "nightly-1", "review")
	if len(evs) != 1 || evs[0].Seq != 1 || evs[0].Candidate != stored.Candidate {
		t.Errorf("events after the race = %s, want the winner's only", show(evs))
	}

	// Updates of distinct tasks at once all land, each task's events
	// numbered from 1.
	var tasks []record.Task
	for i := range n {
		tasks = append(tasks, record.Task{Name: fmt.Sprintf("t%02d", i)})
	}
	mustCreateRun(t, ctx, s, newRun("fan-out"), at(0), tasks...)
	stored2 := mustTasks(t, ctx, s, "fan-out")
	for i := range n {
		wg.Go(func() {
			k := stored2[i]
			for step := range 3 {
				k.Starts = step + 1
				k, errs[i] = s.UpdateTask(ctx, k, &record.TaskEvent{From: record.TaskPending, To: record.TaskPending,
					Reason: fmt.Sprintf("step %d", step+1)}, at(time.Duration(step)*time.Second))
				if errs[i] != nil {
					return
				}
			}
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	for _, k := range mustTasks(t, ctx, s, "fan-out") {
		evs := mustEvents(t, ctx, s, "fan-out", k.Name)
		if k.Version != 4 || k.Starts != 3 || len(evs) != 3 || evs[0].Seq != 1 || evs[2].Seq != 3 {
			t.Errorf("task %s = %s, events %s; want version 4, 3 starts and events 1 to 3", k.Name, show(k), show(evs))
		}
	}
}

func testTaskEvents(t *testing.T, setup jobsSetup) {
	ctx, s := setup(t)

	mustCreateRun(t, ctx, s, newRun("nightly-1"), at(0), record.Task{Name: "fetch"}, record.Task{Name: "review"})
	tasks := mustTasks(t, ctx, s, "nightly-1")
	fetch, review := tasks[0], tasks[1]
	moves := []record.TaskState{record.TaskRunning, record.TaskWaiting, record.TaskWaiting, record.TaskRunning, record.TaskComplete}
	from := record.TaskPending
	for i, to := range moves {
		now := at(time.Duration(i) * time.Minute)
		fetch.State = to
		// An event given no time is at the update's; one given its own
		// time keeps it.
		ev := &record.TaskEvent{From: from, To: to, Reason: fmt.Sprintf("move %d", i+1)}
		if i%2 == 1 {
			ev.At = now.Add(-time.Second)
		}
		fetch = mustUpdateTask(t, ctx, s, fetch, ev, now)
		from = to
		// Another task's events interleave, numbered on their own.
		review = mustUpdateTask(t, ctx, s, review, &record.TaskEvent{RunID: "nightly-1", Task: "review",
			From: record.TaskPending, To: record.TaskPending, Reason: "needs fetch"}, now)
	}
	evs := mustEvents(t, ctx, s, "nightly-1", "fetch")
	if len(evs) != len(moves) {
		t.Fatalf("fetch's events = %s, want %d", show(evs), len(moves))
	}
	from = record.TaskPending
	for i, e := range evs {
		wantAt := msUTC(at(time.Duration(i) * time.Minute))
		if i%2 == 1 {
			wantAt = msUTC(at(time.Duration(i)*time.Minute - time.Second))
		}
		want := record.TaskEvent{RunID: "nightly-1", Task: "fetch", Seq: i + 1, At: wantAt, From: from, To: moves[i],
			Reason: fmt.Sprintf("move %d", i+1)}
		checkRecord(t, fmt.Sprintf("event %d", i+1), e, want)
		from = moves[i]
	}
	if evs := mustEvents(t, ctx, s, "nightly-1", "review"); len(evs) != len(moves) || evs[len(evs)-1].Seq != len(moves) {
		t.Errorf("review's events = %s, want %d numbered from 1", show(evs), len(moves))
	}
}

func testRefusedRecords(t *testing.T, setup jobsSetup) {
	ctx, s := setup(t)

	long := strings.Repeat("é", record.MaxTextBytes/2+1)
	bad := []struct {
		name  string
		r     record.Run
		tasks []record.Task
	}{
		{"no id", record.Run{Name: "n", Definition: definition("n")}, nil},
		{"definition not JSON", record.Run{ID: "r", Name: "n", Definition: json.RawMessage(`{"name":`)}, nil},
		{"unknown status", record.Run{ID: "r", Name: "n", Definition: definition("n"), Status: "done"}, nil},
		{"task without a name", newRun("r"), []record.Task{{Name: "a"}, {}}},
		{"two tasks of one name", newRun("r"), []record.Task{{Name: "a"}, {Name: "a"}}},
		{"task of another run", newRun("r"), []record.Task{{RunID: "other", Name: "a"}}},
		{"unknown state", newRun("r"), []record.Task{{Name: "a", State: "done"}}},
		{"stage too long", newRun("r"), []record.Task{{Name: "a", Stage: long}}},
		{"message not UTF-8", newRun("r"), []record.Task{{Name: "a", Quota: &record.Quota{Provider: "p", Message: "\xc3("}}}},
	}
	for _, b := range bad {
		if _, _, err := s.CreateRun(ctx, b.r, b.tasks, at(0)); !errors.Is(err, record.ErrInvalid) {
			t.Errorf("CreateRun (%s): %v, want record.ErrInvalid", b.name, err)
		}
	}
	if runs, err := s.Runs(ctx); err != nil || len(runs) != 0 {
		t.Errorf("Runs after refused creations = %s, %v; want none", show(runs), err)
	}

	mustCreateRun(t, ctx, s, newRun("r"), at(0), record.Task{Name: "a"})
	k := mustTasks(t, ctx, s, "r")[0]
	refused := []struct {
		name string
		k    record.Task
		ev   *record.TaskEvent
	}{
		{"unknown state", func() record.Task { c := k; c.State = "done"; return c }(), nil},
		{"reason too long", k, &record.TaskEvent{To: record.TaskRunning, Reason: long}},
		{"event of an unknown state", k, &record.TaskEvent{From: "idle", To: record.TaskRunning}},
		{"event of another task", k, &record.TaskEvent{Task: "b", To: record.TaskRunning}},
		{"workdir not UTF-8", func() record.Task { c := k; c.Workdir = "/src/\xff"; return c }(), nil},
		{"negative attempts", func() record.Task { c := k; c.Attempts = -1; return c }(), nil},
	}
	for _, r := range refused {
		if _, err := s.UpdateTask(ctx, r.k, r.ev, at(time.Hour)); !errors.Is(err, record.ErrInvalid) {
			t.Errorf("UpdateTask (%s): %v, want record.ErrInvalid", r.name, err)
		}
	}
	checkRecord(t, "task after refused updates", mustTasks(t, ctx, s, "r")[0], k)
	if evs := mustEvents(t, ctx, s, "r", "a"); len(evs) != 0 {
		t.Errorf("events after refused updates = %s, want none", show(evs))
	}
}
