package sqlite

import (
	"cmp"
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/layoverhq/layover/quota"
	"github.com/layoverhq/layover/store"
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

// RecordStates implements store.Store.
func (s *Store) RecordStates(ctx context.Context, states []quota.State) error {
	if len(states) == 0 {
		return nil
	}
	return s.inTx(ctx, func(tx *sql.Tx) error {
		if err := s.recordStates(ctx, tx, states); err != nil {
			return err
		}
		return s.recordObservations(ctx, tx, states)
	})
}

// upsertObservation keeps, per key and bucket, the observation made last.
const upsertObservation = `INSERT INTO quota_observation (host, principal, resource, bucket,
	observed_at_ms, remaining, limit_units, reset_at_ms, observed_by)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
ON CONFLICT (host, principal, resource, bucket) DO UPDATE SET
	observed_at_ms = excluded.observed_at_ms, remaining = excluded.remaining,
	limit_units = excluded.limit_units, reset_at_ms = excluded.reset_at_ms,
	observed_by = excluded.observed_by
WHERE excluded.observed_at_ms >= quota_observation.observed_at_ms`

// pruneObservations deletes a key's buckets more than store.ObservationsKept
// older than its newest.
const pruneObservations = `DELETE FROM quota_observation
WHERE host = ?1 AND principal = ?2 AND resource = ?3 AND bucket <= (
	SELECT max(bucket) FROM quota_observation WHERE host = ?1 AND principal = ?2 AND resource = ?3) - ?4`

// recordObservations adds states to their keys' histories and prunes each
// key's once, through statements prepared once per Store.
func (s *Store) recordObservations(ctx context.Context, tx *sql.Tx, states []quota.State) error {
	upsert, err := s.txStmt(ctx, tx, upsertObservation)
	if err != nil {
		return err
	}
	prune, err := s.txStmt(ctx, tx, pruneObservations)
	if err != nil {
		return err
	}
	keys := make([]quota.Key, 0, len(states))
	for _, st := range states {
		if _, err := upsert.ExecContext(ctx, st.Host, st.Principal, st.Resource,
			store.ObservationBucket(st.ObservedAt), store.MS(st.ObservedAt), st.Remaining, st.Limit,
			store.MS(st.ResetAt), st.ObservedBy); err != nil {
			return err
		}
		keys = append(keys, st.Key)
	}
	slices.SortFunc(keys, compareKeys)
	for _, k := range slices.Compact(keys) {
		if _, err := prune.ExecContext(ctx, k.Host, k.Principal, k.Resource,
			store.ObservationsKept); err != nil {
			return err
		}
	}
	return nil
}

// selectObservations reads a key's history since a time, newest first.
const selectObservations = `SELECT observed_at_ms, remaining, limit_units, reset_at_ms, observed_by
	FROM quota_observation WHERE host = ? AND principal = ? AND resource = ? AND observed_at_ms >= ?
	ORDER BY bucket DESC LIMIT ?`

// Observations implements store.Store.
func (s *Store) Observations(ctx context.Context, key quota.Key, since time.Time, limit int) ([]store.Observation, error) {
	if limit <= 0 {
		limit = -1 // SQLite: no limit
	}
	stmt, err := s.stmt(ctx, selectObservations) // prepared once per Store: a paced pass reads it
	if err != nil {
		return nil, err
	}
	rows, err := stmt.QueryContext(ctx, key.Host, key.Principal, key.Resource, store.MS(since), limit)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []store.Observation
	for rows.Next() {
		o := store.Observation{Key: key}
		var observed, reset int64
		if err := rows.Scan(&observed, &o.Remaining, &o.Limit, &reset, &o.ObservedBy); err != nil {
			return nil, err
		}
		o.ObservedAt, o.ResetAt = store.FromMS(observed), store.FromMS(reset)
		out = append(out, o)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	slices.Reverse(out)
	return out, nil
}

func (s *Store) recordStates(ctx context.Context, tx *sql.Tx, states []quota.State) error {
	stmt, err := s.txStmt(ctx, tx, upsertState) // prepared once per Store, as recordObservations' are
	if err != nil {
		return err
	}
	for _, st := range states {
		if _, err := stmt.ExecContext(ctx, st.Host, st.Principal, st.Resource, st.Limit, st.Remaining,
			store.MS(st.ResetAt), st.ResetKnown, st.RawReset, store.MS(st.ObservedAt), st.ObservedBy,
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
	st.ResetAt, st.ObservedAt = store.FromMS(reset), store.FromMS(observed)
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

// maxPreparedKeys is the most keys a States call reads through a statement
// prepared once per Store; a pass names one to three. A call with more keys
// builds its query afresh.
const maxPreparedKeys = 4

// stateValues are the columns of a state besides its key.
const stateValues = `limit_units, remaining, reset_at_ms, reset_known, raw_reset, observed_at_ms,
	observed_by, source, cause`

// statesQuery reads n keys, each by its primary key: row i, if present, is
// the state of the i-th key bound and starts with i.
func statesQuery(n int) string {
	var b strings.Builder
	for i := range n {
		if i > 0 {
			b.WriteString(" UNION ALL ")
		}
		b.WriteString("SELECT " + strconv.Itoa(i) + ", " + stateValues +
			" FROM quota_state WHERE host = ? AND principal = ? AND resource = ?")
	}
	return b.String()
}

// statesStmt returns the prepared statesQuery(n), preparing it on first use.
func (s *Store) statesStmt(ctx context.Context, n int) (*sql.Stmt, error) {
	if st := s.states[n].Load(); st != nil {
		return st, nil
	}
	s.stmtMu.Lock()
	defer s.stmtMu.Unlock()
	if st := s.states[n].Load(); st != nil {
		return st, nil
	}
	st, err := s.db.PrepareContext(ctx, statesQuery(n))
	if err != nil {
		return nil, err
	}
	s.states[n].Store(st)
	return st, nil
}

// States implements store.Store. The states come ordered by key, as
// AllStates orders them.
func (s *Store) States(ctx context.Context, keys []quota.Key) ([]quota.State, error) {
	if len(keys) == 0 {
		return nil, nil
	}
	if len(keys) > maxPreparedKeys {
		return s.manyStates(ctx, keys)
	}
	// Sorted and without repeats, the keys give the rows their order.
	var buf [maxPreparedKeys]quota.Key
	uniq := buf[:copy(buf[:], keys)]
	slices.SortFunc(uniq, compareKeys)
	uniq = slices.Compact(uniq)

	stmt, err := s.statesStmt(ctx, len(uniq))
	if err != nil {
		return nil, err
	}
	var args [3 * maxPreparedKeys]any
	for i, k := range uniq {
		args[3*i], args[3*i+1], args[3*i+2] = k.Host, k.Principal, k.Resource
	}
	rows, err := stmt.QueryContext(ctx, args[:3*len(uniq)]...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var found [maxPreparedKeys]quota.State
	var have [maxPreparedKeys]bool
	for rows.Next() {
		var i int
		var st quota.State
		var reset, observed int64
		var source, cause string
		if err := rows.Scan(&i, &st.Limit, &st.Remaining, &reset, &st.ResetKnown, &st.RawReset,
			&observed, &st.ObservedBy, &source, &cause); err != nil {
			return nil, err
		}
		if i < 0 || i >= len(uniq) {
			return nil, fmt.Errorf("states: row for key %d of %d", i, len(uniq))
		}
		st.Key = uniq[i]
		st.ResetAt, st.ObservedAt = store.FromMS(reset), store.FromMS(observed)
		st.Source, st.Cause = quota.Source(source), quota.Cause(cause)
		found[i], have[i] = st, true
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	var out []quota.State
	for i := range uniq {
		if have[i] {
			out = append(out, found[i])
		}
	}
	return out, nil
}

// manyStates reads more keys than a prepared statement covers, in one query
// built for them.
func (s *Store) manyStates(ctx context.Context, keys []quota.Key) ([]quota.State, error) {
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

// compareKeys orders keys as the table's primary key does: by host,
// principal and resource, each compared bytewise (SQLite's BINARY collation).
func compareKeys(a, b quota.Key) int {
	return cmp.Or(strings.Compare(a.Host, b.Host), strings.Compare(a.Principal, b.Principal),
		strings.Compare(a.Resource, b.Resource))
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
			host, fingerprint, login, store.MS(at)); err != nil {
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
		if err := s.recordStates(ctx, tx, states); err != nil {
			return err
		}
		if _, err = tx.ExecContext(ctx, `DELETE FROM quota_state WHERE host = ? AND principal = ?`, host, tokPrincipal); err != nil {
			return err
		}
		return mergeObservations(ctx, tx, host, tokPrincipal, login)
	})
}

// mergeObservations moves the history of principal from to principal to on
// host, merged as RecordStates merges (per bucket the newer observation
// wins), and prunes the merged keys.
func mergeObservations(ctx context.Context, tx *sql.Tx, host, from, to string) error {
	// The WHERE before ON CONFLICT is what SQLite's grammar needs there.
	if _, err := tx.ExecContext(ctx, `INSERT INTO quota_observation (host, principal, resource, bucket,
			observed_at_ms, remaining, limit_units, reset_at_ms, observed_by)
		SELECT host, ?3, resource, bucket, observed_at_ms, remaining, limit_units, reset_at_ms, observed_by
		FROM quota_observation WHERE host = ?1 AND principal = ?2
		ON CONFLICT (host, principal, resource, bucket) DO UPDATE SET
			observed_at_ms = excluded.observed_at_ms, remaining = excluded.remaining,
			limit_units = excluded.limit_units, reset_at_ms = excluded.reset_at_ms,
			observed_by = excluded.observed_by
		WHERE excluded.observed_at_ms >= quota_observation.observed_at_ms`, host, from, to); err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, `DELETE FROM quota_observation WHERE host = ? AND principal = ?`, host, from); err != nil {
		return err
	}
	_, err := tx.ExecContext(ctx, `DELETE FROM quota_observation AS o WHERE host = ?1 AND principal = ?2 AND bucket <= (
		SELECT max(q.bucket) FROM quota_observation AS q
		WHERE q.host = o.host AND q.principal = o.principal AND q.resource = o.resource) - ?3`,
		host, to, store.ObservationsKept)
	return err
}
