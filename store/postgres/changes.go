package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/layoverhq/layover/store"
)

// jobsChannel is the SQL expression of the channel SubmitJob and ApplyJob
// notify and WatchJobs listens on: one per schema (the store), named by a
// digest of the schema's name so any name fits PostgreSQL's 63-byte
// identifiers.
const jobsChannel = `'layover_jobs_' || md5(current_schema())`

// notifyJobs is the statement a job write's transaction runs to signal the
// watchers; the server delivers it at the commit, never for a rollback,
// and folds the notifications of one transaction into one.
const notifyJobs = `SELECT pg_notify(` + jobsChannel + `, '')`

// Reconnection of a watcher whose connection dropped: the wait doubles
// from watchRetryMin to watchRetryMax.
const (
	watchRetryMin = 100 * time.Millisecond
	watchRetryMax = 5 * time.Second
)

var _ store.Changes = (*Store)(nil)

// WatchJobs implements store.Changes with LISTEN on a connection of its
// own, outside the pool: a transaction of SubmitJob or ApplyJob that
// leaves a job with work for a scheduler (store.DueWork), on any handle
// of the store, notifies the store's channel as it commits. Should the
// connection drop, the watcher connects again (waiting from 100 ms,
// doubling up to 5 s) and, listening again, sends once: what was
// committed in between went unheard. Behind a pooler in transaction mode
// LISTEN does not hold; hosts then find new jobs at their heartbeat.
func (s *Store) WatchJobs(ctx context.Context) (<-chan struct{}, error) {
	s.watchMu.Lock()
	defer s.watchMu.Unlock()
	if s.watchClosed {
		return nil, errors.New("watch jobs: the store is closed")
	}
	conn, err := s.listen(ctx)
	if err != nil {
		return nil, err
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
		s.watch(ctx, conn, c)
	}()
	return c, nil
}

// listen opens a connection, as the pool's are configured, that listens on
// the store's channel.
func (s *Store) listen(ctx context.Context) (*pgx.Conn, error) {
	conn, err := pgx.ConnectConfig(ctx, s.pool.Config().ConnConfig.Copy())
	if err != nil {
		return nil, fmt.Errorf("watch jobs in store %s: %w", s.where, err)
	}
	var channel string
	err = conn.QueryRow(ctx, `SELECT `+jobsChannel).Scan(&channel)
	if err == nil {
		_, err = conn.Exec(ctx, "LISTEN "+pgx.Identifier{channel}.Sanitize())
	}
	if err != nil {
		conn.Close(context.WithoutCancel(ctx))
		return nil, wrapErr("watch jobs", err)
	}
	return conn, nil
}

// watch signals c for each notification conn receives until ctx ends,
// connecting again when the connection drops, and closes the connection
// it has.
func (s *Store) watch(ctx context.Context, conn *pgx.Conn, c chan<- struct{}) {
	defer func() {
		if conn != nil {
			conn.Close(context.WithoutCancel(ctx))
		}
	}()
	retry := watchRetryMin
	for {
		if _, err := conn.WaitForNotification(ctx); err == nil {
			store.Signal(c)
			continue
		}
		if ctx.Err() != nil {
			return
		}
		conn.Close(context.WithoutCancel(ctx))
		conn = nil
		for conn == nil {
			select {
			case <-ctx.Done():
				return
			case <-time.After(retry):
			}
			retry = min(2*retry, watchRetryMax)
			conn, _ = s.listen(ctx)
		}
		retry = watchRetryMin
		store.Signal(c)
	}
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
