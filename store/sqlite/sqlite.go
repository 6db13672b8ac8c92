// Package sqlite is layover's embedded store: one SQLite file in WAL mode,
// through the pure-Go modernc.org/sqlite driver. Every write runs in an
// immediate transaction with a busy timeout, so many layover processes may
// share one file.
package sqlite

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	modernc "modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/layoverhq/layover/store"
	"github.com/layoverhq/layover/store/internal/groupcommit"
)

//go:embed migration/*.up.sql
var migrations embed.FS

// BusyTimeoutMS is how long a writer waits for another process's write
// transaction before giving up, in milliseconds.
const BusyTimeoutMS = 30000

// Store is a store.Store on one SQLite file. Safe for concurrent use.
type Store struct {
	db   *sql.DB
	path string

	// states[n] reads n keys (see statesQuery); prepared on first use and
	// closed by Close. stmtMu serialises preparing and closing, of these and
	// of prepared.
	stmtMu sync.Mutex
	states [maxPreparedKeys + 1]atomic.Pointer[sql.Stmt]

	// prepared maps a query's text to its *sql.Stmt (see stmt): one per
	// query per Store, shared by every connection and transaction, closed
	// by Close.
	prepared sync.Map

	// writes group-commits the writes (groupcommit.go); w is its writer's
	// connection (see writerConn); wmu is held by the writer for a whole
	// batch, and by Close.
	writes *groupcommit.Queue[func(*batch) error]
	wmu    sync.Mutex
	w      *writerConn

	// The job watchers (changes.go): watchStop ends each by its id;
	// watchClosed is set by Close, which waits for watchers to end. Guarded
	// by watchMu.
	watchMu     sync.Mutex
	watchStop   map[int]context.CancelFunc
	watchNext   int
	watchClosed bool
	watchers    sync.WaitGroup
}

// newStore is the Store on db, the file at path.
func newStore(db *sql.DB, path string) *Store {
	s := &Store{db: db, path: path, watchStop: map[int]context.CancelFunc{}}
	s.writes = newWrites(s)
	return s
}

var _ store.Store = (*Store)(nil)

// PathError reports a store location that cannot be used: a directory, a
// path whose folder cannot be made, a file that cannot be created. It is the
// user's input that is wrong, not layover.
type PathError struct {
	Path string
	Err  error
}

func (e *PathError) Error() string { return fmt.Sprintf("store %s: %v", e.Path, e.Err) }
func (e *PathError) Unwrap() error { return e.Err }

// DefaultPath is $XDG_STATE_HOME/layover/layover.db, else
// ~/.local/state/layover/layover.db. An XDG_STATE_HOME that is not absolute
// is ignored, as the XDG Base Directory specification says; a HOME that is
// not absolute is an error, since the store would move with the working
// directory (each cron job its own ledger).
func DefaultPath(getenv func(string) string) (string, error) {
	if d := getenv("XDG_STATE_HOME"); d != "" && filepath.IsAbs(d) {
		return filepath.Join(d, "layover", "layover.db"), nil
	}
	home := getenv("HOME")
	if home == "" {
		h, err := os.UserHomeDir()
		if err != nil {
			return "", fmt.Errorf("no home directory for the default store: %w", err)
		}
		home = h
	}
	if !filepath.IsAbs(home) {
		return "", fmt.Errorf("no default store: HOME (%q) is not an absolute path; give one with --store or LAYOVER_STORE", home)
	}
	return filepath.Join(home, ".local", "state", "layover", "layover.db"), nil
}

// Open opens (creating if needed) the store at path. A new folder is made
// 0700 and a new file 0600. Pending migrations are applied.
func Open(ctx context.Context, path string) (*Store, error) {
	if err := checkPath(path); err != nil {
		return nil, err
	}
	if err := prepareFile(path); err != nil {
		return nil, err
	}
	// SQLite is opened with URIs enabled: a relative path starting "file:"
	// would name another file than the one prepareFile made, created with
	// the umask's mode. An absolute path is never taken for a URI.
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, &PathError{Path: path, Err: err}
	}
	c, err := connector(abs)
	if err != nil {
		return nil, fmt.Errorf("open store %s: %w", path, err)
	}
	db := openDB(c)
	s := newStore(db, path)
	if err := s.migrateRetrying(ctx); err != nil {
		db.Close()
		return nil, fmt.Errorf("open store %s: %w", path, err)
	}
	return s, nil
}

