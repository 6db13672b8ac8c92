package postgres

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/layoverhq/layover/job"
	"github.com/layoverhq/layover/store"
	"github.com/layoverhq/layover/workflow/record"
)

// Workflow runs (migration 007): a run's row, its tasks' rows in the order
// created, and each task's events. Each write is one transaction at READ
// COMMITTED: an update is a compare-and-set on the row's version, which
// the UPDATE checks again on the row it locked, so of two writers of one
// version the second finds the first's version and changes nothing. A
// task's event takes its seq from the task's event_seq, bumped by the same
// UPDATE, under that lock.

const (
	runColumns = `id, name, definition, status, durable, created_at_ms, updated_at_ms, deadline_ms, starts, version`

	taskColumns = `run_id, name, state, stage, attempts, starts, candidate, session_id, workdir, quota, limited,
	waiting_on, checkpoint_stage, checkpoint_data, checkpoint_at_ms, job_id, updated_at_ms, version`

	eventColumns = `run_id, task, seq, at_ms, from_state, to_state, reason, attempt_id, exit_code, outcome, candidate`

	selectRun = `SELECT ` + runColumns + ` FROM workflow_run WHERE id = $1`
	listRuns  = `SELECT ` + runColumns + ` FROM workflow_run ORDER BY created_at_ms, id`
	countRuns = `SELECT status, count(*) FROM workflow_run GROUP BY status`
	// insertRun inserts a new run, or nothing when its id is taken.
	insertRun = `INSERT INTO workflow_run (` + runColumns + `) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)
	ON CONFLICT (id) DO NOTHING`
	updateRun = `UPDATE workflow_run SET status = $1, durable = $2, deadline_ms = $3, starts = $4, updated_at_ms = $5,
	version = version + 1 WHERE id = $6 AND version = $7 RETURNING ` + runColumns
	selectRunExists = `SELECT EXISTS (SELECT 1 FROM workflow_run WHERE id = $1)`

	// insertTasks inserts a run's tasks from one array per column, each
	// at its place in the arrays.
	insertTasks = `INSERT INTO workflow_task (` + taskColumns + `, position, event_seq)
	SELECT t.run_id, t.name, t.state, t.stage, t.attempts, t.starts, t.candidate, t.session_id, t.workdir,
		t.quota::jsonb, t.limited::jsonb, t.waiting_on, t.checkpoint_stage, t.checkpoint_data, t.checkpoint_at_ms,
		t.job_id, t.updated_at_ms, t.version, t.ord - 1, 0
	FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::bigint[], $6::bigint[], $7::text[], $8::text[],
		$9::text[], $10::text[], $11::text[], $12::text[], $13::text[], $14::bytea[], $15::bigint[], $16::text[],
		$17::bigint[], $18::bigint[]) WITH ORDINALITY AS t (` + taskColumns + `, ord)`
	selectTasks = `SELECT ` + taskColumns + ` FROM workflow_task WHERE run_id = $1 ORDER BY position`
	updateTask  = `UPDATE workflow_task SET state = $1, stage = $2, attempts = $3, starts = $4, candidate = $5,
	session_id = $6, workdir = $7, quota = $8, limited = $9, waiting_on = $10, checkpoint_stage = $11,
	checkpoint_data = $12, checkpoint_at_ms = $13, job_id = $14, updated_at_ms = $15, version = version + 1,
	event_seq = event_seq + $16 WHERE run_id = $17 AND name = $18 AND version = $19 RETURNING version, event_seq`
	selectTaskExists = `SELECT EXISTS (SELECT 1 FROM workflow_task WHERE run_id = $1 AND name = $2)`

	insertEvent = `INSERT INTO workflow_task_event (` + eventColumns + `)
	VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)`
	selectEvents = `SELECT ` + eventColumns + ` FROM workflow_task_event WHERE run_id = $1 AND task = $2 ORDER BY seq`
)

// CreateRun implements store.Store.
func (s *Store) CreateRun(ctx context.Context, r record.Run, tasks []record.Task, now time.Time) (record.Run, bool, error) {
	r, tasks, err := store.NewRun(r, tasks, now)
	if err != nil {
		return record.Run{}, false, err
	}
	var out record.Run
	var created bool
	err = s.inTx(ctx, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, insertRun, runArgs(r)...)
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 0 {
			old, err := scanRun(tx.QueryRow(ctx, selectRun, r.ID))
			switch {
			case err != nil:
				return err
			case !store.SameDefinition(old.Definition, r.Definition):
				return record.ErrConflict
			}
			out, created = old, false
			return nil
		}
		if len(tasks) > 0 {
			if _, err := tx.Exec(ctx, insertTasks, taskColumnArrays(tasks)...); err != nil {
				return err
			}
		}
		out, created = r, true
		return nil
	})
	if err != nil {
		return record.Run{}, false, wrapErr("create run "+r.ID, err)
	}
	return out, created, nil
}

