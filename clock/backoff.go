package clock

import "time"

// Backoff gives the wait before a retry. Implementations must be safe for
// concurrent use.
type Backoff interface {
	// Next returns the wait before retry n (0 for the first retry). It is
	// never negative, whatever n is.
	Next(n int) time.Duration
}

// BackoffFunc adapts a function to Backoff.
type BackoffFunc func(n int) time.Duration

// Next returns f(n).
func (f BackoffFunc) Next(n int) time.Duration { return f(n) }

// Exponential returns a Backoff of base × 2ⁿ, at most limit. The doubling
// stops at limit, so no n shifts the wait past the largest Duration; n < 0
// counts as 0.
func Exponential(base, limit time.Duration) Backoff {
	return BackoffFunc(func(n int) time.Duration {
		d := base
		for range max(n, 0) {
			if d >= limit/2 {
				return limit
			}
			d *= 2
		}
		return min(d, limit)
	})
}
