package host_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/layoverhq/layover/host"
	"github.com/layoverhq/layover/job"
	"github.com/layoverhq/layover/store"
	"github.com/layoverhq/layover/store/sqlite"
)

// flakyRenewals is a store whose lease renewals the test can make hang or
// fail, as a store that is unreachable or stuck behind a lock would.
type flakyRenewals struct {
	*sqlite.Store
	mu      sync.Mutex
	mode    string        // "", "hang" or "fail"
	gate    chan struct{} // closed to release hanging renewals
	entered int           // renewals begun
	// returns, when not nil, gets a signal as each renewal returns.
	returns chan struct{}
}

func (f *flakyRenewals) RenewLeases(ctx context.Context, hostID string, held map[string]int64, now time.Time, lease time.Duration) ([]string, error) {
	f.mu.Lock()
	mode, gate := f.mode, f.gate
	f.entered++
	f.mu.Unlock()
	var lost []string
	var err error
	switch mode {
	case "hang":
		select {
		case <-gate:
		case <-ctx.Done():
		}
		err = errors.New("store unreachable")
	case "fail":
		err = errors.New("store unreachable")
	default:
		lost, err = f.Store.RenewLeases(ctx, hostID, held, now, lease)
	}
	if f.returns != nil {
		f.returns <- struct{}{}
	}
	return lost, err
}

func (f *flakyRenewals) begun() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.entered
}

// stopClock is a runner function that blocks until the host stops the
// attempt and reports the fake time it saw the stop at.
func stopClock(b *bundle, stoppedAt chan<- time.Time) func(context.Context, host.Run) error {
	return func(ctx context.Context, _ host.Run) error {
		<-ctx.Done()
		stoppedAt <- b.clock.Now()
		return ctx.Err()
	}
}

// When the store does not confirm a renewal, the attempt is stopped a
// grace before its last confirmed lease ends, so it is over before another
// host could claim the job: whether the renewal fails or never returns.
func TestUnconfirmedLeaseStopsTheAttempt(t *testing.T) {
	t.Parallel()
	for _, mode := range []string{"fail", "hang"} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			flaky := &flakyRenewals{mode: mode, gate: make(chan struct{})}
			b := setup(t, func(c *host.Config) {
				flaky.Store = c.Store.(*sqlite.Store)
				c.Store = flaky
			})
			defer close(flaky.gate)
			stoppedAt := make(chan time.Time, 1)
			b.script.push(stopClock(b, stoppedAt), ok)
			b.submit("j", job.Spec{})
			claimed := b.await("j", func(j job.Job) bool { return j.State == job.Running }, "running")
			// The grace is min(DefaultGrace, (Lease-Heartbeat)/2) = 5 s.
			stopBy := claimed.LeaseUntil.Add(-5 * time.Second)
			for {
				select {
				case at := <-stoppedAt:
					if at.Before(stopBy) || at.After(stopBy.Add(time.Second)) {
						t.Fatalf("stopped at %s; want within a second after %s (lease until %s)",
							at.Format(time.TimeOnly), stopBy.Format(time.TimeOnly), claimed.LeaseUntil.Format(time.TimeOnly))
					}
					return
				default:
				}
				if b.clock.Now().After(claimed.LeaseUntil) {
					t.Fatalf("the attempt still runs at %s, past its unconfirmed lease", b.clock.Now().Format(time.TimeOnly))
				}
				b.clock.Advance(time.Second)
				time.Sleep(5 * time.Millisecond)
			}
		})
	}
}

// Leases the store confirms keep an attempt running for as long as it
// works, far past the first lease.
func TestRenewedLeaseKeepsTheAttempt(t *testing.T) {
	t.Parallel()
	flaky := &flakyRenewals{returns: make(chan struct{}, 64)}
	b := setup(t, func(c *host.Config) {
		flaky.Store = c.Store.(*sqlite.Store)
		c.Store = flaky
	})
	stoppedAt := make(chan time.Time, 1)
	release := make(chan struct{})
	b.script.push(func(ctx context.Context, r host.Run) error {
		select {
		case <-release:
			return nil
		case <-ctx.Done():
			stoppedAt <- b.clock.Now()
			return ctx.Err()
		}
	})
	b.submit("j", job.Spec{})
	b.await("j", func(j job.Job) bool { return j.State == job.Running }, "running")
	for beat := 1; beat <= 12; beat++ { // two minutes: four leases
		b.clock.Advance(host.DefaultHeartbeat)
		select {
		case <-flaky.returns:
		case <-time.After(10 * time.Second):
			t.Fatalf("heartbeat %d never renewed", beat)
		}
		select {
		case at := <-stoppedAt:
			t.Fatalf("a renewed attempt was stopped at %s", at.Format(time.TimeOnly))
		default:
		}
	}
	close(release)
	j := b.awaitState("j", job.Complete)
	if j.Fence != 1 || b.script.count() != 1 {
		t.Fatalf("fence %d, runs %d: want the first claim to finish the job", j.Fence, b.script.count())
	}
}

