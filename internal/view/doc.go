// Package view holds the JSON objects layover prints: the status, job and
// workflow-run contracts of docs/design.md (Output contracts) and
// docs/workflows.md (Commands). The CLI's --json outputs and the console's
// API (package server) build them with the same functions, so both print
// the same objects. Times are RFC 3339 UTC strings, null when unknown.
//
// The builders only shape what they are given; reading the store is the
// caller's.
package view

import "time"

// Time renders t as RFC 3339 UTC to the second, or nil for the zero time.
func Time(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return t.UTC().Format(time.RFC3339)
}

// TimeMS renders t as RFC 3339 UTC to the millisecond the store keeps, or
// nil for the zero time.
func TimeMS(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return t.UTC().Format("2006-01-02T15:04:05.000Z")
}

// Nullable is s, or nil for "".
func Nullable(s string) any {
	if s == "" {
		return nil
	}
	return s
}

// Known is n, or nil for a negative n (unknown).
func Known(n int64) any {
	if n < 0 {
		return nil
	}
	return n
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}
