package gemini

import (
	"net/http"
	"testing"
	"time"

	"github.com/layoverhq/layover/provider"
	"github.com/layoverhq/layover/provider/internal/providertest"
)

// Verbatim texts from docs/provider-signals.md §4 (the elided parts filled in as
// the API writes them).
const (
	msgExceeded    = "You exceeded your current quota, please check your plan and billing details. For more information on this error, head to: https://ai.google.dev/gemini-api/docs/rate-limits."
	msgLimitZero   = "You exceeded your current quota, please check your plan and billing details. For more information on this error, head to: https://ai.google.dev/gemini-api/docs/rate-limits. To monitor your current usage, head to: https://ai.dev/usage?tab=rate-limit. \n* Quota exceeded for metric: generativelanguage.googleapis.com/generate_content_free_tier_requests, limit: 0, model: gemini-2.5-pro\nPlease retry in 10h17m5.723541104s."
	msgPerMinute   = "You exceeded your current quota, please check your plan and billing details. \n* Quota exceeded for metric: generativelanguage.googleapis.com/generate_content_free_tier_requests, limit: 5, model: gemini-2.5-pro\nPlease retry in 26.4s."
	msgDetailLess  = "Resource has been exhausted (e.g. check quota)."
	msgVertex      = "Resource exhausted. Please try again later. Please refer to https://cloud.google.com/vertex-ai/generative-ai/docs/error-code-429 for more details."
	msgCodeAssist  = "Quota exceeded for quota metric 'Gemini 2.5 Pro Requests' and limit 'Gemini 2.5 Pro Requests per day per user per tier' of service 'cloudcode-pa.googleapis.com' for consumer 'project_number:681255809395'."
	msgOverloaded  = "The model is overloaded. Please try again later."
	msgKeyInvalid  = "API key not valid. Please pass a valid API key."
	metricRequests = "generativelanguage.googleapis.com/generate_content_free_tier_requests"
	metricInput    = "generativelanguage.googleapis.com/generate_content_free_tier_input_token_count"
	idPerMinute    = "GenerateRequestsPerMinutePerProjectPerModel-FreeTier"
	idInputPerMin  = "GenerateContentInputTokensPerModelPerMinute-FreeTier"
	idPerDayFree   = "GenerateRequestsPerDayPerProjectPerModel-FreeTier"
	idPerDay       = "GenerateRequestsPerDayPerProjectPerModel"
)

