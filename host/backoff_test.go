package host

import (
	"testing"
	"time"
)

// The backoff after transient failures doubles from DefaultBackoff and
// stops at MaxBackoff, for any attempt count: before it was capped, the
// 31st failure shifted 10 s past the largest Duration into a negative wait,
// and a job with many attempts retried in a tight loop.
func TestTransientBackoffDoublesAndSaturates(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		n    int
		want time.Duration
	}{
		{1, 10 * time.Second}, {2, 20 * time.Second}, {3, 40 * time.Second},
		{9, 2560 * time.Second}, {10, time.Hour}, {31, time.Hour}, {64, time.Hour}, {1 << 30, time.Hour},
	} {
		if got := transientBackoff(c.n); got != c.want {
			t.Errorf("transientBackoff(%d) = %s, want %s", c.n, got, c.want)
		}
	}
}
