package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"github.com/layoverhq/layover/store"
)

// WatchInterval is how often WatchJobs reads PRAGMA data_version: a job
// another process submits is seen within it. Each read is one statement on
// a connection kept for the watcher; in WAL mode it reads the WAL index in
// shared memory, not the file, so a watcher costs some microseconds of CPU
// twenty times a second and no I/O (docs/benchmarks.md, Prompt start).
const WatchInterval = 50 * time.Millisecond

var _ store.Changes = (*Store)(nil)

// WatchJobs implements store.Changes. SQLite tells a connection only that
// the file changed since it last looked (PRAGMA data_version counts the
// commits of every other connection, in this process or another), not
// what changed: the channel receives after any commit to the store, the
// ledger's and the activity log's included, at most once per
// WatchInterval. The watcher holds one connection of the pool until ctx
// ends or the store is closed.
func (s *Store) WatchJobs(ctx context.Context) (<-chan struct{}, error) {
	s.watchMu.Lock()
	defer s.watchMu.Unlock()
	if s.watchClosed {
		return nil, errors.New("watch jobs: the store is closed")
	}
	conn, err := s.db.Conn(ctx)
	if err != nil {
		return nil, wrapErr("watch jobs", err)
	}
	last, err := dataVersion(ctx, conn)
	if err != nil {
		conn.Close()
		return nil, wrapErr("watch jobs", err)
	}
	ctx, cancel := context.WithCancel(ctx)
	id := s.watchNext
	s.watchNext++
	s.watchStop[id] = cancel
	c := make(chan struct{}, 1)
	s.watchers.Add(1)
	go func() {
		defer s.watchers.Done()
		defer close(c)
		defer func() {
			s.watchMu.Lock()
			delete(s.watchStop, id)
			s.watchMu.Unlock()
			cancel()
		}()
		s.watch(ctx, conn, last, c)
	}()
	return c, nil
}

// watch polls conn's data_version every WatchInterval until ctx ends,
// signalling c each time it moved from last, and closes conn.
func (s *Store) watch(ctx context.Context, conn *sql.Conn, last int64, c chan<- struct{}) {
	defer func() { conn.Close() }()
	tick := time.NewTicker(WatchInterval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		v, err := dataVersion(ctx, conn)
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			// The connection broke: a commit may have gone unseen. Say
			// so, and go on with a fresh connection.
			conn.Close()
			if conn, err = s.db.Conn(ctx); err != nil {
				return
			}
			store.Signal(c)
			if v, err = dataVersion(ctx, conn); err != nil {
				continue
			}
		} else if v == last {
			continue
		} else {
			store.Signal(c)
		}
		last = v
	}
}

// dataVersion reads conn's PRAGMA data_version, which changes when another
// connection commits to the file.
func dataVersion(ctx context.Context, conn *sql.Conn) (int64, error) {
	var v int64
	err := conn.QueryRowContext(ctx, "PRAGMA data_version").Scan(&v)
	return v, err
}

// stopWatchers ends every watcher and waits for them, before Close closes
// the pool; a WatchJobs after it fails.
func (s *Store) stopWatchers() {
	s.watchMu.Lock()
	s.watchClosed = true
	for _, stop := range s.watchStop {
		stop()
	}
	s.watchMu.Unlock()
	s.watchers.Wait()
}