func TestClassifyHTTP(t *testing.T) {
	t.Parallel()
	perMinute := quotaFailure(violationJSON(metricRequests, idPerMinute, "gemini-2.5-pro", "5"))
	perDay := quotaFailure(violationJSON(metricRequests, idPerDayFree, "gemini-2.5-pro", "100"))
	both := quotaFailure(violationJSON(metricRequests, idPerMinute, "gemini-2.5-flash", "10"), violationJSON(metricRequests, idPerDay, "gemini-2.5-flash", "250"))
	codeAssist := `{"error":{"code":429,"message":` + providertest.JSONQuote(msgCodeAssist) + `,"errors":[{"message":` + providertest.JSONQuote(msgCodeAssist) + `,"domain":"global","reason":"rateLimitExceeded"}],"status":"RESOURCE_EXHAUSTED","details":[` +
		errorInfo("RATE_LIMIT_EXCEEDED", `{"quota_limit":"GeminiRequestsPerDayPerUserPerTier","quota_metric":"cloudcode-pa.googleapis.com/gemini_2_5_pro_requests","quota_limit_value":"100","consumer":"projects/681255809395","service":"cloudcode-pa.googleapis.com"}`) + `]}}`
	tests := []struct {
		name string
		resp *http.Response
		body string
		want want
	}{
		{
			name: "200 is ok",
			resp: response(200),
			body: `{"candidates":[{"content":{"parts":[{"text":"hi"}],"role":"model"}}],"usageMetadata":{"promptTokenCount":2}}`,
			want: want{Class: provider.ClassOK, RetryAfter: -1, Remaining: unknown, Limit: unknown, Reason: "HTTP 200"},
		},
		// §4 429 with RetryInfo and QuotaFailure.
		{
			name: "per-minute quota with RetryInfo is secondary",
			resp: response(429),
			body: gErr(429, "RESOURCE_EXHAUSTED", msgExceeded, perMinute, help, retryInfo("26s")),
			want: want{Class: provider.ClassSecondary, Resource: "requests-per-minute:gemini-2.5-pro", RetryAfter: 26 * time.Second, Remaining: 0, Limit: 5,
				Reason: "429 RESOURCE_EXHAUSTED (requests-per-minute:gemini-2.5-pro); RetryInfo retryDelay 26s"},
		},
		{
			name: "fractional retryDelay",
			resp: response(429),
			body: gErr(429, "RESOURCE_EXHAUSTED", msgExceeded, quotaFailure(violationJSON(metricInput, idInputPerMin, "gemini-2.0-flash", "1000000")), retryInfo("34.074824224s")),
			want: want{Class: provider.ClassSecondary, Resource: "input-tokens-per-minute:gemini-2.0-flash", RetryAfter: 34074824224 * time.Nanosecond, Remaining: 0, Limit: 1000000,
				Reason: "retryDelay 34.075s"},
		},
		{
			name: "RetryInfo wins over the message's delay",
			resp: response(429),
			body: gErr(429, "RESOURCE_EXHAUSTED", msgPerMinute, perMinute, retryInfo("26s")),
			want: want{Class: provider.ClassSecondary, Resource: "requests-per-minute:gemini-2.5-pro", RetryAfter: 26 * time.Second, Remaining: 0, Limit: 5, Reason: "RetryInfo"},
		},
		{
			name: "message delay when there is no RetryInfo",
			resp: response(429),
			body: gErr(429, "RESOURCE_EXHAUSTED", msgPerMinute, perMinute),
			want: want{Class: provider.ClassSecondary, Resource: "requests-per-minute:gemini-2.5-pro", RetryAfter: 26400 * time.Millisecond, Remaining: 0, Limit: 5, Reason: "the message says retry in 26.4s"},
		},
		{
			name: "message text alone names the metric, limit and model",
			resp: response(429),
			body: gErr(429, "RESOURCE_EXHAUSTED", msgPerMinute),
			want: want{Class: provider.ClassSecondary, Resource: "requests:gemini-2.5-pro", RetryAfter: 26400 * time.Millisecond, Remaining: 0, Limit: 5, Reason: "retry in 26.4s"},
		},
		{
			name: "a per-minute limit with a long stated wait is quota",
			resp: response(429),
			body: gErr(429, "RESOURCE_EXHAUSTED", msgExceeded, perMinute, errorInfo("RATE_LIMIT_EXCEEDED", ""), retryInfo("600s")),
			want: want{Class: provider.ClassQuota, Resource: "requests-per-minute:gemini-2.5-pro", ResetAt: now.Add(10 * time.Minute), RetryAfter: 10 * time.Minute, Remaining: 0, Limit: 5,
				Reason: "RATE_LIMIT_EXCEEDED (requests-per-minute:gemini-2.5-pro); RetryInfo retryDelay 10m0s (over 5m0s: quota)", Obs: 1},
		},
		// Tricky case 4: per-day quotaId, limit: 0.
		{
			name: "per-day quotaId is quota with the stated reset",
			resp: response(429),
			body: gErr(429, "RESOURCE_EXHAUSTED", msgExceeded, perDay, retryInfo("37025s")),
			want: want{Class: provider.ClassQuota, Resource: "requests-per-day:gemini-2.5-pro", ResetAt: now.Add(37025 * time.Second), RetryAfter: 37025 * time.Second, Remaining: 0, Limit: 100,
				Reason: "daily quota; RetryInfo retryDelay 10h17m5s", Obs: 1},
		},
		{
			name: "per-day quotaId without a delay: reset unknown (no midnight is derived)",
			resp: response(429),
			body: gErr(429, "RESOURCE_EXHAUSTED", msgExceeded, quotaFailure(violationJSON(metricRequests, idPerDay, "gemini-2.5-pro", "1000"))),
			want: want{Class: provider.ClassQuota, Resource: "requests-per-day:gemini-2.5-pro", RetryAfter: -1, Remaining: 0, Limit: 1000, Reason: "daily quota, reset unknown"},
		},
		{
			name: "the daily violation decides over the per-minute one",
			resp: response(429),
			body: gErr(429, "RESOURCE_EXHAUSTED", msgExceeded, both, retryInfo("30s")),
			want: want{Class: provider.ClassQuota, Resource: "requests-per-day:gemini-2.5-flash", ResetAt: now.Add(30 * time.Second), RetryAfter: 30 * time.Second, Remaining: 0, Limit: 250, Reason: "daily quota", Obs: 1},
		},
		{
			name: "limit: 0 in the text is quota, compound delay parsed",
			resp: response(429),
			body: gErr(429, "RESOURCE_EXHAUSTED", msgLimitZero),
			want: want{Class: provider.ClassQuota, Resource: "requests:gemini-2.5-pro", ResetAt: now.Add(10*time.Hour + 17*time.Minute + 5723541104*time.Nanosecond),
				RetryAfter: 10*time.Hour + 17*time.Minute + 5723541104*time.Nanosecond, Remaining: 0, Limit: 0, Reason: "limit: 0, the tier has no quota for this model", Obs: 1},
		},
		{
			name: "limit: 0 with a per-minute violation is still quota",
			resp: response(429),
			body: gErr(429, "RESOURCE_EXHAUSTED", msgLimitZero, quotaFailure(violationJSON(metricRequests, idPerMinute, "gemini-2.5-pro", "0")), retryInfo("26s")),
			want: want{Class: provider.ClassQuota, Resource: "requests-per-minute:gemini-2.5-pro", ResetAt: now.Add(26 * time.Second), RetryAfter: 26 * time.Second, Remaining: 0, Limit: 0,
				Reason: "limit: 0", Obs: 1},
		},
		// Tricky case 10: detail-less texts.
		{
			name: "detail-less Resource has been exhausted",
			resp: response(429),
			body: gErr(429, "RESOURCE_EXHAUSTED", msgDetailLess),
			want: want{Class: provider.ClassSecondary, RetryAfter: -1, Remaining: unknown, Limit: unknown, Reason: "429 RESOURCE_EXHAUSTED; no retry-after"},
		},
		{
			name: "Vertex resource exhausted",
			resp: response(429),
			body: gErr(429, "RESOURCE_EXHAUSTED", msgVertex),
			want: want{Class: provider.ClassSecondary, RetryAfter: -1, Remaining: unknown, Limit: unknown, Reason: "no retry-after"},
		},
		{
			name: "Retry-After header when the body states nothing",
			resp: response(429, "Retry-After", "20"),
			body: gErr(429, "RESOURCE_EXHAUSTED", msgVertex),
			want: want{Class: provider.ClassSecondary, RetryAfter: 20 * time.Second, Remaining: unknown, Limit: unknown, Reason: "retry-after 20s"},
		},
		// §4 Code Assist.
		{
			name: "Code Assist per-day limit is quota",
			resp: response(429),
			body: codeAssist,
			want: want{Class: provider.ClassQuota, Resource: "requests-per-day:gemini-2.5-pro", RetryAfter: -1, Remaining: unknown, Limit: 100,
				Reason: "RATE_LIMIT_EXCEEDED (requests-per-day:gemini-2.5-pro); daily quota, reset unknown"},
		},
		{
			name: "Code Assist text alone names the model",
			resp: response(429),
			body: gErr(429, "RESOURCE_EXHAUSTED", msgCodeAssist),
			want: want{Class: provider.ClassQuota, Resource: "requests-per-day:gemini-2.5-pro", RetryAfter: -1, Remaining: unknown, Limit: unknown, Reason: "daily quota"},
		},
		{
			name: "RATE_LIMIT_EXCEEDED with a short delay is secondary",
			resp: response(429),
			body: gErr(429, "RESOURCE_EXHAUSTED", "Rate limit exceeded.", errorInfo("RATE_LIMIT_EXCEEDED", `{"quota_limit":"GenerateContentRequestsPerMinutePerUser","model":"gemini-2.5-flash"}`), retryInfo("5s")),
			want: want{Class: provider.ClassSecondary, Resource: "requests-per-minute:gemini-2.5-flash", RetryAfter: 5 * time.Second, Remaining: unknown, Limit: unknown, Reason: "RATE_LIMIT_EXCEEDED"},
		},
		{
			name: "QUOTA_EXHAUSTED is quota",
			resp: response(429),
			body: gErr(429, "RESOURCE_EXHAUSTED", "Quota exhausted.", errorInfo("QUOTA_EXHAUSTED", "")),
			want: want{Class: provider.ClassQuota, RetryAfter: -1, Remaining: unknown, Limit: unknown, Reason: "QUOTA_EXHAUSTED, reset unknown"},
		},
		{
			name: "MODEL_CAPACITY_EXHAUSTED is transient",
			resp: response(429),
			body: gErr(429, "RESOURCE_EXHAUSTED", "No capacity available for model gemini-2.5-pro on the server", errorInfo("MODEL_CAPACITY_EXHAUSTED", "")),
			want: want{Class: provider.ClassTransient, RetryAfter: -1, Remaining: unknown, Limit: unknown, Reason: "model capacity exhausted"},
		},
		{
			name: "INSUFFICIENT_G1_CREDITS_BALANCE is quota",
			resp: response(429),
			body: gErr(429, "RESOURCE_EXHAUSTED", "Insufficient credits.", errorInfo("INSUFFICIENT_G1_CREDITS_BALANCE", "")),
			want: want{Class: provider.ClassQuota, Resource: ResourceBilling, RetryAfter: -1, Remaining: unknown, Limit: unknown, Reason: "INSUFFICIENT_G1_CREDITS_BALANCE"},
		},
		// Tricky case 6: 403 VALIDATION_REQUIRED is an account action.
		{
			name: "403 VALIDATION_REQUIRED is auth",
			resp: response(403),
			body: gErr(403, "PERMISSION_DENIED", "Verify your account to continue.", errorInfo("VALIDATION_REQUIRED", `{"validation_url":"https://accounts.google.com/signin/continue"}`)),
			want: want{Class: provider.ClassAuth, RetryAfter: -1, Remaining: unknown, Limit: unknown, Reason: "VALIDATION_REQUIRED (an account action, not a quota)"},
		},
		// Tricky case 5: overload is 503.
		{
			name: "503 overloaded is transient",
			resp: response(503),
			body: gErr(503, "UNAVAILABLE", msgOverloaded),
			want: want{Class: provider.ClassTransient, RetryAfter: -1, Remaining: unknown, Limit: unknown, Reason: "503 UNAVAILABLE (overload)"},
		},
		{
			name: "400 API_KEY_INVALID is auth",
			resp: response(400),
			body: gErr(400, "INVALID_ARGUMENT", msgKeyInvalid, errorInfo("API_KEY_INVALID", `{"service":"generativelanguage.googleapis.com"}`)),
			want: want{Class: provider.ClassAuth, RetryAfter: -1, Remaining: unknown, Limit: unknown, Reason: "400 INVALID_ARGUMENT: API key not valid"},
		},
		{
			name: "401 UNAUTHENTICATED is auth",
			resp: response(401),
			body: gErr(401, "UNAUTHENTICATED", "Request had invalid authentication credentials."),
			want: want{Class: provider.ClassAuth, RetryAfter: -1, Remaining: unknown, Limit: unknown, Reason: "401 UNAUTHENTICATED"},
		},
		{
			name: "400 INVALID_ARGUMENT is permanent",
			resp: response(400),
			body: gErr(400, "INVALID_ARGUMENT", "Invalid JSON payload received."),
			want: want{Class: provider.ClassPermanent, RetryAfter: -1, Remaining: unknown, Limit: unknown, Reason: "400 INVALID_ARGUMENT"},
		},
		{
			name: "403 PERMISSION_DENIED is permanent",
			resp: response(403),
			body: gErr(403, "PERMISSION_DENIED", "Generative Language API has not been used in project 1 before or it is disabled.", errorInfo("SERVICE_DISABLED", "")),
			want: want{Class: provider.ClassPermanent, RetryAfter: -1, Remaining: unknown, Limit: unknown, Reason: "403 PERMISSION_DENIED"},
		},
		{
			name: "500 INTERNAL is transient",
			resp: response(500),
			body: gErr(500, "INTERNAL", "An internal error has occurred."),
			want: want{Class: provider.ClassTransient, RetryAfter: -1, Remaining: unknown, Limit: unknown, Reason: "500 INTERNAL"},
		},
		{
			name: "499 CANCELLED is transient",
			resp: response(499),
			body: gErr(499, "CANCELLED", "The operation was cancelled."),
			want: want{Class: provider.ClassTransient, RetryAfter: -1, Remaining: unknown, Limit: unknown, Reason: "499 CANCELLED (cancelled)"},
		},
		{
			name: "499 with quota details is a quota signal",
			resp: response(499),
			body: gErr(499, "CANCELLED", msgExceeded, perMinute, retryInfo("26s")),
			want: want{Class: provider.ClassSecondary, Resource: "requests-per-minute:gemini-2.5-pro", RetryAfter: 26 * time.Second, Remaining: 0, Limit: 5, Reason: "499 CANCELLED"},
		},
		// Tricky case 3: errors inside a 200 (alt=sse, and the JSON array stream).
		{
			name: "200 SSE stream with a RESOURCE_EXHAUSTED error",
			resp: response(200, "Content-Type", "text/event-stream"),
			body: "data: {\"candidates\":[{\"content\":{\"parts\":[{\"text\":\"Hel\"}]}}]}\r\n\r\ndata: " + gErr(429, "RESOURCE_EXHAUSTED", msgExceeded, perMinute, retryInfo("26s")) + "\r\n\r\n",
			want: want{Class: provider.ClassSecondary, Resource: "requests-per-minute:gemini-2.5-pro", RetryAfter: 26 * time.Second, Remaining: 0, Limit: 5,
				Reason: "200 with a stream error event RESOURCE_EXHAUSTED"},
		},
		{
			name: "200 JSON array stream ending in an overload",
			resp: response(200),
			body: `[{"candidates":[{"content":{"parts":[{"text":"Hel"}]}}]},` + gErr(503, "UNAVAILABLE", msgOverloaded) + `]`,
			want: want{Class: provider.ClassTransient, RetryAfter: -1, Remaining: unknown, Limit: unknown, Reason: "200 with an error body UNAVAILABLE"},
		},
		{
			name: "200 stream without errors is ok",
			resp: response(200, "Content-Type", "text/event-stream"),
			body: "data: {\"candidates\":[{\"content\":{\"parts\":[{\"text\":\"error handling\"}]}}]}\n\n",
			want: want{Class: provider.ClassOK, RetryAfter: -1, Remaining: unknown, Limit: unknown, Reason: "HTTP 200"},
		},
		{
			name: "non-JSON 429",
			resp: response(429),
			body: "Too Many Requests",
			want: want{Class: provider.ClassSecondary, RetryAfter: -1, Remaining: unknown, Limit: unknown, Reason: "429; no retry-after"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			check(t, ClassifyHTTP(tt.resp, []byte(tt.body), now), tt.want)
		})
	}
}

