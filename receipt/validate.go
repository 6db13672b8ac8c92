package receipt

import (
	"fmt"
	"time"
)

// Phase is where a clock stands in a receipt's window.
type Phase string

// Phases. The window is closed: at resume_by itself a receipt is still
// resumable; it expires after.
const (
	Waiting   Phase = "waiting"   // before resume_after
	Resumable Phase = "resumable" // from resume_after to resume_by
	Expired   Phase = "expired"   // after resume_by
)

// Status is a valid receipt seen at a moment.
type Status struct {
	Receipt Receipt
	Now     time.Time
	Phase   Phase
}

// Expired reports whether resume_by has passed.
func (s Status) Expired() bool { return s.Phase == Expired }

// Validate checks r's form (Check) and its window against now: a receipt
// issued more than ClockSkew in the future is not valid (a *FieldError on
// issued_at_ms). A well-formed receipt whose resume_by has passed is valid;
// its Status says Expired.
func Validate(r *Receipt, now time.Time) (Status, error) {
	if err := r.Check(); err != nil {
		return Status{}, err
	}
	nowMs := floorMs(now)
	if ahead := r.IssuedAtMs - nowMs; ahead > int64(ClockSkew/time.Millisecond) {
		return Status{}, fieldErr("issued_at_ms", "%s in the future, beyond the %s clock-skew allowance",
			roundDur(time.Duration(ahead)*time.Millisecond), roundDur(ClockSkew))
	}
	st := Status{Receipt: *r, Now: now}
	switch {
	case nowMs < r.ResumeAfterMs:
		st.Phase = Waiting
	case nowMs <= r.ResumeByMs:
		st.Phase = Resumable
	default:
		st.Phase = Expired
	}
	return st, nil
}

// String is a one-line summary, e.g.
//
//	deferred-receipt-v1 (rest-reserve, handoff): waiting until 2026-05-01T10:00:00Z (in 41m0s); resume by 2026-05-01T16:00:00Z (in 6h41m0s)
func (s Status) String() string {
	r := &s.Receipt
	head := fmt.Sprintf("%s (%s, %s)", r.Version, r.Reason, r.Ownership.Disposition)
	by := r.ResumeBy()
	switch s.Phase {
	case Waiting:
		return fmt.Sprintf("%s: waiting until %s (%s); resume by %s (%s)", head,
			stamp(r.ResumeAfter()), Relative(r.ResumeAfter(), s.Now), stamp(by), Relative(by, s.Now))
	case Resumable:
		return fmt.Sprintf("%s: resumable now; resume by %s (%s)", head, stamp(by), Relative(by, s.Now))
	default:
		return fmt.Sprintf("%s: expired: resume by %s passed (%s)", head, stamp(by), Relative(by, s.Now))
	}
}

// Relative renders t against now: "in 41m0s", "3h0m0s ago" or "now",
// rounded to the second.
func Relative(t, now time.Time) string {
	d := roundDur(t.Sub(now))
	switch {
	case d > 0:
		return "in " + d.String()
	case d < 0:
		return (-d).String() + " ago"
	}
	return "now"
}

func roundDur(d time.Duration) time.Duration { return d.Round(time.Second) }

func stamp(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }
