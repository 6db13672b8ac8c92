package clock

import (
	"testing"
	"time"
)

// The wait doubles from base and stays at limit for any retry count, the
// largest included; before the cap, the 31st doubling of 10 s wrapped into a
// negative wait.
func TestExponentialDoublesAndSaturates(t *testing.T) {
	t.Parallel()
	b := Exponential(10*time.Second, time.Hour)
	for _, c := range []struct {
		n    int
		want time.Duration
	}{
		{-1, 10 * time.Second}, {0, 10 * time.Second}, {1, 20 * time.Second}, {2, 40 * time.Second},
		{8, 2560 * time.Second}, {9, time.Hour}, {30, time.Hour}, {63, time.Hour}, {1 << 30, time.Hour},
	} {
		if got := b.Next(c.n); got != c.want {
			t.Errorf("Next(%d) = %s, want %s", c.n, got, c.want)
		}
	}
}
