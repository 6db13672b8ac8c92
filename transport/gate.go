package transport

import (
	"container/heap"
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/layoverhq/layover/clock"
	"github.com/layoverhq/layover/quota"
)

// gates runs one shared timer per waited-on key. Every request waiting on a
// key registers its own resume time (the reset plus margin plus its own
// jitter); one goroutine per key sleeps on one timer until the earliest
// resume time that matters and releases each waiter when its time comes.
// Before the reset, that timer is set for the key's common base (reset plus
// margin), so waiters joining with their jitter do not re-arm it: a
// hundred requests on one exhausted key make one timer, not a hundred.
// Safe for concurrent use.
type gates struct {
	clock clock.Clock
	// armed counts the timers made, for tests.
	armed atomic.Int64

	mu sync.Mutex
	m  map[quota.Key]*gate
}

// gate is the wait of every request on one key.
type gate struct {
	key     quota.Key
	waiters waiterHeap
	// minBase is the earliest base of the waiters (see gates); once it has
	// passed the timer follows the waiters' own times.
	minBase time.Time
	// timer is the live timer, nil when none; target is when it fires.
	timer  <-chan time.Time
	target time.Time
	// kick wakes the loop when the timer was replaced or the last waiter
	// left.
	kick chan struct{}
}

// waiter is one request waiting on a gate.
type waiter struct {
	base, at time.Time
	ch       chan struct{} // closed on release
	index    int           // in the heap; -1 once out of it
	gate     *gate
}

func newGates(c clock.Clock) *gates {
	return &gates{clock: c, m: map[quota.Key]*gate{}}
}

// add registers a wait on key's shared timer until at; block then waits
// for it. base is the earliest time any waiter of this wait could resume
// (at minus its jitter); base <= at. The timer is armed before add
// returns.
func (g *gates) add(key quota.Key, base, at time.Time) *waiter {
	w := &waiter{base: base, at: at, ch: make(chan struct{})}
	g.mu.Lock()
	gt := g.m[key]
	start := gt == nil
	if start {
		gt = &gate{key: key, kick: make(chan struct{}, 1)}
		g.m[key] = gt
	}
	w.gate = gt
	heap.Push(&gt.waiters, w)
	now := g.clock.Now()
	if gt.minBase.IsZero() || base.Before(gt.minBase) || !gt.minBase.After(now) {
		gt.minBase = base
	}
	g.armLocked(gt, now)
	g.mu.Unlock()
	if start {
		go g.run(gt)
	}
	return w
}

// block waits until w is released or ctx is done (then it returns
// ctx.Err() and leaves the gate).
func (g *gates) block(ctx context.Context, w *waiter) error {
	select {
	case <-w.ch:
		return nil
	case <-ctx.Done():
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if w.index < 0 {
		return nil // released as ctx ended: the wait is over
	}
	gt := w.gate
	heap.Remove(&gt.waiters, w.index)
	if gt.waiters.Len() == 0 {
		select {
		case gt.kick <- struct{}{}:
		default:
		}
	}
	return ctx.Err()
}

// targetLocked is when gt's timer must fire: the waiters' common base
// while it is ahead, else the earliest waiter's own time.
func targetLocked(gt *gate, now time.Time) time.Time {
	t := gt.waiters[0].at
	if gt.minBase.After(now) && gt.minBase.Before(t) {
		t = gt.minBase
	}
	return t
}

// armLocked makes a new timer when there is none or the waiters need an
// earlier one. g.mu must be held.
func (g *gates) armLocked(gt *gate, now time.Time) {
	if gt.waiters.Len() == 0 {
		return
	}
	t := targetLocked(gt, now)
	if gt.timer != nil && !t.Before(gt.target) {
		return
	}
	gt.timer, gt.target = g.clock.After(t.Sub(now)), t
	g.armed.Add(1)
	select {
	case gt.kick <- struct{}{}:
	default:
	}
}

// run releases gt's waiters as their times come, then removes the gate.
func (g *gates) run(gt *gate) {
	var fired <-chan time.Time
	for {
		g.mu.Lock()
		if fired != nil && gt.timer == fired {
			gt.timer = nil // spent: the next one is made below
		}
		fired = nil
		now := g.clock.Now()
		for gt.waiters.Len() > 0 && !gt.waiters[0].at.After(now) {
			close(heap.Pop(&gt.waiters).(*waiter).ch)
		}
		if gt.waiters.Len() == 0 {
			delete(g.m, gt.key)
			g.mu.Unlock()
			return
		}
		g.armLocked(gt, now)
		timer := gt.timer
		g.mu.Unlock()
		select {
		case <-timer:
			fired = timer
		case <-gt.kick:
		}
	}
}

// waiterHeap orders waiters by resume time.
type waiterHeap []*waiter

func (h waiterHeap) Len() int           { return len(h) }
func (h waiterHeap) Less(i, j int) bool { return h[i].at.Before(h[j].at) }
func (h waiterHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].index, h[j].index = i, j
}
func (h *waiterHeap) Push(x any) {
	w := x.(*waiter)
	w.index = len(*h)
	*h = append(*h, w)
}
func (h *waiterHeap) Pop() any {
	old := *h
	w := old[len(old)-1]
	old[len(old)-1] = nil
	w.index = -1
	*h = old[:len(old)-1]
	return w
}
