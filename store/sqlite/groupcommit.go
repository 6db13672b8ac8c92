package sqlite

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"fmt"

	"github.com/layoverhq/layover/store/internal/groupcommit"
)

// Group commit. A durable SQLite commit costs one fsync, far more than the
// statements of one job change, so the writes of one Store share commits
// through the queue of store/internal/groupcommit: callers queue their
// work, and one writer at a time runs whatever is queued (up to maxBatch
// pieces) in one immediate transaction, each piece inside its own SAVEPOINT
// (a lone piece needs none). A piece that fails rolls back only itself and
// returns its own error; the others commit. Every caller returns only after
// the transaction holding its piece committed, so a nil error still means
// "durable". Pieces run in queue order, each seeing the ones before it, so
// a batch means exactly what running them one by one would.
//
// Every batch of a Store runs on the same connection (writerConn), kept
// from batch to batch with its statements, BEGIN and COMMIT included,
// prepared on it once: no transaction object, no statement bound anew per
// transaction, and a page cache that holds what the last batch wrote.
// Close closes it.

// maxBatch bounds the pieces one transaction holds.
const maxBatch = 256

// piece is one caller's share of a batch: its work, run in the batch's
// transaction.
type piece = groupcommit.Call[func(*batch) error]

// newWrites returns the group-commit queue of s's writes: one writer at a
// time, since SQLite has one (s.wmu holds it for a whole batch).
func newWrites(s *Store) *groupcommit.Queue[func(*batch) error] {
	return groupcommit.New(maxBatch, 1, func(_ context.Context, pieces []*piece) { runPieces(s, pieces) })
}

// write runs fn in a group-committed transaction and returns once that
// transaction committed or failed. fn must not keep tx-bound values after it
// returns. If ctx ends while the piece is still queued, write returns
// ctx.Err() and fn never runs; once taken, the piece is waited for.
func (s *Store) write(ctx context.Context, fn func(*batch) error) error {
	return s.writes.Do(ctx, fn)
}

// runPieces runs taken pieces in one immediate transaction, one SAVEPOINT
// each, and commits. A piece that failed keeps its own error; when the
// transaction itself fails, every other piece gets that error, since none
// of them committed. The transaction belongs to every caller in it, so no
// caller's context ends it (the queue's is not used either); the busy
// timeout bounds its wait for the lock.
func runPieces(s *Store, pieces []*piece) {
	fail := func(err error) {
		err = interpretError(err)
		for _, p := range pieces {
			if p.Err() == nil {
				p.SetErr(err)
			}
		}
	}
	s.wmu.Lock()
	defer s.wmu.Unlock()
	b, err := s.begin()
	if err != nil {
		fail(err)
		return
	}
	if len(pieces) == 1 {
		// A lone piece needs no SAVEPOINT: the transaction holds nothing
		// else, so rolling it back undoes exactly the piece.
		if p := pieces[0]; call(p, b) != nil {
			b.rollback()
			return
		}
	} else if err := runSavepoints(b, pieces); err != nil {
		b.rollback()
		fail(err)
		return
	}
	if err := b.exec("COMMIT"); err != nil {
		b.rollback()
		fail(fmt.Errorf("commit: %w", err))
	}
}

// runSavepoints runs pieces in b, each inside its own SAVEPOINT, rolling
// back to it a piece that fails. An error is the batch's: its transaction
// must be rolled back.
func runSavepoints(b *batch, pieces []*piece) error {
	for _, p := range pieces {
		if err := b.exec("SAVEPOINT piece"); err != nil {
			return err
		}
		if call(p, b) != nil {
			// An error that rolled the whole transaction back (I/O, full
			// disk) makes this fail too: then nothing of the batch
			// committed.
			if err := b.exec("ROLLBACK TO piece"); err != nil {
				return fmt.Errorf("batch rolled back: %w", err)
			}
		}
		if err := b.exec("RELEASE piece"); err != nil {
			return fmt.Errorf("batch rolled back: %w", err)
		}
	}
	return nil
}

// call runs p in b and sets its error, which it returns. A panic (a Mutate
// bug, say) becomes a value p's own caller re-panics with (Call.Guard), so
// one bad piece cannot take the writer down.
func call(p *piece, b *batch) error {
	err := p.Guard(func() error { return p.Value(b) })
	p.SetErr(err)
	return err
}

