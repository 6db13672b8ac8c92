package quota

import (
	"fmt"
	"time"
)

// DeferralError reports work that was not done because its quota key holds
// it back: a request that was not sent, or a command that was not started.
// Nothing was sent, so the caller may try again, as a fresh attempt, at
// ResumeAt or later. Detect it with errors.As:
//
//	var de *quota.DeferralError
//	if errors.As(err, &de) {
//		// de.Key is exhausted (or below its reserve) until de.ResumeAt.
//	}
//
// It never carries a token: Key.Principal is a login, an organisation id or
// a token fingerprint.
type DeferralError struct {
	// Key is the quota that holds the work back.
	Key Key
	// ResumeAt is the earliest time a fresh attempt may start, on this
	// machine's clock: the reset plus margin and jitter for an exhausted
	// quota, the end of a throttle's stated wait. The zero time means
	// unknown.
	ResumeAt time.Time
	// Cause is CauseExhausted (a Quota wait or a throttle),
	// CauseBelowReserve (a low-priority request, with the quota below its
	// reserve) or CausePacing (a paced low-priority request whose quota
	// would reach its reserve before the reset).
	Cause Cause
	// Reason says why in a few words, e.g. "a wait of 3h1m0s would take the
	// total quota wait to 3h1m0s, past the 2h0m0s cap".
	Reason string
}

// Error renders the key, the cause, the resume time (RFC 3339, UTC) and the
// reason, e.g. "deferred: quota api.github.com/octocat/core exhausted until
// 2026-05-01T10:02:00Z: deferral mode".
func (e *DeferralError) Error() string {
	cause := e.Cause
	if cause == CauseNone {
		cause = "held back"
	}
	msg := fmt.Sprintf("deferred: quota %s %s", e.Key, cause)
	if !e.ResumeAt.IsZero() {
		msg += " until " + e.ResumeAt.UTC().Format(time.RFC3339)
	}
	if e.Reason != "" {
		msg += ": " + e.Reason
	}
	return msg
}
