// Package postgres is layover's fleet store: one PostgreSQL database (or
// one schema of it) shared by every host, through pgx and its pool.
//
// It keeps the same data as store/sqlite and passes the same conformance
// suites (store/storetest). The schema lives in migration/*.sql, embedded
// and applied by Open under a transaction-scoped advisory lock, so many
// processes may open a new database at once.
//
// Concurrency is PostgreSQL's own: every write is one transaction at READ
// COMMITTED; SubmitJob and ApplyJob calls share transactions (group
// commit, groupcommit.go), and a change to a job is written only if the
// job's row is still the version its fence and state were checked against
// (else it is checked again with the row locked); ClaimJobs and SweepJobs take
// their rows with FOR NO KEY UPDATE SKIP LOCKED, so hosts never wait for
// each other nor take a job twice; the ledger is upserted with INSERT … ON
// CONFLICT, the most recent observation winning, under a per-provider-host
// advisory lock that keeps LearnLogin's merge from deadlocking with it. A
// receipt is written in the transaction that records its wake-up, and a
// claim in the one that bumps its fence. A transaction the server rolls
// back for a deadlock or a serialization failure is run again (see
// maxTries); no other failure is retried, since a commit whose answer was
// lost may have happened.
//
// The pool holds DefaultMaxConns connections unless the DSN says
// otherwise, and statements are prepared once per connection (pgx's
// statement cache): behind a pooler in transaction mode, set
// default_query_exec_mode=exec in the DSN.
//
// Times are kept as bigint milliseconds since the Unix epoch (UTC), 0 for
// "none", as store/sqlite keeps them: the stores' contract is millisecond
// precision, the host's clock is injected (the server's clock is never
// read), and the sweep's boundaries ("passed" is one millisecond after) are
// exact integer comparisons. In psql, to_timestamp(x_ms / 1000.0) shows one.
package postgres

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/layoverhq/layover/redact"
	"github.com/layoverhq/layover/store"
	"github.com/layoverhq/layover/store/internal/groupcommit"
)

//go:embed migration/*.sql
var migrations embed.FS

// Defaults applied when the DSN leaves them out.
const (
	// DefaultMaxConns is the pool's size unless the DSN sets
	// pool_max_conns. A host runs up to 16 jobs at once, each writing its
	// own changes, and concurrent commits share the server's WAL flushes.
	DefaultMaxConns = 16
	// DefaultConnectTimeout bounds each connection attempt unless the DSN
	// sets connect_timeout (or PGCONNECT_TIMEOUT is set), so an unreachable
	// server fails Open instead of hanging it.
	DefaultConnectTimeout = 10 * time.Second
)

// maxTries bounds how often a transaction the server rolled back for a
// deadlock or a serialization failure is run again.
const maxTries = 5

// Store is a store.Store on a PostgreSQL database. Safe for
// concurrent use by many goroutines and many processes at once.
type Store struct {
	pool *pgxpool.Pool
	// where names the store in errors: its DSN, password masked.
	where string
	// writes group-commits SubmitJob and ApplyJob (groupcommit.go).
	writes *groupcommit.Queue[*jobWrite]
	// afterRead, when set (by tests), runs after a group read its jobs
	// without locking them.
	afterRead func()

	// The job watchers (changes.go): watchStop ends each by its id;
	// watchClosed is set by Close, which waits for watchers to end. Guarded
	// by watchMu.
	watchMu     sync.Mutex
	watchStop   map[int]context.CancelFunc
	watchNext   int
	watchClosed bool
	watchers    sync.WaitGroup
}

// newStore is the Store on pool.
func newStore(pool *pgxpool.Pool, where string) *Store {
	s := &Store{pool: pool, where: where, watchStop: map[int]context.CancelFunc{}}
	s.writes = newJobWrites(s)
	return s
}

var _ store.Store = (*Store)(nil)

// DSNError reports a store location that is not a usable PostgreSQL URL:
// the user's input is wrong, not layover. DSN is the location with its
// password masked; the error never holds the password.
type DSNError struct {
	DSN string
	Err error
}

func (e *DSNError) Error() string { return fmt.Sprintf("store %s: %v", e.DSN, e.Err) }
func (e *DSNError) Unwrap() error { return e.Err }

// Open connects to the database named by dsn, a postgres:// or
// postgresql:// URL (any parameter pgx reads, plus pool_max_conns and the
// other pool_* settings; search_path picks the schema), and applies the
// pending migrations. A DSN that cannot be used is a *DSNError; a server
// that cannot be reached fails with one line naming the store (password
// masked) and the cause.
func Open(ctx context.Context, dsn string) (*Store, error) {
	cfg, where, err := parseDSN(dsn)
	if err != nil {
		return nil, err
	}
	secrets := dsnSecrets(dsn, cfg)
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("store %s: %s", where, oneLine(err.Error(), secrets))
	}
	s := newStore(pool, where)
	if err := s.migrate(ctx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("store %s: %s", where, describeOpenError(err, secrets))
	}
	return s, nil
}

