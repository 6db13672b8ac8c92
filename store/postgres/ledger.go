package postgres

import (
	"context"
	"errors"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/layoverhq/layover/quota"
	"github.com/layoverhq/layover/store"
)

const stateColumns = `host, principal, resource, limit_units, remaining, reset_at_ms, reset_known,
	raw_reset, observed_at_ms, observed_by, source, cause`

// onConflictKeepNewest makes an upsert of quota_state keep, per key, the
// state observed last: an older observation that commits late never
// overwrites a newer one. Equal times: the write that comes later wins.
const onConflictKeepNewest = `ON CONFLICT (host, principal, resource) DO UPDATE SET
	limit_units = excluded.limit_units, remaining = excluded.remaining,
	reset_at_ms = excluded.reset_at_ms, reset_known = excluded.reset_known,
	raw_reset = excluded.raw_reset, observed_at_ms = excluded.observed_at_ms,
	observed_by = excluded.observed_by, source = excluded.source, cause = excluded.cause
WHERE excluded.observed_at_ms >= quota_state.observed_at_ms`

// recordStates upserts a batch of states given as one array per column.
// Within the batch the newest observation per key is kept (the last one
// given, on a tie), since one INSERT may not touch a row twice; the rows
// are written in key order, the order every multi-key write locks them in.
const recordStates = `INSERT INTO quota_state (` + stateColumns + `)
SELECT DISTINCT ON (host COLLATE "C", principal COLLATE "C", resource COLLATE "C") ` + stateColumns + `
FROM unnest($1::text[], $2::text[], $3::text[], $4::bigint[], $5::bigint[], $6::bigint[], $7::boolean[],
	$8::bigint[], $9::bigint[], $10::text[], $11::text[], $12::text[])
	WITH ORDINALITY AS s(` + stateColumns + `, ord)
ORDER BY host COLLATE "C", principal COLLATE "C", resource COLLATE "C", observed_at_ms DESC, ord DESC
` + onConflictKeepNewest

// recordObservations adds a batch of states, given as one array per column,
// to their keys' histories: per key and bucket ($9 milliseconds wide) the
// observation made last wins, in the batch as in the table (the last one
// given, on a tie). Rows are written in key and bucket order.
const recordObservations = `INSERT INTO quota_observation (host, principal, resource, bucket,
	observed_at_ms, remaining, limit_units, reset_at_ms, observed_by)
SELECT DISTINCT ON (host COLLATE "C", principal COLLATE "C", resource COLLATE "C", bucket)
	host, principal, resource, bucket, observed_at_ms, remaining, limit_units, reset_at_ms, observed_by
FROM (SELECT *, floor(observed_at_ms::numeric / $9::bigint)::bigint AS bucket
	FROM unnest($1::text[], $2::text[], $3::text[], $4::bigint[], $5::bigint[], $6::bigint[], $7::bigint[],
		$8::text[]) WITH ORDINALITY
		AS s(host, principal, resource, observed_at_ms, remaining, limit_units, reset_at_ms, observed_by, ord)) s
ORDER BY host COLLATE "C", principal COLLATE "C", resource COLLATE "C", bucket, observed_at_ms DESC, ord DESC
ON CONFLICT (host, principal, resource, bucket) DO UPDATE SET
	observed_at_ms = excluded.observed_at_ms, remaining = excluded.remaining,
	limit_units = excluded.limit_units, reset_at_ms = excluded.reset_at_ms,
	observed_by = excluded.observed_by
WHERE excluded.observed_at_ms >= quota_observation.observed_at_ms`

// pruneObservations deletes, for each key of the batch, the buckets more
// than $4 older than its newest.
const pruneObservations = `DELETE FROM quota_observation o
USING (SELECT q.host, q.principal, q.resource, max(q.bucket) AS newest
	FROM quota_observation q
	WHERE (q.host, q.principal, q.resource) IN (SELECT * FROM unnest($1::text[], $2::text[], $3::text[]))
	GROUP BY q.host, q.principal, q.resource) k
WHERE o.host = k.host AND o.principal = k.principal AND o.resource = k.resource AND o.bucket <= k.newest - $4`

// selectObservations reads the newest $5 (all when NULL) of a key's kept
// observations made at or after $4, newest first.
const selectObservations = `SELECT observed_at_ms, remaining, limit_units, reset_at_ms, observed_by
FROM quota_observation WHERE host = $1 AND principal = $2 AND resource = $3 AND observed_at_ms >= $4
ORDER BY bucket DESC LIMIT $5`

