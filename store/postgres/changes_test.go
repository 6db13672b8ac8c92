package postgres_test

import (
	"testing"
	"time"

	"github.com/layoverhq/layover/job"
	"github.com/layoverhq/layover/store"
	"github.com/layoverhq/layover/store/postgres/pgtest"
	"github.com/layoverhq/layover/store/storetest"
)

func TestChanges(t *testing.T) {
	t.Parallel()
	pgtest.DSN(t)

	storetest.RunChanges(t, func(t *testing.T) (store.Store, store.Store) {
		dsn := pgtest.Schema(t)
		return open(t, dsn), open(t, dsn)
	})
}

// A watcher whose connection the server ends connects again, says so, and
// hears the next submission.
func TestWatchReconnects(t *testing.T) {
	t.Parallel()
	dsn := pgtest.Schema(t)
	watched, writer := open(t, dsn), open(t, dsn)
	ctx := t.Context()
	c, err := watched.WatchJobs(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var ended int
	err = watched.Pool().QueryRow(ctx, `SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
		WHERE query = 'LISTEN "layover_jobs_' || md5(current_schema()) || '"'`).Scan(&ended)
	if err != nil || ended != 1 {
		t.Fatalf("ending the watcher's connection: %d ended, %v", ended, err)
	}
	await := func(what string) {
		t.Helper()
		select {
		case _, ok := <-c:
			if !ok {
				t.Fatalf("%s: the watch ended", what)
			}
		case <-time.After(30 * time.Second):
			t.Fatalf("%s: no signal", what)
		}
	}
	await("after the connection was ended")
	if _, _, err := writer.SubmitJob(ctx, job.Job{ID: "after", Spec: job.Spec{Argv: []string{"true"}}, State: job.Ready}, nil, base); err != nil {
		t.Fatal(err)
	}
	await("a submission after the reconnection")
}
