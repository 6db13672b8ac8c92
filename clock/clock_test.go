package clock

import (
	"testing"
	"time"
)

func fired(c <-chan time.Time) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}

// A timer for a time fires once the fake clock reaches that time, at once
// when it has, however the clock moved since it was read.
func TestFakeAtFiresAtTheTime(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	f := NewFake(t0)
	wake := t0.Add(3 * time.Second)
	f.Advance(time.Second) // after the reading the wake-up came from
	c := At(f, wake)
	f.Advance(time.Second)
	if fired(c) {
		t.Fatal("fired a second before its time")
	}
	f.Advance(time.Second)
	if !fired(c) {
		t.Fatal("not fired at its time")
	}
	if !fired(At(f, wake)) || !fired(At(f, t0)) {
		t.Fatal("a timer for a time the clock has reached does not fire at once")
	}
}

// On a clock without them At is After for the time left.
func TestAtOnAClockWithoutTimersAtATime(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	f := NewFake(t0)
	c := struct{ Clock }{f} // Now and After only
	ch := At(c, t0.Add(time.Second))
	if fired(ch) {
		t.Fatal("fired before its time")
	}
	f.Advance(time.Second)
	if !fired(ch) {
		t.Fatal("not fired at its time")
	}
}