// checkPath refuses a path no store can be kept at whatever is on disk.
func checkPath(path string) error {
	if path == "" {
		return &PathError{Path: path, Err: errors.New("empty path")}
	}
	if strings.ContainsAny(path, "?#") {
		return &PathError{Path: path, Err: errors.New("path may not contain '?' or '#'")}
	}
	return nil
}

// OpenReadOnly opens the existing store at path for reading only, as a user
// who may read a shared store but not write it does: it creates no file,
// applies no migration, runs no pragma that writes, and every write through
// the Store fails. A missing file is an error wrapping fs.ErrNotExist; a
// schema older than this layover's (or none) one wrapping
// store.ErrSchemaOld; a directory, or a path that cannot be looked at, a
// *PathError.
//
// While the store's WAL index (the -shm file beside it) can be read, reads
// see every committed write, as a read-write Store's do. Without a readable
// index SQLite would have to create one; instead, when the write-ahead log
// holds nothing (no writer has written since the last close), the file is
// read as immutable: it holds every committed write. Every layover process
// leaves the index in place, so this is the path of a copied store or one
// whose index this user may not read; there, a writer that starts while the
// Store reads and checkpoints meanwhile can make a read fail or see a mix
// of old and new rows (never a write: the Store cannot write). With a
// non-empty log and no readable index the store cannot be read without
// write access, and OpenReadOnly says so.
func OpenReadOnly(ctx context.Context, path string) (*Store, error) {
	if err := checkPath(path); err != nil {
		return nil, err
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, &PathError{Path: path, Err: err}
	}
	fi, err := os.Stat(abs)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, fmt.Errorf("open store %s: %w", path, err)
	case err != nil:
		return nil, &PathError{Path: path, Err: err}
	case fi.IsDir():
		return nil, &PathError{Path: path, Err: errors.New("is a directory")}
	}
	// SQLite URIs decode %HH; '?' and '#' were refused above.
	uri := "file:" + strings.ReplaceAll(abs, "%", "%25") +
		"?mode=ro&_pragma=busy_timeout(" + strconv.Itoa(BusyTimeoutMS) + ")&_pragma=query_only(1)"
	var roErr error
	if _, err := os.Stat(abs + "-shm"); err == nil {
		s, err := openReadOnly(ctx, path, uri)
		if err == nil || errors.Is(err, store.ErrSchemaOld) || !cannotOpenIndex(err) {
			return s, err
		}
		roErr = err
	}
	if wal, err := os.Stat(abs + "-wal"); err == nil && wal.Size() > 0 {
		cause := "its WAL index (" + path + "-shm) is missing"
		if roErr != nil {
			cause = "its WAL index cannot be opened here (" + roErr.Error() + ")"
		}
		return nil, fmt.Errorf("open store %s read-only: its write-ahead log holds writes not yet in the file and %s: "+
			"run a layover command that writes the store, as a user who may write it, to fold them in", path, cause)
	}
	return openReadOnly(ctx, path, uri+"&immutable=1")
}

// openReadOnly opens the SQLite URI uri (mode=ro) and checks its schema.
func openReadOnly(ctx context.Context, path, uri string) (*Store, error) {
	c, err := modernc.NewConnector(uri)
	if err != nil {
		return nil, fmt.Errorf("open store %s: %w", path, err)
	}
	s := newStore(openDB(c), path)
	if err := s.checkSchema(ctx); err != nil {
		s.db.Close()
		return nil, fmt.Errorf("open store %s read-only: %w", path, err)
	}
	return s, nil
}

// cannotOpenIndex reports an error of opening a WAL database read-only whose
// index (-shm) this process may not read or create.
func cannotOpenIndex(err error) bool {
	var se *modernc.Error
	if !errors.As(err, &se) {
		return false
	}
	switch se.Code() & 0xff {
	case sqlite3.SQLITE_CANTOPEN, sqlite3.SQLITE_READONLY:
		return true
	}
	return false
}

