package openai

import (
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/layoverhq/layover/provider"
	"github.com/layoverhq/layover/provider/internal/providertest"
	"github.com/layoverhq/layover/quota"
)

// Verbatim texts from docs/provider-signals.md §3 (and §5 Kimi, whose API is
// OpenAI-compatible), with the elided organisation ids filled in.
const (
	msgTPM           = "Rate limit reached for gpt-4o in organization org-8s7Dj2kLq0 on tokens per min (TPM): Limit 30000, Used 29937, Requested 385. Please try again in 644ms. Visit https://platform.openai.com/account/rate-limits to learn more."
	msgRPM           = "Rate limit reached for gpt-4o in organization org-8s7Dj2kLq0 on requests per min (RPM): Limit 500, Used 500, Requested 1. Please try again in 9.816s. Visit https://platform.openai.com/account/rate-limits to learn more."
	msgTPD           = "Rate limit reached for gpt-4o-mini in organization org-8s7Dj2kLq0 on tokens per day (TPD): Limit 2000000, Used 1999000, Requested 2000. Please try again in 16m40s. Visit https://platform.openai.com/account/rate-limits to learn more."
	msgTooLarge      = "Request too large for gpt-4o in organization org-8s7Dj2kLq0 on tokens per min (TPM): Limit 30000, Requested 31538. The input or output tokens must be reduced in order to run successfully. Visit https://platform.openai.com/account/rate-limits to learn more."
	msgQuota         = "You exceeded your current quota, please check your plan and billing details. For more information on this error, read the docs: https://platform.openai.com/docs/guides/error-codes/api-errors."
	msgKimiBusy      = "We're receiving too many requests at the moment. Please wait a moment and try again."
	msgKimiRPM       = "Your account org-cn1x request reached organization max RPM: 20, please try again after 1 seconds"
	msgKimiTPD       = "Your account org-cn1x request reached organization TPD rate limit, current: 1526210, limit: 1500000"
	msgKimiOverload  = "The engine is currently overloaded, please try again later"
	msgKimiAuth      = "Authorization failed. Your session may have expired."
	msgKimiExpired   = "Membership expired, please renew your plan"
	msgServerOverQPS = "The server had an error while processing your request. Sorry about that!"
)

// limits returns the x-ratelimit-* pairs of one family.
func limits(fam, limit, remaining, reset string) []string {
	return []string{"x-ratelimit-limit-" + fam, limit, "x-ratelimit-remaining-" + fam, remaining, "x-ratelimit-reset-" + fam, reset}
}

