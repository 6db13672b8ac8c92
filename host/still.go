package host

import (
	"time"

	"github.com/layoverhq/layover/store"
)

// Stillness, for a driver of a fake clock (the simulator, docs/simulator.md):
// the host is still when nothing it does can move a job before its clock
// moves. Its scheduler sleeps until a time still ahead with no nudge
// pending (one sent and not yet taken), not waiting in wall time for
// another transaction to let go of due work (the loop's stuck retry), and
// no attempt, round of credentials checks or round of
// cleanups is under way but for resumes waiting for their slot under the
// resume rate until a time still ahead (Pacing). A driver that reads Still, then the store, then
// Still again with the same epoch knows the host was still throughout, so
// what it read is what the host will act on next.

// stillness is what the host keeps of it; guarded by Host.mu but stilled.
type stillness struct {
	// nudged is set while a nudge is pending: sent (Nudge) and not yet
	// taken by an awake scheduler (Host.nudged).
	nudged bool
	// work counts the attempts and rounds under way (workStarted).
	work int
	// epoch counts the scheduler's wake-ups: every attempt or round starts
	// within one.
	epoch uint64
	// stilled receives (coalesced) when the host may have become still.
	stilled chan struct{}
	// pacing holds the wake-ups of the resumes waiting for their slot
	// (pacingFrom), which do not count as work; seq names them.
	pacing map[uint64]time.Time
	seq    uint64
}

// woke records the scheduler waking (awake) or about to sleep.
func (s *stillness) woke(awake bool) {
	if awake {
		s.epoch++
	}
}

// nudged marks the scheduler awake on a nudge it has just taken, in one
// step, so that no look at the host between the two finds it still.
func (h *Host) nudged() {
	h.mu.Lock()
	h.still.nudged, h.sleepUntil = false, time.Time{}
	h.still.woke(true)
	h.mu.Unlock()
}

// workStarted counts an attempt or round the scheduler starts; its
// goroutine calls workEnded last, after any nudge it gives.
func (h *Host) workStarted() {
	h.mu.Lock()
	h.still.work++
	h.mu.Unlock()
}

func (h *Host) workEnded() {
	h.mu.Lock()
	h.still.work--
	h.mu.Unlock()
	store.Signal(h.still.stilled)
}

// pacingFrom marks the attempt calling it as waiting for its resume slot
// until wake: not work, while wake is ahead. The function it returns,
// called once the wait is over, counts the attempt as work again, in one
// step with dropping the wake-up, so that no look at the host in between
// finds it still.
func (h *Host) pacingFrom(wake time.Time) func() {
	h.mu.Lock()
	if h.still.pacing == nil {
		h.still.pacing = map[uint64]time.Time{}
	}
	h.still.seq++
	id := h.still.seq
	h.still.pacing[id] = wake
	h.still.work--
	h.mu.Unlock()
	store.Signal(h.still.stilled)
	return func() {
		h.mu.Lock()
		h.still.work++
		delete(h.still.pacing, id)
		h.mu.Unlock()
	}
}

// Pacing is the earliest wake-up of the resumes waiting for their slot
// under the resume rate (docs/lifecycle.md, Resume pacing); zero when none
// waits. A driver of the clock moves it there when nothing comes sooner.
func (h *Host) Pacing() time.Time {
	h.mu.Lock()
	defer h.mu.Unlock()
	var first time.Time
	for _, w := range h.still.pacing {
		if first.IsZero() || w.Before(first) {
			first = w
		}
	}
	return first
}

// Still reports whether the host is still (see above) and the epoch of the
// scheduler's wake-ups. Stilled receives whenever it may have become so.
func (h *Host) Still() (still bool, epoch uint64) {
	now := h.cfg.Clock.Now()
	h.mu.Lock()
	defer h.mu.Unlock()
	still = h.started && !h.stopped && h.still.work == 0 && !h.still.nudged &&
		!h.sleepUntil.IsZero() && h.sleepUntil.After(now)
	for _, w := range h.still.pacing {
		still = still && w.After(now)
	}
	return still, h.still.epoch
}

// Stilled receives (coalesced) each time the host may have become still:
// its scheduler went to sleep, or an attempt or round ended. A receiver
// calls Still to know.
func (h *Host) Stilled() <-chan struct{} { return h.still.stilled }