// Run implements store.Store.
func (s *Store) Run(ctx context.Context, id string) (record.Run, error) {
	r, err := scanRun(s.pool.QueryRow(ctx, selectRun, id))
	return r, wrapErr("run "+id, notFound(err))
}

// Runs implements store.Store.
func (s *Store) Runs(ctx context.Context) ([]record.Run, error) {
	out, err := collect(ctx, s, scanRun, listRuns)
	return out, wrapErr("list runs", err)
}

// RunTasks implements store.Store.
func (s *Store) RunTasks(ctx context.Context, runID string) ([]record.Task, error) {
	out, err := collect(ctx, s, scanTask, selectTasks, runID)
	if err == nil && len(out) == 0 {
		// A run may have no tasks; one that does not exist is not found.
		err = existsIn(ctx, s.pool, selectRunExists, runID)
	}
	return out, wrapErr("tasks of run "+runID, err)
}

// TaskEvents implements store.Store.
func (s *Store) TaskEvents(ctx context.Context, runID, task string) ([]record.TaskEvent, error) {
	out, err := collect(ctx, s, scanEvent, selectEvents, runID, task)
	if err == nil && len(out) == 0 {
		err = existsIn(ctx, s.pool, selectTaskExists, runID, task)
	}
	return out, wrapErr("events of task "+task+" of run "+runID, err)
}

// existsIn runs a query of one boolean on q: job.ErrNotFound when it is
// false.
func existsIn(ctx context.Context, q interface {
	QueryRow(context.Context, string, ...any) pgx.Row
}, query string, args ...any) error {
	var ok bool
	if err := q.QueryRow(ctx, query, args...).Scan(&ok); err != nil {
		return err
	}
	if !ok {
		return job.ErrNotFound
	}
	return nil
}

// CountRuns implements store.Store.
func (s *Store) CountRuns(ctx context.Context) (map[record.RunStatus]int, error) {
	rows, err := s.pool.Query(ctx, countRuns)
	if err != nil {
		return nil, wrapErr("count runs", err)
	}
	out := map[record.RunStatus]int{}
	var st string
	var n int
	_, err = pgx.ForEachRow(rows, []any{&st, &n}, func() error {
		out[record.RunStatus(st)] = n
		return nil
	})
	if err != nil {
		return nil, wrapErr("count runs", err)
	}
	return out, nil
}

// UpdateRun implements store.Store.
func (s *Store) UpdateRun(ctx context.Context, r record.Run, now time.Time) (record.Run, error) {
	r, err := store.RunUpdate(r, now)
	if err != nil {
		return record.Run{}, err
	}
	var out record.Run
	err = s.inTx(ctx, func(tx pgx.Tx) error {
		var err error
		out, err = scanRun(tx.QueryRow(ctx, updateRun, string(r.Status), r.Durable, store.MS(r.Deadline), r.Starts,
			store.MS(r.UpdatedAt), r.ID, r.Version))
		if errors.Is(err, pgx.ErrNoRows) {
			return cmp.Or(existsIn(ctx, tx, selectRunExists, r.ID), record.ErrConflict)
		}
		return err
	})
	if err != nil {
		return record.Run{}, wrapErr("update run "+r.ID, err)
	}
	return out, nil
}

// UpdateTask implements store.Store.
func (s *Store) UpdateTask(ctx context.Context, t record.Task, ev *record.TaskEvent, now time.Time) (record.Task, error) {
	t, ev, err := store.TaskUpdate(t, ev, now)
	if err != nil {
		return record.Task{}, err
	}
	events := 0
	if ev != nil {
		events = 1
	}
	// updateTask sets every column of taskArgs but run_id and name (and
	// version, which it grows), then takes the task and its version.
	a := taskArgs(t)
	args := append(a[2:len(a)-1:len(a)-1], events, t.RunID, t.Name, t.Version)
	var version int64
	err = s.inTx(ctx, func(tx pgx.Tx) error {
		var seq int
		err := tx.QueryRow(ctx, updateTask, args...).Scan(&version, &seq)
		if errors.Is(err, pgx.ErrNoRows) {
			return cmp.Or(existsIn(ctx, tx, selectTaskExists, t.RunID, t.Name), record.ErrConflict)
		}
		if err != nil || ev == nil {
			return err
		}
		e := *ev
		e.Seq = seq
		_, err = tx.Exec(ctx, insertEvent, eventArgs(e)...)
		return err
	})
	if err != nil {
		return record.Task{}, wrapErr("update task "+t.Name+" of run "+t.RunID, err)
	}
	t.Version = version
	return t, nil
}

// collect runs a query and reads every row of it with scan.
func collect[T any](ctx context.Context, s *Store, scan func(pgx.Row) (T, error), query string, args ...any) ([]T, error) {
	rows, err := s.pool.Query(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(row pgx.CollectableRow) (T, error) { return scan(row) })
}

// runArgs are the values of runColumns for r.
func runArgs(r record.Run) []any {
	return []any{r.ID, r.Name, []byte(r.Definition), string(r.Status), r.Durable, store.MS(r.CreatedAt),
		store.MS(r.UpdatedAt), store.MS(r.Deadline), r.Starts, r.Version}
}

