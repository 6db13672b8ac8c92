package github

import (
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/layoverhq/layover/provider/internal/llm"
	"github.com/layoverhq/layover/provider/resetparse"
	"github.com/layoverhq/layover/quota"
)

// Provider is the Outcome.Provider of every classification in this package.
const Provider = "github"

// maxResourceLen bounds an x-ratelimit-resource value.
const maxResourceLen = 64

// rateHeaders is what the x-ratelimit-* and Date headers of one response
// said.
type rateHeaders struct {
	limit     int64  // quota.Unknown when absent or invalid
	remaining int64  // quota.Unknown when absent or invalid
	reset     int64  // epoch seconds; 0 when absent or invalid
	resource  string // "" when no x-ratelimit-* header was present
	// present: at least one x-ratelimit-{limit,remaining,reset,resource}
	// header was there.
	present bool
	// bad: some header was present but absurd; no observation is made.
	bad bool
	// date is the response's Date, zero when missing or unparseable.
	date time.Time
}

// parseRateHeaders reads the x-ratelimit-* and Date headers of h (nil allowed).
func parseRateHeaders(h http.Header) rateHeaders {
	r := rateHeaders{limit: quota.Unknown, remaining: quota.Unknown}
	if h == nil {
		return r
	}
	count := func(name string) int64 {
		v, ok := headerValue(h, name)
		if !ok {
			return quota.Unknown
		}
		r.present = true
		n, ok := parseCount(v)
		if !ok {
			r.bad = true
			return quota.Unknown
		}
		return n
	}
	r.limit = count("X-Ratelimit-Limit")
	r.remaining = count("X-Ratelimit-Remaining")
	if v, ok := headerValue(h, "X-Ratelimit-Reset"); ok {
		r.present = true
		if t, ok := resetparse.EpochSeconds(v); ok {
			r.reset = t.Unix()
		} else {
			r.bad = true
		}
	}
	if v, ok := headerValue(h, "X-Ratelimit-Resource"); ok {
		r.present = true
		if res, ok := cleanResource(v); ok {
			r.resource = res
		} else {
			r.bad = true
		}
	} else if r.present {
		r.resource = "core"
	}
	if v, ok := headerValue(h, "Date"); ok {
		r.date, _ = resetparse.HTTPDate(v)
	}
	return r
}

// headerValue returns the first value of header name, trimmed, and whether
// the header was present at all.
func headerValue(h http.Header, name string) (string, bool) {
	vals := h.Values(name)
	if len(vals) == 0 {
		return "", false
	}
	return strings.TrimSpace(vals[0]), true
}

// parseCount parses a non-negative decimal count.
func parseCount(v string) (int64, bool) {
	if v == "" || len(v) > 18 {
		return 0, false
	}
	for i := 0; i < len(v); i++ {
		if v[i] < '0' || v[i] > '9' {
			return 0, false
		}
	}
	n, err := strconv.ParseInt(v, 10, 64)
	return n, err == nil
}

// cleanResource lowercases a resource name and checks that it is short and
// made of letters, digits, '_', '-' and '.'.
func cleanResource(v string) (string, bool) {
	if v == "" || len(v) > maxResourceLen {
		return "", false
	}
	v = strings.ToLower(v)
	for i := 0; i < len(v); i++ {
		c := v[i]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_' || c == '-' || c == '.') {
			return "", false
		}
	}
	return v, true
}

// resetOnOurClock moves the provider's reset (epoch seconds) onto this
// machine's clock: now + (reset − date). Without a usable date (zero, or more
// than resetparse.MaxSkew from the reset) it is time.Unix(reset, 0).
func resetOnOurClock(reset int64, date, now time.Time) time.Time {
	return resetparse.SkewCorrect(time.Unix(reset, 0), date, now)
}

// exhausted reports whether the headers say nothing remains.
func (r rateHeaders) exhausted() bool { return r.present && r.remaining == 0 }

// resetAt is the skew-corrected reset of r, zero when r has none.
func (r rateHeaders) resetAt(now time.Time) time.Time {
	if r.reset == 0 {
		return time.Time{}
	}
	return resetOnOurClock(r.reset, r.date, now)
}

// observation returns the quota state r describes (source headers, cause
// exhausted when nothing remains), or false when r lacks remaining or
// reset, or holds an absurd value.
func (r rateHeaders) observation(now time.Time) (quota.State, bool) {
	if !r.present || r.bad || r.remaining < 0 || r.reset == 0 {
		return quota.State{}, false
	}
	return llm.HeaderState(r.resource, r.limit, r.remaining, r.resetAt(now), r.reset, now), true
}

// Observations returns the quota state that the x-ratelimit-* headers of a
// response describe, observed at now: none, or one for the resource named by
// x-ratelimit-resource ("core" when that header is absent but the others are
// present). Only Key.Resource of the key is set.
//
// Limit and Remaining are counts of requests (GraphQL: points); Limit is
// quota.Unknown when x-ratelimit-limit is absent. x-ratelimit-reset is UTC
// epoch seconds, kept as RawReset; ResetAt is now + (reset − Date) using the
// response's Date header, or time.Unix(reset) when Date is missing,
// unparseable or implausibly far from the reset. Cause is exhausted when
// remaining is 0. No state is returned when remaining or reset is missing,
// or when any x-ratelimit-* value is absurd (a reset in epoch milliseconds, a
// negative or non-numeric count, a malformed resource name).
func Observations(h http.Header, now time.Time) []quota.State {
	if s, ok := parseRateHeaders(h).observation(now); ok {
		return []quota.State{s}
	}
	return nil
}
