package store

import "time"

// SlotMicros are the microseconds since the epoch of now and of interval, as
// TakeResumeSlot keeps them: an interval below a microsecond (or negative)
// is 0, and one beyond a day is a day, so next_us + interval never wraps.
func SlotMicros(now time.Time, interval time.Duration) (nowUS, intervalUS int64) {
	return now.UnixMicro(), min(max(interval.Microseconds(), 0), (24 * time.Hour).Microseconds())
}

// FromMicros is the UTC time of v microseconds since the epoch.
func FromMicros(v int64) time.Time { return time.UnixMicro(v).UTC() }