// connector connects to the SQLite file at the absolute path abs, with the
// store's pragmas.
func connector(abs string) (driver.Connector, error) {
	q := "_pragma=busy_timeout(" + strconv.Itoa(BusyTimeoutMS) + ")" +
		"&_pragma=journal_mode(WAL)&_pragma=synchronous(FULL)" +
		"&_pragma=journal_size_limit(" + strconv.Itoa(journalSizeLimit) + ")&_txlock=immediate"
	c, err := modernc.NewConnector(abs + "?" + q)
	if err != nil {
		return nil, err
	}
	return persistWAL{c}, nil
}

// openDB is the pool of connections of c, keeping up to maxIdleConns idle
// for at most maxIdleTime each.
func openDB(c driver.Connector) *sql.DB {
	db := sql.OpenDB(c)
	db.SetMaxIdleConns(maxIdleConns)
	db.SetConnMaxIdleTime(maxIdleTime)
	return db
}

// migrateRetrying runs migrate, trying again while another process holds a
// lock SQLite does not wait for: switching a new file to WAL and its first
// schema need every other connection out of the way, and many layover
// processes may open a new store at once. It gives up after the busy
// timeout.
func (s *Store) migrateRetrying(ctx context.Context) error {
	deadline := time.Now().Add(BusyTimeoutMS * time.Millisecond)
	for delay := 5 * time.Millisecond; ; delay = min(delay*2, 200*time.Millisecond) {
		err := s.migrate(ctx)
		if err == nil || !errors.Is(interpretError(err), ErrBusy) || time.Now().After(deadline) {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(delay + time.Duration(rand.Int64N(int64(delay)))):
		}
	}
}

// maxIdleConns is how many unused connections the pool keeps open (the
// number of open ones is not bounded). database/sql's default, 2, is fewer
// than a host uses at once (the group-commit writer, the loop's reads, a
// read per resuming job), so under load connections were closed and opened
// again, each new one parsing the schema and preparing every statement
// afresh. A kept connection keeps its page cache and the statements
// prepared on it; Close closes them all.
const maxIdleConns = 32

// maxIdleTime is how long an unused connection is kept: a long-running
// serve gives back the page caches a burst opened, while a steady load
// keeps its connections.
const maxIdleTime = time.Minute

// journalSizeLimit bounds, in bytes, the WAL file SQLite keeps after a
// checkpoint; the last connection to close empties it.
const journalSizeLimit = 4 << 20

// persistWAL opens connections that leave the -wal and -shm files in place
// when the last one closes (SQLITE_FCNTL_PERSIST_WAL). The close still
// checkpoints and, with a journal size limit, empties the WAL; what is saved
// is deleting both files at the end of every short layover process and
// creating them again at the start of the next. Durability is unchanged.
type persistWAL struct{ driver.Connector }

func (p persistWAL) Connect(ctx context.Context) (driver.Conn, error) {
	conn, err := p.Connector.Connect(ctx)
	if err != nil {
		return nil, err
	}
	fc, ok := conn.(modernc.FileControl)
	if !ok {
		conn.Close()
		return nil, errors.New("sqlite driver without file control")
	}
	if _, err := fc.FileControlPersistWAL("main", 1); err != nil {
		conn.Close()
		return nil, err
	}
	return conn, nil
}

