package receipt

import (
	"errors"
	"time"
)

// Errors of Window: no receipt can be issued for the wait.
var (
	// ErrTooFar: the earliest resume lies more than 24 h after issue.
	ErrTooFar = errors.New("receipt: the wait ends more than 24h after issue")
	// ErrDeadline: the job's deadline comes before the earliest resume.
	ErrDeadline = errors.New("receipt: the job's deadline comes before the wait ends")
	// ErrNoReset: the reset is the zero time. A receipt needs a wait the
	// provider declared; an unknown reset never yields one.
	ErrNoReset = errors.New("receipt: no provider-declared reset")
)

// Window computes a receipt's window as docs/receipt.md (The window) defines it:
//
//	resume_after = reset + margin + jitter (never before issue)
//	resume_by    = min(issue + 24h, resume_after + 6h, deadline)
//
// reset is the provider-declared reset (or issue + retry-after), margin and
// jitter the policy's (jitter already drawn), deadline the job's deadline
// (zero: none). The results are whole milliseconds, issue and resume_by
// rounded down and resume_after up, exactly as a receipt stores them. A
// window that would be empty is ErrTooFar or ErrDeadline; a zero reset is
// ErrNoReset.
func Window(issue, reset time.Time, margin, jitter time.Duration, deadline time.Time) (resumeAfter, resumeBy time.Time, err error) {
	if reset.IsZero() {
		return time.Time{}, time.Time{}, ErrNoReset
	}
	issuedMs := floorMs(issue)
	afterMs := ceilMs(reset.Add(margin).Add(jitter))
	if afterMs < issuedMs {
		afterMs = issuedMs
	}
	byMs := issuedMs + MaxWindowMs
	if afterMs > byMs {
		return time.Time{}, time.Time{}, ErrTooFar
	}
	if g := afterMs + int64(ResumeGrace/time.Millisecond); g < byMs {
		byMs = g
	}
	if !deadline.IsZero() {
		if d := floorMs(deadline); d < byMs {
			byMs = d
		}
	}
	if byMs < afterMs {
		return time.Time{}, time.Time{}, ErrDeadline
	}
	return time.UnixMilli(afterMs).UTC(), time.UnixMilli(byMs).UTC(), nil
}
