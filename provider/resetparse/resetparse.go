// Package resetparse parses every encoding in which providers state when a
// quota resets or how long to wait (docs/provider-signals.md, tricky case 7).
//
// Every parser returns (value, ok). When ok is false the value is the zero
// value: nothing here guesses, rounds a bad value into a good one, or
// invents a reset. Absolute times are accepted only between [MinEpoch] and
// [MaxEpoch] (2001-09-09 to 2286-11-20), which rejects epoch milliseconds by
// magnitude; waits are accepted only from 0 to [MaxDelay].
//
// Absolute encodings: [EpochSeconds], [RFC3339], [HTTPDate], and
// [Timestamp] (any of the three). Relative encodings: [Seconds] and
// [Milliseconds] (Retry-After, retry-after-ms), [GoDuration] (OpenAI's
// x-ratelimit-reset-*), [ProtoDuration] (Gemini's RetryInfo.retryDelay),
// [HumanDuration] ("2 hours", "3 days 6 hours 57 minutes"), [RetryAfter]
// (a Retry-After header value, seconds or HTTP-date) and [MessageDelay] (a
// wait written in an error message). [SkewCorrect] moves an absolute reset
// onto this machine's clock using the response's Date.
package resetparse

import (
	"strings"
	"time"
)

// Bounds on values that can be right.
const (
	// MinEpoch and MaxEpoch bound an absolute time, in epoch seconds. A
	// number of MaxEpoch or more is epoch milliseconds (or past 2286); one
	// below MinEpoch is a relative count of seconds, not a timestamp.
	MinEpoch int64 = 1e9
	MaxEpoch int64 = 1e10
	// MaxDelay is the longest wait believed; longer ones are rejected.
	MaxDelay = 366 * 24 * time.Hour
	// MaxSkew is how far a response's Date may be from an absolute reset
	// before SkewCorrect distrusts the Date.
	MaxSkew = 366 * 24 * time.Hour
)

// maxInput bounds the length of one value; longer ones are rejected.
const maxInput = 256

// inRange reports whether t is a plausible absolute reset.
func inRange(t time.Time) bool {
	u := t.Unix()
	return u >= MinEpoch && u < MaxEpoch
}

// EpochSeconds parses a reset written as decimal epoch seconds
// ("1774447200"): digits only, from MinEpoch to below MaxEpoch. Epoch
// milliseconds ("1774447200000"), signs, fractions and exponents are
// rejected.
func EpochSeconds(s string) (time.Time, bool) {
	s = strings.TrimSpace(s)
	if len(s) == 0 || len(s) > 11 || !allDigits(s) {
		return time.Time{}, false
	}
	var n int64
	for i := 0; i < len(s); i++ {
		n = n*10 + int64(s[i]-'0')
	}
	if n < MinEpoch || n >= MaxEpoch {
		return time.Time{}, false
	}
	return time.Unix(n, 0).UTC(), true
}

// RFC3339 parses an RFC 3339 timestamp ("2026-08-05T12:00:30Z", with an
// optional fraction and a numeric offset), as Anthropic's
// anthropic-ratelimit-*-reset headers write it. The result is in UTC.
func RFC3339(s string) (time.Time, bool) {
	s = strings.TrimSpace(s)
	if len(s) < len("2006-01-02T15:04:05Z") || len(s) > maxInput {
		return time.Time{}, false
	}
	// time.Parse is lenient (a one-digit hour passes); RFC 3339 is not.
	for i := 0; i < 19; i++ {
		switch i {
		case 4, 7:
			if s[i] != '-' {
				return time.Time{}, false
			}
		case 10:
			if s[i] != 'T' {
				return time.Time{}, false
			}
		case 13, 16:
			if s[i] != ':' {
				return time.Time{}, false
			}
		default:
			if s[i] < '0' || s[i] > '9' {
				return time.Time{}, false
			}
		}
	}
	if !rfc3339Tail(s[19:]) {
		return time.Time{}, false
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil || !inRange(t) {
		return time.Time{}, false
	}
	return t.UTC(), true
}

// rfc3339Tail reports whether s is an RFC 3339 time's optional fraction
// ("." and digits) and offset ("Z" or ±hh:mm).
func rfc3339Tail(s string) bool {
	if strings.HasPrefix(s, ".") {
		i := 1
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
		}
		if i == 1 {
			return false
		}
		s = s[i:]
	}
	if s == "Z" {
		return true
	}
	return len(s) == 6 && (s[0] == '+' || s[0] == '-') && allDigits(s[1:3]) && s[3] == ':' && allDigits(s[4:6])
}

