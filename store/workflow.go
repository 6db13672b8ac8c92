package store

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/layoverhq/layover/job"
	"github.com/layoverhq/layover/workflow/record"
)

// What both stores share of the workflow records (docs/lifecycle.md, What
// the store keeps): the rules applied on a write, every time cut to the
// millisecond, and the JSON of a task's quota and limited candidates.

// MSRun is r with every time as a store keeps it (MSTime).
func MSRun(r record.Run) record.Run {
	r.CreatedAt, r.UpdatedAt, r.Deadline = MSTime(r.CreatedAt), MSTime(r.UpdatedAt), MSTime(r.Deadline)
	return r
}

// MSTask is t with every time as a store keeps it (MSTime), its quota and
// checkpoint copied, and no Limited map when it is empty.
func MSTask(t record.Task) record.Task {
	t.UpdatedAt = MSTime(t.UpdatedAt)
	if t.Quota != nil {
		q := *t.Quota
		q.ResetAt = MSTime(q.ResetAt)
		t.Quota = &q
	}
	if len(t.Limited) == 0 {
		t.Limited = nil
	} else {
		l := make(map[string]time.Time, len(t.Limited))
		for c, until := range t.Limited {
			l[c] = MSTime(until)
		}
		t.Limited = l
	}
	if t.Checkpoint != nil {
		cp := *t.Checkpoint
		cp.At = MSTime(cp.At)
		t.Checkpoint = &cp
	}
	return t
}

// NewRun is r and its tasks as a store inserts them on CreateRun at now:
// Status "" is running and a task's State "" pending, a task's RunID is
// r's; Version 1, CreatedAt and UpdatedAt now; every time as a store keeps
// it. It refuses a record that does not validate, and two tasks of one
// name.
func NewRun(r record.Run, tasks []record.Task, now time.Time) (record.Run, []record.Task, error) {
	if r.Status == "" {
		r.Status = record.RunRunning
	}
	r.CreatedAt, r.UpdatedAt, r.Version = now, now, 1
	r = MSRun(r)
	if err := r.Validate(); err != nil {
		return record.Run{}, nil, err
	}
	out := make([]record.Task, len(tasks))
	seen := make(map[string]bool, len(tasks))
	for i, t := range tasks {
		if t.RunID != "" && t.RunID != r.ID {
			return record.Run{}, nil, fmt.Errorf("%w: task %q is of run %q, not %q", record.ErrInvalid, t.Name, t.RunID, r.ID)
		}
		if seen[t.Name] {
			return record.Run{}, nil, fmt.Errorf("%w: run %q: two tasks named %q", record.ErrInvalid, r.ID, t.Name)
		}
		seen[t.Name] = true
		t.RunID = r.ID
		if t.State == "" {
			t.State = record.TaskPending
		}
		t.UpdatedAt, t.Version = now, 1
		if err := t.Validate(); err != nil {
			return record.Run{}, nil, err
		}
		out[i] = MSTask(t)
	}
	return r, out, nil
}

// SameDefinition reports whether two definitions are the same JSON text
// but for insignificant space.
func SameDefinition(a, b json.RawMessage) bool {
	var ca, cb bytes.Buffer
	if json.Compact(&ca, a) != nil || json.Compact(&cb, b) != nil {
		return bytes.Equal(a, b)
	}
	return bytes.Equal(ca.Bytes(), cb.Bytes())
}

// RunUpdate is r as a store writes it on UpdateRun at now, UpdatedAt set
// (the store keeps its own ID, Name, Definition and CreatedAt, and grows
// Version), or why r does not validate. The definition is not checked: an
// update neither writes nor reads it, and CreateRun checked it once.
func RunUpdate(r record.Run, now time.Time) (record.Run, error) {
	r.UpdatedAt = now
	r = MSRun(r)
	v := r
	v.Definition = json.RawMessage("{}")
	return r, v.Validate()
}

// TaskUpdate is t as a store writes it on UpdateTask at now, UpdatedAt
// set, and ev, when given, as it appends it: of t's run and task, At now
// when zero (the store assigns Seq). It refuses a task or event that does
// not validate.
func TaskUpdate(t record.Task, ev *record.TaskEvent, now time.Time) (record.Task, *record.TaskEvent, error) {
	t.UpdatedAt = now
	t = MSTask(t)
	if err := t.Validate(); err != nil {
		return record.Task{}, nil, err
	}
	if ev == nil {
		return t, nil, nil
	}
	e := *ev
	if (e.RunID != "" && e.RunID != t.RunID) || (e.Task != "" && e.Task != t.Name) {
		return record.Task{}, nil, fmt.Errorf("%w: an event of task %q of run %q given with task %q of run %q",
			record.ErrInvalid, e.Task, e.RunID, t.Name, t.RunID)
	}
	e.RunID, e.Task, e.Seq = t.RunID, t.Name, 0
	if e.At.IsZero() {
		e.At = now
	}
	e.At = MSTime(e.At)
	if e.ExitCode != nil {
		c := *e.ExitCode
		e.ExitCode = &c
	}
	if err := e.Validate(); err != nil {
		return record.Task{}, nil, err
	}
	return t, &e, nil
}

