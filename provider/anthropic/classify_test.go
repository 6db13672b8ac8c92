package anthropic

import (
	"net/http"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/layoverhq/layover/provider"
	"github.com/layoverhq/layover/provider/internal/providertest"
	"github.com/layoverhq/layover/quota"
)

// Verbatim texts from docs/provider-signals.md §2 (and, where §2 elides them, the
// published messages they abbreviate).
const (
	msgRequestTokens  = "Number of request tokens has exceeded your per-minute rate limit (https://docs.anthropic.com/en/api/rate-limits); see the response headers for current usage. Please reduce the prompt length or the maximum tokens requested, or try again later. You may also contact sales at https://www.anthropic.com/contact-sales to discuss your options for a rate limit increase."
	msgOrgInputTokens = "This request would exceed the rate limit for your organization (5f4bc7ac-3b1c-4f3f-8f3a-0c1d2e3f4a5b) of 1,000,000 input tokens per minute. For details, refer to: https://docs.claude.com/en/api/rate-limits."
	msgOrgOutput      = "This request would exceed the rate limit for your organization (5f4bc7ac-3b1c-4f3f-8f3a-0c1d2e3f4a5b) of 80,000 output tokens per minute."
	msgOrgRequests    = "This request would exceed the rate limit for your organization (5f4bc7ac-3b1c-4f3f-8f3a-0c1d2e3f4a5b) of 50 requests per minute."
	msgAccount        = "This request would exceed your account's rate limit. Please try again later."
	msgUsageLimits    = "You have reached your specified API usage limits. You will regain access on 2026-09-01 at 00:00 UTC."
	msgWorkspace      = "You have reached your specified workspace API usage limits. You will regain access on 2026-09-01 at 00:00 UTC."
	msgUsageNoDate    = "You have reached your specified API usage limits."
	msgSpendCap       = "You have reached your API usage limits: your organization has crossed its monthly API usage threshold, set based on your organization's API tier. You will regain access on 2026-09-01 at 00:00 UTC."
	msgCredit         = "Your credit balance is too low to access the Anthropic API. Please go to Plans & Billing to upgrade or purchase credits."
	msgKimiOverloaded = "The engine is currently overloaded, please try again later"
)

func spendCapBody(msg string) string {
	return `{"type":"error","error":{"type":"rate_limit_error","message":` + providertest.JSONQuote(msg) + `,"details":{"error_code":"enforced_spend_limit_reached"}},"request_id":"req_018EeWyXxfu5pfWkrYcMdjWG"}`
}

// sse renders events as an event stream.
func sse(events ...string) string {
	s := ""
	for i := 0; i+1 < len(events); i += 2 {
		s += "event: " + events[i] + "\ndata: " + events[i+1] + "\n\n"
	}
	return s
}

const streamStart = `{"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","content":[],"model":"claude-sonnet-4-5","usage":{"input_tokens":25,"output_tokens":1}}}`

// familyHeaders returns the anthropic-ratelimit-<fam>-* headers.
func familyHeaders(fam string, limit, remaining int, reset time.Time) []string {
	p := "anthropic-ratelimit-" + fam + "-"
	return []string{p + "limit", itoa(limit), p + "remaining", itoa(remaining), p + "reset", rfc(reset)}
}

func itoa(n int) string { return strconv.Itoa(n) }

