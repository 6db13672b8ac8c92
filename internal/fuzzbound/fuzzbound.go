// Package fuzzbound fails a fuzz input that takes too long: issue 8 asks
// that no input of a parser of outside input take longer than 100 ms, since
// a slow input (a quadratic path, a runaway loop) is an input that hangs
// layover. It is for fuzz targets only: it is imported from _test.go files
// and from the test-support packages that hold shared fuzz targets
// (provider/internal/providertest, store/storetest), never by a program.
// TestEveryFuzzTargetIsBounded checks that every fuzz target calls Run.
package fuzzbound

import (
	"testing"
	"time"
)

// Bound is the longest one fuzz input may take: 100 ms, times raceFactor
// under the race detector, which slows everything about ten times
// (race.go).
const Bound = 100 * time.Millisecond * raceFactor

// Run runs body, one fuzz input's work, and fails t when it took longer
// than Bound twice in a row: an input over the bound is run once more, so
// that a pause of the machine (a shared CI runner, a garbage collection)
// is not taken for a slow input. body must be safe to run twice; it may
// fail t itself.
func Run(t testing.TB, body func()) {
	t.Helper()
	run(t, body, timed)
}

// run is Run with the measure of one run given.
func run(t testing.TB, body func(), measure func(func()) time.Duration) {
	t.Helper()
	first := measure(body)
	if first <= Bound {
		return
	}
	if second := measure(body); second > Bound {
		t.Fatalf("one input took %v, then %v: over the bound of %v per fuzz input", first.Round(time.Millisecond), second.Round(time.Millisecond), Bound)
	}
}

// timed returns how long body took, by the wall clock.
func timed(body func()) time.Duration {
	start := time.Now()
	body()
	return time.Since(start)
}