// HTTPDate parses an HTTP-date (RFC 9110: IMF-fixdate, RFC 850 or asctime),
// as a Retry-After or Date header writes it.
func HTTPDate(s string) (time.Time, bool) {
	s = strings.TrimSpace(s)
	if len(s) == 0 || len(s) > maxInput {
		return time.Time{}, false
	}
	t, err := httpTime(s)
	if err != nil || !inRange(t) {
		return time.Time{}, false
	}
	return t.UTC(), true
}

// Timestamp parses an absolute reset in any of the encodings providers use:
// epoch seconds, RFC 3339 or an HTTP-date. It is for values whose encoding
// is not documented (Anthropic's unified subscription resets).
func Timestamp(s string) (time.Time, bool) {
	if t, ok := EpochSeconds(s); ok {
		return t, true
	}
	if t, ok := RFC3339(s); ok {
		return t, true
	}
	return HTTPDate(s)
}

// Seconds parses a non-negative count of seconds, whole ("7999") or decimal
// ("1.5"), as Retry-After and retry-after-style fields write it. Signs,
// exponents and values over MaxDelay are rejected; digits past nanoseconds
// are dropped.
func Seconds(s string) (time.Duration, bool) {
	return decimal(strings.TrimSpace(s), int64(time.Second))
}

// Milliseconds parses a non-negative count of milliseconds, whole or
// decimal, as retry-after-ms writes it.
func Milliseconds(s string) (time.Duration, bool) {
	return decimal(strings.TrimSpace(s), int64(time.Millisecond))
}

// GoDuration parses a duration as Go's time.Duration.String writes it and
// OpenAI's x-ratelimit-reset-* headers use it: "6m0s", "12ms", "1h2m3.5s",
// "1s", or a bare "0". Units are h, m, s, ms, us (µs) and ns. Negative or
// signed values and values over MaxDelay are rejected.
func GoDuration(s string) (time.Duration, bool) {
	s = strings.TrimSpace(s)
	if s == "0" {
		return 0, true
	}
	d, n, ok := scanCompact(s)
	if !ok || n != len(s) {
		return 0, false
	}
	return d, true
}

// ProtoDuration parses a protobuf Duration in its JSON form, as Gemini's
// RetryInfo.retryDelay writes it: seconds, an optional fraction of at most
// nine digits, and "s" ("26s", "34.074824224s"). Negative values and values
// over MaxDelay are rejected.
func ProtoDuration(s string) (time.Duration, bool) {
	s = strings.TrimSpace(s)
	num, ok := strings.CutSuffix(s, "s")
	if !ok {
		return 0, false
	}
	if i := strings.IndexByte(num, '.'); i >= 0 && len(num)-i-1 > 9 {
		return 0, false
	}
	return decimal(num, int64(time.Second))
}

// RetryAfter parses a Retry-After header value: a count of seconds (whole
// or decimal), measured from receipt, or an HTTP-date, measured from the
// response's date when known (else from now) and never negative. The zero
// date means the response had none.
func RetryAfter(v string, date, now time.Time) (time.Duration, bool) {
	if d, ok := Seconds(v); ok {
		return d, true
	}
	t, ok := HTTPDate(v)
	if !ok {
		return 0, false
	}
	base := now
	if !date.IsZero() {
		base = date
	}
	d := max(t.Sub(base), 0)
	if d > MaxDelay {
		return 0, false
	}
	return d, true
}

// SkewCorrect moves an absolute reset stated by a provider onto this
// machine's clock: now + (reset − date), where date is the response's Date
// header (tricky case 11). Without a usable date (zero, or more than
// MaxSkew from the reset) it returns reset unchanged.
func SkewCorrect(reset, date, now time.Time) time.Time {
	if date.IsZero() {
		return reset
	}
	d := reset.Sub(date)
	if d > MaxSkew || d < -MaxSkew {
		return reset
	}
	return now.Add(d)
}