// prepareFile makes the folder (0700) and an empty file (0600) when missing,
// so that SQLite, and the WAL files it derives from the file's mode, never
// create anything readable by others.
func prepareFile(path string) error {
	fi, err := os.Stat(path)
	switch {
	case err == nil && fi.IsDir():
		return &PathError{Path: path, Err: errors.New("is a directory")}
	case err == nil:
		return nil
	case !errors.Is(err, fs.ErrNotExist):
		return &PathError{Path: path, Err: err}
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return &PathError{Path: path, Err: err}
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil && !errors.Is(err, fs.ErrExist) {
		return &PathError{Path: path, Err: err}
	}
	if f != nil {
		return f.Close()
	}
	return nil
}

// Path is the file the store is kept in.
func (s *Store) Path() string { return s.path }

// DB exposes the database for tests and benchmarks of this package's users.
func (s *Store) DB() *sql.DB { return s.db }

// Close closes the prepared statements and the database. A statement
// still in use by a transaction is closed when that transaction ends; a
// call made after Close fails.
func (s *Store) Close() error {
	s.stopWatchers()
	s.closeWriter()
	s.stmtMu.Lock()
	defer s.stmtMu.Unlock()
	for i := range s.states {
		if st := s.states[i].Swap(nil); st != nil {
			st.Close()
		}
	}
	s.prepared.Range(func(q, st any) bool {
		s.prepared.Delete(q)
		st.(*sql.Stmt).Close()
		return true
	})
	return s.db.Close()
}

// stmt returns query prepared once for the Store, preparing it on first
// use. The *sql.Stmt is shared by all connections and goroutines: on each
// connection database/sql prepares it the first time it runs there and
// keeps it until the connection or the Stmt is closed. In a transaction,
// run it through tx.StmtContext, which takes the statement already
// prepared on the transaction's connection. query must be one of a fixed
// set of texts (a constant), never one built from values: each is kept
// until Close. After Close, stmt fails (the database is closed).
func (s *Store) stmt(ctx context.Context, query string) (*sql.Stmt, error) {
	if st, ok := s.prepared.Load(query); ok {
		return st.(*sql.Stmt), nil
	}
	s.stmtMu.Lock()
	defer s.stmtMu.Unlock()
	if st, ok := s.prepared.Load(query); ok {
		return st.(*sql.Stmt), nil
	}
	st, err := s.db.PrepareContext(ctx, query)
	if err != nil {
		return nil, err
	}
	s.prepared.Store(query, st)
	return st, nil
}

// txStmt returns query, prepared once for the Store, bound to tx. tx
// closes it when it ends; the Store's statement, and what it prepared on
// tx's connection, stay.
func (s *Store) txStmt(ctx context.Context, tx *sql.Tx, query string) (*sql.Stmt, error) {
	st, err := s.stmt(ctx, query)
	if err != nil {
		return nil, err
	}
	return tx.StmtContext(ctx, st), nil
}

// migrate applies every embedded migration newer than PRAGMA user_version.
// The common case, an up-to-date file, costs one read.
func (s *Store) migrate(ctx context.Context) error {
	names, err := migrationNames()
	if err != nil {
		return err
	}
	latest := len(names)
	v, err := s.schemaVersion(ctx, latest)
	if err != nil || v == latest {
		return err
	}
	return s.inTx(ctx, func(tx *sql.Tx) error {
		// Re-read inside the write lock: another process may have migrated.
		if err := tx.QueryRowContext(ctx, "PRAGMA user_version").Scan(&v); err != nil {
			return err
		}
		for i := v; i < latest; i++ {
			body, err := migrations.ReadFile(names[i])
			if err != nil {
				return err
			}
			if _, err := tx.ExecContext(ctx, string(body)); err != nil {
				return fmt.Errorf("migration %s: %w", names[i], err)
			}
		}
		_, err := tx.ExecContext(ctx, "PRAGMA user_version = "+strconv.Itoa(latest))
		return err
	})
}

// migrationNames lists the embedded migrations in the order they apply;
// the schema version after the i-th is i+1.
func migrationNames() ([]string, error) {
	names, err := fs.Glob(migrations, "migration/*.up.sql")
	sort.Strings(names)
	return names, err
}

// schemaVersion reads PRAGMA user_version, refusing a schema newer than
// latest.
func (s *Store) schemaVersion(ctx context.Context, latest int) (int, error) {
	var v int
	if err := s.db.QueryRowContext(ctx, "PRAGMA user_version").Scan(&v); err != nil {
		return 0, err
	}
	if v > latest {
		return 0, fmt.Errorf("schema version %d is newer than this layover knows (%d)", v, latest)
	}
	return v, nil
}

// checkSchema fails unless the schema is the one this layover knows: a
// read-only Store cannot migrate.
func (s *Store) checkSchema(ctx context.Context) error {
	names, err := migrationNames()
	if err != nil {
		return err
	}
	v, err := s.schemaVersion(ctx, len(names))
	if err == nil && v < len(names) {
		err = fmt.Errorf("%w: schema version %d, this layover reads %d", store.ErrSchemaOld, v, len(names))
	}
	return err
}

// inTx runs fn in an immediate transaction, committing when it returns nil.
func (s *Store) inTx(ctx context.Context, fn func(*sql.Tx) error) error {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	if err := fn(tx); err != nil {
		// Best effort: fn's error is the one to return; the rollback only
		// ends the transaction.
		_ = tx.Rollback()
		return err
	}
	return tx.Commit()
}
