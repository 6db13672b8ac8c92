package sqlite

import (
	"context"
	"database/sql"
	"strings"
	"time"

	"github.com/layoverhq/layover/quota"
)

const stateColumns = `host, principal, resource, limit_units, remaining, reset_at_ms, reset_known,
	raw_reset, observed_at_ms, observed_by, source, cause`

// upsertState keeps, per key, the state observed last: an older observation
// that commits late never overwrites a newer one.
const upsertState = `INSERT INTO quota_state (` + stateColumns + `)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
ON CONFLICT (host, principal, resource) DO UPDATE SET
	limit_units = excluded.limit_units, remaining = excluded.remaining,
	reset_at_ms = excluded.reset_at_ms, reset_known = excluded.reset_known,
	raw_reset = excluded.raw_reset, observed_at_ms = excluded.observed_at_ms,
	observed_by = excluded.observed_by, source = excluded.source, cause = excluded.cause
WHERE excluded.observed_at_ms >= quota_state.observed_at_ms`

func ms(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixMilli()
}

func fromMS(v int64) time.Time {
	if v == 0 {
		return time.Time{}
	}
	return time.UnixMilli(v).UTC()
}

// RecordStates implements store.Store.
func (s *Store) RecordStates(ctx context.Context, states []quota.State) error {
	if len(states) == 0 {
		return nil
	}
	return s.inTx(ctx, func(tx *sql.Tx) error {
		return recordStates(ctx, tx, states)
	})
}

func recordStates(ctx context.Context, tx *sql.Tx, states []quota.State) error {
	stmt, err := tx.PrepareContext(ctx, upsertState)
	if err != nil {
		return err
	}
	defer stmt.Close()
	for _, st := range states {
		if _, err := stmt.ExecContext(ctx, st.Host, st.Principal, st.Resource, st.Limit, st.Remaining,
			ms(st.ResetAt), st.ResetKnown, st.RawReset, ms(st.ObservedAt), st.ObservedBy,
			string(st.Source), string(st.Cause)); err != nil {
			return err
		}
	}
	return nil
}

func scanState(rows *sql.Rows) (quota.State, error) {
	var st quota.State
	var reset, observed int64
	var source, cause string
	err := rows.Scan(&st.Host, &st.Principal, &st.Resource, &st.Limit, &st.Remaining, &reset,
		&st.ResetKnown, &st.RawReset, &observed, &st.ObservedBy, &source, &cause)
	st.ResetAt, st.ObservedAt = fromMS(reset), fromMS(observed)
	st.Source, st.Cause = quota.Source(source), quota.Cause(cause)
	return st, err
}

func collectStates(rows *sql.Rows, err error) ([]quota.State, error) {
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []quota.State
	for rows.Next() {
		st, err := scanState(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, st)
	}
	return out, rows.Err()
}

// States implements store.Store.
func (s *Store) States(ctx context.Context, keys []quota.Key) ([]quota.State, error) {
	if len(keys) == 0 {
		return nil, nil
	}
	var b strings.Builder
	b.WriteString(`SELECT ` + stateColumns + ` FROM quota_state WHERE (host, principal, resource) IN (`)
	args := make([]any, 0, 3*len(keys))
	for i, k := range keys {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString("(?, ?, ?)")
		args = append(args, k.Host, k.Principal, k.Resource)
	}
	b.WriteString(`) ORDER BY host, principal, resource`)
	return collectStates(s.db.QueryContext(ctx, b.String(), args...))
}

// AllStates implements store.Store.
func (s *Store) AllStates(ctx context.Context) ([]quota.State, error) {
	return collectStates(s.db.QueryContext(ctx,
		`SELECT `+stateColumns+` FROM quota_state ORDER BY host, principal, resource`))
}

// Login implements store.Store.
func (s *Store) Login(ctx context.Context, host, fingerprint string) (string, bool, error) {
	var login string
	err := s.db.QueryRowContext(ctx,
		`SELECT login FROM principal_login WHERE host = ? AND fingerprint = ?`, host, fingerprint).Scan(&login)
	if err == sql.ErrNoRows {
		return "", false, nil
	}
	return login, err == nil, err
}

// LearnLogin implements store.Store.
func (s *Store) LearnLogin(ctx context.Context, host, fingerprint, login string, at time.Time) error {
	tokPrincipal := "tok:" + fingerprint
	return s.inTx(ctx, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, `INSERT INTO principal_login (host, fingerprint, login, learned_at_ms)
			VALUES (?, ?, ?, ?) ON CONFLICT (host, fingerprint) DO UPDATE SET
			login = excluded.login, learned_at_ms = excluded.learned_at_ms`,
			host, fingerprint, login, ms(at)); err != nil {
			return err
		}
		rows, err := tx.QueryContext(ctx, `SELECT `+stateColumns+` FROM quota_state
			WHERE host = ? AND principal = ?`, host, tokPrincipal)
		states, err := collectStates(rows, err)
		if err != nil || len(states) == 0 {
			return err
		}
		for i := range states {
			states[i].Principal = login
		}
		if err := recordStates(ctx, tx, states); err != nil {
			return err
		}
		_, err = tx.ExecContext(ctx, `DELETE FROM quota_state WHERE host = ? AND principal = ?`, host, tokPrincipal)
		return err
	})
}
