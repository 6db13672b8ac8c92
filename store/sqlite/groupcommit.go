package sqlite

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"fmt"
	"sync"
	"sync/atomic"
)

// Group commit. A durable SQLite commit costs one fsync, far more than the
// statements of one job change, so the job writes of one Store share
// commits: callers queue their work, and one writer at a time runs
// whatever is queued (up to maxBatch pieces) in one immediate transaction,
// each piece inside its own SAVEPOINT (a lone piece needs none). A piece
// that fails rolls back only itself and returns its own error; the others
// commit. Every caller returns only after the transaction holding its
// piece committed, so a nil error still means "durable". Pieces run in
// queue order, each seeing the ones before it, so a batch means exactly
// what running them one by one would.
//
// There is no timer: a lone call starts a writer at once and runs in a
// batch of one. The caller that finds no writer becomes it; after its own
// batch it hands any work queued meanwhile to a new goroutine, which exits
// when the queue is empty. No goroutine outlives the calls in flight.
//
// Every batch of a Store runs on the same connection (writerConn), kept
// from batch to batch with its statements, BEGIN and COMMIT included,
// prepared on it once: no transaction object, no statement bound anew per
// transaction, and a page cache that holds what the last batch wrote.
// Close closes it.

// maxBatch bounds the pieces one transaction holds.
const maxBatch = 256

// piece states: a queued piece is taken by the writer or abandoned by its
// caller, whichever comes first.
const (
	piecePending int32 = iota
	pieceTaken
	pieceAbandoned
)

// piece is one caller's share of a batch.
type piece struct {
	fn    func(*batch) error
	state atomic.Int32
	done  chan struct{}
	// Set by the writer before done is closed.
	err      error
	panicked any
}

// writerQueue is the work queued for one Store while a writer runs.
type writerQueue struct {
	pending []*piece
}

// writers holds a queue per Store that has a writer running; a Store with
// none has no entry, so a closed Store leaves nothing behind.
var writers = struct {
	sync.Mutex
	m map[*Store]*writerQueue
}{m: map[*Store]*writerQueue{}}

// write runs fn in a group-committed transaction and returns once that
// transaction committed or failed. fn must not keep tx-bound values after it
// returns. If ctx ends while the piece is still queued, write returns
// ctx.Err() and fn never runs; once taken, the piece is waited for.
func (s *Store) write(ctx context.Context, fn func(*batch) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	p := &piece{fn: fn, done: make(chan struct{})}
	writers.Lock()
	q, running := writers.m[s]
	if !running {
		q = &writerQueue{}
		writers.m[s] = q
	}
	q.pending = append(q.pending, p)
	writers.Unlock()

	if !running {
		// This caller is the writer: its own piece is in the first batch.
		// Work queued meanwhile goes to a goroutine, so that this caller
		// returns as soon as its own batch committed.
		runPieces(s, q.take(s))
		if next := q.take(s); next != nil {
			go func() {
				for ; next != nil; next = q.take(s) {
					runPieces(s, next)
				}
			}()
		}
	}
	select {
	case <-p.done:
	case <-ctx.Done():
		if p.state.CompareAndSwap(piecePending, pieceAbandoned) {
			return ctx.Err()
		}
		<-p.done
	}
	if p.panicked != nil {
		panic(p.panicked)
	}
	return p.err
}

// take removes up to maxBatch queued pieces that their callers have not
// abandoned, and returns them. When none is left it removes the queue,
// ending this writer, and returns nil.
func (q *writerQueue) take(s *Store) []*piece {
	writers.Lock()
	defer writers.Unlock()
	for len(q.pending) > 0 {
		n := min(len(q.pending), maxBatch)
		var taken []*piece
		for _, p := range q.pending[:n] {
			if p.state.CompareAndSwap(piecePending, pieceTaken) {
				taken = append(taken, p)
			}
		}
		// A copy, so that the backing array does not grow without bound.
		q.pending = append(q.pending[:0:0], q.pending[n:]...)
		if len(taken) > 0 {
			return taken
		}
	}
	delete(writers.m, s)
	return nil
}

// runPieces runs taken pieces in one immediate transaction, one SAVEPOINT
// each, commits, and releases their callers. A piece that failed keeps its
// own error; when the transaction itself fails, every other piece gets that
// error, since none of them committed.
func runPieces(s *Store, pieces []*piece) {
	defer func() {
		for _, p := range pieces {
			close(p.done)
		}
	}()
	fail := func(err error) {
		err = interpretError(err)
		for _, p := range pieces {
			if p.err == nil && p.panicked == nil {
				p.err = err
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
		p := pieces[0]
		if p.panicked, p.err = p.call(b); p.err != nil || p.panicked != nil {
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
		p.panicked, p.err = p.call(b)
		if p.err != nil || p.panicked != nil {
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

// call runs the piece, turning a panic (a Mutate bug, say) into a value its
// own caller re-panics with, so one bad piece cannot take the writer down.
func (p *piece) call(b *batch) (panicked any, err error) {
	defer func() {
		if r := recover(); r != nil {
			panicked = r
		}
	}()
	return nil, p.fn(b)
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