// An attempt that starts while a renewal hangs is watched too: it is
// stopped a grace before the lease of its claim ends.
func TestAttemptStartedDuringAHungRenewalIsWatched(t *testing.T) {
	t.Parallel()
	flaky := &flakyRenewals{mode: "hang", gate: make(chan struct{})}
	b := setup(t, func(c *host.Config) {
		flaky.Store = c.Store.(*sqlite.Store)
		c.Store = flaky
	})
	defer close(flaky.gate)
	for deadline := time.Now().Add(10 * time.Second); flaky.begun() == 0; {
		if time.Now().After(deadline) {
			t.Fatal("the heartbeat never began a renewal")
		}
		b.clock.Advance(time.Second)
		time.Sleep(2 * time.Millisecond)
	}
	stoppedAt := make(chan time.Time, 1)
	b.script.push(stopClock(b, stoppedAt), ok)
	b.submit("j", job.Spec{})
	claimed := b.await("j", func(j job.Job) bool { return j.State == job.Running }, "running")
	stopBy := claimed.LeaseUntil.Add(-5 * time.Second)
	for {
		select {
		case at := <-stoppedAt:
			if at.Before(stopBy) || at.After(stopBy.Add(time.Second)) {
				t.Fatalf("stopped at %s; want within a second after %s", at.Format(time.TimeOnly), stopBy.Format(time.TimeOnly))
			}
			return
		default:
		}
		if b.clock.Now().After(claimed.LeaseUntil) {
			t.Fatalf("the attempt still runs at %s, past its unconfirmed lease", b.clock.Now().Format(time.TimeOnly))
		}
		b.clock.Advance(time.Second)
		time.Sleep(5 * time.Millisecond)
	}
}

// lockedWork is a store where work is always due but no pass can move it,
// as when another transaction holds the rows a fleet store's claims and
// sweeps skip.
type lockedWork struct {
	*sqlite.Store
	mu     sync.Mutex
	sweeps int
}

func (l *lockedWork) SweepJobs(context.Context, time.Time) (store.SweepResult, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.sweeps++
	return store.SweepResult{}, nil
}

func (l *lockedWork) NextJobDue(context.Context) (time.Time, bool, error) {
	return t0.Add(-time.Second), true, nil
}

func (l *lockedWork) count() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.sweeps
}

// Due work that no pass can move is looked at again every 50 ms of the
// host's clock, not in a loop that spins.
func TestDueWorkThatCannotMoveDoesNotSpin(t *testing.T) {
	t.Parallel()
	locked := &lockedWork{}
	b := setup(t, func(c *host.Config) {
		locked.Store = c.Store.(*sqlite.Store)
		c.Store = locked
	})
	b.host.Stop() // setup started it; start again once the count is known
	h, err := host.New(b.cfg)
	if err != nil {
		t.Fatal(err)
	}
	b.follow(h.Jobs)
	before := locked.count()
	if err := h.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer h.Stop()
	// Move the host's clock 10 ms at a time until 20 passes have come.
	const passes = 20
	var moved time.Duration
	for deadline := time.Now().Add(10 * time.Second); locked.count()-before < passes; {
		if time.Now().After(deadline) {
			t.Fatalf("%d passes after the clock moved %s", locked.count()-before, moved)
		}
		b.clock.Advance(10 * time.Millisecond)
		moved += 10 * time.Millisecond
		time.Sleep(time.Millisecond)
	}
	// One pass per 50 ms of the host's clock, and the first at once; a
	// spinning loop would have made thousands.
	if n, most := locked.count()-before, int(moved/(50*time.Millisecond))+2; n > most {
		t.Fatalf("%d passes while the clock moved %s (at most %d): the loop spins", n, moved, most)
	}
	if moved < (passes-2)*50*time.Millisecond {
		t.Fatalf("%d passes in %s of the host's clock: it does not wait between them", passes, moved)
	}
}