// OpenReadOnly connects to the database named by dsn, as Open does, for
// reading only, as a role that may only SELECT does: it creates nothing,
// applies no migration, and every transaction of the pool is read-only
// (default_transaction_read_only), so every write fails. A schema older
// than this layover's, or none yet, is an error wrapping store.ErrSchemaOld.
func OpenReadOnly(ctx context.Context, dsn string) (*Store, error) {
	cfg, where, err := parseDSN(dsn)
	if err != nil {
		return nil, err
	}
	cfg.ConnConfig.RuntimeParams["default_transaction_read_only"] = "on"
	secrets := dsnSecrets(dsn, cfg)
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("store %s: %s", where, oneLine(err.Error(), secrets))
	}
	s := newStore(pool, where)
	if err := s.checkSchema(ctx); err != nil {
		pool.Close()
		if errors.Is(err, store.ErrSchemaOld) {
			return nil, fmt.Errorf("store %s: %w", where, err)
		}
		return nil, fmt.Errorf("store %s: %s", where, describeOpenError(err, secrets))
	}
	return s, nil
}

// parseDSN reads dsn into a pool configuration with this package's
// defaults, and returns the DSN as errors show it.
func parseDSN(dsn string) (*pgxpool.Config, string, error) {
	if !strings.HasPrefix(dsn, "postgres://") && !strings.HasPrefix(dsn, "postgresql://") {
		return nil, "", &DSNError{DSN: Redact(dsn), Err: errors.New("not a postgres:// or postgresql:// URL")}
	}
	where := Redact(dsn)
	// The parsers' messages about a URL that does not parse quote parts of
	// it, and in such a URL a password may run into the host, the port or
	// the path (an unescaped '/' in it, say): say what to check instead.
	u, err := url.Parse(dsn)
	if err != nil {
		return nil, "", &DSNError{DSN: where, Err: errInvalidURL}
	}
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		msg := err.Error()
		// pgconn's message quotes the whole DSN, its password masked as
		// best it can: leave the quote out.
		if rest, ok := strings.CutPrefix(msg, "cannot parse `"); ok {
			if i := strings.Index(rest, "`: "); i >= 0 {
				msg = rest[i+3:]
			}
		}
		if strings.HasPrefix(msg, "failed to parse as URL") {
			return nil, "", &DSNError{DSN: where, Err: errInvalidURL}
		}
		return nil, "", &DSNError{DSN: where, Err: errors.New(oneLine(msg, urlSecrets(dsn)))}
	}
	q := u.Query()
	if !q.Has("pool_max_conns") {
		cfg.MaxConns = DefaultMaxConns
	}
	if !q.Has("connect_timeout") && os.Getenv("PGCONNECT_TIMEOUT") == "" {
		cfg.ConnConfig.ConnectTimeout = DefaultConnectTimeout
	}
	return cfg, where, nil
}

// errInvalidURL is the error of a DSN that does not parse as a URL.
var errInvalidURL = errors.New("not a valid URL: percent-encode any of @ : / ? # [ ] or a space " +
	"in the user name and password, and give the port as a number")

// secretParams are the URL parameters that hold secrets.
var secretParams = []string{"password", "sslpassword"}

// urlSecrets lists the secrets written in dsn: its password and the values
// of its secret parameters.
func urlSecrets(dsn string) []string {
	var out []string
	// Should the URL be read otherwise than its writer meant: what stands
	// between the first ':' and the last '@' after the scheme.
	_, rest, _ := strings.Cut(dsn, "://")
	if at := strings.LastIndex(rest, "@"); at >= 0 {
		if _, pw, ok := strings.Cut(rest[:at], ":"); ok {
			out = append(out, pw)
		}
	}
	u, err := url.Parse(dsn)
	if err != nil {
		return out
	}
	if u.User != nil {
		if p, ok := u.User.Password(); ok {
			out = append(out, p, url.PathEscape(p), url.QueryEscape(p))
		}
	}
	for k, vs := range u.Query() {
		if slices.Contains(secretParams, strings.ToLower(k)) {
			out = append(out, vs...)
		}
	}
	return out
}

// dsnSecrets adds to urlSecrets the password pgx found elsewhere
// (PGPASSWORD, a passfile).
func dsnSecrets(dsn string, cfg *pgxpool.Config) []string {
	return append(urlSecrets(dsn), cfg.ConnConfig.Password)
}

