package postgres

import (
	"cmp"
	"context"
	"errors"
	"slices"
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
	selectRun = `SELECT ` + store.RunColumns + ` FROM workflow_run WHERE id = $1`
	listRuns  = `SELECT ` + store.RunColumns + ` FROM workflow_run ORDER BY created_at_ms, id`
	countRuns = `SELECT status, count(*) FROM workflow_run GROUP BY status`
	// insertRun inserts a new run, or nothing when its id is taken.
	insertRun = `INSERT INTO workflow_run (` + store.RunColumns + `) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)
	ON CONFLICT (id) DO NOTHING`
	updateRun = `UPDATE workflow_run SET status = $1, durable = $2, deadline_ms = $3, starts = $4, updated_at_ms = $5,
	version = version + 1 WHERE id = $6 AND version = $7 RETURNING ` + store.UpdatedRunColumns
	selectRunExists = `SELECT EXISTS (SELECT 1 FROM workflow_run WHERE id = $1)`

	insertTask = `INSERT INTO workflow_task (` + store.TaskColumns + `, position, event_seq)
	VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, 0)`
	selectTasks = `SELECT ` + store.TaskColumns + ` FROM workflow_task WHERE run_id = $1 ORDER BY position`
	updateTask  = `UPDATE workflow_task SET state = $1, stage = $2, attempts = $3, starts = $4, candidate = $5,
	session_id = $6, workdir = $7, quota = $8, limited = $9, waiting_on = $10, checkpoint_stage = $11,
	checkpoint_data = $12, checkpoint_at_ms = $13, job_id = $14, updated_at_ms = $15, version = version + 1,
	event_seq = event_seq + $16 WHERE run_id = $17 AND name = $18 AND version = $19 RETURNING version, event_seq`
	selectTaskExists = `SELECT EXISTS (SELECT 1 FROM workflow_task WHERE run_id = $1 AND name = $2)`

	insertEvent = `INSERT INTO workflow_task_event (` + store.EventColumns + `)
	VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)`
	selectEvents = `SELECT ` + store.EventColumns + ` FROM workflow_task_event WHERE run_id = $1 AND task = $2 ORDER BY seq`
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
		tag, err := tx.Exec(ctx, insertRun, store.RunValues(r)...)
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 0 {
			old, err := store.ScanRun(tx.QueryRow(ctx, selectRun, r.ID))
			switch {
			case err != nil:
				return err
			case !store.SameDefinition(old.Definition, r.Definition):
				return record.ErrConflict
			}
			out, created = old, false
			return nil
		}
		// The tasks go in one round trip.
		var b pgx.Batch
		for i, t := range tasks {
			b.Queue(insertTask, append(store.TaskValues(t), i)...)
		}
		if err := tx.SendBatch(ctx, &b).Close(); err != nil {
			return err
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
	r, err := store.ScanRun(s.pool.QueryRow(ctx, selectRun, id))
	return r, wrapErr("run "+id, notFound(err))
}

// Runs implements store.Store.
func (s *Store) Runs(ctx context.Context) ([]record.Run, error) {
	out, err := collect(ctx, s, store.ScanRun, listRuns)
	return out, wrapErr("list runs", err)
}

// RunTasks implements store.Store.
func (s *Store) RunTasks(ctx context.Context, runID string) ([]record.Task, error) {
	out, err := collect(ctx, s, store.ScanTask, selectTasks, runID)
	if err == nil && len(out) == 0 {
		// A run may have no tasks; one that does not exist is not found.
		err = existsIn(ctx, s.pool, selectRunExists, runID)
	}
	return out, wrapErr("tasks of run "+runID, err)
}

// TaskEvents implements store.Store.
func (s *Store) TaskEvents(ctx context.Context, runID, task string) ([]record.TaskEvent, error) {
	out, err := collect(ctx, s, store.ScanEvent, selectEvents, runID, task)
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
		out, err = store.ScanUpdatedRun(tx.QueryRow(ctx, updateRun, string(r.Status), r.Durable,
			store.MS(r.Deadline), r.Starts, store.MS(r.UpdatedAt), r.ID, r.Version), r.Definition)
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
	out, err := s.UpdateTasks(ctx, []record.TaskWrite{{Task: t, Event: ev}}, now)
	if err != nil {
		return record.Task{}, err
	}
	return out[0], nil
}

// UpdateTasks implements store.Store: the writes in one transaction.
func (s *Store) UpdateTasks(ctx context.Context, writes []record.TaskWrite, now time.Time) ([]record.Task, error) {
	in := make([]record.Task, len(writes))
	evs := make([]*record.TaskEvent, len(writes))
	for i, w := range writes {
		t, ev, err := store.TaskUpdate(w.Task, w.Event, now)
		if err != nil {
			return nil, err
		}
		in[i], evs[i] = t, ev
	}
	var out []record.Task
	var failed *record.Task
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		out, failed = slices.Clone(in), nil // a retried transaction starts again
		for i := range out {
			if err := updateTaskIn(ctx, tx, &out[i], evs[i]); err != nil {
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

// updateTaskIn writes t with ev in tx, a compare-and-set on t.Version,
// which it sets to the stored one.
func updateTaskIn(ctx context.Context, tx pgx.Tx, t *record.Task, ev *record.TaskEvent) error {
	events := 0
	if ev != nil {
		events = 1
	}
	// updateTask sets every column of taskArgs but run_id and name (and
	// version, which it grows), then takes the task and its version.
	a := store.TaskValues(*t)
	args := append(a[2:len(a)-1:len(a)-1], events, t.RunID, t.Name, t.Version)
	var seq int
	err := tx.QueryRow(ctx, updateTask, args...).Scan(&t.Version, &seq)
	if errors.Is(err, pgx.ErrNoRows) {
		return cmp.Or(existsIn(ctx, tx, selectTaskExists, t.RunID, t.Name), record.ErrConflict)
	}
	if err != nil || ev == nil {
		return err
	}
	e := *ev
	e.Seq = seq
	_, err = tx.Exec(ctx, insertEvent, store.EventValues(e)...)
	return err
}

// collect runs a query and reads every row of it with scan.
func collect[T any](ctx context.Context, s *Store, scan func(store.Scanner) (T, error), query string, args ...any) ([]T, error) {
	rows, err := s.pool.Query(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(row pgx.CollectableRow) (T, error) { return scan(row) })
}