// storedQuota is a task's quota as the stores keep it, in its quota column.
type storedQuota struct {
	Provider string `json:"provider"`
	Resource string `json:"resource"`
	ResetMS  int64  `json:"reset_at_ms"` // 0: unknown
	Message  string `json:"message"`
}

// EncodeQuota is q as the quota column holds it: JSON, nil for no quota.
func EncodeQuota(q *record.Quota) []byte {
	if q == nil {
		return nil
	}
	// A struct of strings and an integer always encodes.
	b, _ := json.Marshal(storedQuota{Provider: q.Provider, Resource: q.Resource, ResetMS: MS(q.ResetAt), Message: q.Message})
	return b
}

// DecodeQuota reads a quota column: nil (NULL) is no quota.
func DecodeQuota(b []byte) (*record.Quota, error) {
	if b == nil {
		return nil, nil
	}
	var s storedQuota
	if err := json.Unmarshal(b, &s); err != nil {
		return nil, fmt.Errorf("stored quota: %w", err)
	}
	return &record.Quota{Provider: s.Provider, Resource: s.Resource, ResetAt: FromMS(s.ResetMS), Message: s.Message}, nil
}

// EncodeLimited is a task's limited candidates as the limited column holds
// them: a JSON object of candidate to milliseconds, "{}" for none.
func EncodeLimited(l map[string]time.Time) []byte {
	m := make(map[string]int64, len(l))
	for c, until := range l {
		m[c] = MS(until)
	}
	// A map of strings to integers always encodes.
	b, _ := json.Marshal(m)
	return b
}

// DecodeLimited reads a limited column; none is a nil map.
func DecodeLimited(b []byte) (map[string]time.Time, error) {
	var m map[string]int64
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("stored limited candidates: %w", err)
	}
	if len(m) == 0 {
		return nil, nil
	}
	l := make(map[string]time.Time, len(m))
	for c, ms := range m {
		l[c] = FromMS(ms)
	}
	return l, nil
}

// The columns of the workflow tables as both stores read and write them,
// in the order of the values RunValues, TaskValues and EventValues give and
// ScanRun, ScanTask and ScanEvent read. The two drivers take and give the
// same Go types for them: strings, integers, a bool, []byte for bytes and
// JSON, and pointers for the nullable columns.
const (
	RunColumns = `id, name, definition, status, durable, created_at_ms, updated_at_ms, deadline_ms, starts, version`
	// UpdatedRunColumns are RunColumns but the definition, what UpdateRun
	// returns (ScanUpdatedRun reads them): a definition is up to
	// record.MaxDefinitionBytes and never changes.
	UpdatedRunColumns = `id, name, status, durable, created_at_ms, updated_at_ms, deadline_ms, starts, version`

	TaskColumns = `run_id, name, state, stage, attempts, starts, candidate, session_id, workdir, quota, limited,
	waiting_on, checkpoint_stage, checkpoint_data, checkpoint_at_ms, job_id, updated_at_ms, version`

	EventColumns = `run_id, task, seq, at_ms, from_state, to_state, reason, attempt_id, exit_code, outcome, candidate`
)

// Scanner is a row of a query, as database/sql and pgx give one.
type Scanner interface{ Scan(dest ...any) error }

// RunValues are the values of RunColumns for r.
func RunValues(r record.Run) []any {
	return []any{r.ID, r.Name, []byte(r.Definition), string(r.Status), r.Durable, MS(r.CreatedAt),
		MS(r.UpdatedAt), MS(r.Deadline), int64(r.Starts), r.Version}
}

// ScanRun reads a row of RunColumns.
func ScanRun(row Scanner) (record.Run, error) {
	var def []byte
	r, err := scanRun(row, &def)
	r.Definition = json.RawMessage(def)
	return r, err
}

// ScanUpdatedRun reads a row of UpdatedRunColumns, with def as the run's
// definition.
func ScanUpdatedRun(row Scanner, def json.RawMessage) (record.Run, error) {
	r, err := scanRun(row, nil)
	r.Definition = def
	return r, err
}