// allDigits reports whether s is non-empty and all ASCII digits.
func allDigits(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// decimal parses "D+", "D+.D*" or ".D+" as a count of unit nanoseconds,
// exactly: digits past the unit's resolution are dropped.
func decimal(s string, unit int64) (time.Duration, bool) {
	d, n, ok := scanDecimal(s, unit)
	if !ok || n != len(s) {
		return 0, false
	}
	return d, true
}

// maxIntDigits bounds the integer part of a number: more digits overflow
// any unit long before MaxDelay anyway.
const maxIntDigits = 15

// scanDecimal reads a non-negative decimal number at the start of s and
// returns its value in units of unit nanoseconds, how many bytes it used, and
// whether it was a number at most MaxDelay. A number needs at least one digit;
// a trailing "." is consumed only when digits follow it.
func scanDecimal(s string, unit int64) (time.Duration, int, bool) {
	i := 0
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	intPart := s[:i]
	fracPart := ""
	if i < len(s) && s[i] == '.' {
		j := i + 1
		for j < len(s) && s[j] >= '0' && s[j] <= '9' {
			j++
		}
		if j > i+1 {
			fracPart = s[i+1 : j]
			i = j
		}
	}
	if intPart == "" && fracPart == "" {
		return 0, 0, false
	}
	if len(intPart) > maxIntDigits {
		return 0, i, false
	}
	var whole int64
	for k := 0; k < len(intPart); k++ {
		whole = whole*10 + int64(intPart[k]-'0')
	}
	limit := int64(MaxDelay)
	if whole > limit/unit {
		return 0, i, false
	}
	ns := whole * unit
	// The fraction, exactly to the unit's resolution: unit is a power of
	// ten times an integer, so unit/10^k is exact while 10^k divides unit.
	scale := unit
	for k := 0; k < len(fracPart) && scale%10 == 0; k++ {
		scale /= 10
		ns += int64(fracPart[k]-'0') * scale
	}
	if ns > limit {
		return 0, i, false
	}
	return time.Duration(ns), i, true
}

// Compact-duration units, longest first where one is a prefix of another.
var compactUnits = []struct {
	name string
	ns   int64
}{
	{"ns", int64(time.Nanosecond)},
	{"us", int64(time.Microsecond)},
	{"µs", int64(time.Microsecond)}, // U+00B5
	{"μs", int64(time.Microsecond)}, // U+03BC
	{"ms", int64(time.Millisecond)},
	{"h", int64(time.Hour)},
	{"m", int64(time.Minute)},
	{"s", int64(time.Second)},
}

// scanCompact reads a Go-style duration at the start of s ("10h17m5.72s",
// "644ms"): one or more number-unit pairs with nothing between them. It
// returns the sum, the bytes used, and whether at least one pair was read,
// the sum is at most MaxDelay, and the pairs are not followed by a letter or
// digit (so "5minutes" is not "5m").
func scanCompact(s string) (time.Duration, int, bool) {
	var total time.Duration
	i, pairs := 0, 0
	for i < len(s) && (s[i] >= '0' && s[i] <= '9' || s[i] == '.') {
		// Find the unit after the number.
		_, n, ok := scanDecimal(s[i:], 1)
		if n == 0 {
			break
		}
		unitAt := i + n
		var unit int64
		var unitLen int
		for _, u := range compactUnits {
			if strings.HasPrefix(s[unitAt:], u.name) {
				unit, unitLen = u.ns, len(u.name)
				break
			}
		}
		if unitLen == 0 {
			break
		}
		// scanDecimal bounds the pair; Go's own parser gives its value, so
		// that a fraction finer than the unit's decimal resolution (".000000000001h",
		// 3.6 ns) rounds as Go's does.
		_, _, ok2 := scanDecimal(s[i:unitAt], unit)
		if !ok || !ok2 {
			return 0, 0, false
		}
		d, err := time.ParseDuration(s[i : unitAt+unitLen])
		if err != nil {
			return 0, 0, false
		}
		total += d
		if total > MaxDelay {
			return 0, 0, false
		}
		i = unitAt + unitLen
		pairs++
	}
	if pairs == 0 || (i < len(s) && isWordByte(s[i])) {
		return 0, 0, false
	}
	return total, i, true
}

// isWordByte reports whether c continues a word: an ASCII letter or digit,
// or any byte of a non-ASCII character (which may be a letter).
func isWordByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c >= 0x80
}
