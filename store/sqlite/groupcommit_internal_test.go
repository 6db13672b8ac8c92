package sqlite

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/layoverhq/layover/job"
)

// countingConnector counts the statements prepared on its connections
// (driver PrepareContext calls: what database/sql does for Prepare,
// tx.Prepare and a *sql.Stmt's first use on a connection) and the
// connections opened.
type countingConnector struct {
	driver.Connector
	prepares, connects atomic.Int64
}

func (c *countingConnector) Connect(ctx context.Context) (driver.Conn, error) {
	conn, err := c.Connector.Connect(ctx)
	if err != nil {
		return nil, err
	}
	c.connects.Add(1)
	return &countingConn{Conn: conn, c: c}, nil
}

// countingConn forwards what the modernc connection implements, so that
// database/sql uses it as it would the connection itself.
type countingConn struct {
	driver.Conn
	c *countingConnector
}

func (c *countingConn) PrepareContext(ctx context.Context, query string) (driver.Stmt, error) {
	c.c.prepares.Add(1)
	return c.Conn.(driver.ConnPrepareContext).PrepareContext(ctx, query)
}

func (c *countingConn) BeginTx(ctx context.Context, opts driver.TxOptions) (driver.Tx, error) {
	return c.Conn.(driver.ConnBeginTx).BeginTx(ctx, opts)
}

func (c *countingConn) ExecContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Result, error) {
	return c.Conn.(driver.ExecerContext).ExecContext(ctx, query, args)
}

func (c *countingConn) QueryContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Rows, error) {
	return c.Conn.(driver.QueryerContext).QueryContext(ctx, query, args)
}

func (c *countingConn) ResetSession(ctx context.Context) error {
	return c.Conn.(driver.SessionResetter).ResetSession(ctx)
}

func (c *countingConn) IsValid() bool { return c.Conn.(driver.Validator).IsValid() }

// openCounting opens a store at a new path whose connections count their
// prepares.
func openCounting(t *testing.T) (*Store, *countingConnector) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "layover.db")
	s, err := Open(t.Context(), path) // creates and migrates the file
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	c, err := connector(path)
	if err != nil {
		t.Fatal(err)
	}
	cc := &countingConnector{Connector: c}
	s = newStore(openDB(cc), path)
	t.Cleanup(func() { s.Close() })
	return s, cc
}

var internalBase = time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)

func internalJob(id string) job.Job {
	return job.Job{ID: id, Spec: job.Spec{Name: id, Argv: []string{"true"}, Deadline: internalBase.Add(time.Hour)}}
}

// deferAndWake runs one job's round trip through the statements a host
// uses: submit, claim and run (when claim is set: the caller must be the
// only one claiming), defer with a receipt, sweep it awake, the reads of a
// resume.
func deferAndWake(ctx context.Context, s *Store, id string, now time.Time, claim bool) error {
	j, _, err := s.SubmitJob(ctx, internalJob(id), nil, now)
	if err != nil {
		return err
	}
	if claim {
		claimed, err := s.ClaimJobs(ctx, "h1", now, time.Minute, 1)
		if err != nil || len(claimed) != 1 || claimed[0].ID != id {
			return fmt.Errorf("claim: %d jobs, %v", len(claimed), err)
		}
		if j, err = s.ApplyJob(ctx, id, claimed[0].Fence, job.Change{To: job.Running, Now: now}); err != nil {
			return err
		}
	}
	if _, err = s.ApplyJob(ctx, id, j.Fence, job.Change{To: job.Deferred, Now: now,
		Mutate:  func(j *job.Job) { j.Ownership, j.RunAt = job.Retained, now },
		Receipt: &job.Receipt{JSON: []byte(`{"v":1}`), IssuedAt: now}}); err != nil {
		return err
	}
	if _, err := s.SweepJobs(ctx, now.Add(time.Millisecond)); err != nil {
		return err
	}
	if _, _, err := s.NextJobDue(ctx); err != nil {
		return err
	}
	if _, err := s.Job(ctx, id); err != nil {
		return err
	}
	if _, err := s.JobHistory(ctx, id); err != nil {
		return err
	}
	return nil
}