// Redact returns dsn with its password, and the values of its password and
// sslpassword parameters, replaced by a mask, for messages and logs. A DSN
// that is not a URL is reduced to its scheme, and so is one with an '@'
// after its host: a password with an unescaped '/', '?' or '#' in it makes
// a URL whose host is the user name and whose path or query holds the rest
// of the password.
func Redact(dsn string) string {
	scheme, rest, ok := strings.Cut(dsn, "://")
	if !ok || scheme == "" || strings.ContainsAny(scheme, ":@/?#") {
		return "(not a URL)"
	}
	u, err := url.Parse(dsn)
	if i := strings.IndexAny(rest, "/?#"); err != nil || (i >= 0 && strings.Contains(rest[i:], "@")) {
		return scheme + "://…"
	}
	var b strings.Builder
	b.WriteString(u.Scheme + "://")
	if u.User != nil {
		b.WriteString(url.User(u.User.Username()).String())
		if _, ok := u.User.Password(); ok {
			b.WriteString(":" + redact.Mask)
		}
		b.WriteString("@")
	}
	b.WriteString(u.Host)
	b.WriteString(u.EscapedPath())
	if u.RawQuery != "" {
		parts := strings.Split(u.RawQuery, "&")
		for i, p := range parts {
			k, _, _ := strings.Cut(p, "=")
			if key, err := url.QueryUnescape(k); err != nil || slices.Contains(secretParams, strings.ToLower(key)) {
				parts[i] = k + "=" + redact.Mask
			}
		}
		b.WriteString("?" + strings.Join(parts, "&"))
	}
	return b.String()
}

// oneLine is msg on one line with every secret masked.
func oneLine(msg string, secrets []string) string {
	for _, s := range secrets {
		if s != "" {
			msg = strings.ReplaceAll(msg, s, redact.Mask)
		}
	}
	msg = redact.String(msg)
	return strings.Join(strings.Fields(msg), " ")
}

// describeOpenError says in one line why Open failed: the server refused
// (its message), it could not be reached (the network's), or a migration
// failed.
func describeOpenError(err error, secrets []string) string {
	var ce *pgconn.ConnectError
	var pe *pgconn.PgError
	switch {
	case errors.As(err, &pe) && errors.As(err, &ce):
		return "cannot connect: server said: " + oneLine(pe.Severity+": "+pe.Message+" (SQLSTATE "+pe.Code+")", secrets)
	case errors.As(err, &ce):
		cause := err.Error()
		if inner := errors.Unwrap(ce); inner != nil {
			cause = inner.Error()
		}
		// pgx joins the error of each attempt (every address, with and
		// without TLS): say each different one once.
		cause = distinctLines(cause)
		if pgconn.Timeout(err) {
			cause = "timed out: " + cause
		}
		return "cannot connect: " + oneLine(cause, secrets)
	}
	return oneLine(err.Error(), secrets)
}

// distinctLines joins the different lines of s with "; ", each once, in
// order.
func distinctLines(s string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if l = strings.TrimSpace(l); l != "" && !slices.Contains(out, l) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "; ")
}

// Pool exposes the connection pool, for tests and benchmarks of this
// package's users.
func (s *Store) Pool() *pgxpool.Pool { return s.pool }

// Close closes the pool, waiting for the connections in use to be
// released. A call made after Close fails.
func (s *Store) Close() error {
	s.stopWatchers()
	s.pool.Close()
	return nil
}

// migrate applies every embedded migration newer than the highest version
// in schema_migrations, in the schema first in the search path. It holds a
// transaction-scoped advisory lock, keyed on that schema, from before it
// reads the version until it commits, so concurrent Opens migrate once.
func (s *Store) migrate(ctx context.Context) error {
	files, err := migrationFiles()
	if err != nil {
		return err
	}
	latest := files[len(files)-1].version
	return s.inTx(ctx, func(tx pgx.Tx) error {
		if err := hasSchema(ctx, tx); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtext('layover.migrate'), hashtext(current_schema()))`); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
			version    integer     PRIMARY KEY,
			name       text        NOT NULL,
			applied_at timestamptz NOT NULL DEFAULT now())`); err != nil {
			return err
		}
		var v int
		if err := tx.QueryRow(ctx, `SELECT COALESCE(max(version), 0) FROM schema_migrations`).Scan(&v); err != nil {
			return err
		}
		if v > latest {
			return fmt.Errorf("schema version %d is newer than this layover knows (%d)", v, latest)
		}
		for _, f := range files {
			if f.version <= v {
				continue
			}
			body, err := migrations.ReadFile(f.path)
			if err != nil {
				return err
			}
			if _, err := tx.Exec(ctx, string(body)); err != nil {
				return fmt.Errorf("migration %s: %w", f.name, err)
			}
			if _, err := tx.Exec(ctx, `INSERT INTO schema_migrations (version, name) VALUES ($1, $2)`, f.version, f.name); err != nil {
				return err
			}
		}
		return nil
	})
}

