package storetest

import (
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/layoverhq/layover/quota"
)

// testResumeSlots checks TakeResumeSlot: a key's slots are an interval
// apart however many takers ask at once, an idle key's next slot is now,
// keys count apart, and times keep their microseconds.
func testResumeSlots(t *testing.T, setup setupFunc) {
	ctx, s := setup(t)
	core, search := key(gh, "octocat", "core"), key(gh, "octocat", "search")
	now := base.Truncate(time.Microsecond)
	const interval = 100 * time.Millisecond
	take := func(k quota.Key, at time.Time, iv time.Duration) time.Time {
		t.Helper()
		got, err := s.TakeResumeSlot(ctx, k, at, iv)
		if err != nil {
			t.Fatalf("TakeResumeSlot(%s, %s): %v", k, at, err)
		}
		return got
	}

	// Twenty hosts ask at once: twenty consecutive slots, none shared.
	const n = 20
	starts := make([]time.Time, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			got, err := s.TakeResumeSlot(ctx, core, now, interval)
			if err != nil {
				t.Errorf("TakeResumeSlot: %v", err)
			}
			starts[i] = got
		}()
	}
	wg.Wait()
	slices.SortFunc(starts, time.Time.Compare)
	for i, got := range starts {
		if want := now.Add(time.Duration(i) * interval); !got.Equal(want) || got.Location() != time.UTC {
			t.Fatalf("slot %d of %d taken at once = %v; want %v in UTC (all: %v)", i, n, got, want.UTC(), starts)
		}
	}
	// Another key has its own slots.
	if got := take(search, now, interval); !got.Equal(now) {
		t.Errorf("the first slot of another key = %v; want now %v", got, now)
	}
	// A taker later than the queue gets now; one within it the next slot.
	later := now.Add(time.Hour)
	if got := take(core, later, interval); !got.Equal(later) {
		t.Errorf("the slot of an idle key = %v; want now %v", got, later)
	}
	if got := take(core, later.Add(time.Millisecond), interval); !got.Equal(later.Add(interval)) {
		t.Errorf("the next slot = %v; want %v", got, later.Add(interval))
	}
	// A slot of a fraction of a microsecond, or a negative one, is none;
	// a slot behind the queue still waits for it.
	tiny := now.Add(2 * time.Hour)
	for _, iv := range []time.Duration{time.Nanosecond, -time.Second} {
		if got := take(search, tiny, iv); !got.Equal(tiny) {
			t.Errorf("a slot after one of %v = %v; want %v", iv, got, tiny)
		}
	}
}
