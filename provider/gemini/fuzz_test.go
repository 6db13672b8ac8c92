package gemini

import (
	"testing"
	"time"

	"github.com/layoverhq/layover/provider/internal/providertest"
)

func FuzzClassifyHTTP(f *testing.F) {
	skewed := "Date: " + httpDate(now.Add(-time.Hour)) + "\n"
	perMinute := quotaFailure(violationJSON(metricRequests, idPerMinute, "gemini-2.5-pro", "5"))
	perDay := quotaFailure(violationJSON(metricRequests, idPerDayFree, "gemini-2.5-pro", "100"))
	seeds := []providertest.Seed{
		{Code: 200, Hdr: "", Body: `{"candidates":[]}`},
		{Code: 429, Hdr: "", Body: gErr(429, "RESOURCE_EXHAUSTED", msgExceeded, perMinute, help, retryInfo("26s"))},
		{Code: 429, Hdr: skewed, Body: gErr(429, "RESOURCE_EXHAUSTED", msgExceeded, perDay, retryInfo("34.074824224s"))},
		{Code: 429, Hdr: "", Body: gErr(429, "RESOURCE_EXHAUSTED", msgLimitZero)},
		{Code: 429, Hdr: "", Body: gErr(429, "RESOURCE_EXHAUSTED", msgPerMinute)},
		{Code: 429, Hdr: "retry-after: 20\n", Body: gErr(429, "RESOURCE_EXHAUSTED", msgVertex)},
		{Code: 429, Hdr: "", Body: gErr(429, "RESOURCE_EXHAUSTED", msgCodeAssist, errorInfo("RATE_LIMIT_EXCEEDED", `{"quota_limit":"GeminiRequestsPerDayPerUserPerTier","quota_limit_value":"100"}`))},
		{Code: 429, Hdr: "", Body: gErr(429, "RESOURCE_EXHAUSTED", "x", errorInfo("MODEL_CAPACITY_EXHAUSTED", ""))},
		{Code: 403, Hdr: "", Body: gErr(403, "PERMISSION_DENIED", "x", errorInfo("VALIDATION_REQUIRED", ""))},
		{Code: 503, Hdr: "", Body: gErr(503, "UNAVAILABLE", msgOverloaded)},
		{Code: 200, Hdr: "content-type: text/event-stream\n", Body: "data: " + gErr(429, "RESOURCE_EXHAUSTED", "Please retry in 1h2m3.5s", perDay) + "\n\n"},
		{Code: 200, Hdr: "", Body: "[" + gErr(429, "RESOURCE_EXHAUSTED", msgDetailLess) + "]"},
		{Code: 429, Hdr: "", Body: `{"error":{"code":"429","details":[{"@type":"type.googleapis.com/google.rpc.RetryInfo","retryDelay":"-5s"},{"@type":"type.googleapis.com/google.rpc.QuotaFailure","violations":[{"quotaValue":-1}]}]}}`},
	}
	providertest.FuzzHTTP(f, Provider, seeds, ClassifyHTTP, nil, nil)
}