// writerConn is the connection a Store's group-commit writer runs its
// transactions on, and the statements prepared on it, by query text (a
// fixed set of constants, as for Store.stmt). Only the writer uses it,
// holding Store.wmu.
type writerConn struct {
	conn  *sql.Conn
	stmts map[string]*sql.Stmt
}

// begin starts a batch's immediate transaction on the writer's connection,
// taking one from the pool first when the writer has none. The caller
// holds s.wmu. After Close it fails: the pool is closed.
func (s *Store) begin() (*batch, error) {
	// The transaction belongs to every caller in it, so no caller's context
	// may end it; the busy timeout bounds its wait for the lock.
	ctx := context.Background()
	if s.w == nil {
		conn, err := s.db.Conn(ctx)
		if err != nil {
			return nil, err
		}
		s.w = &writerConn{conn: conn, stmts: map[string]*sql.Stmt{}}
		// Each SAVEPOINT copies the pages it changes to a sub-journal, a
		// temp file by default: a write syscall per page. Keep it in
		// memory. (Should it fail, batches are only slower.)
		_, _ = conn.ExecContext(ctx, "PRAGMA temp_store = MEMORY")
	}
	b := &batch{ctx: ctx, s: s, w: s.w}
	if err := b.exec("BEGIN IMMEDIATE"); err != nil {
		s.dropWriter()
		return nil, err
	}
	return b, nil
}

// rollback ends a batch's transaction, keeping nothing of it. Should the
// rollback fail (the transaction may already have been rolled back by
// SQLite, after an I/O error say), the connection is not trusted again:
// it is closed, and the next batch takes another.
func (b *batch) rollback() {
	if err := b.exec("ROLLBACK"); err != nil {
		b.s.dropWriter()
	}
}

// dropWriter closes the writer's connection and its statements. The caller
// holds s.wmu.
func (s *Store) dropWriter() {
	if s.w == nil {
		return
	}
	for _, st := range s.w.stmts {
		// Closing a statement of a connection being closed: nothing to
		// report.
		_ = st.Close()
	}
	// driver.ErrBadConn makes database/sql close the connection instead of
	// pooling it (which also ends the Conn).
	_ = s.w.conn.Raw(func(any) error { return driver.ErrBadConn })
	s.w = nil
}

// closeWriter gives the writer's connection back to the pool, for
// Store.Close to close with the others; a batch in flight ends first, and
// any write after Close fails.
func (s *Store) closeWriter() {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	if s.w == nil {
		return
	}
	for _, st := range s.w.stmts {
		// Close reports the database's own close; a statement's adds
		// nothing.
		_ = st.Close()
	}
	_ = s.w.conn.Close()
	s.w = nil
}

// batch is the transaction of one group commit, on the writer's
// connection.
type batch struct {
	ctx context.Context
	s   *Store
	w   *writerConn
}

func (b *batch) exec(query string) error {
	_, err := b.Exec(query)
	return err
}

// stmt returns query prepared on the writer's connection, preparing it on
// first use. A statement that cannot be prepared is tried again the next
// time.
func (b *batch) stmt(query string) (*sql.Stmt, error) {
	if st, ok := b.w.stmts[query]; ok {
		return st, nil
	}
	st, err := b.w.conn.PrepareContext(b.ctx, query)
	if err != nil {
		return nil, err
	}
	b.w.stmts[query] = st
	return st, nil
}

// Exec, Query and QueryRow run a prepared query in the batch.
func (b *batch) Exec(query string, args ...any) (sql.Result, error) {
	st, err := b.stmt(query)
	if err != nil {
		return nil, err
	}
	return st.ExecContext(b.ctx, args...)
}

func (b *batch) Query(query string, args ...any) (*sql.Rows, error) {
	st, err := b.stmt(query)
	if err != nil {
		return nil, err
	}
	return st.QueryContext(b.ctx, args...)
}

// QueryRow returns a row whose Scan reports a preparation error.
func (b *batch) QueryRow(query string, args ...any) rowScanner {
	st, err := b.stmt(query)
	if err != nil {
		return errRow{err}
	}
	return st.QueryRowContext(b.ctx, args...)
}

type rowScanner interface{ Scan(dest ...any) error }

type errRow struct{ err error }

func (r errRow) Scan(...any) error { return r.err }
