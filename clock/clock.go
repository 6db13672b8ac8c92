// Package clock injects time. Production code takes a Clock; tests pass a
// *Fake and move it by hand, so no test sleeps.
package clock

import (
	"sync"
	"time"
)

// Clock tells the time and makes timers.
type Clock interface {
	Now() time.Time
	// After returns a channel that receives once d has passed. d <= 0 fires
	// at once.
	After(d time.Duration) <-chan time.Time
}

// At returns a channel that receives once c reaches t: at once when it
// has. On a clock with timers of its own at a time (Fake), reading the
// clock and arming the timer are one step, so a clock moved meanwhile
// cannot leave the timer late by the move, as c.After(t.Sub(c.Now()))
// would (the Now read before the move, the After armed after it). On any
// other clock it is that After. A test clock that embeds *Fake and
// overrides After to watch the timers armed must override At too, or the
// timers At arms pass it by.
func At(c Clock, t time.Time) <-chan time.Time {
	if a, ok := c.(timersAt); ok {
		return a.At(t)
	}
	return c.After(t.Sub(c.Now()))
}

// timersAt is a clock with timers at a time (Fake).
type timersAt interface {
	At(t time.Time) <-chan time.Time
}

// Real is the system clock.
type Real struct{}

func (Real) Now() time.Time                         { return time.Now() }
func (Real) After(d time.Duration) <-chan time.Time { return time.After(d) }

// Fake is a Clock that moves only when Advance or Set is called. The zero
// value is not usable; use NewFake. Safe for concurrent use.
type Fake struct {
	mu      sync.Mutex
	now     time.Time
	timers  []fakeTimer
	waiters chan struct{} // signalled whenever a timer is added
}

type fakeTimer struct {
	at time.Time
	ch chan time.Time
}

// NewFake returns a fake clock set to now.
func NewFake(now time.Time) *Fake {
	return &Fake{now: now, waiters: make(chan struct{}, 1024)}
}

// Now returns the fake time.
func (f *Fake) Now() time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.now
}

// After registers a timer that fires when the fake time reaches now+d.
func (f *Fake) After(d time.Duration) <-chan time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.at(f.now.Add(d))
}

// At registers a timer that fires when the fake time reaches t: at once
// when it has (see At).
func (f *Fake) At(t time.Time) <-chan time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.at(t)
}

// at is At with f.mu held.
func (f *Fake) at(t time.Time) <-chan time.Time {
	ch := make(chan time.Time, 1)
	if !t.After(f.now) {
		ch <- f.now
		return ch
	}
	f.timers = append(f.timers, fakeTimer{at: t, ch: ch})
	select {
	case f.waiters <- struct{}{}:
	default:
	}
	return ch
}

// Advance moves the time forward by d and fires every timer that is due.
func (f *Fake) Advance(d time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.now = f.now.Add(d)
	kept := f.timers[:0]
	for _, t := range f.timers {
		if !t.at.After(f.now) {
			t.ch <- f.now
			continue
		}
		kept = append(kept, t)
	}
	f.timers = kept
}

// Set moves the time to t, if t is later, firing every timer due.
func (f *Fake) Set(t time.Time) {
	if d := t.Sub(f.Now()); d > 0 {
		f.Advance(d)
	}
}

// TimerAdded returns a channel that receives each time a timer is
// registered, so a test can wait until the code under test is waiting
// before it advances the clock.
func (f *Fake) TimerAdded() <-chan struct{} { return f.waiters }

// Next returns when the earliest pending timer fires; false when none is
// pending.
func (f *Fake) Next() (time.Time, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var next time.Time
	for i, t := range f.timers {
		if i == 0 || t.at.Before(next) {
			next = t.at
		}
	}
	return next, len(f.timers) > 0
}

// Pending is the number of timers not yet fired.
func (f *Fake) Pending() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.timers)
}
