package openai

import (
	"net/http"
	"strings"
	"time"

	"github.com/layoverhq/layover/provider/internal/llm"
	"github.com/layoverhq/layover/provider/resetparse"
	"github.com/layoverhq/layover/quota"
)

// Provider is the Outcome.Provider of every classification in this package.
const Provider = "openai"

// families are the x-ratelimit-{limit,remaining,reset}-<name> header
// families, in the order Observations returns them. The _usage_based
// variants are named with '-' in resources ("tokens-usage-based").
var families = func() []llm.Family {
	var out []llm.Family
	for _, name := range []string{"requests", "tokens", "requests_usage_based", "tokens_usage_based"} {
		out = append(out, llm.NewFamily(strings.ReplaceAll(name, "_", "-"),
			"x-ratelimit-limit-"+name, "x-ratelimit-remaining-"+name, "x-ratelimit-reset-"+name))
	}
	return out
}()

// Resource names that are not header families.
const (
	// ResourceBilling is the account's credit or plan: insufficient_quota,
	// credit_balance_exhausted, a 402.
	ResourceBilling = "billing"
	// ResourceSpend is an organisation or project spend limit.
	ResourceSpend = "spend"
)

// Principal returns the organisation OpenAI sends in the
// openai-organization header (an org id or slug, "user-…" for personal
// accounts), when present and well-formed. Without it the caller falls
// back to the key's fingerprint.
func Principal(h http.Header) (string, bool) {
	return llm.Principal(h, "Openai-Organization")
}

// Observations returns the quota states the x-ratelimit-* headers of a
// response describe, observed at now: one per family ("requests", "tokens",
// and the "-usage-based" variants when sent) with a remaining count and a
// reset. Only Key.Resource of each key is set.
//
// x-ratelimit-reset-<family> is the time until the limit is fully
// replenished, written as a Go duration ("1s", "6m0s", "12ms"); it is
// measured from receipt: ResetAt = now + reset. RawReset is that instant in
// epoch seconds on the provider's clock (Date + reset, or now + reset
// without a Date). Limit is quota.Unknown when x-ratelimit-limit-<family>
// is absent. A family with an absurd value (a negative count such as
// Azure's -1, a limit of 0, an unparseable reset) gives no state. Cause is
// exhausted when Remaining is 0.
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
				out = make([]quota.State, 0, len(families))
			}
			out = append(out, s)
		}
	}
	return out
}

// familyState reads x-ratelimit-{limit,remaining,reset}-<fam>. A limit of
// 0 is absurd and gives no state.
func familyState(h http.Header, fam llm.Family, date, now time.Time) (quota.State, bool) {
	limit, rem, resetV, ok := fam.Read(h)
	if !ok || limit == 0 {
		return quota.State{}, false
	}
	d, ok := resetparse.GoDuration(resetV)
	if !ok {
		return quota.State{}, false
	}
	at := now.Add(d)
	return llm.HeaderState(fam.Resource, limit, rem, at, llm.RawReset(at, date, now), now), true
}
