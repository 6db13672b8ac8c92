package fuzzbound

import (
	"testing"
	"time"
)

// fakeT records a failure instead of ending the test.
type fakeT struct {
	testing.TB
	failed bool
}

func (f *fakeT) Helper() {}

func (f *fakeT) Fatalf(string, ...any) { f.failed = true }

// durations returns a measure that runs body and reports the next of ds.
func durations(ds ...time.Duration) func(func()) time.Duration {
	return func(body func()) time.Duration {
		body()
		d := ds[0]
		ds = ds[1:]
		return d
	}
}

func TestRun(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		measured []time.Duration
		runs     int
		fail     bool
	}{
		{"fast", []time.Duration{time.Millisecond}, 1, false},
		{"at the bound", []time.Duration{Bound}, 1, false},
		{"slow once: a pause", []time.Duration{Bound + 1, time.Millisecond}, 2, false},
		{"slow twice", []time.Duration{Bound + 1, Bound + 1}, 2, true},
		{"far over", []time.Duration{time.Hour, time.Hour}, 2, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ft := &fakeT{TB: t}
			runs := 0
			run(ft, func() { runs++ }, durations(tt.measured...))
			if ft.failed != tt.fail || runs != tt.runs {
				t.Errorf("failed %v after %d runs; want %v after %d", ft.failed, runs, tt.fail, tt.runs)
			}
		})
	}
}

func TestRunMeasuresTheBody(t *testing.T) {
	t.Parallel()
	ft := &fakeT{TB: t}
	runs := 0
	Run(ft, func() { runs++ })
	if ft.failed || runs != 1 {
		t.Errorf("an empty input: failed %v after %d runs", ft.failed, runs)
	}
}

func TestBound(t *testing.T) {
	t.Parallel()
	if Bound != 100*time.Millisecond*raceFactor || raceFactor < 1 {
		t.Errorf("Bound = %v with raceFactor %d", Bound, raceFactor)
	}
}
