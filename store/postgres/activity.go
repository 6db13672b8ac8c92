package postgres

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5"

	"github.com/layoverhq/layover/quota"
	"github.com/layoverhq/layover/store"
)

// recordSkip writes scope's new skip reason and its activity line in one
// statement, only when the reason differs from the one stored: a writer
// racing another with the same reason waits for its row lock, then finds
// the reason already written and writes nothing. It returns the line's id,
// or no row.
const recordSkip = `WITH changed AS (
	INSERT INTO skip_reason (scope, reason_key, at_ms) VALUES ($1, $2, $3)
	ON CONFLICT (scope) DO UPDATE SET reason_key = excluded.reason_key, at_ms = excluded.at_ms
	WHERE skip_reason.reason_key <> excluded.reason_key
	RETURNING 1
)
INSERT INTO activity (at_ms, kind, line) SELECT $3, $4, $5 FROM changed RETURNING id`

// RecordSkip implements store.Store.
func (s *Store) RecordSkip(ctx context.Context, scope, reasonKey string, a store.Activity) (bool, error) {
	// A read first: the common case, a skip for the reason already
	// written, then takes no lock.
	var last string
	err := s.pool.QueryRow(ctx, `SELECT reason_key FROM skip_reason WHERE scope = $1`, scope).Scan(&last)
	switch {
	case err == nil && last == reasonKey:
		return false, nil
	case err != nil && !errors.Is(err, pgx.ErrNoRows):
		return false, wrapErr("record skip", err)
	}
	var id int64
	err = s.pool.QueryRow(ctx, recordSkip, scope, reasonKey, store.MS(a.At), a.Kind, a.Line).Scan(&id)
	if errors.Is(err, pgx.ErrNoRows) {
		return false, nil
	}
	if err != nil {
		return false, wrapErr("record skip", err)
	}
	return true, nil
}

// ClearSkip implements store.Store.
func (s *Store) ClearSkip(ctx context.Context, scope string) error {
	_, err := s.pool.Exec(ctx, `DELETE FROM skip_reason WHERE scope = $1`, scope)
	return wrapErr("clear skip", err)
}

// AppendActivity implements store.Store.
func (s *Store) AppendActivity(ctx context.Context, a store.Activity) error {
	_, err := s.pool.Exec(ctx, `INSERT INTO activity (at_ms, kind, line) VALUES ($1, $2, $3)`, store.MS(a.At), a.Kind, a.Line)
	return wrapErr("append activity", err)
}

// Activity implements store.Store. Lines are ordered by id, which grows
// with every line; lines written by concurrent transactions take their ids
// in the order they were inserted, not committed.
func (s *Store) Activity(ctx context.Context, limit int) ([]store.Activity, error) {
	var lim *int64 // NULL: no limit
	if limit > 0 {
		l := int64(limit)
		lim = &l
	}
	rows, err := s.pool.Query(ctx, `SELECT id, at_ms, kind, line FROM
		(SELECT id, at_ms, kind, line FROM activity ORDER BY id DESC LIMIT $1) AS newest ORDER BY id`, lim)
	if err != nil {
		return nil, wrapErr("activity", err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (store.Activity, error) {
		var a store.Activity
		var at int64
		err := row.Scan(&a.ID, &at, &a.Kind, &a.Line)
		a.At = store.FromMS(at)
		return a, err
	})
	return out, wrapErr("activity", err)
}

// RegisterWaiter implements store.Store.
func (s *Store) RegisterWaiter(ctx context.Context, w store.Waiter) (int64, error) {
	var id int64
	err := s.pool.QueryRow(ctx, `INSERT INTO waiter (hostname, pid, command, host, principal, resource,
		stage, wait_until_ms, started_at_ms) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) RETURNING id`,
		w.Hostname, w.PID, w.Command, w.Key.Host, w.Key.Principal, w.Key.Resource, w.Stage,
		store.MS(w.WaitUntil), store.MS(w.StartedAt)).Scan(&id)
	return id, wrapErr("register waiter", err)
}

// RemoveWaiter implements store.Store.
func (s *Store) RemoveWaiter(ctx context.Context, id int64) error {
	_, err := s.pool.Exec(ctx, `DELETE FROM waiter WHERE id = $1`, id)
	return wrapErr("remove waiter", err)
}

// Waiters implements store.Store.
func (s *Store) Waiters(ctx context.Context) ([]store.Waiter, error) {
	rows, err := s.pool.Query(ctx, `SELECT id, hostname, pid, command, host, principal, resource, stage,
		wait_until_ms, started_at_ms FROM waiter ORDER BY id`)
	if err != nil {
		return nil, wrapErr("waiters", err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (store.Waiter, error) {
		var w store.Waiter
		var until, started int64
		var k quota.Key
		err := row.Scan(&w.ID, &w.Hostname, &w.PID, &w.Command, &k.Host, &k.Principal, &k.Resource,
			&w.Stage, &until, &started)
		w.Key, w.WaitUntil, w.StartedAt = k, store.FromMS(until), store.FromMS(started)
		return w, err
	})
	return out, wrapErr("waiters", err)
}