func TestClassifyHTTP(t *testing.T) {
	t.Parallel()
	minute := now.Add(time.Minute)
	date := []string{"Date", httpDate(now)}
	skewed := []string{"Date", httpDate(now.Add(-time.Hour))} // server an hour behind
	nextMonth := time.Date(2026, 9, 1, 0, 0, 0, 0, time.UTC)
	tests := []struct {
		name string
		resp *http.Response
		body string
		want want
	}{
		// Success and headers.
		{
			name: "200 with headers is ok and observed",
			resp: response(200, slices.Concat(date, familyHeaders("requests", 50, 49, minute), familyHeaders("input-tokens", 30000, 29000, minute))...),
			body: `{"id":"msg_1","type":"message","role":"assistant","content":[{"type":"text","text":"hi"}]}`,
			want: want{Class: provider.ClassOK, RetryAfter: -1, Remaining: unknown, Limit: unknown, Reason: "HTTP 200", Obs: 2},
		},
		{
			name: "200 that spent the last unit stays ok",
			resp: response(200, slices.Concat(date, familyHeaders("requests", 50, 0, minute))...),
			want: want{Class: provider.ClassOK, RetryAfter: -1, Remaining: unknown, Limit: unknown, Reason: "HTTP 200", Obs: 1},
		},
		{
			name: "200 whose text says error is ok",
			resp: response(200),
			body: `{"type":"message","content":[{"type":"text","text":"error"}]}`,
			want: want{Class: provider.ClassOK, RetryAfter: -1, Remaining: unknown, Limit: unknown, Reason: "HTTP 200"},
		},
		// §2 429 rate_limit_error, retry-after in seconds.
		{
			name: "429 request tokens per minute with retry-after",
			resp: response(429, "retry-after", "30"),
			body: errBody("rate_limit_error", msgRequestTokens),
			want: want{Class: provider.ClassSecondary, Resource: "input-tokens", RetryAfter: 30 * time.Second, Remaining: unknown, Limit: unknown,
				Reason: "429 rate_limit_error (input-tokens); retry-after 30s"},
		},
		{
			name: "429 organization input tokens per minute, resource from the exhausted header",
			resp: response(429, slices.Concat(date, []string{"retry-after", "12"}, familyHeaders("input-tokens", 1000000, 0, now.Add(12*time.Second)), familyHeaders("requests", 4000, 3990, minute))...),
			body: errBody("rate_limit_error", msgOrgInputTokens),
			want: want{Class: provider.ClassSecondary, Resource: "input-tokens", RetryAfter: 12 * time.Second, Remaining: 0, Limit: 1000000,
				Reason: "retry-after 12s", Obs: 2},
		},
		{
			name: "429 output tokens named by the message",
			resp: response(429, "retry-after", "5"),
			body: errBody("rate_limit_error", msgOrgOutput),
			want: want{Class: provider.ClassSecondary, Resource: "output-tokens", RetryAfter: 5 * time.Second, Remaining: unknown, Limit: unknown, Reason: "(output-tokens)"},
		},
		{
			name: "429 requests named by the message",
			resp: response(429, "retry-after", "1"),
			body: errBody("rate_limit_error", msgOrgRequests),
			want: want{Class: provider.ClassSecondary, Resource: "requests", RetryAfter: time.Second, Remaining: unknown, Limit: unknown, Reason: "(requests)"},
		},
		{
			name: "429 without retry-after waits until the exhausted family's reset",
			resp: response(429, slices.Concat(date, familyHeaders("tokens", 80000, 0, now.Add(40*time.Second)))...),
			body: errBody("rate_limit_error", msgRequestTokens),
			want: want{Class: provider.ClassSecondary, Resource: "tokens", ResetAt: now.Add(40 * time.Second), RetryAfter: 40 * time.Second, Remaining: 0, Limit: 80000,
				Reason: "tokens remaining 0, waits until the reset", Obs: 1},
		},
		{
			name: "429 without any wait is secondary with an unknown wait",
			resp: response(429),
			body: errBody("rate_limit_error", msgRequestTokens),
			want: want{Class: provider.ClassSecondary, Resource: "input-tokens", RetryAfter: -1, Remaining: unknown, Limit: unknown, Reason: "no retry-after"},
		},
		{
			name: "bare 429 is secondary",
			resp: response(429),
			want: want{Class: provider.ClassSecondary, RetryAfter: -1, Remaining: unknown, Limit: unknown, Reason: "429; no retry-after"},
		},
		{
			name: "retry-after-ms is read first",
			resp: response(429, "retry-after-ms", "1500", "retry-after", "2"),
			body: errBody("rate_limit_error", msgOrgRequests),
			want: want{Class: provider.ClassSecondary, Resource: "requests", RetryAfter: 1500 * time.Millisecond, Remaining: unknown, Limit: unknown, Reason: "retry-after-ms 1.5s"},
		},
		// Tricky case 12: an HTTP-date Retry-After is a wait, not zero; measured from Date (case 11).
		{
			name: "Retry-After as an HTTP-date, skewed server clock",
			resp: response(429, slices.Concat(skewed, []string{"Retry-After", httpDate(now.Add(-time.Hour + 90*time.Second))})...),
			body: errBody("rate_limit_error", msgOrgRequests),
			want: want{Class: provider.ClassSecondary, Resource: "requests", RetryAfter: 90 * time.Second, Remaining: unknown, Limit: unknown, Reason: "retry-after 1m30s"},
		},
		// §2 subscription path; tricky case 4: a drained 5-hour window answered Retry-After: 7999.
		{
			name: "subscription 429 with Retry-After 7999 is quota",
			resp: response(429, "retry-after", "7999",
				"anthropic-ratelimit-unified-status", "rejected",
				"anthropic-ratelimit-unified-representative-claim", "five_hour",
				"anthropic-ratelimit-unified-5h-utilization", "1.0",
				"anthropic-ratelimit-unified-5h-reset", epoch(now.Add(7999*time.Second)),
				"anthropic-ratelimit-unified-7d-utilization", "0.42",
				"anthropic-ratelimit-unified-7d-reset", epoch(now.Add(72*time.Hour))),
			body: errBody("rate_limit_error", msgAccount),
			want: want{Class: provider.ClassQuota, Resource: "unified-5h", ResetAt: now.Add(7999 * time.Second), RetryAfter: 7999 * time.Second, Remaining: 0, Limit: 100,
				Reason: "retry-after 2h13m19s (over 5m0s: quota)", Obs: 2},
		},
		{
			name: "subscription 429 without Retry-After waits for the rejected window",
			resp: response(429,
				"anthropic-ratelimit-unified-status", "rejected",
				"anthropic-ratelimit-unified-representative-claim", "seven_day",
				"anthropic-ratelimit-unified-reset", epoch(now.Add(30*time.Hour))),
			body: errBody("rate_limit_error", msgAccount),
			want: want{Class: provider.ClassQuota, Resource: "unified-7d", ResetAt: now.Add(30 * time.Hour), RetryAfter: 30 * time.Hour, Remaining: 0, Limit: unknown,
				Reason: "unified-7d remaining 0", Obs: 1},
		},
		{
			name: "subscription 429 without headers: unknown wait",
			resp: response(429),
			body: errBody("rate_limit_error", msgAccount),
			want: want{Class: provider.ClassSecondary, RetryAfter: -1, Remaining: unknown, Limit: unknown, Reason: "no retry-after"},
		},
		// §2 429 spend cap; tricky cases 4 and 10.
		{
			name: "spend cap without a stated time resumes on the 1st of next month (derived)",
			resp: response(429, date...),
			body: spendCapBody("You have reached your API usage limits."),
			want: want{Class: provider.ClassQuota, Resource: ResourceSpend, ResetAt: nextMonth, RetryAfter: -1, Remaining: unknown, Limit: unknown,
				Reason: "enforced_spend_limit_reached (monthly spend cap); resumes 00:00 UTC on the 1st of next month (documented)", Obs: 1},
		},
		{
			name: "spend cap derived from the server's Date, skew-corrected",
			resp: response(429, skewed...),
			body: spendCapBody("You have reached your API usage limits."),
			want: want{Class: provider.ClassQuota, Resource: ResourceSpend, ResetAt: nextMonth.Add(time.Hour), RetryAfter: -1, Remaining: unknown, Limit: unknown,
				Reason: "(documented)", Obs: 1},
		},
		{
			name: "spend cap with the time the message states",
			resp: response(429),
			body: spendCapBody(msgSpendCap),
			want: want{Class: provider.ClassQuota, Resource: ResourceSpend, ResetAt: nextMonth, RetryAfter: -1, Remaining: unknown, Limit: unknown,
				Reason: "resumes at the time the message states", Obs: 1},
		},
		{
			name: "spend cap named only in the message",
			resp: response(429, date...),
			body: errBody("rate_limit_error", "enforced_spend_limit_reached: this organization hit its spend limit"),
			want: want{Class: provider.ClassQuota, Resource: ResourceSpend, ResetAt: nextMonth, RetryAfter: -1, Remaining: unknown, Limit: unknown, Reason: "(documented)", Obs: 1},
		},
		// §2 400 spend/credit texts; tricky case 6.
		{
			name: "400 specified API usage limits with the resume time",
			resp: response(400),
			body: errBody("invalid_request_error", msgUsageLimits),
			want: want{Class: provider.ClassQuota, Resource: ResourceSpend, ResetAt: nextMonth, RetryAfter: -1, Remaining: unknown, Limit: unknown,
				Reason: "400 invalid_request_error API usage limits reached (spend limit); resumes at the time the message states", Obs: 1},
		},
		{
			name: "400 workspace variant",
			resp: response(400),
			body: errBody("invalid_request_error", msgWorkspace),
			want: want{Class: provider.ClassQuota, Resource: ResourceSpend, ResetAt: nextMonth, RetryAfter: -1, Remaining: unknown, Limit: unknown, Reason: "spend limit", Obs: 1},
		},
		{
			name: "400 usage limits without a time: reset unknown",
			resp: response(400),
			body: errBody("invalid_request_error", msgUsageNoDate),
			want: want{Class: provider.ClassQuota, Resource: ResourceSpend, RetryAfter: -1, Remaining: unknown, Limit: unknown, Reason: "reset unknown"},
		},
		{
			name: "400 credit balance too low",
			resp: response(400),
			body: errBody("invalid_request_error", msgCredit),
			want: want{Class: provider.ClassQuota, Resource: ResourceBilling, RetryAfter: -1, Remaining: unknown, Limit: unknown,
				Reason: "400 invalid_request_error (billing): Your credit balance is too low"},
		},
		{
			name: "402 billing_error",
			resp: response(402),
			body: errBody("billing_error", "Your account has a billing issue."),
			want: want{Class: provider.ClassQuota, Resource: ResourceBilling, RetryAfter: -1, Remaining: unknown, Limit: unknown, Reason: "402 billing_error (billing)"},
		},
		// §2 529 overloaded_error; tricky case 5.
		{
			name: "529 overloaded is transient",
			resp: response(529, "x-should-retry", "true"),
			body: errBody("overloaded_error", "Overloaded"),
			want: want{Class: provider.ClassTransient, RetryAfter: -1, Remaining: unknown, Limit: unknown, Reason: "529 overloaded_error (service overload, not a quota)"},
		},
		{
			name: "529 without a body is transient",
			resp: response(529),
			want: want{Class: provider.ClassTransient, RetryAfter: -1, Remaining: unknown, Limit: unknown, Reason: "529"},
		},
		{
			name: "overloaded_error on another status is transient",
			resp: response(503),
			body: errBody("overloaded_error", "Overloaded"),
			want: want{Class: provider.ClassTransient, RetryAfter: -1, Remaining: unknown, Limit: unknown, Reason: "overloaded_error"},
		},
		// §5 Kimi coding plan: a plan limit as rate_limit_error with overloaded text; the type wins.
		{
			name: "rate_limit_error saying overloaded is a limit",
			resp: response(429),
			body: errBody("rate_limit_error", msgKimiOverloaded),
			want: want{Class: provider.ClassSecondary, RetryAfter: -1, Remaining: unknown, Limit: unknown, Reason: "429 rate_limit_error"},
		},
		// §2 Others.
		{
			name: "401 authentication_error",
			resp: response(401),
			body: errBody("authentication_error", "invalid x-api-key"),
			want: want{Class: provider.ClassAuth, RetryAfter: -1, Remaining: unknown, Limit: unknown, Reason: "401 authentication_error: invalid x-api-key"},
		},
		{
			name: "403 permission_error is permanent",
			resp: response(403),
			body: errBody("permission_error", "Your API key does not have permission to use the specified resource."),
			want: want{Class: provider.ClassPermanent, RetryAfter: -1, Remaining: unknown, Limit: unknown, Reason: "403 permission_error"},
		},
		{
			name: "404 not_found_error is permanent",
			resp: response(404),
			body: errBody("not_found_error", "model: claude-x"),
			want: want{Class: provider.ClassPermanent, RetryAfter: -1, Remaining: unknown, Limit: unknown, Reason: "404 not_found_error"},
		},
		{
			name: "413 request_too_large is permanent",
			resp: response(413),
			body: errBody("request_too_large", "Request exceeds the maximum allowed number of bytes."),
			want: want{Class: provider.ClassPermanent, RetryAfter: -1, Remaining: unknown, Limit: unknown, Reason: "request too large"},
		},
		{
			name: "500 api_error is transient",
			resp: response(500),
			body: errBody("api_error", "Internal server error"),
			want: want{Class: provider.ClassTransient, RetryAfter: -1, Remaining: unknown, Limit: unknown, Reason: "500 api_error"},
		},
		{
			name: "400 invalid_request_error is permanent",
			resp: response(400),
			body: errBody("invalid_request_error", "messages: at least one message is required"),
			want: want{Class: provider.ClassPermanent, RetryAfter: -1, Remaining: unknown, Limit: unknown, Reason: "400 invalid_request_error: messages"},
		},
		{
			name: "HTML 502 from a proxy is transient",
			resp: response(502),
			body: "<html><body>Bad Gateway</body></html>",
			want: want{Class: provider.ClassTransient, RetryAfter: -1, Remaining: unknown, Limit: unknown, Reason: "502"},
		},
		// §2 Streams; tricky case 3: limits inside a 200.
		{
			name: "200 stream with an overloaded_error event is transient",
			resp: response(200, "Content-Type", "text/event-stream"),
			body: sse("message_start", streamStart, "error", `{"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}`),
			want: want{Class: provider.ClassTransient, RetryAfter: -1, Remaining: unknown, Limit: unknown, Reason: "200 with a stream error event overloaded_error"},
		},
		{
			name: "200 stream with a rate_limit_error event is a throttle",
			resp: response(200, "Content-Type", "text/event-stream"),
			body: sse("message_start", streamStart, "error", errBody("rate_limit_error", msgOrgOutput)),
			want: want{Class: provider.ClassSecondary, Resource: "output-tokens", RetryAfter: -1, Remaining: unknown, Limit: unknown, Reason: "200 with a stream error event rate_limit_error"},
		},
		{
			name: "200 stream recognised without a Content-Type, CRLF lines",
			resp: response(200),
			body: "event: error\r\ndata: " + errBody("overloaded_error", "Overloaded") + "\r\n\r\n",
			want: want{Class: provider.ClassTransient, RetryAfter: -1, Remaining: unknown, Limit: unknown, Reason: "overloaded_error"},
		},
		{
			name: "200 stream without errors is ok",
			resp: response(200, "Content-Type", "text/event-stream"),
			body: sse("message_start", streamStart, "content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"an error was fixed"}}`, "message_stop", `{"type":"message_stop"}`),
			want: want{Class: provider.ClassOK, RetryAfter: -1, Remaining: unknown, Limit: unknown, Reason: "HTTP 200"},
		},
		{
			name: "200 whose body is an error object",
			resp: response(200),
			body: errBody("api_error", "Internal server error"),
			want: want{Class: provider.ClassTransient, RetryAfter: -1, Remaining: unknown, Limit: unknown, Reason: "200 with an error body api_error"},
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

func TestClassifyHTTPRejectedState(t *testing.T) {
	t.Parallel()
	got := ClassifyHTTP(response(429, "Date", httpDate(now.Add(-time.Hour))), []byte(spendCapBody("x")), now)
	if len(got.Observations) != 1 {
		t.Fatalf("observations %+v", got.Observations)
	}
	s := got.Observations[0]
	want := time.Date(2026, 9, 1, 0, 0, 0, 0, time.UTC)
	if s.Resource != ResourceSpend || s.Source != quota.SourceRejected || s.Cause != quota.CauseExhausted || s.Remaining != 0 ||
		s.RawReset != want.Unix() || !s.ResetAt.Equal(want.Add(time.Hour)) {
		t.Errorf("rejected state %+v", s)
	}
}

func TestClassifyHTTPFromRaw(t *testing.T) {
	t.Parallel()
	raw := "HTTP/2 429\r\ndate: " + httpDate(now) + "\r\nretry-after: 7999\r\ncontent-type: application/json\r\n" +
		"anthropic-organization-id: 5f4bc7ac-3b1c-4f3f-8f3a-0c1d2e3f4a5b\r\n\r\n" + errBody("rate_limit_error", msgAccount)
	resp, body, err := provider.ParseRawHTTP([]byte(raw))
	if err != nil {
		t.Fatal(err)
	}
	got := ClassifyHTTP(resp, body, now)
	if got.Class != provider.ClassQuota || !got.ResetAt.Equal(now.Add(7999*time.Second)) {
		t.Errorf("got %+v", got)
	}
	if p, ok := Principal(resp.Header); !ok || p != "5f4bc7ac-3b1c-4f3f-8f3a-0c1d2e3f4a5b" {
		t.Errorf("Principal = %q, %v", p, ok)
	}
}

func TestPrincipal(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		v    string
		want string
		ok   bool
	}{
		{"5f4bc7ac-3b1c-4f3f-8f3a-0c1d2e3f4a5b", "5f4bc7ac-3b1c-4f3f-8f3a-0c1d2e3f4a5b", true},
		{"", "", false},
		{"org with spaces", "", false},
		{"x\x00", "", false},
	} {
		h := http.Header{}
		h.Set("anthropic-organization-id", c.v)
		if got, ok := Principal(h); got != c.want || ok != c.ok {
			t.Errorf("Principal(%q) = %q, %v", c.v, got, ok)
		}
	}
	if _, ok := Principal(nil); ok {
		t.Error("Principal(nil) ok")
	}
}

func TestObservations(t *testing.T) {
	t.Parallel()
	reset := now.Add(-59 * time.Minute) // server clock an hour behind: 1 min ahead of its Date
	h := response(200, slices.Concat(
		[]string{"Date", httpDate(now.Add(-time.Hour))},
		familyHeaders("requests", 4000, 3999, reset),
		familyHeaders("tokens", 480000, 0, reset),
		familyHeaders("input-tokens", 400000, 399000, reset),
		familyHeaders("output-tokens", 80000, 79000, reset),
		[]string{
			"anthropic-ratelimit-unified-status", "allowed",
			"anthropic-ratelimit-unified-representative-claim", "five_hour",
			"anthropic-ratelimit-unified-5h-utilization", "0.42",
			"anthropic-ratelimit-unified-5h-reset", epoch(now.Add(-time.Hour + 2*time.Hour)),
			"anthropic-ratelimit-unified-7d-utilization", "1.02",
			"anthropic-ratelimit-unified-7d-status", "allowed",
			"anthropic-ratelimit-unified-7d-reset", epoch(now.Add(-time.Hour + 50*time.Hour)),
		},
	)...).Header
	got := Observations(h, now)
	type st struct {
		res        string
		limit, rem int64
		reset      time.Time
		cause      quota.Cause
	}
	wants := []st{
		{"requests", 4000, 3999, now.Add(time.Minute), ""},
		{"tokens", 480000, 0, now.Add(time.Minute), quota.CauseExhausted},
		{"input-tokens", 400000, 399000, now.Add(time.Minute), ""},
		{"output-tokens", 80000, 79000, now.Add(time.Minute), ""},
		{"unified-5h", 100, 58, now.Add(2 * time.Hour), ""},
		{"unified-7d", 100, 1, now.Add(50 * time.Hour), ""},
	}
	if len(got) != len(wants) {
		t.Fatalf("got %d states: %+v", len(got), got)
	}
	for i, w := range wants {
		g := got[i]
		if g.Resource != w.res || g.Limit != w.limit || g.Remaining != w.rem || !g.ResetAt.Equal(w.reset) || g.Cause != w.cause ||
			g.Source != quota.SourceHeaders || !g.ResetKnown || !g.ObservedAt.Equal(now) || g.RawReset != g.ResetAt.Add(-time.Hour).Unix() {
			t.Errorf("state %d = %+v, want %+v", i, g, w)
		}
	}
}

func TestObservationsRejectAbsurd(t *testing.T) {
	t.Parallel()
	for name, kv := range map[string][]string{
		"negative remaining":    familyHeaders("requests", 50, -1, now)[:4],
		"reset in epoch":        {"anthropic-ratelimit-requests-remaining", "3", "anthropic-ratelimit-requests-reset", epoch(now)},
		"no reset":              {"anthropic-ratelimit-requests-remaining", "3"},
		"bad limit":             {"anthropic-ratelimit-requests-limit", "lots", "anthropic-ratelimit-requests-remaining", "3", "anthropic-ratelimit-requests-reset", rfc(now)},
		"utilization NaN":       {"anthropic-ratelimit-unified-5h-utilization", "NaN", "anthropic-ratelimit-unified-5h-reset", epoch(now)},
		"window reset in ms":    {"anthropic-ratelimit-unified-5h-utilization", "0.5", "anthropic-ratelimit-unified-5h-reset", epoch(now) + "000"},
		"window without reset":  {"anthropic-ratelimit-unified-5h-utilization", "0.5"},
		"window without counts": {"anthropic-ratelimit-unified-5h-status", "allowed", "anthropic-ratelimit-unified-5h-reset", epoch(now)},
	} {
		if got := Observations(response(200, kv...).Header, now); len(got) != 0 {
			t.Errorf("%s: %+v", name, got)
		}
	}
}

func TestSpendCapReset(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ in, want time.Time }{
		{now, time.Date(2026, 9, 1, 0, 0, 0, 0, time.UTC)},
		{time.Date(2026, 12, 31, 23, 59, 59, 0, time.UTC), time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC)},
		{time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(2026, 2, 1, 0, 0, 0, 0, time.UTC)},
		// 2026-08-31 20:00 in New York is already September in UTC.
		{time.Date(2026, 8, 31, 20, 0, 0, 0, time.FixedZone("EDT", -4*3600)), time.Date(2026, 10, 1, 0, 0, 0, 0, time.UTC)},
	} {
		if got := SpendCapReset(c.in); !got.Equal(c.want) {
			t.Errorf("SpendCapReset(%v) = %v, want %v", c.in, got, c.want)
		}
	}
}