// selectStates reads the states of the keys given as three arrays, ordered
// by key.
const selectStates = `SELECT ` + stateColumns + ` FROM quota_state
WHERE (host, principal, resource) IN (SELECT * FROM unnest($1::text[], $2::text[], $3::text[]))
ORDER BY host, principal, resource`

// mergeLogin moves the states of a token principal ($2) on host $1 to the
// login $3, merged as RecordStates merges: the newer observation wins.
const mergeLogin = `WITH moved AS (
	DELETE FROM quota_state WHERE host = $1 AND principal = $2 RETURNING ` + stateColumns + `
)
INSERT INTO quota_state (` + stateColumns + `)
SELECT host, $3::text, resource, limit_units, remaining, reset_at_ms, reset_known, raw_reset,
	observed_at_ms, observed_by, source, cause FROM moved ORDER BY resource
` + onConflictKeepNewest

// mergeObservations moves the history of principal $2 on host $1 to $3,
// merged as RecordStates merges: per bucket the newer observation wins.
const mergeObservations = `WITH moved AS (
	DELETE FROM quota_observation WHERE host = $1 AND principal = $2
	RETURNING host, resource, bucket, observed_at_ms, remaining, limit_units, reset_at_ms, observed_by
)
INSERT INTO quota_observation (host, principal, resource, bucket, observed_at_ms, remaining, limit_units,
	reset_at_ms, observed_by)
SELECT host, $3::text, resource, bucket, observed_at_ms, remaining, limit_units, reset_at_ms, observed_by
FROM moved ORDER BY resource COLLATE "C", bucket
ON CONFLICT (host, principal, resource, bucket) DO UPDATE SET
	observed_at_ms = excluded.observed_at_ms, remaining = excluded.remaining,
	limit_units = excluded.limit_units, reset_at_ms = excluded.reset_at_ms,
	observed_by = excluded.observed_by
WHERE excluded.observed_at_ms >= quota_observation.observed_at_ms`

// pruneLoginObservations prunes every key of principal $2 on host $1 to
// its newest $3 buckets.
const pruneLoginObservations = `DELETE FROM quota_observation o
USING (SELECT resource, max(bucket) AS newest FROM quota_observation
	WHERE host = $1 AND principal = $2 GROUP BY resource) k
WHERE o.host = $1 AND o.principal = $2 AND o.resource = k.resource AND o.bucket <= k.newest - $3`

// Ledger writers lock. LearnLogin moves rows from one principal to another,
// locking a token's rows and then its login's, while RecordStates locks the
// rows of one call in key order, which may be the other way round: two such
// transactions could deadlock, and PostgreSQL would find it only after its
// deadlock_timeout. So ledger writes also take a transaction-scoped
// advisory lock per provider host, before any row: RecordStates a shared
// one (writers never wait for each other), LearnLogin an exclusive one (it
// waits for the writes in flight on that host, and holds new ones back for
// the moment it runs). Advisory locks are taken in host order, and before
// any row lock, so they never close a cycle.
const (
	lockLedgerShared    = `SELECT pg_advisory_xact_lock_shared(hashtext('layover.ledger:' || current_schema()), hashtext($1))`
	lockLedgerExclusive = `SELECT pg_advisory_xact_lock(hashtext('layover.ledger:' || current_schema()), hashtext($1))`
)

// RecordStates implements store.Store: one transaction, one round trip.
// Times are kept in milliseconds, and "most recent" compares those.
func (s *Store) RecordStates(ctx context.Context, states []quota.State) error {
	if len(states) == 0 {
		return nil
	}
	n := len(states)
	hosts, principals, resources := make([]string, n), make([]string, n), make([]string, n)
	limits, remaining, resets := make([]int64, n), make([]int64, n), make([]int64, n)
	known := make([]bool, n)
	raw, observed := make([]int64, n), make([]int64, n)
	by, sources, causes := make([]string, n), make([]string, n), make([]string, n)
	for i, st := range states {
		hosts[i], principals[i], resources[i] = st.Host, st.Principal, st.Resource
		limits[i], remaining[i], resets[i] = st.Limit, st.Remaining, store.MS(st.ResetAt)
		known[i], raw[i], observed[i] = st.ResetKnown, st.RawReset, store.MS(st.ObservedAt)
		by[i], sources[i], causes[i] = st.ObservedBy, string(st.Source), string(st.Cause)
	}
	locks := slices.Compact(slices.Sorted(slices.Values(hosts)))
	err := s.sendBatch(ctx, func() *pgx.Batch {
		b := &pgx.Batch{}
		for _, h := range locks {
			b.Queue(lockLedgerShared, h)
		}
		b.Queue(recordStates, hosts, principals, resources, limits, remaining, resets,
			known, raw, observed, by, sources, causes)
		b.Queue(recordObservations, hosts, principals, resources, observed, remaining, limits, resets, by,
			store.ObservationSpacing.Milliseconds())
		b.Queue(pruneObservations, hosts, principals, resources, store.ObservationsKept)
		return b
	})
	return wrapErr("record states", err)
}

