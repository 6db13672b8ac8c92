package anthropic

import (
	"math"
	"net/http"
	"net/textproto"
	"strconv"
	"strings"
	"time"

	"github.com/layoverhq/layover/provider/internal/llm"
	"github.com/layoverhq/layover/provider/resetparse"
	"github.com/layoverhq/layover/quota"
)

// Provider is the Outcome.Provider of every classification in this package.
const Provider = "anthropic"

// families are the anthropic-ratelimit-<resource>-{limit,remaining,reset}
// header families, in the order Observations returns them.
var families = func() []llm.Family {
	var out []llm.Family
	for _, name := range []string{"requests", "tokens", "input-tokens", "output-tokens"} {
		p := "anthropic-ratelimit-" + name + "-"
		out = append(out, llm.NewFamily(name, p+"limit", p+"remaining", p+"reset"))
	}
	return out
}()

// window is one unified (subscription) window: its resource, the
// representative-claim value naming it, and its header names.
type window struct {
	resource, claim                     string
	statusKey, resetKey, utilizationKey string
}

var windows = func() []window {
	var out []window
	for _, w := range []struct{ infix, resource, claim string }{
		{"5h", "unified-5h", "five_hour"},
		{"7d", "unified-7d", "seven_day"},
	} {
		p := "anthropic-ratelimit-unified-" + w.infix + "-"
		out = append(out, window{
			resource:       w.resource,
			claim:          w.claim,
			statusKey:      textproto.CanonicalMIMEHeaderKey(p + "status"),
			resetKey:       textproto.CanonicalMIMEHeaderKey(p + "reset"),
			utilizationKey: textproto.CanonicalMIMEHeaderKey(p + "utilization"),
		})
	}
	return out
}()

// Canonical names of the headers shared by the windows.
var (
	keyClaim        = textproto.CanonicalMIMEHeaderKey("anthropic-ratelimit-unified-representative-claim")
	keyUnifiedState = textproto.CanonicalMIMEHeaderKey("anthropic-ratelimit-unified-status")
	keyUnifiedReset = textproto.CanonicalMIMEHeaderKey("anthropic-ratelimit-unified-reset")
)

// Resource names that are not header families.
const (
	// ResourceBilling is a credit balance or billing problem (402
	// billing_error, "Your credit balance is too low …").
	ResourceBilling = "billing"
	// ResourceSpend is a spend limit: the monthly tier cap
	// (enforced_spend_limit_reached) or a limit the organisation or
	// workspace set ("You have reached your specified API usage limits").
	ResourceSpend = "spend"
)

// Principal returns the organisation id Anthropic sends in the
// anthropic-organization-id header, when present and well-formed. Quotas
// are per organisation; without it the caller falls back to the key's
// fingerprint.
func Principal(h http.Header) (string, bool) {
	return llm.Principal(h, "Anthropic-Organization-Id")
}

// Observations returns the quota states the rate-limit headers of a response
// describe, observed at now. Only Key.Resource of each key is set.
//
//   - anthropic-ratelimit-{requests,tokens,input-tokens,output-tokens}-
//     {limit,remaining,reset}: one state per family with a remaining count
//     and a reset (RFC 3339, moved onto this machine's clock with the
//     response's Date: ResetAt = now + (reset − Date)). Limit is
//     quota.Unknown when absent. A family with an absurd value (a negative
//     or non-numeric count, an unparseable reset) gives no state.
//   - The subscription (OAuth) headers anthropic-ratelimit-unified-*:
//     resources "unified-5h" and "unified-7d". Their units are percent: Limit
//     100 and Remaining round(100·(1 − utilization)), kept at 1 or more,
//     because only the status decides blocking (a used-up window may still
//     admit calls through overage): a window whose status (its own -status
//     header, or -unified-status when -unified-representative-claim names
//     the window) is "rejected" has Remaining 0. The reset is -<window>-reset, else
//     -unified-reset for the representative window; it is read as epoch
//     seconds, RFC 3339 or an HTTP-date, since Anthropic does not document
//     it. A window without a reset, or with neither utilization nor a
//     rejection, gives no state.
//
// Cause is exhausted when Remaining is 0. RawReset is the provider's reset
// in epoch seconds.
func Observations(h http.Header, now time.Time) []quota.State {
	return observations(h, llm.Date(h), now)
}

