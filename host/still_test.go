package host_test

import (
	"context"
	"testing"
	"time"

	"github.com/layoverhq/layover/host"
	"github.com/layoverhq/layover/job"
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