// scanState reads a row of stateColumns.
func scanState(row pgx.Row) (quota.State, error) {
	var st quota.State
	var reset, observed int64
	var source, cause string
	err := row.Scan(&st.Host, &st.Principal, &st.Resource, &st.Limit, &st.Remaining, &reset,
		&st.ResetKnown, &st.RawReset, &observed, &st.ObservedBy, &source, &cause)
	st.ResetAt, st.ObservedAt = store.FromMS(reset), store.FromMS(observed)
	st.Source, st.Cause = quota.Source(source), quota.Cause(cause)
	return st, err
}

func collectStates(rows pgx.Rows, err error) ([]quota.State, error) {
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(row pgx.CollectableRow) (quota.State, error) { return scanState(row) })
}

// States implements store.Store. The states come ordered by key (bytewise),
// as AllStates orders them; a key asked twice comes once.
func (s *Store) States(ctx context.Context, keys []quota.Key) ([]quota.State, error) {
	if len(keys) == 0 {
		return nil, nil
	}
	hosts, principals, resources := make([]string, len(keys)), make([]string, len(keys)), make([]string, len(keys))
	for i, k := range keys {
		hosts[i], principals[i], resources[i] = k.Host, k.Principal, k.Resource
	}
	states, err := collectStates(s.pool.Query(ctx, selectStates, hosts, principals, resources))
	return states, wrapErr("states", err)
}

// AllStates implements store.Store.
func (s *Store) AllStates(ctx context.Context) ([]quota.State, error) {
	states, err := collectStates(s.pool.Query(ctx,
		`SELECT `+stateColumns+` FROM quota_state ORDER BY host, principal, resource`))
	return states, wrapErr("all states", err)
}

// Login implements store.Store.
func (s *Store) Login(ctx context.Context, host, fingerprint string) (string, bool, error) {
	var login string
	err := s.pool.QueryRow(ctx,
		`SELECT login FROM principal_login WHERE host = $1 AND fingerprint = $2`, host, fingerprint).Scan(&login)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", false, nil
	}
	if err != nil {
		return "", false, wrapErr("login", err)
	}
	return login, true, nil
}

// LearnLogin implements store.Store: the login and the merge of the
// token's states in one transaction (one round trip), exclusive of the
// other ledger writes on host.
func (s *Store) LearnLogin(ctx context.Context, host, fingerprint, login string, at time.Time) error {
	err := s.sendBatch(ctx, func() *pgx.Batch {
		b := &pgx.Batch{}
		b.Queue(lockLedgerExclusive, host)
		b.Queue(`INSERT INTO principal_login (host, fingerprint, login, learned_at_ms) VALUES ($1, $2, $3, $4)
			ON CONFLICT (host, fingerprint) DO UPDATE SET login = excluded.login, learned_at_ms = excluded.learned_at_ms`,
			host, fingerprint, login, store.MS(at))
		b.Queue(mergeLogin, host, "tok:"+fingerprint, login)
		b.Queue(mergeObservations, host, "tok:"+fingerprint, login)
		b.Queue(pruneLoginObservations, host, login, store.ObservationsKept)
		return b
	})
	return wrapErr("learn login", err)
}

// Observations implements store.Store.
func (s *Store) Observations(ctx context.Context, key quota.Key, since time.Time, limit int) ([]store.Observation, error) {
	var lim *int64 // NULL: no limit
	if limit > 0 {
		n := int64(limit)
		lim = &n
	}
	rows, err := s.pool.Query(ctx, selectObservations, key.Host, key.Principal, key.Resource, store.MS(since), lim)
	if err != nil {
		return nil, wrapErr("observations", err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (store.Observation, error) {
		o := store.Observation{Key: key}
		var observed, reset int64
		err := row.Scan(&observed, &o.Remaining, &o.Limit, &reset, &o.ObservedBy)
		o.ObservedAt, o.ResetAt = store.FromMS(observed), store.FromMS(reset)
		return o, err
	})
	if err != nil {
		return nil, wrapErr("observations", err)
	}
	slices.Reverse(out)
	return out, nil
}
