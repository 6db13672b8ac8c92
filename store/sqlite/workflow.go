package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"slices"
	"time"

	"github.com/layoverhq/layover/store"
	"github.com/layoverhq/layover/workflow/record"
)

// Workflow runs (migration 007): a run's row, its tasks' rows in the order
// created, and each task's events. Writes are group-committed with the
// others; a task's event takes its seq from the task's event_seq, which
// the same write bumps.

const (
	selectRun = `SELECT ` + store.RunColumns + ` FROM workflow_run WHERE id = ?`
	listRuns  = `SELECT ` + store.RunColumns + ` FROM workflow_run ORDER BY created_at_ms, id`
	countRuns = `SELECT status, count(*) FROM workflow_run GROUP BY status`
	// insertRun inserts a new run, or nothing when its id is taken.
	insertRun = `INSERT INTO workflow_run (` + store.RunColumns + `) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
	ON CONFLICT (id) DO NOTHING`
	updateRun = `UPDATE workflow_run SET status = ?, durable = ?, deadline_ms = ?, starts = ?, updated_at_ms = ?,
	version = version + 1 WHERE id = ? AND version = ? RETURNING ` + store.UpdatedRunColumns

	insertTask = `INSERT INTO workflow_task (` + store.TaskColumns + `, position, event_seq)
	VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 0)`
	selectTasks = `SELECT ` + store.TaskColumns + ` FROM workflow_task WHERE run_id = ? ORDER BY position`
	// updateTask takes the columns of store.TaskColumns from state to
	// updated_at_ms, then the event count to add (0 or 1), the task and its
	// stored version.
	updateTask = `UPDATE workflow_task SET state = ?, stage = ?, attempts = ?, starts = ?, candidate = ?,
	session_id = ?, workdir = ?, quota = ?, limited = ?, waiting_on = ?, checkpoint_stage = ?,
	checkpoint_data = ?, checkpoint_at_ms = ?, job_id = ?, updated_at_ms = ?, version = version + 1,
	event_seq = event_seq + ? WHERE run_id = ? AND name = ? AND version = ? RETURNING version, event_seq`
	selectTaskVersion = `SELECT version FROM workflow_task WHERE run_id = ? AND name = ?`

	insertEvent  = `INSERT INTO workflow_task_event (` + store.EventColumns + `) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`
	selectEvents = `SELECT ` + store.EventColumns + ` FROM workflow_task_event WHERE run_id = ? AND task = ? ORDER BY seq`
)

