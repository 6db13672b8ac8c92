package resetcheck

import (
	"errors"
	"fmt"
	"net/http"
	"net/textproto"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/layoverhq/layover/provider"
	"github.com/layoverhq/layover/quota"
	"github.com/layoverhq/layover/redact"
)

// CheckOutcome verifies what every classification by provider name must
// hold for input (the response's headers and body as text), at now: a
// known class, a reason that passes CheckReason, no negative numbers but
// -1, a secondary wait within quota.ThrottleQuotaCutoff, and every reset
// and wait traced to the input (or to extra, the documented derivations).
func CheckOutcome(out provider.Outcome, name, input string, now time.Time, extra ...time.Time) error {
	switch out.Class {
	case provider.ClassOK, provider.ClassQuota, provider.ClassSecondary, provider.ClassAuth, provider.ClassTransient, provider.ClassPermanent:
	default:
		return fmt.Errorf("class %q", out.Class)
	}
	if out.Provider != name {
		return fmt.Errorf("provider %q", out.Provider)
	}
	if err := CheckReason(out.Reason); err != nil {
		return err
	}
	if out.RetryAfter < -1 || out.Remaining < -1 || out.Limit < -1 {
		return fmt.Errorf("negative numbers: %+v", out)
	}
	if out.Class == provider.ClassSecondary && out.RetryAfter > quota.ThrottleQuotaCutoff {
		return fmt.Errorf("secondary with a %v wait", out.RetryAfter)
	}
	if out.Class == provider.ClassOK && (!out.ResetAt.IsZero() || out.RetryAfter != -1) {
		return fmt.Errorf("ok with a wait: %+v", out)
	}
	if !out.ResetAt.IsZero() && !ResetExplained(out.ResetAt, input, now, extra...) {
		return fmt.Errorf("reset %v is not in the input", out.ResetAt)
	}
	if out.RetryAfter > 0 && !WaitExplained(out.RetryAfter, input, now, extra...) {
		return fmt.Errorf("wait %v is not in the input", out.RetryAfter)
	}
	for _, s := range out.Observations {
		if err := CheckState(s, input, now, extra...); err != nil {
			return err
		}
	}
	return nil
}

// CheckReason verifies a Reason as a classifier must give it: not empty,
// at most provider.MaxReason runes, without a control character or a
// recognisable secret (redact), whatever the input held.
func CheckReason(reason string) error {
	switch {
	case reason == "":
		return errors.New("empty reason")
	case utf8.RuneCountInString(reason) > provider.MaxReason:
		return fmt.Errorf("reason of %d runes: %q", utf8.RuneCountInString(reason), reason)
	case strings.IndexFunc(reason, unicode.IsControl) >= 0:
		return fmt.Errorf("reason with a control character: %q", reason)
	case redact.Contains(reason):
		return fmt.Errorf("reason with a secret: %q", reason)
	}
	return nil
}

// CheckState verifies one observation.
func CheckState(s quota.State, input string, now time.Time, extra ...time.Time) error {
	if s.Resource == "" || s.Remaining < 0 || s.Limit < -1 || !s.ResetKnown || !s.ObservedAt.Equal(now) {
		return fmt.Errorf("bad state %+v", s)
	}
	if s.Source != quota.SourceHeaders && s.Source != quota.SourceRejected {
		return fmt.Errorf("source %q", s.Source)
	}
	if (s.Remaining == 0) != (s.Cause == quota.CauseExhausted) {
		return fmt.Errorf("cause %q with remaining %d", s.Cause, s.Remaining)
	}
	if s.RawReset <= 0 || s.RawReset >= 1e10 {
		return fmt.Errorf("raw reset %d", s.RawReset)
	}
	if !ResetExplained(s.ResetAt, input, now, extra...) {
		return fmt.Errorf("state reset %v is not in the input", s.ResetAt)
	}
	return nil
}

// ParseHeaderText turns "Name: value" lines into a header.
func ParseHeaderText(text string) http.Header {
	h := http.Header{}
	for _, line := range strings.Split(text, "\n") {
		k, v, ok := strings.Cut(strings.TrimRight(line, "\r"), ":")
		if ok && k != "" {
			h.Add(textproto.CanonicalMIMEHeaderKey(strings.TrimSpace(k)), strings.TrimSpace(v))
		}
	}
	return h
}
