// Package resetcheck tells, for tests and fuzzers, whether a reset or a
// wait can be traced to the text it was parsed from. It is written
// independently of the parsers (regular expressions and the standard
// library), so that a parser that invents a value fails it.
package resetcheck

import (
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// Tolerance absorbs float rounding in the checker's own arithmetic.
const Tolerance = time.Millisecond

var (
	reNumber  = regexp.MustCompile(`[0-9]+(?:\.[0-9]+)?|\.[0-9]+`)
	reCompact = regexp.MustCompile(`(?:(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:ns|us|µs|μs|ms|h|m|s))+`)
	reHuman   = regexp.MustCompile(`(?i)([0-9]+(?:\.[0-9]+)?|\.[0-9]+)[ \t]*(milliseconds?|msecs?|ms|seconds?|secs?|minutes?|mins?|hours?|hrs?|days?)`)
	reRFC3339 = regexp.MustCompile(`[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(?:\.[0-9]+)?(?:Z|[+-][0-9]{2}:[0-9]{2})`)
	reRegain  = regexp.MustCompile(`(?i)([0-9]{4}-[0-9]{2}-[0-9]{2}) at ([0-9]{1,2}):([0-9]{2}) UTC`)
	reDigits  = regexp.MustCompile(`[0-9]+`)
)

var unitOf = map[string]time.Duration{
	"ms": time.Millisecond, "msec": time.Millisecond, "millisecond": time.Millisecond,
	"sec": time.Second, "second": time.Second,
	"min": time.Minute, "minute": time.Minute,
	"hr": time.Hour, "hour": time.Hour,
	"day": 24 * time.Hour,
}

// Durations returns every duration the input writes: each number in
// nanoseconds, microseconds, milliseconds, seconds, minutes, hours and
// days; each Go-style duration; and each sum of consecutive worded parts
// ("3 days 6 hours 57 minutes").
func Durations(input string) []time.Duration {
	var out []time.Duration
	units := []time.Duration{time.Nanosecond, time.Microsecond, time.Millisecond, time.Second, time.Minute, time.Hour, 24 * time.Hour}
	for _, n := range reNumber.FindAllString(input, 2000) {
		f, err := strconv.ParseFloat(n, 64)
		if err != nil || f > 1e15 {
			continue
		}
		for _, u := range units {
			out = append(out, time.Duration(f*float64(u)))
		}
	}
	for _, m := range reCompact.FindAllString(input, 2000) {
		if d, err := time.ParseDuration(m); err == nil {
			out = append(out, d)
		}
	}
	pairs := reHuman.FindAllStringSubmatch(input, 200)
	parts := make([]time.Duration, 0, len(pairs))
	for _, p := range pairs {
		f, err := strconv.ParseFloat(p[1], 64)
		if err != nil || f > 1e12 {
			parts = append(parts, 0)
			continue
		}
		w := strings.TrimSuffix(strings.ToLower(p[2]), "s")
		if w == "m" { // "ms" lost its s
			w = "ms"
		}
		parts = append(parts, time.Duration(f*float64(unitOf[w])))
	}
	for i := range parts {
		var sum time.Duration
		for j := i; j < len(parts); j++ {
			sum += parts[j]
			out = append(out, sum)
		}
	}
	return out
}

// Instants returns every absolute time the input writes: runs of digits
// read as epoch seconds (from 1e9 to below 1e10), RFC 3339 timestamps,
// header values that are HTTP-dates, and "YYYY-MM-DD at HH:MM UTC".
func Instants(input string) []time.Time {
	var out []time.Time
	for _, run := range reDigits.FindAllString(input, 2000) {
		if len(run) > 11 {
			continue
		}
		if n, err := strconv.ParseInt(run, 10, 64); err == nil && n >= 1e9 && n < 1e10 {
			out = append(out, time.Unix(n, 0))
		}
	}
	for _, m := range reRFC3339.FindAllString(input, 2000) {
		if t, err := time.Parse(time.RFC3339Nano, m); err == nil {
			out = append(out, t)
		}
	}
	for _, m := range reRegain.FindAllStringSubmatch(input, 100) {
		if t, err := time.Parse("2006-01-02 15:04", m[1]+" "+pad2(m[2])+":"+m[3]); err == nil {
			out = append(out, t)
		}
	}
	for _, line := range strings.Split(input, "\n") {
		cands := []string{line}
		if _, v, ok := strings.Cut(line, ":"); ok {
			cands = append(cands, v)
		}
		for _, v := range cands {
			if t, err := http.ParseTime(strings.TrimSpace(v)); err == nil {
				out = append(out, t)
			}
		}
	}
	return out
}

func pad2(s string) string {
	if len(s) == 1 {
		return "0" + s
	}
	return s
}

// Dates returns the values of the input's "Date:" lines that are
// HTTP-dates.
func Dates(input string) []time.Time {
	var out []time.Time
	for _, line := range strings.Split(input, "\n") {
		k, v, ok := strings.Cut(line, ":")
		if !ok || !strings.EqualFold(strings.TrimSpace(k), "date") {
			continue
		}
		if t, err := http.ParseTime(strings.TrimSpace(v)); err == nil {
			out = append(out, t)
		}
	}
	return out
}

func near(a, b time.Time) bool {
	d := a.Sub(b)
	return d <= Tolerance && d >= -Tolerance
}

// ResetExplained reports whether reset, observed at now, can be traced to
// input: now plus a duration the input writes; an instant the input writes
// (or one of extra, a documented derivation), as is or moved by a Date of
// the input (now + instant − Date); or now, for an instant already past.
func ResetExplained(reset time.Time, input string, now time.Time, extra ...time.Time) bool {
	for _, d := range Durations(input) {
		if near(reset, now.Add(d)) {
			return true
		}
	}
	dates := append(Dates(input), now)
	for _, t := range append(Instants(input), extra...) {
		if near(reset, t) {
			return true
		}
		for _, d := range dates {
			if near(reset, now.Add(t.Sub(d))) || (!t.After(d) && near(reset, now)) {
				return true
			}
		}
	}
	return false
}

// WaitExplained reports whether a wait d, stated at now, can be traced to
// input: ResetExplained(now + d).
func WaitExplained(d time.Duration, input string, now time.Time, extra ...time.Time) bool {
	return ResetExplained(now.Add(d), input, now, extra...)
}
