package anthropic

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/layoverhq/layover/provider"
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
	seeds := []struct {
		code int
		hdr  string
		body string
	}{
		{200, date + fam("requests", 999, now.Add(time.Minute)), `{"type":"message"}`},
		{429, date + "retry-after: 30\n" + fam("input-tokens", 0, now.Add(30*time.Second)), errBody("rate_limit_error", msgOrgInputTokens)},
		{429, "retry-after: 7999\n" + unified, errBody("rate_limit_error", msgAccount)},
		{429, skewed, spendCapBody("You have reached your API usage limits.")},
		{429, "", spendCapBody(msgSpendCap)},
		{400, skewed, errBody("invalid_request_error", msgUsageLimits)},
		{400, "", errBody("invalid_request_error", msgCredit)},
		{529, "", errBody("overloaded_error", "Overloaded")},
		{200, "content-type: text/event-stream\n", sse("message_start", streamStart, "error", errBody("rate_limit_error", "Please try again in 12s"))},
		{429, skewed + "retry-after: " + httpDate(now.Add(-time.Hour+90*time.Second)) + "\n", errBody("rate_limit_error", msgOrgRequests)},
		{429, "retry-after-ms: 1500\n", ""},
		{413, "", errBody("request_too_large", "too big")},
		{401, "", errBody("authentication_error", "invalid x-api-key")},
		{429, "anthropic-ratelimit-unified-5h-reset: 1774447200000\nanthropic-ratelimit-unified-5h-status: rejected\n", "{"},
	}
	for _, s := range seeds {
		f.Add(s.code, s.hdr, []byte(s.body))
	}
	f.Fuzz(func(t *testing.T, code int, hdr string, body []byte) {
		if code < 0 {
			code = -code
		}
		code = 100 + code%500
		input := hdr + "\n" + string(body)
		extra := spendCapDerivations(input)
		resp := &http.Response{StatusCode: code, Header: resetcheck.ParseHeaderText(hdr)}
		out := ClassifyHTTP(resp, body, now)
		if err := resetcheck.CheckOutcome(out, Provider, input, now, extra...); err != nil {
			t.Fatalf("ClassifyHTTP(%d, %q, %q): %v", code, hdr, body, err)
		}
		for _, s := range Observations(resp.Header, now) {
			if err := resetcheck.CheckState(s, input, now); err != nil {
				t.Fatalf("Observations(%q): %v", hdr, err)
			}
		}
		// The same response as curl -i prints it.
		raw := fmt.Sprintf("HTTP/1.1 %d\r\n%s\r\n\r\n", code, strings.ReplaceAll(hdr, "\n", "\r\n"))
		if r, b, err := provider.ParseRawHTTP(append([]byte(raw), body...)); err == nil {
			out := ClassifyHTTP(r, b, now)
			if err := resetcheck.CheckOutcome(out, Provider, raw+string(body), now, extra...); err != nil {
				t.Fatalf("ClassifyHTTP(raw %q): %v", raw, err)
			}
		}
	})
}
