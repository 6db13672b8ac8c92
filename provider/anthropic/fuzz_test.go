package anthropic

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/layoverhq/layover/provider/internal/providertest"
	"github.com/layoverhq/layover/provider/internal/resetcheck"
)

// spendCapDerivations are the resets the documented spend-cap rule may
// derive from input: the 1st of next month of now or of a Date line, moved
// by that Date.
func spendCapDerivations(input string) []time.Time {
	if !strings.Contains(strings.ToLower(input), "enforced_spend_limit_reached") {
		return nil
	}
	out := []time.Time{SpendCapReset(now)}
	for _, d := range resetcheck.Dates(input) {
		b := SpendCapReset(d)
		out = append(out, b, now.Add(b.Sub(d)))
	}
	return out
}

func FuzzClassifyHTTP(f *testing.F) {
	date := "Date: " + httpDate(now) + "\n"
	skewed := "Date: " + httpDate(now.Add(-time.Hour)) + "\n"
	fam := func(name string, rem int, reset time.Time) string {
		p := "anthropic-ratelimit-" + name + "-"
		return fmt.Sprintf("%slimit: 1000\n%sremaining: %d\n%sreset: %s\n", p, p, rem, p, rfc(reset))
	}
	unified := "anthropic-ratelimit-unified-status: rejected\nanthropic-ratelimit-unified-representative-claim: five_hour\n" +
		"anthropic-ratelimit-unified-5h-utilization: 1.0\nanthropic-ratelimit-unified-5h-reset: " + epoch(now.Add(7999*time.Second)) + "\n"
	seeds := []providertest.Seed{
		{Code: 200, Hdr: date + fam("requests", 999, now.Add(time.Minute)), Body: `{"type":"message"}`},
		{Code: 429, Hdr: date + "retry-after: 30\n" + fam("input-tokens", 0, now.Add(30*time.Second)), Body: errBody("rate_limit_error", msgOrgInputTokens)},
		{Code: 429, Hdr: "retry-after: 7999\n" + unified, Body: errBody("rate_limit_error", msgAccount)},
		{Code: 429, Hdr: skewed, Body: spendCapBody("You have reached your API usage limits.")},
		{Code: 429, Hdr: "", Body: spendCapBody(msgSpendCap)},
		{Code: 400, Hdr: skewed, Body: errBody("invalid_request_error", msgUsageLimits)},
		{Code: 400, Hdr: "", Body: errBody("invalid_request_error", msgCredit)},
		{Code: 529, Hdr: "", Body: errBody("overloaded_error", "Overloaded")},
		{Code: 200, Hdr: "content-type: text/event-stream\n", Body: sse("message_start", streamStart, "error", errBody("rate_limit_error", "Please try again in 12s"))},
		{Code: 429, Hdr: skewed + "retry-after: " + httpDate(now.Add(-time.Hour+90*time.Second)) + "\n", Body: errBody("rate_limit_error", msgOrgRequests)},
		{Code: 429, Hdr: "retry-after-ms: 1500\n", Body: ""},
		{Code: 413, Hdr: "", Body: errBody("request_too_large", "too big")},
		{Code: 401, Hdr: "", Body: errBody("authentication_error", "invalid x-api-key")},
		{Code: 429, Hdr: "anthropic-ratelimit-unified-5h-reset: 1774447200000\nanthropic-ratelimit-unified-5h-status: rejected\n", Body: "{"},
	}
	providertest.FuzzHTTP(f, Provider, seeds, ClassifyHTTP, Observations, spendCapDerivations)
}