// TestStatementsPreparedOnce: once every statement a job's round trip uses
// has run on the store's connections, further round trips prepare
// nothing: not in the group-commit writer's transactions, not in reads.
func TestStatementsPreparedOnce(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	s, cc := openCounting(t)

	// Warm up from several goroutines, so that several connections are
	// open and each prepares what it runs.
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for g := range 8 {
		wg.Go(func() {
			for i := range 5 {
				if err := deferAndWake(ctx, s, fmt.Sprintf("warm-%d-%d", g, i), internalBase, false); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	// One round trip alone: one at a time, each call gets the connection
	// returned last (database/sql's pool is last in, first out), which
	// prepares what it has not run yet.
	if err := deferAndWake(ctx, s, "warm", internalBase, true); err != nil {
		t.Fatal(err)
	}
	stmts := 0
	s.prepared.Range(func(any, any) bool { stmts++; return true })
	if stmts == 0 {
		t.Fatal("no statement kept for the Store")
	}

	// The next round trips find every statement prepared on the connection:
	// the writer's transactions prepare nothing again, and the pool keeps
	// the connection.
	prepares, connects := cc.prepares.Load(), cc.connects.Load()
	for i := range 20 {
		if err := deferAndWake(ctx, s, fmt.Sprintf("j%d", i), internalBase, true); err != nil {
			t.Fatal(err)
		}
	}
	if n := cc.prepares.Load() - prepares; n != 0 {
		t.Errorf("20 round trips after the warm-up prepared %d statements, want 0", n)
	}
	if n := cc.connects.Load() - connects; n != 0 {
		t.Errorf("20 round trips after the warm-up opened %d connections, want 0", n)
	}
	after := 0
	s.prepared.Range(func(any, any) bool { after++; return true })
	if after != stmts {
		t.Errorf("the Store keeps %d statements after the round trips, %d before", after, stmts)
	}
	if st := s.db.Stats(); st.MaxIdleClosed != 0 {
		t.Errorf("%d connections closed for want of idle room, want 0", st.MaxIdleClosed)
	}
}

// TestCloseClosesStatements: Close closes the Store's statements; a call
// after it fails rather than preparing anew.
func TestCloseClosesStatements(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	s, _ := openCounting(t)
	if err := deferAndWake(ctx, s, "j1", internalBase, true); err != nil {
		t.Fatal(err)
	}
	var kept []*sql.Stmt
	s.prepared.Range(func(_, st any) bool { kept = append(kept, st.(*sql.Stmt)); return true })
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	// The writer's connection too is closed, so that the last close
	// checkpoints the WAL.
	if n := s.db.Stats().OpenConnections; n != 0 || s.w != nil {
		t.Errorf("after Close: %d connections open, writer's %v; want none", n, s.w)
	}
	s.prepared.Range(func(q, _ any) bool {
		t.Errorf("still kept after Close: %.40q", q)
		return true
	})
	for _, st := range kept {
		if _, err := st.ExecContext(ctx); err == nil {
			t.Error("a statement kept before Close still runs after it")
		}
	}
	if _, err := s.Job(ctx, "j1"); err == nil {
		t.Error("Job after Close = nil error")
	}
	if _, err := s.ApplyJob(ctx, "j1", -1, job.Change{To: job.Cancelled, Now: internalBase}); err == nil {
		t.Error("ApplyJob after Close = nil error")
	}
	s.prepared.Range(func(q, _ any) bool {
		t.Errorf("prepared after Close: %.40q", q)
		return true
	})
}

// hostsIn reads the ids of the hosts registered in s, sorted.
func hostsIn(t *testing.T, s *Store) []string {
	t.Helper()
	hosts, err := s.Hosts(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, h := range hosts {
		ids = append(ids, h.ID)
	}
	return ids
}

// registerPiece is a piece that registers host id, then fails with fail
// when it is not nil, having written.
func registerPiece(id string, fail error) *piece {
	return &piece{Value: func(b *batch) error {
		if _, err := b.Exec(upsertHost, id, "h", 1, 0, 0, 0); err != nil {
			return err
		}
		return fail
	}}
}

// TestBatchFailures: a piece that wrote and then failed leaves nothing,
// alone in its batch (no SAVEPOINT: the transaction is rolled back) or
// among others (rolled back to its SAVEPOINT, the others committed); each
// gets its own answer, and the writer keeps its connection.
func TestBatchFailures(t *testing.T) {
	t.Parallel()
	s, cc := openCounting(t)
	boom := errors.New("boom")

	lone := registerPiece("lone", boom)
	runPieces(s, []*piece{lone})
	if !errors.Is(lone.Err(), boom) {
		t.Errorf("the lone piece got %v, want its own error", lone.Err())
	}
	if ids := hostsIn(t, s); len(ids) != 0 {
		t.Errorf("after a lone piece failed the store holds hosts %v, want none", ids)
	}
	connects := cc.connects.Load()

	batch := []*piece{registerPiece("a", nil), registerPiece("b", boom), registerPiece("c", nil)}
	runPieces(s, batch)
	for i, want := range []error{nil, boom, nil} {
		if !errors.Is(batch[i].Err(), want) || (want == nil) != (batch[i].Err() == nil) {
			t.Errorf("piece %d got %v, want %v", i, batch[i].Err(), want)
		}
	}
	if ids := hostsIn(t, s); !slices.Equal(ids, []string{"a", "c"}) {
		t.Errorf("after the batch the store holds hosts %v, want [a c]", ids)
	}
	if n := cc.connects.Load() - connects; n != 0 {
		t.Errorf("the writer opened %d connections after pieces failed, want 0", n)
	}
}

// TestWriterDropsAnUntrustedConnection: when a batch's transaction cannot
// be rolled back (here a piece ended it itself; an I/O error does the
// same), the writer closes its connection and the next batch takes a new
// one, in a clean state.
func TestWriterDropsAnUntrustedConnection(t *testing.T) {
	t.Parallel()
	s, cc := openCounting(t)
	boom := errors.New("boom")
	ended := &piece{Value: func(b *batch) error {
		if err := b.exec("ROLLBACK"); err != nil {
			return err
		}
		return boom
	}}
	runPieces(s, []*piece{ended})
	if !errors.Is(ended.Err(), boom) {
		t.Errorf("the piece got %v, want its own error", ended.Err())
	}
	connects := cc.connects.Load()
	next := registerPiece("next", nil)
	runPieces(s, []*piece{next})
	if next.Err() != nil {
		t.Fatalf("the next batch: %v", next.Err())
	}
	if n := cc.connects.Load() - connects; n != 1 {
		t.Errorf("the next batch opened %d connections, want 1", n)
	}
	if ids := hostsIn(t, s); !slices.Equal(ids, []string{"next"}) {
		t.Errorf("the store holds hosts %v, want [next]", ids)
	}
}
