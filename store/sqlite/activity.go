package sqlite

import (
	"context"
	"database/sql"

	"github.com/layoverhq/layover/quota"
	"github.com/layoverhq/layover/store"
)

const (
	insertActivity   = `INSERT INTO activity (at_ms, kind, line) VALUES (?, ?, ?)`
	selectSkipReason = `SELECT reason_key FROM skip_reason WHERE scope = ?`
)

// RecordSkip implements store.Store.
func (s *Store) RecordSkip(ctx context.Context, scope, reasonKey string, a store.Activity) (bool, error) {
	// A read first: the common case, a skip for the reason already written,
	// then takes no write lock. A change is checked again inside the write.
	var last string
	err := s.db.QueryRowContext(ctx, selectSkipReason, scope).Scan(&last)
	if err != nil && err != sql.ErrNoRows {
		return false, err
	}
	if err == nil && last == reasonKey {
		return false, nil
	}
	wrote := false
	err = s.inTx(ctx, func(tx *sql.Tx) error {
		var last string
		err := tx.QueryRowContext(ctx, selectSkipReason, scope).Scan(&last)
		if err != nil && err != sql.ErrNoRows {
			return err
		}
		if err == nil && last == reasonKey {
			return nil
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO skip_reason (scope, reason_key, at_ms) VALUES (?, ?, ?)
			ON CONFLICT (scope) DO UPDATE SET reason_key = excluded.reason_key, at_ms = excluded.at_ms`,
			scope, reasonKey, store.MS(a.At)); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, insertActivity, store.MS(a.At), a.Kind, a.Line); err != nil {
			return err
		}
		wrote = true
		return nil
	})
	return wrote && err == nil, err
}

// ClearSkip implements store.Store.
func (s *Store) ClearSkip(ctx context.Context, scope string) error {
	// A read first: the common case, nothing to clear, then takes no write lock.
	var n int
	if err := s.db.QueryRowContext(ctx, `SELECT count(*) FROM skip_reason WHERE scope = ?`, scope).Scan(&n); err != nil || n == 0 {
		return err
	}
	_, err := s.db.ExecContext(ctx, `DELETE FROM skip_reason WHERE scope = ?`, scope)
	return err
}

// AppendActivity implements store.Store.
func (s *Store) AppendActivity(ctx context.Context, a store.Activity) error {
	_, err := s.db.ExecContext(ctx, insertActivity, store.MS(a.At), a.Kind, a.Line)
	return err
}

// Activity implements store.Store.
func (s *Store) Activity(ctx context.Context, limit int) ([]store.Activity, error) {
	if limit <= 0 {
		limit = -1
	}
	rows, err := s.db.QueryContext(ctx, `SELECT id, at_ms, kind, line FROM
		(SELECT id, at_ms, kind, line FROM activity ORDER BY id DESC LIMIT ?) ORDER BY id`, limit)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []store.Activity
	for rows.Next() {
		var a store.Activity
		var at int64
		if err := rows.Scan(&a.ID, &at, &a.Kind, &a.Line); err != nil {
			return nil, err
		}
		a.At = store.FromMS(at)
		out = append(out, a)
	}
	return out, rows.Err()
}

// RegisterWaiter implements store.Store.
func (s *Store) RegisterWaiter(ctx context.Context, w store.Waiter) (int64, error) {
	res, err := s.db.ExecContext(ctx, `INSERT INTO waiter (hostname, pid, command, host, principal, resource,
		stage, wait_until_ms, started_at_ms) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		w.Hostname, w.PID, w.Command, w.Key.Host, w.Key.Principal, w.Key.Resource, w.Stage,
		store.MS(w.WaitUntil), store.MS(w.StartedAt))
	if err != nil {
		return 0, err
	}
	return res.LastInsertId()
}

// RemoveWaiter implements store.Store.
func (s *Store) RemoveWaiter(ctx context.Context, id int64) error {
	_, err := s.db.ExecContext(ctx, `DELETE FROM waiter WHERE id = ?`, id)
	return err
}

// Waiters implements store.Store.
func (s *Store) Waiters(ctx context.Context) ([]store.Waiter, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT id, hostname, pid, command, host, principal, resource, stage,
		wait_until_ms, started_at_ms FROM waiter ORDER BY id`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []store.Waiter
	for rows.Next() {
		var w store.Waiter
		var until, started int64
		var k quota.Key
		if err := rows.Scan(&w.ID, &w.Hostname, &w.PID, &w.Command, &k.Host, &k.Principal, &k.Resource,
			&w.Stage, &until, &started); err != nil {
			return nil, err
		}
		w.Key, w.WaitUntil, w.StartedAt = k, store.FromMS(until), store.FromMS(started)
		out = append(out, w)
	}
	return out, rows.Err()
}