func TestClassifyHTTP(t *testing.T) {
	t.Parallel()
	date := []string{"Date", httpDate(now)}
	hdrs := slices.Concat(date, []string{"openai-organization", "user-abc123"}, limits("requests", "500", "499", "120ms"), limits("tokens", "30000", "29000", "2s"))
	tests := []struct {
		name string
		resp *http.Response
		body string
		want want
	}{
		{
			name: "200 with headers is ok and observed",
			resp: response(200, hdrs...),
			body: `{"id":"chatcmpl-1","object":"chat.completion","choices":[{"message":{"role":"assistant","content":"hi"}}]}`,
			want: want{Class: provider.ClassOK, RetryAfter: -1, Remaining: unknown, Limit: unknown, Reason: "HTTP 200", Obs: 2},
		},
		{
			name: "200 Responses body with error null is ok",
			resp: response(200),
			body: `{"id":"resp_1","object":"response","status":"completed","error":null,"output":[]}`,
			want: want{Class: provider.ClassOK, RetryAfter: -1, Remaining: unknown, Limit: unknown, Reason: "HTTP 200"},
		},
		// §3 429 short limit: the wait is only in the text.
		{
			name: "429 TPM waits the message's 644ms",
			resp: response(429, slices.Concat(date, limits("tokens", "30000", "63", "1.26s"))...),
			body: errBody("tokens", "rate_limit_exceeded", msgTPM),
			want: want{Class: provider.ClassSecondary, Resource: "tokens", RetryAfter: 644 * time.Millisecond, Remaining: 63, Limit: 30000,
				Reason: "429 rate_limit_exceeded (tokens); the message says wait 644ms", Obs: 1},
		},
		{
			name: "429 RPM waits 9.816s; counts from the message",
			resp: response(429),
			body: errBody("requests", "rate_limit_exceeded", msgRPM),
			want: want{Class: provider.ClassSecondary, Resource: "requests", RetryAfter: 9816 * time.Millisecond, Remaining: 0, Limit: 500,
				Reason: "wait 9.816s"},
		},
		{
			name: "retry-after-ms wins over the text",
			resp: response(429, "retry-after-ms", "700", "retry-after", "1"),
			body: errBody("tokens", "rate_limit_exceeded", msgTPM),
			want: want{Class: provider.ClassSecondary, Resource: "tokens", RetryAfter: 700 * time.Millisecond, Remaining: 63, Limit: 30000, Reason: "retry-after-ms 700ms"},
		},
		{
			name: "429 without a stated wait waits for the exhausted header's reset",
			resp: response(429, slices.Concat(date, limits("requests", "500", "0", "20s"))...),
			body: errBody("requests", "rate_limit_exceeded", "Rate limit reached for requests"),
			want: want{Class: provider.ClassSecondary, Resource: "requests", ResetAt: now.Add(20 * time.Second), RetryAfter: 20 * time.Second, Remaining: 0, Limit: 500,
				Reason: "requests remaining 0, waits until the reset", Obs: 1},
		},
		{
			name: "bare 429 is secondary with an unknown wait",
			resp: response(429),
			want: want{Class: provider.ClassSecondary, RetryAfter: -1, Remaining: unknown, Limit: unknown, Reason: "429; no retry-after"},
		},
		// Tricky case 12: a long Retry-After (hidden by openai-go's 8 s clamp) is quota.
		{
			name: "429 with a Retry-After of hours is quota",
			resp: response(429, "retry-after", "7200"),
			body: errBody("requests", "rate_limit_exceeded", "Rate limit reached"),
			want: want{Class: provider.ClassQuota, Resource: "requests", ResetAt: now.Add(2 * time.Hour), RetryAfter: 2 * time.Hour, Remaining: unknown, Limit: unknown,
				Reason: "(over 5m0s: quota)", Obs: 1},
		},
		{
			name: "429 per-day limit is quota with the stated wait",
			resp: response(429),
			body: errBody("tokens", "rate_limit_exceeded", msgTPD),
			want: want{Class: provider.ClassQuota, Resource: "tokens-per-day", ResetAt: now.Add(16*time.Minute + 40*time.Second), RetryAfter: 16*time.Minute + 40*time.Second,
				Remaining: 1000, Limit: 2000000, Reason: "429 rate_limit_exceeded (tokens-per-day)", Obs: 1},
		},
		// §3 429 request too big; tricky case 4.
		{
			name: "429 request too large is permanent",
			resp: response(429),
			body: errBody("tokens", "rate_limit_exceeded", msgTooLarge),
			want: want{Class: provider.ClassPermanent, RetryAfter: -1, Remaining: unknown, Limit: unknown, Reason: "request too large"},
		},
		// §3 429 quota; tricky case 4.
		{
			name: "429 insufficient_quota",
			resp: response(429, hdrs...),
			body: errBody("insufficient_quota", "insufficient_quota", msgQuota),
			want: want{Class: provider.ClassQuota, Resource: ResourceBilling, RetryAfter: -1, Remaining: unknown, Limit: unknown,
				Reason: "429 insufficient_quota (insufficient quota: plan and billing), reset unknown", Obs: 2},
		},
		{
			name: "429 insufficient_quota, older body with code null",
			resp: response(429),
			body: errBody("insufficient_quota", "", msgQuota),
			want: want{Class: provider.ClassQuota, Resource: ResourceBilling, RetryAfter: -1, Remaining: unknown, Limit: unknown, Reason: "insufficient quota"},
		},
		{
			name: "429 quota text alone",
			resp: response(429),
			body: errBody("", "", msgQuota),
			want: want{Class: provider.ClassQuota, Resource: ResourceBilling, RetryAfter: -1, Remaining: unknown, Limit: unknown, Reason: "insufficient quota"},
		},
		// §3 429 spend limit.
		{
			name: "429 organization_spend_limit_exceeded",
			resp: response(429),
			body: errBody("insufficient_quota", "organization_spend_limit_exceeded", "Your organization has reached its spend limit."),
			want: want{Class: provider.ClassQuota, Resource: ResourceSpend, RetryAfter: -1, Remaining: unknown, Limit: unknown, Reason: "organization_spend_limit_exceeded"},
		},
		{
			name: "429 project_spend_limit_exceeded",
			resp: response(429),
			body: errBody("invalid_request_error", "project_spend_limit_exceeded", "This project has reached its spend limit."),
			want: want{Class: provider.ClassQuota, Resource: ResourceSpend, RetryAfter: -1, Remaining: unknown, Limit: unknown, Reason: "project_spend_limit_exceeded (spend), reset unknown"},
		},
		{
			name: "429 credit_balance_exhausted (unconfirmed)",
			resp: response(429),
			body: errBody("invalid_request_error", "credit_balance_exhausted", "Your credit balance is exhausted."),
			want: want{Class: provider.ClassQuota, Resource: ResourceBilling, RetryAfter: -1, Remaining: unknown, Limit: unknown, Reason: "credit_balance_exhausted"},
		},
		// Others.
		{
			name: "401 invalid_api_key",
			resp: response(401),
			body: errBody("invalid_request_error", "invalid_api_key", "Incorrect API key provided: sk-abc***xyz."),
			want: want{Class: provider.ClassAuth, RetryAfter: -1, Remaining: unknown, Limit: unknown, Reason: "401 invalid_api_key: Incorrect API key"},
		},
		{
			name: "404 model_not_found is permanent",
			resp: response(404),
			body: errBody("invalid_request_error", "model_not_found", "The model `gpt-9` does not exist or you do not have access to it."),
			want: want{Class: provider.ClassPermanent, RetryAfter: -1, Remaining: unknown, Limit: unknown, Reason: "404 model_not_found"},
		},
		{
			name: "500 server_error is transient",
			resp: response(500),
			body: errBody("server_error", "", msgServerOverQPS),
			want: want{Class: provider.ClassTransient, RetryAfter: -1, Remaining: unknown, Limit: unknown, Reason: "500 server_error"},
		},
		{
			name: "503 overloaded is transient",
			resp: response(503),
			body: errBody("server_error", "", "The engine is currently overloaded, please try again later"),
			want: want{Class: provider.ClassTransient, RetryAfter: -1, Remaining: unknown, Limit: unknown, Reason: "503"},
		},
		// Tricky case 3: errors inside a 200.
		{
			name: "200 Chat Completions stream with a rate-limit error",
			resp: response(200, "Content-Type", "text/event-stream"),
			body: "data: {\"id\":\"chatcmpl-1\",\"choices\":[{\"delta\":{\"content\":\"Hel\"}}]}\n\ndata: " + errBody("tokens", "rate_limit_exceeded", msgTPM) + "\n\ndata: [DONE]\n\n",
			want: want{Class: provider.ClassSecondary, Resource: "tokens", RetryAfter: 644 * time.Millisecond, Remaining: 63, Limit: 30000,
				Reason: "200 with a stream error event rate_limit_exceeded"},
		},
		{
			name: "200 Responses stream error event",
			resp: response(200, "Content-Type", "text/event-stream; charset=utf-8"),
			body: "event: response.created\ndata: {\"type\":\"response.created\",\"sequence_number\":0}\n\nevent: error\ndata: {\"type\":\"error\",\"code\":\"rate_limit_exceeded\",\"message\":" + providertest.JSONQuote(msgRPM) + ",\"param\":null,\"sequence_number\":1}\n\n",
			want: want{Class: provider.ClassSecondary, Resource: "requests", RetryAfter: 9816 * time.Millisecond, Remaining: 0, Limit: 500, Reason: "rate_limit_exceeded"},
		},
		{
			name: "200 Responses stream response.failed with insufficient_quota",
			resp: response(200, "Content-Type", "text/event-stream"),
			body: "event: response.failed\ndata: {\"type\":\"response.failed\",\"response\":{\"id\":\"resp_1\",\"status\":\"failed\",\"error\":{\"code\":\"insufficient_quota\",\"message\":" + providertest.JSONQuote(msgQuota) + "}}}\n\n",
			want: want{Class: provider.ClassQuota, Resource: ResourceBilling, RetryAfter: -1, Remaining: unknown, Limit: unknown, Reason: "200 with a stream error event insufficient_quota"},
		},
		{
			name: "200 Responses stream response.failed with server_error",
			resp: response(200, "Content-Type", "text/event-stream"),
			body: "event: response.failed\ndata: {\"type\":\"response.failed\",\"response\":{\"status\":\"failed\",\"error\":{\"code\":\"server_error\",\"message\":\"An error occurred.\"}}}\n\n",
			want: want{Class: provider.ClassTransient, RetryAfter: -1, Remaining: unknown, Limit: unknown, Reason: "server_error"},
		},
		{
			name: "200 stream without errors is ok",
			resp: response(200, "Content-Type", "text/event-stream"),
			body: "data: {\"choices\":[{\"delta\":{\"content\":\"no error here\"}}]}\n\ndata: [DONE]\n\n",
			want: want{Class: provider.ClassOK, RetryAfter: -1, Remaining: unknown, Limit: unknown, Reason: "HTTP 200"},
		},
		{
			name: "200 whose body is an error object (community thread)",
			resp: response(200),
			body: errBody("insufficient_quota", "insufficient_quota", msgQuota),
			want: want{Class: provider.ClassQuota, Resource: ResourceBilling, RetryAfter: -1, Remaining: unknown, Limit: unknown, Reason: "200 with an error body insufficient_quota"},
		},
		// §5 Kimi (OpenAI-compatible API); tricky cases 5 and 6.
		{
			name: "Kimi too many requests",
			resp: response(429),
			body: errBody("rate_limit_reached_error", "", msgKimiBusy),
			want: want{Class: provider.ClassSecondary, RetryAfter: -1, Remaining: unknown, Limit: unknown, Reason: "429 rate_limit_reached_error; no retry-after"},
		},
		{
			name: "Kimi max RPM with a wait after 1 seconds",
			resp: response(429),
			body: errBody("rate_limit_reached_error", "", msgKimiRPM),
			want: want{Class: provider.ClassSecondary, Resource: "requests", RetryAfter: time.Second, Remaining: unknown, Limit: 20, Reason: "the message says wait 1s"},
		},
		{
			name: "Kimi TPD limit is quota, reset unknown",
			resp: response(429),
			body: errBody("rate_limit_reached_error", "", msgKimiTPD),
			want: want{Class: provider.ClassQuota, Resource: "tokens-per-day", RetryAfter: -1, Remaining: 0, Limit: 1500000, Reason: "(daily limit), reset unknown"},
		},
		{
			name: "Kimi engine_overloaded_error on a 429 is transient",
			resp: response(429),
			body: errBody("engine_overloaded_error", "", msgKimiOverload),
			want: want{Class: provider.ClassTransient, RetryAfter: -1, Remaining: unknown, Limit: unknown, Reason: "429 engine_overloaded_error (overload, not a quota)"},
		},
		{
			name: "Kimi coding plan: rate_limit_error saying overloaded is a limit",
			resp: response(429),
			body: errBody("rate_limit_error", "", msgKimiOverload),
			want: want{Class: provider.ClassSecondary, RetryAfter: -1, Remaining: unknown, Limit: unknown, Reason: "429 rate_limit_error"},
		},
		{
			name: "Kimi 401",
			resp: response(401),
			body: errBody("invalid_authentication_error", "", msgKimiAuth),
			want: want{Class: provider.ClassAuth, RetryAfter: -1, Remaining: unknown, Limit: unknown, Reason: "401 invalid_authentication_error: Authorization failed"},
		},
		{
			name: "Kimi 402 membership expired is quota",
			resp: response(402),
			body: errBody("exceeded_current_quota_error", "", msgKimiExpired),
			want: want{Class: provider.ClassQuota, Resource: ResourceBilling, RetryAfter: -1, Remaining: unknown, Limit: unknown, Reason: "402 exceeded_current_quota_error (billing): Membership expired"},
		},
		{
			name: "Kimi 403 quota exceeded is quota",
			resp: response(403),
			body: errBody("exceeded_current_quota_error", "", "Your account quota has been exceeded, please check your plan"),
			want: want{Class: provider.ClassQuota, Resource: ResourceBilling, RetryAfter: -1, Remaining: unknown, Limit: unknown, Reason: "403"},
		},
		{
			name: "403 unsupported region is permanent",
			resp: response(403),
			body: errBody("request_forbidden", "unsupported_country_region_territory", "Country, region, or territory not supported"),
			want: want{Class: provider.ClassPermanent, RetryAfter: -1, Remaining: unknown, Limit: unknown, Reason: "403 unsupported_country_region_territory"},
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

func TestClassifyHTTPFromRaw(t *testing.T) {
	t.Parallel()
	raw := "HTTP/2 429\r\ndate: " + httpDate(now) + "\r\nopenai-organization: org-8s7dj2klq0\r\nx-ratelimit-limit-tokens: 30000\r\n" +
		"x-ratelimit-remaining-tokens: 63\r\nx-ratelimit-reset-tokens: 1.26s\r\n\r\n" + errBody("tokens", "rate_limit_exceeded", msgTPM)
	resp, body, err := provider.ParseRawHTTP([]byte(raw))
	if err != nil {
		t.Fatal(err)
	}
	check(t, ClassifyHTTP(resp, body, now), want{Class: provider.ClassSecondary, Resource: "tokens", RetryAfter: 644 * time.Millisecond,
		Remaining: 63, Limit: 30000, Reason: "644ms", Obs: 1})
	if p, ok := Principal(resp.Header); !ok || p != "org-8s7dj2klq0" {
		t.Errorf("Principal = %q, %v", p, ok)
	}
}

func TestPrincipal(t *testing.T) {
	t.Parallel()
	h := http.Header{}
	if _, ok := Principal(h); ok {
		t.Error("Principal without the header")
	}
	h.Set("openai-organization", "user-abc123")
	if p, ok := Principal(h); !ok || p != "user-abc123" {
		t.Errorf("Principal = %q, %v", p, ok)
	}
	h.Set("openai-organization", "a b")
	if _, ok := Principal(h); ok {
		t.Error("Principal with a space")
	}
}

func TestObservations(t *testing.T) {
	t.Parallel()
	date := now.Add(-time.Hour) // server clock an hour behind
	h := response(200, slices.Concat(
		[]string{"Date", httpDate(date)},
		limits("requests", "500", "499", "120ms"),
		limits("tokens", "30000", "0", "6m0s"),
		limits("tokens_usage_based", "30000", "29000", "1s"),
	)...).Header
	got := Observations(h, now)
	type st struct {
		res        string
		limit, rem int64
		reset      time.Duration
		cause      quota.Cause
	}
	wants := []st{
		{"requests", 500, 499, 120 * time.Millisecond, ""},
		{"tokens", 30000, 0, 6 * time.Minute, quota.CauseExhausted},
		{"tokens-usage-based", 30000, 29000, time.Second, ""},
	}
	if len(got) != len(wants) {
		t.Fatalf("got %d states: %+v", len(got), got)
	}
	for i, w := range wants {
		g := got[i]
		// Relative resets are measured from receipt; RawReset is on the server's clock.
		if g.Resource != w.res || g.Limit != w.limit || g.Remaining != w.rem || !g.ResetAt.Equal(now.Add(w.reset)) || g.Cause != w.cause ||
			g.Source != quota.SourceHeaders || !g.ResetKnown || !g.ObservedAt.Equal(now) || g.RawReset != date.Add(w.reset).Unix() {
			t.Errorf("state %d = %+v, want %+v", i, g, w)
		}
	}
}

func TestObservationsRejectAbsurd(t *testing.T) {
	t.Parallel()
	for name, kv := range map[string][]string{
		"Azure -1":          limits("requests", "-1", "-1", "0"),
		"Azure limit 0":     limits("tokens", "0", "0", "0s"),
		"negative reset":    limits("tokens", "10", "5", "-1s"),
		"reset in seconds":  limits("tokens", "10", "5", "60"),
		"no reset":          {"x-ratelimit-remaining-tokens", "5"},
		"garbled remaining": limits("tokens", "10", "five", "1s"),
	} {
		if got := Observations(response(200, kv...).Header, now); len(got) != 0 {
			t.Errorf("%s: %+v", name, got)
		}
	}
	// Azure's bare "0" reset with a real limit is accepted: already full.
	got := Observations(response(200, limits("tokens", "10", "5", "0")...).Header, now)
	if len(got) != 1 || !got[0].ResetAt.Equal(now) {
		t.Errorf("reset 0: %+v", got)
	}
}