func scanRun(row pgx.Row) (record.Run, error) {
	var r record.Run
	var status string
	var def []byte
	var created, updated, deadline int64
	if err := row.Scan(&r.ID, &r.Name, &def, &status, &r.Durable, &created, &updated, &deadline, &r.Starts,
		&r.Version); err != nil {
		return record.Run{}, err
	}
	r.Definition, r.Status = json.RawMessage(def), record.RunStatus(status)
	r.CreatedAt, r.UpdatedAt, r.Deadline = store.FromMS(created), store.FromMS(updated), store.FromMS(deadline)
	return r, nil
}

// taskArgs are the values of taskColumns for t.
func taskArgs(t record.Task) []any {
	cpStage, cpData, cpAt := checkpointArgs(t.Checkpoint)
	var quota *string
	if q := store.EncodeQuota(t.Quota); q != nil {
		s := string(q)
		quota = &s
	}
	return []any{t.RunID, t.Name, string(t.State), t.Stage, t.Attempts, t.Starts, t.Candidate, t.SessionID,
		t.Workdir, quota, string(store.EncodeLimited(t.Limited)), t.WaitingOn, cpStage, cpData, cpAt, t.JobID,
		store.MS(t.UpdatedAt), t.Version}
}

// taskColumnArrays are the values of taskColumns for tasks, one array per
// column, for insertTasks.
func taskColumnArrays(tasks []record.Task) []any {
	n := len(tasks)
	runID, name, state, stage := make([]string, n), make([]string, n), make([]string, n), make([]string, n)
	attempts, starts := make([]int64, n), make([]int64, n)
	candidate, session, workdir := make([]string, n), make([]string, n), make([]string, n)
	quota, limited, waiting := make([]*string, n), make([]string, n), make([]string, n)
	cpStage, cpData, cpAt := make([]*string, n), make([][]byte, n), make([]*int64, n)
	jobID, updated, version := make([]string, n), make([]int64, n), make([]int64, n)
	for i, t := range tasks {
		runID[i], name[i], state[i], stage[i] = t.RunID, t.Name, string(t.State), t.Stage
		attempts[i], starts[i] = int64(t.Attempts), int64(t.Starts)
		candidate[i], session[i], workdir[i] = t.Candidate, t.SessionID, t.Workdir
		if q := store.EncodeQuota(t.Quota); q != nil {
			s := string(q)
			quota[i] = &s
		}
		limited[i], waiting[i] = string(store.EncodeLimited(t.Limited)), t.WaitingOn
		cpStage[i], cpData[i], cpAt[i] = checkpointArgs(t.Checkpoint)
		jobID[i], updated[i], version[i] = t.JobID, store.MS(t.UpdatedAt), t.Version
	}
	return []any{runID, name, state, stage, attempts, starts, candidate, session, workdir, quota, limited, waiting,
		cpStage, cpData, cpAt, jobID, updated, version}
}

func scanTask(row pgx.Row) (record.Task, error) {
	var t record.Task
	var state string
	var quota, limited []byte
	var cpStage *string
	var cpData []byte
	var cpAt *int64
	var updated int64
	if err := row.Scan(&t.RunID, &t.Name, &state, &t.Stage, &t.Attempts, &t.Starts, &t.Candidate, &t.SessionID,
		&t.Workdir, &quota, &limited, &t.WaitingOn, &cpStage, &cpData, &cpAt, &t.JobID, &updated,
		&t.Version); err != nil {
		return record.Task{}, err
	}
	t.State, t.UpdatedAt = record.TaskState(state), store.FromMS(updated)
	var err error
	if t.Quota, err = store.DecodeQuota(quota); err != nil {
		return record.Task{}, fmt.Errorf("task %s of run %s: %w", t.Name, t.RunID, err)
	}
	if t.Limited, err = store.DecodeLimited(limited); err != nil {
		return record.Task{}, fmt.Errorf("task %s of run %s: %w", t.Name, t.RunID, err)
	}
	t.Checkpoint = readCheckpoint(cpStage, cpData, cpAt)
	return t, nil
}

// eventArgs are the values of eventColumns for e.
func eventArgs(e record.TaskEvent) []any {
	return []any{e.RunID, e.Task, e.Seq, store.MS(e.At), string(e.From), string(e.To), e.Reason, e.AttemptID,
		int64OrNil(e.ExitCode), e.Outcome, e.Candidate}
}

func scanEvent(row pgx.Row) (record.TaskEvent, error) {
	var e record.TaskEvent
	var from, to string
	var at int64
	var exit *int64
	if err := row.Scan(&e.RunID, &e.Task, &e.Seq, &at, &from, &to, &e.Reason, &e.AttemptID, &exit, &e.Outcome,
		&e.Candidate); err != nil {
		return record.TaskEvent{}, err
	}
	e.At, e.From, e.To, e.ExitCode = store.FromMS(at), record.TaskState(from), record.TaskState(to), intOrNil(exit)
	return e, nil
}