// CreateRun implements store.Store.
func (s *Store) CreateRun(ctx context.Context, r record.Run, tasks []record.Task, now time.Time) (record.Run, bool, error) {
	r, tasks, err := store.NewRun(r, tasks, now)
	if err != nil {
		return record.Run{}, false, err
	}
	out, created := r, true
	err = s.write(ctx, func(b *batch) error {
		res, err := b.Exec(insertRun, store.RunValues(r)...)
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil {
			return err
		} else if n == 0 {
			old, err := store.ScanRun(b.QueryRow(selectRun, r.ID))
			switch {
			case err != nil:
				return err
			case !store.SameDefinition(old.Definition, r.Definition):
				return record.ErrConflict
			}
			out, created = old, false
			return nil
		}
		for i, t := range tasks {
			if _, err := b.Exec(insertTask, append(store.TaskValues(t), i)...); err != nil {
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
	st, err := s.stmt(ctx, selectRun)
	if err != nil {
		return record.Run{}, wrapErr("run "+id, err)
	}
	r, err := store.ScanRun(st.QueryRowContext(ctx, id))
	return r, wrapErr("run "+id, notFound(err))
}

// Runs implements store.Store.
func (s *Store) Runs(ctx context.Context) ([]record.Run, error) {
	rows, err := s.query(ctx, listRuns)
	out, err := collect(rows, err, store.ScanRun)
	return out, wrapErr("list runs", err)
}

// RunTasks implements store.Store.
func (s *Store) RunTasks(ctx context.Context, runID string) ([]record.Task, error) {
	rows, err := s.query(ctx, selectTasks, runID)
	out, err := collect(rows, err, store.ScanTask)
	if err == nil && len(out) == 0 {
		// A run may have no tasks; one that does not exist is not found.
		_, err = s.Run(ctx, runID)
	}
	return out, wrapErr("tasks of run "+runID, err)
}

// TaskEvents implements store.Store.
func (s *Store) TaskEvents(ctx context.Context, runID, task string) ([]record.TaskEvent, error) {
	rows, err := s.query(ctx, selectEvents, runID, task)
	out, err := collect(rows, err, store.ScanEvent)
	if err == nil && len(out) == 0 {
		var v int64
		err = notFound(s.db.QueryRowContext(ctx, selectTaskVersion, runID, task).Scan(&v))
	}
	return out, wrapErr("events of task "+task+" of run "+runID, err)
}

// CountRuns implements store.Store.
func (s *Store) CountRuns(ctx context.Context) (map[record.RunStatus]int, error) {
	rows, err := s.query(ctx, countRuns)
	type count struct {
		status string
		n      int
	}
	counts, err := collect(rows, err, func(r store.Scanner) (c count, err error) { return c, r.Scan(&c.status, &c.n) })
	if err != nil {
		return nil, wrapErr("count runs", err)
	}
	out := make(map[record.RunStatus]int, len(counts))
	for _, c := range counts {
		out[record.RunStatus(c.status)] = c.n
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
	err = s.write(ctx, func(b *batch) error {
		var err error
		out, err = store.ScanUpdatedRun(b.QueryRow(updateRun, string(r.Status), r.Durable, store.MS(r.Deadline),
			r.Starts, store.MS(r.UpdatedAt), r.ID, r.Version), r.Definition)
		if errors.Is(err, sql.ErrNoRows) {
			if _, err := store.ScanRun(b.QueryRow(selectRun, r.ID)); err != nil {
				return notFound(err)
			}
			return record.ErrConflict
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
	out, err := s.UpdateTasks(ctx, []record.TaskWrite{{Task: t, Event: ev}}, now)
	if err != nil {
		return record.Task{}, err
	}
	return out[0], nil
}

// UpdateTasks implements store.Store: one piece of the group commit, so
// the writes commit or roll back together.
func (s *Store) UpdateTasks(ctx context.Context, writes []record.TaskWrite, now time.Time) ([]record.Task, error) {
	out := make([]record.Task, len(writes))
	evs := make([]*record.TaskEvent, len(writes))
	for i, w := range writes {
		t, ev, err := store.TaskUpdate(w.Task, w.Event, now)
		if err != nil {
			return nil, err
		}
		out[i], evs[i] = t, ev
	}
	in := out
	var failed *record.Task
	err := s.write(ctx, func(b *batch) error {
		out, failed = slices.Clone(in), nil // as if for the first time, were the piece run again
		for i := range out {
			if err := updateTaskIn(b, &out[i], evs[i]); err != nil {
				failed = &out[i]
				return err
			}
		}
		return nil
	})
	if err != nil {
		if failed != nil {
			return nil, wrapErr("update task "+failed.Name+" of run "+failed.RunID, err)
		}
		return nil, wrapErr("update tasks", err)
	}
	return out, nil
}

// updateTaskIn writes t with ev in b, a compare-and-set on t.Version,
// which it sets to the stored one.
func updateTaskIn(b *batch, t *record.Task, ev *record.TaskEvent) error {
	events := 0
	if ev != nil {
		events = 1
	}
	// updateTask sets every column of taskArgs but run_id and name (and
	// version, which it grows), then takes the task and its version.
	a := store.TaskValues(*t)
	args := append(a[2:len(a)-1:len(a)-1], events, t.RunID, t.Name, t.Version)
	var seq int
	err := b.QueryRow(updateTask, args...).Scan(&t.Version, &seq)
	if errors.Is(err, sql.ErrNoRows) {
		var v int64
		if err := b.QueryRow(selectTaskVersion, t.RunID, t.Name).Scan(&v); err != nil {
			return notFound(err)
		}
		return record.ErrConflict
	}
	if err != nil || ev == nil {
		return err
	}
	e := *ev
	e.Seq = seq
	_, err = b.Exec(insertEvent, store.EventValues(e)...)
	return err
}

// query runs a read of the Store's prepared statements.
func (s *Store) query(ctx context.Context, q string, args ...any) (*sql.Rows, error) {
	st, err := s.stmt(ctx, q)
	if err != nil {
		return nil, err
	}
	return st.QueryContext(ctx, args...)
}

// collect scans every row of rows with scan.
func collect[T any](rows *sql.Rows, err error, scan func(store.Scanner) (T, error)) ([]T, error) {
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []T
	for rows.Next() {
		v, err := scan(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, rows.Err()
}