// scanRun reads a row of RunColumns into a run, its definition into *def;
// of UpdatedRunColumns when def is nil.
func scanRun(row Scanner, def *[]byte) (record.Run, error) {
	var r record.Run
	var status string
	var created, updated, deadline, starts int64
	dest := []any{&r.ID, &r.Name, &status, &r.Durable, &created, &updated, &deadline, &starts, &r.Version}
	if def != nil {
		dest = slices.Insert(dest, 2, any(def))
	}
	if err := row.Scan(dest...); err != nil {
		return record.Run{}, err
	}
	r.Status, r.Starts = record.RunStatus(status), int(starts)
	r.CreatedAt, r.UpdatedAt, r.Deadline = FromMS(created), FromMS(updated), FromMS(deadline)
	return r, nil
}

// TaskValues are the values of TaskColumns for t: the quota as JSON text
// (nil for none), the limited candidates as JSON text, the checkpoint's
// three columns nil for none.
func TaskValues(t record.Task) []any {
	var quota *string
	if q := EncodeQuota(t.Quota); q != nil {
		s := string(q)
		quota = &s
	}
	cpStage, cpData, cpAt := CheckpointValues(t.Checkpoint)
	return []any{t.RunID, t.Name, string(t.State), t.Stage, int64(t.Attempts), int64(t.Starts), t.Candidate,
		t.SessionID, t.Workdir, quota, string(EncodeLimited(t.Limited)), t.WaitingOn, cpStage, cpData, cpAt,
		t.JobID, MS(t.UpdatedAt), t.Version}
}

// ScanTask reads a row of TaskColumns. A quota or limited column that is
// not the JSON the stores write is an error naming the task.
func ScanTask(row Scanner) (record.Task, error) {
	var t record.Task
	var state string
	var quota, limited, cpData []byte
	var cpStage *string
	var cpAt *int64
	var attempts, starts, updated int64
	if err := row.Scan(&t.RunID, &t.Name, &state, &t.Stage, &attempts, &starts, &t.Candidate, &t.SessionID,
		&t.Workdir, &quota, &limited, &t.WaitingOn, &cpStage, &cpData, &cpAt, &t.JobID, &updated,
		&t.Version); err != nil {
		return record.Task{}, err
	}
	t.State, t.Attempts, t.Starts, t.UpdatedAt = record.TaskState(state), int(attempts), int(starts), FromMS(updated)
	var err error
	if t.Quota, err = DecodeQuota(quota); err != nil {
		return record.Task{}, fmt.Errorf("task %s of run %s: %w", t.Name, t.RunID, err)
	}
	if t.Limited, err = DecodeLimited(limited); err != nil {
		return record.Task{}, fmt.Errorf("task %s of run %s: %w", t.Name, t.RunID, err)
	}
	t.Checkpoint = ReadCheckpoint(cpStage, cpData, cpAt)
	return t, nil
}

// CheckpointValues are the values of the checkpoint_stage, checkpoint_data
// and checkpoint_at_ms columns of a job or task for cp: nil (NULL) for
// none.
func CheckpointValues(cp *job.Checkpoint) (stage *string, data []byte, at *int64) {
	if cp == nil {
		return nil, nil, nil
	}
	ms := MS(cp.At)
	if cp.Data != nil {
		data = []byte(cp.Data)
	}
	return &cp.Stage, data, &ms
}

// ReadCheckpoint is the checkpoint those columns hold; nil when the stage
// is NULL.
func ReadCheckpoint(stage *string, data []byte, at *int64) *job.Checkpoint {
	if stage == nil {
		return nil
	}
	cp := &job.Checkpoint{Stage: *stage}
	if at != nil {
		cp.At = FromMS(*at)
	}
	if data != nil {
		cp.Data = json.RawMessage(data)
	}
	return cp
}

// EventValues are the values of EventColumns for e.
func EventValues(e record.TaskEvent) []any {
	var exit *int64
	if e.ExitCode != nil {
		c := int64(*e.ExitCode)
		exit = &c
	}
	return []any{e.RunID, e.Task, int64(e.Seq), MS(e.At), string(e.From), string(e.To), e.Reason, e.AttemptID,
		exit, e.Outcome, e.Candidate}
}

// ScanEvent reads a row of EventColumns.
func ScanEvent(row Scanner) (record.TaskEvent, error) {
	var e record.TaskEvent
	var from, to string
	var seq, at int64
	var exit *int64
	if err := row.Scan(&e.RunID, &e.Task, &seq, &at, &from, &to, &e.Reason, &e.AttemptID, &exit, &e.Outcome,
		&e.Candidate); err != nil {
		return record.TaskEvent{}, err
	}
	e.Seq, e.At, e.From, e.To = int(seq), FromMS(at), record.TaskState(from), record.TaskState(to)
	if exit != nil {
		c := int(*exit)
		e.ExitCode = &c
	}
	return e, nil
}
