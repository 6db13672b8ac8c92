package github

import (
	"net/http"
	"strconv"
	"time"
)

// now is the test clock: 2026-08-05 12:00:00 UTC.
var now = time.Date(2026, 8, 5, 12, 0, 0, 0, time.UTC)

// epoch renders t as GitHub's x-ratelimit-reset.
func epoch(t time.Time) string { return strconv.FormatInt(t.Unix(), 10) }

// httpDate renders t as a Date header.
func httpDate(t time.Time) string { return t.UTC().Format(http.TimeFormat) }

// response builds a response with status code and header name/value pairs.
func response(code int, kv ...string) *http.Response {
	h := http.Header{}
	for i := 0; i+1 < len(kv); i += 2 {
		h.Add(kv[i], kv[i+1])
	}
	return &http.Response{StatusCode: code, Status: strconv.Itoa(code) + " " + http.StatusText(code), Header: h}
}

// limits returns the Date (= now) and x-ratelimit-* pairs of a response.
func limits(limit, remaining int, reset time.Time, resource string) []string {
	kv := []string{
		"Date", httpDate(now),
		"X-RateLimit-Limit", strconv.Itoa(limit),
		"X-RateLimit-Remaining", strconv.Itoa(remaining),
		"X-RateLimit-Used", strconv.Itoa(limit - remaining),
		"X-RateLimit-Reset", epoch(reset),
	}
	if resource != "" {
		kv = append(kv, "X-RateLimit-Resource", resource)
	}
	return kv
}

func join(parts ...[]string) []string {
	var out []string
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}