func TestClassifyHTTPNil(t *testing.T) {
	t.Parallel()
	check(t, ClassifyHTTP(nil, nil, now), want{Class: provider.ClassPermanent, RetryAfter: -1, Remaining: unknown, Limit: unknown, Reason: "no HTTP response"})
}

func TestRejectedStateRawReset(t *testing.T) {
	t.Parallel()
	date := now.Add(-time.Hour)
	body := gErr(429, "RESOURCE_EXHAUSTED", msgExceeded, quotaFailure(violationJSON(metricRequests, idPerDayFree, "gemini-2.5-pro", "100")), retryInfo("3600s"))
	got := ClassifyHTTP(response(429, "Date", httpDate(date)), []byte(body), now)
	if len(got.Observations) != 1 {
		t.Fatalf("observations %+v", got.Observations)
	}
	if s := got.Observations[0]; s.RawReset != date.Add(time.Hour).Unix() || !s.ResetAt.Equal(now.Add(time.Hour)) {
		t.Errorf("state %+v", s)
	}
}

func TestPrincipalAndObservations(t *testing.T) {
	t.Parallel()
	h := response(429, "Date", httpDate(now), "X-Goog-Api-Client", "x").Header
	if p, ok := Principal(h); ok || p != "" {
		t.Errorf("Principal = %q, %v", p, ok)
	}
	if got := Observations(h, now); got != nil {
		t.Errorf("Observations = %+v", got)
	}
}

func TestResourceNames(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ id, metric, model, want string }{
		{idPerMinute, metricRequests, "gemini-2.5-pro", "requests-per-minute:gemini-2.5-pro"},
		{idInputPerMin, metricInput, "gemini-2.0-flash", "input-tokens-per-minute:gemini-2.0-flash"},
		{idPerDayFree, metricRequests, "models/gemini-2.5-flash", "requests-per-day:gemini-2.5-flash"},
		{"GenerateContentOutputTokensPerModelPerDay", "", "", "output-tokens-per-day"},
		{"", metricInput, "gemini-2.0-flash", "input-tokens:gemini-2.0-flash"},
		{"SomethingElse", "", "Gemini 2.5 Pro", "somethingelse"},
		{"", "", "gemini-2.5-pro", ""},
	} {
		if got := violationResource(violation{id: c.id, metric: c.metric, model: c.model}); got != c.want {
			t.Errorf("violationResource(%q, %q, %q) = %q, want %q", c.id, c.metric, c.model, got, c.want)
		}
	}
	if got := limitNameResource(msgCodeAssist); got != "requests-per-day:gemini-2.5-pro" {
		t.Errorf("limitNameResource = %q", got)
	}
}