// hasSchema fails unless the search path names a schema that exists.
func hasSchema(ctx context.Context, q pgx.Tx) error {
	var schema *string
	var path string
	if err := q.QueryRow(ctx, `SELECT current_schema(), current_setting('search_path')`).Scan(&schema, &path); err != nil {
		return err
	}
	if schema == nil {
		return fmt.Errorf("no schema to keep the store in: the search_path (%s) names none that exists", path)
	}
	return nil
}

// checkSchema fails unless the schema is the one this layover knows: a
// read-only Store cannot migrate. No schema_migrations table is version 0.
func (s *Store) checkSchema(ctx context.Context) error {
	files, err := migrationFiles()
	if err != nil {
		return err
	}
	latest := files[len(files)-1].version
	return pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if err := hasSchema(ctx, tx); err != nil {
			return err
		}
		var table *string
		if err := tx.QueryRow(ctx, `SELECT to_regclass('schema_migrations')::text`).Scan(&table); err != nil {
			return err
		}
		v := 0
		if table != nil {
			if err := tx.QueryRow(ctx, `SELECT COALESCE(max(version), 0) FROM schema_migrations`).Scan(&v); err != nil {
				return err
			}
		}
		switch {
		case v > latest:
			return fmt.Errorf("schema version %d is newer than this layover knows (%d)", v, latest)
		case table == nil:
			return fmt.Errorf("%w: %w: schema version 0, this layover reads %d", store.ErrSchemaOld, store.ErrNoSchema, latest)
		case v < latest:
			return fmt.Errorf("%w: schema version %d, this layover reads %d", store.ErrSchemaOld, v, latest)
		}
		return nil
	})
}

type migrationFile struct {
	version    int
	name, path string
}

// migrationFiles lists the embedded migrations by version: NNN_name.sql,
// numbered 1, 2, 3… without gaps.
func migrationFiles() ([]migrationFile, error) {
	paths, err := fs.Glob(migrations, "migration/*.sql")
	if err != nil {
		return nil, err
	}
	var out []migrationFile
	for _, p := range paths {
		name := strings.TrimSuffix(strings.TrimPrefix(p, "migration/"), ".sql")
		num, _, _ := strings.Cut(name, "_")
		v, err := strconv.Atoi(num)
		if err != nil {
			return nil, fmt.Errorf("migration %s: no version number", p)
		}
		out = append(out, migrationFile{version: v, name: name, path: p})
	}
	slices.SortFunc(out, func(a, b migrationFile) int { return a.version - b.version })
	for i, f := range out {
		if f.version != i+1 {
			return nil, fmt.Errorf("migration %s: version %d, want %d", f.name, f.version, i+1)
		}
	}
	if len(out) == 0 {
		return nil, errors.New("no migrations")
	}
	return out, nil
}

// inTx runs fn in a transaction, committing when it returns nil. A
// transaction the server rolled back for a deadlock or a serialization
// failure (nothing of it happened) runs again, up to maxTries times in
// all; fn must be safe to run again.
func (s *Store) inTx(ctx context.Context, fn func(pgx.Tx) error) error {
	return retry(ctx, func() error { return pgx.BeginFunc(ctx, s.pool, fn) })
}

// retry runs do until it succeeds, fails for a reason other than a
// retryable rollback, or has run maxTries times.
func retry(ctx context.Context, do func() error) error {
	for try := 1; ; try++ {
		err := do()
		if err == nil || !retryable(err) || try == maxTries || ctx.Err() != nil {
			return err
		}
		d := time.Duration(try) * time.Millisecond
		select {
		case <-ctx.Done():
			return err
		case <-time.After(d + rand.N(d)):
		}
	}
}

// retryable reports an error of a transaction the server rolled back
// whole: a deadlock (40P01) or a serialization failure (40001).
func retryable(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && (pe.Code == "40P01" || pe.Code == "40001")
}

// sendBatch runs the batch build returns as one implicit transaction, in
// one round trip, handing each query's result to its callback. A batch the
// server rolled back is built and sent again, as inTx does.
func (s *Store) sendBatch(ctx context.Context, build func() *pgx.Batch) error {
	return retry(ctx, func() error { return s.pool.SendBatch(ctx, build()).Close() })
}

// wrapErr names the operation that failed.
func wrapErr(op string, err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("%s: %w", op, err)
}
