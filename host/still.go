package host

import (
	"time"

	"github.com/layoverhq/layover/store"
)

// Stillness, for a driver of a fake clock (the simulator, docs/simulator.md):
// the host is still when nothing it does can move a job before its clock
// moves. Its scheduler sleeps until a time still ahead with no nudge
// pending (one sent and not yet taken), and no attempt, round of credentials checks or round of
// cleanups is under way. A driver that reads Still, then the store, then
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

// Still reports whether the host is still (see above) and the epoch of the
// scheduler's wake-ups. Stilled receives whenever it may have become so.
func (h *Host) Still() (still bool, epoch uint64) {
	now := h.cfg.Clock.Now()
	h.mu.Lock()
	defer h.mu.Unlock()
	still = h.started && !h.stopped && h.still.work == 0 && !h.still.nudged &&
		!h.sleepUntil.IsZero() && h.sleepUntil.After(now)
	return still, h.still.epoch
}

// Stilled receives (coalesced) each time the host may have become still:
// its scheduler went to sleep, or an attempt or round ended. A receiver
// calls Still to know.
func (h *Host) Stilled() <-chan struct{} { return h.still.stilled }
