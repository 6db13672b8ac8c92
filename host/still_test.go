package host_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/layoverhq/layover/clock"
	"github.com/layoverhq/layover/host"
	"github.com/layoverhq/layover/job"
	"github.com/layoverhq/layover/store"
)

// awaitStill waits on the host's Stilled signal until it is still, and
// returns its epoch.
func awaitStill(t *testing.T, h *host.Host) uint64 {
	t.Helper()
	timeout := time.After(10 * time.Second)
	for {
		if still, epoch := h.Still(); still {
			return epoch
		}
		select {
		case <-h.Stilled():
		case <-timeout:
			t.Fatal("the host never became still")
		}
	}
}

// A host is still only with nothing under way: not while an attempt runs,
// nor once its clock has reached the scheduler's wake-up; each wake-up
// moves the epoch, so a driver that finds it still twice in one epoch
// knows nothing moved in between (docs/simulator.md, How time moves).
func TestStillOnlyWithNothingUnderWay(t *testing.T) {
	t.Parallel()
	b := setup(t)
	release := make(chan struct{})
	b.script.push(func(context.Context, host.Run) error { <-release; return nil })
	b.submit("j", job.Spec{})
	b.await("j", func(j job.Job) bool { return j.State == job.Running }, "running")
	if still, _ := b.host.Still(); still {
		t.Fatal("still while an attempt runs")
	}
	close(release)
	b.awaitState("j", job.Complete)
	e1 := awaitStill(t, b.host)
	b.host.Nudge()
	if e2 := awaitStill(t, b.host); e2 == e1 {
		t.Fatalf("epoch %d after a nudge: a wake-up must move it", e2)
	}
	_, e2 := b.host.Still()
	b.clock.Advance(host.DefaultHeartbeat)
	if still, e3 := b.host.Still(); still && e3 == e2 {
		t.Fatal("still in the same epoch with the scheduler's wake-up reached")
	}
	if e3 := awaitStill(t, b.host); e3 == e2 {
		t.Fatal("the scheduler's wake-up left the epoch")
	}
}

// movingClock is a fake clock that moves by step while the host arms its
// timer for the time aim (After or At): after the host read the clock for
// that wake-up and before its timer counts from the clock, as a driver
// that moves the clock once the host looks still may move it.
type movingClock struct {
	*clock.Fake
	mu    sync.Mutex
	aim   time.Time
	step  time.Duration
	moved bool
}

func (c *movingClock) arming(at time.Time) {
	c.mu.Lock()
	move := !c.moved && !c.aim.IsZero() && at.Equal(c.aim)
	c.moved = c.moved || move
	c.mu.Unlock()
	if move {
		c.Advance(c.step)
	}
}

func (c *movingClock) After(d time.Duration) <-chan time.Time {
	c.arming(c.Now().Add(d))
	return c.Fake.After(d)
}

func (c *movingClock) At(t time.Time) <-chan time.Time {
	c.arming(t)
	return c.Fake.At(t)
}

func (c *movingClock) hasMoved() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.moved
}

// The scheduler wakes at the wake-up Still reports even when the clock
// moves while it arms the timer for it: the timer is for that time, not
// for a duration counted from a clock that has moved since, which would
// leave it late by the move and the host never still again at its
// wake-up, with a job due (the fleet's resume-pacing test hung so on
// PostgreSQL; docs/simulator.md, How time moves).
func TestSchedulerWakesAtItsWakeUpWhenTheClockMovesAsItArms(t *testing.T) {
	t.Parallel()
	stores(t, func(t *testing.T, st store.Store) {
		mc := &movingClock{step: time.Second}
		b := setupOn(t, st, func(c *host.Config) { mc.Fake = c.Clock.(*clock.Fake); c.Clock = mc })
		due := t0.Add(3 * time.Second)
		mc.mu.Lock()
		mc.aim = due
		mc.mu.Unlock()
		if _, _, err := b.host.SubmitAt(context.Background(), "later", job.Spec{Argv: []string{"true"}}, due); err != nil {
			t.Fatal(err)
		}
		b.awaitStill()
		if !mc.hasMoved() {
			t.Fatalf("the scheduler never armed a timer for the job's start at %v", due)
		}
		if now := b.clock.Now(); !now.Before(due) {
			t.Fatalf("clock at %v; want it before the job's start at %v", now, due)
		}
		b.clock.Set(due)
		b.awaitState("later", job.Complete)
	})
}