func observations(h http.Header, date, now time.Time) []quota.State {
	if len(h) == 0 {
		return nil
	}
	var out []quota.State
	for _, fam := range families {
		if s, ok := familyState(h, fam, date, now); ok {
			if out == nil {
				out = make([]quota.State, 0, len(families)+len(windows))
			}
			out = append(out, s)
		}
	}
	for _, w := range windows {
		if s, ok := windowState(h, w, date, now); ok {
			if out == nil {
				out = make([]quota.State, 0, len(families)+len(windows))
			}
			out = append(out, s)
		}
	}
	return out
}

// familyState reads anthropic-ratelimit-<fam>-{limit,remaining,reset}.
func familyState(h http.Header, fam llm.Family, date, now time.Time) (quota.State, bool) {
	limit, rem, resetV, ok := fam.Read(h)
	if !ok {
		return quota.State{}, false
	}
	reset, ok := resetparse.RFC3339(resetV)
	if !ok {
		return quota.State{}, false
	}
	return llm.HeaderState(fam.Resource, limit, rem, resetparse.SkewCorrect(reset, date, now), reset.Unix(), now), true
}

// windowState reads one subscription window of the unified headers.
func windowState(h http.Header, w window, date, now time.Time) (quota.State, bool) {
	representative := false
	if v, ok := llm.Get(h, keyClaim); ok && strings.EqualFold(v, w.claim) {
		representative = true
	}
	status, ok := llm.Get(h, w.statusKey)
	if !ok && representative {
		status, _ = llm.Get(h, keyUnifiedState)
	}
	resetV, ok := llm.Get(h, w.resetKey)
	if !ok && representative {
		resetV, ok = llm.Get(h, keyUnifiedReset)
	}
	if !ok {
		return quota.State{}, false
	}
	reset, ok := resetparse.Timestamp(resetV)
	if !ok {
		return quota.State{}, false
	}
	limit, rem := quota.Unknown, quota.Unknown
	if v, ok := llm.Get(h, w.utilizationKey); ok {
		if u, ok := utilization(v); ok {
			limit, rem = 100, percentLeft(u)
		}
	}
	if strings.EqualFold(status, "rejected") {
		rem = 0
	}
	if rem < 0 {
		return quota.State{}, false
	}
	return llm.HeaderState(w.resource, limit, rem, resetparse.SkewCorrect(reset, date, now), reset.Unix(), now), true
}

// utilization parses a utilization fraction: a finite, non-negative decimal.
func utilization(v string) (float64, bool) {
	if v == "" || len(v) > 32 || strings.ContainsAny(v, "eEinfINFxX_+-") {
		return 0, false
	}
	u, err := strconv.ParseFloat(v, 64)
	if err != nil || math.IsNaN(u) || math.IsInf(u, 0) || u < 0 {
		return 0, false
	}
	return u, true
}

// percentLeft is the percent of a window left at utilization u, at least
// 1: only a rejected status empties a window (a window used up may still
// admit calls through overage).
func percentLeft(u float64) int64 {
	if u >= 1 {
		return 1
	}
	return max(int64(math.Round(100*(1-u))), 1)
}

// SpendCapReset is when Anthropic's monthly spend cap
// (enforced_spend_limit_reached) lifts, as its rate-limits documentation
// states it: 00:00 UTC on the first day of the month after t.
func SpendCapReset(t time.Time) time.Time {
	t = t.UTC()
	return time.Date(t.Year(), t.Month()+1, 1, 0, 0, 0, 0, time.UTC)
}
