package gemini

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/layoverhq/layover/provider"
	"github.com/layoverhq/layover/provider/internal/resetcheck"
)

func FuzzClassifyHTTP(f *testing.F) {
	skewed := "Date: " + httpDate(now.Add(-time.Hour)) + "\n"
	perMinute := quotaFailure(violationJSON(metricRequests, idPerMinute, "gemini-2.5-pro", "5"))
	perDay := quotaFailure(violationJSON(metricRequests, idPerDayFree, "gemini-2.5-pro", "100"))
	seeds := []struct {
		code int
		hdr  string
		body string
	}{
		{200, "", `{"candidates":[]}`},
		{429, "", gErr(429, "RESOURCE_EXHAUSTED", msgExceeded, perMinute, help, retryInfo("26s"))},
		{429, skewed, gErr(429, "RESOURCE_EXHAUSTED", msgExceeded, perDay, retryInfo("34.074824224s"))},
		{429, "", gErr(429, "RESOURCE_EXHAUSTED", msgLimitZero)},
		{429, "", gErr(429, "RESOURCE_EXHAUSTED", msgPerMinute)},
		{429, "retry-after: 20\n", gErr(429, "RESOURCE_EXHAUSTED", msgVertex)},
		{429, "", gErr(429, "RESOURCE_EXHAUSTED", msgCodeAssist, errorInfo("RATE_LIMIT_EXCEEDED", `{"quota_limit":"GeminiRequestsPerDayPerUserPerTier","quota_limit_value":"100"}`))},
		{429, "", gErr(429, "RESOURCE_EXHAUSTED", "x", errorInfo("MODEL_CAPACITY_EXHAUSTED", ""))},
		{403, "", gErr(403, "PERMISSION_DENIED", "x", errorInfo("VALIDATION_REQUIRED", ""))},
		{503, "", gErr(503, "UNAVAILABLE", msgOverloaded)},
		{200, "content-type: text/event-stream\n", "data: " + gErr(429, "RESOURCE_EXHAUSTED", "Please retry in 1h2m3.5s", perDay) + "\n\n"},
		{200, "", "[" + gErr(429, "RESOURCE_EXHAUSTED", msgDetailLess) + "]"},
		{429, "", `{"error":{"code":"429","details":[{"@type":"type.googleapis.com/google.rpc.RetryInfo","retryDelay":"-5s"},{"@type":"type.googleapis.com/google.rpc.QuotaFailure","violations":[{"quotaValue":-1}]}]}}`},
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
		resp := &http.Response{StatusCode: code, Header: resetcheck.ParseHeaderText(hdr)}
		out := ClassifyHTTP(resp, body, now)
		if err := resetcheck.CheckOutcome(out, Provider, input, now); err != nil {
			t.Fatalf("ClassifyHTTP(%d, %q, %q): %v", code, hdr, body, err)
		}
		raw := fmt.Sprintf("HTTP/1.1 %d\r\n%s\r\n\r\n", code, strings.ReplaceAll(hdr, "\n", "\r\n"))
		if r, b, err := provider.ParseRawHTTP(append([]byte(raw), body...)); err == nil {
			out := ClassifyHTTP(r, b, now)
			if err := resetcheck.CheckOutcome(out, Provider, raw+string(body), now); err != nil {
				t.Fatalf("ClassifyHTTP(raw %q): %v", raw, err)
			}
		}
	})
}
