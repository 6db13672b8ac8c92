package host_test

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/layoverhq/layover/host"
	"github.com/layoverhq/layover/job"
	"github.com/layoverhq/layover/store"
	"github.com/layoverhq/layover/store/postgres"
	"github.com/layoverhq/layover/store/postgres/pgtest"
)

// sweepsSeen is a store that reports the time of each sweep the host makes.
type sweepsSeen struct {
	store.Store
	at chan time.Time
}

func (s *sweepsSeen) SweepJobs(ctx context.Context, now time.Time) (store.SweepResult, error) {
	r, err := s.Store.SweepJobs(ctx, now)
	select {
	case s.at <- now:
	default:
	}
	return r, err
}

// A sweep on PostgreSQL skips rows another transaction holds: a running
// job past its deadline, locked when the host sweeps, is left for the next
// look. That look comes in wall time, whatever the host's clock does (the
// other transaction ends in wall time), so the host sweeps again with its
// clock unmoved and cancels the job once the lock goes.
func TestSweepLooksAgainWhenRowsAreLocked(t *testing.T) {
	t.Parallel()
	dsn := pgtest.Schema(t)
	pg, err := postgres.Open(t.Context(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	st := &sweepsSeen{Store: pg, at: make(chan time.Time, 64)}
	b := setupOn(t, st)
	b.script.push(func(ctx context.Context, _ host.Run) error {
		<-ctx.Done()
		return ctx.Err()
	})
	b.submit("j", job.Spec{Deadline: t0.Add(time.Minute)})
	b.await("j", func(j job.Job) bool { return j.State == job.Running }, "running")

	conn, err := pgx.Connect(t.Context(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	tx, err := conn.Begin(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(context.Background()) //nolint:errcheck // ends the lock on every path
	if _, err := tx.Exec(t.Context(), `SELECT 1 FROM jobs WHERE id = 'j' FOR UPDATE`); err != nil {
		t.Fatal(err)
	}
	after := t0.Add(time.Minute + time.Second)
	b.clock.Set(after)
	// Two sweeps at the new time, the row locked throughout: the first
	// finds the job due and skips it, the second is the look again.
	timeout := time.After(10 * time.Second)
	for seen := 0; seen < 2; {
		select {
		case at := <-st.at:
			if !at.Before(after) {
				seen++
			}
		case <-timeout:
			t.Fatalf("%d sweeps at %s with the row locked; want a second one without the clock moving", seen, after.Format(time.TimeOnly))
		}
	}
	if j, err := pg.Job(t.Context(), "j"); err != nil || j.State != job.Running {
		t.Fatalf("job %s (%v) while locked; want running still", j.State, err)
	}
	if err := tx.Rollback(t.Context()); err != nil {
		t.Fatal(err)
	}
	b.awaitState("j", job.Cancelled)
}
