package github

import (
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/layoverhq/layover/provider"
	"github.com/layoverhq/layover/provider/internal/providertest"
	"github.com/layoverhq/layover/quota"
)

// Verbatim texts from docs/provider-signals.md §1.
const (
	msgPrimaryUser         = "API rate limit exceeded for user ID 1234567."
	msgPrimaryInstallation = "API rate limit exceeded for installation ID 42."
	msgPrimaryIP           = "API rate limit exceeded for 203.0.113.7. (But here's the good news: Authenticated requests get a higher rate limit. Check out the documentation for more details.)"
	msgGraphQLAlready      = "API rate limit already exceeded for user ID 16855088."
	msgSecondary           = "You have exceeded a secondary rate limit. Please wait a few minutes before you try again."
	msgSecondaryCreation   = "You have exceeded a secondary rate limit and have been temporarily blocked from content creation. Please retry your request again later."
	msgAbuse               = "You have triggered an abuse detection mechanism. Please wait a few minutes before you try again."
	msgSAML                = "Resource protected by organization SAML enforcement. You must grant your Personal Access token access to this organization."
	msgIntegration         = "Resource not accessible by integration"

	docPrimary = "https://docs.github.com/rest/overview/rate-limits-for-the-rest-api#about-rate-limits"
)

func restBody(msg, doc string) string {
	b := `{"message":` + providertest.JSONQuote(msg)
	if doc != "" {
		b += `,"documentation_url":` + providertest.JSONQuote(doc)
	}
	return b + `,"status":"403"}`
}

// want is the expected outcome.
type want = providertest.Want

// check compares got with w; every observation must be a header state
// observed now, with a known reset and Cause obsCause.
func check(t *testing.T, got provider.Outcome, w want, obsCause quota.Cause) {
	t.Helper()
	providertest.Check(t, got, Provider, w)
	if len(got.Observations) != w.Obs {
		t.FailNow()
	}
	for _, o := range got.Observations {
		if o.Cause != obsCause {
			t.Errorf("observation Cause = %q, want %q", o.Cause, obsCause)
		}
		if o.Source != quota.SourceHeaders || !o.ObservedAt.Equal(now) || !o.ResetKnown {
			t.Errorf("observation %+v: want source headers, observed now, reset known", o)
		}
	}
}

const unknown = quota.Unknown

func TestClassifyHTTP(t *testing.T) {
	t.Parallel()
	reset := now.Add(30 * time.Minute)
	soon := now.Add(2 * time.Minute)
	tests := []struct {
		name string
		resp *http.Response
		body string
		want want
		// obsCause is the Cause of every observation.
		obsCause quota.Cause
	}{
		// §1 Headers (every response).
		{
			name: "200 with headers is ok and observed",
			resp: response(200, limits(5000, 4999, reset, "core")...),
			body: `{"login":"octocat"}`,
			want: want{Class: provider.ClassOK, Resource: "core", RetryAfter: -1, Remaining: 4999, Limit: 5000, Reason: "HTTP 200", Obs: 1},
		},
		{
			name: "resource defaults to core",
			resp: response(200, limits(60, 59, reset, "")...),
			want: want{Class: provider.ClassOK, Resource: "core", RetryAfter: -1, Remaining: 59, Limit: 60, Reason: "HTTP 200", Obs: 1},
		},
		{
			name: "success without headers",
			resp: response(201),
			want: want{Class: provider.ClassOK, RetryAfter: -1, Remaining: unknown, Limit: unknown, Reason: "HTTP 201"},
		},
		{
			name: "304 is ok",
			resp: response(304, limits(5000, 10, reset, "core")...),
			want: want{Class: provider.ClassOK, Resource: "core", RetryAfter: -1, Remaining: 10, Limit: 5000, Reason: "HTTP 304", Obs: 1},
		},
		// §1 Primary, REST.
		{
			name: "403 with remaining 0 is quota until the reset",
			resp: response(403, limits(5000, 0, reset, "core")...),
			body: restBody(msgPrimaryUser, docPrimary),
			want: want{Class: provider.ClassQuota, Resource: "core", ResetAt: reset, RetryAfter: -1, Remaining: 0, Limit: 5000,
				Reason: "403 with x-ratelimit-remaining: 0 (resource core)", Obs: 1},
			obsCause: quota.CauseExhausted,
		},
		{
			name: "429 with remaining 0 is quota",
			resp: response(429, limits(30, 0, reset, "search")...),
			body: restBody(msgPrimaryUser, docPrimary),
			want: want{Class: provider.ClassQuota, Resource: "search", ResetAt: reset, RetryAfter: -1, Remaining: 0, Limit: 30,
				Reason: "429 with x-ratelimit-remaining: 0 (resource search)", Obs: 1},
			obsCause: quota.CauseExhausted,
		},
		{
			name: "403 remaining 0 without reset: reset unknown, not invented",
			resp: response(403, "X-RateLimit-Remaining", "0", "X-RateLimit-Limit", "5000"),
			body: restBody(msgPrimaryUser, ""),
			want: want{Class: provider.ClassQuota, Resource: "core", RetryAfter: -1, Remaining: 0, Limit: 5000,
				Reason: "reset unknown"},
		},
		// §1 Primary texts, without headers (tricky 10).
		{
			name: "user ID text without headers",
			resp: response(403),
			body: restBody(msgPrimaryUser, docPrimary),
			want: want{Class: provider.ClassQuota, Resource: "core", RetryAfter: -1, Remaining: unknown, Limit: unknown,
				Reason: `"rate limit exceeded" message (resource core), reset unknown`},
		},
		{
			name: "installation ID text without headers",
			resp: response(403),
			body: restBody(msgPrimaryInstallation, docPrimary),
			want: want{Class: provider.ClassQuota, Resource: "core", RetryAfter: -1, Remaining: unknown, Limit: unknown, Reason: "rate limit exceeded"},
		},
		{
			name: "unauthenticated IP text on 429",
			resp: response(429),
			body: restBody(msgPrimaryIP, docPrimary),
			want: want{Class: provider.ClassQuota, Resource: "core", RetryAfter: -1, Remaining: unknown, Limit: unknown, Reason: "429 with"},
		},
		{
			name: "already exceeded text",
			resp: response(403),
			body: restBody(msgGraphQLAlready, ""),
			want: want{Class: provider.ClassQuota, Resource: "core", RetryAfter: -1, Remaining: unknown, Limit: unknown, Reason: "rate limit exceeded"},
		},
		// §1 Primary, GraphQL; tricky 3 (limits inside a 200).
		{
			name: "GraphQL 200 RATE_LIMITED",
			resp: response(200, limits(5000, 0, reset, "graphql")...),
			body: `{"data":null,"errors":[{"type":"RATE_LIMITED","message":"API rate limit exceeded for user ID 1234567."}]}`,
			want: want{Class: provider.ClassQuota, Resource: "graphql", ResetAt: reset, RetryAfter: -1, Remaining: 0, Limit: 5000,
				Reason: "200 with GraphQL error type RATE_LIMITED", Obs: 1},
			obsCause: quota.CauseExhausted,
		},
		{
			name: "GraphQL 200 RATE_LIMIT 2026 form",
			resp: response(200, limits(5000, 0, reset, "graphql")...),
			body: `{"errors":[{"type":"RATE_LIMIT","code":"graphql_rate_limit","message":"` + msgGraphQLAlready + `"}]}`,
			want: want{Class: provider.ClassQuota, Resource: "graphql", ResetAt: reset, RetryAfter: -1, Remaining: 0, Limit: 5000,
				Reason: "GraphQL error type RATE_LIMIT", Obs: 1},
			obsCause: quota.CauseExhausted,
		},
		{
			name: "GraphQL code only, no headers",
			resp: response(200),
			body: `{"errors":[{"code":"graphql_rate_limit","message":"x"}]}`,
			want: want{Class: provider.ClassQuota, Resource: "graphql", RetryAfter: -1, Remaining: unknown, Limit: unknown,
				Reason: "GraphQL error code graphql_rate_limit, reset unknown"},
		},
		{
			name: "GraphQL message only",
			resp: response(200),
			body: `{"errors":[{"message":"` + msgGraphQLAlready + `"}]}`,
			want: want{Class: provider.ClassQuota, Resource: "graphql", RetryAfter: -1, Remaining: unknown, Limit: unknown,
				Reason: "GraphQL error message says rate limit exceeded"},
		},
		{
			name: "GraphQL other error is ok",
			resp: response(200, limits(5000, 4000, reset, "graphql")...),
			body: `{"data":{"repository":null},"errors":[{"type":"NOT_FOUND","path":["repository"],"message":"Could not resolve to a Repository with the name 'o/x'."}]}`,
			want: want{Class: provider.ClassOK, Resource: "graphql", RetryAfter: -1, Remaining: 4000, Limit: 5000, Reason: "HTTP 200", Obs: 1},
		},
		{
			name: "GraphQL 403 RATE_LIMITED",
			resp: response(403, limits(5000, 0, reset, "graphql")...),
			body: `{"errors":[{"type":"RATE_LIMITED","message":"API rate limit exceeded for user ID 1."}]}`,
			want: want{Class: provider.ClassQuota, Resource: "graphql", ResetAt: reset, RetryAfter: -1, Remaining: 0, Limit: 5000,
				Reason: "x-ratelimit-remaining: 0 (resource graphql)", Obs: 1},
			obsCause: quota.CauseExhausted,
		},
		// §1 Secondary, texts, documentation_url; tricky 2.
		{
			name: "secondary with retry-after seconds",
			resp: response(403, slices.Concat(limits(5000, 4990, reset, "core"), []string{"Retry-After", "60"})...),
			body: restBody(msgSecondary, "https://docs.github.com/rest/overview/rate-limits-for-the-rest-api#about-secondary-rate-limits"),
			want: want{Class: provider.ClassSecondary, Resource: "core", RetryAfter: 60 * time.Second, Remaining: 4990, Limit: 5000,
				Reason: "403 with secondary rate limit message; retry-after 1m0s", Obs: 1},
		},
		{
			name: "secondary with budget left and no retry-after waits unknown",
			resp: response(403, limits(5000, 4990, reset, "core")...),
			body: restBody(msgSecondary, ""),
			want: want{Class: provider.ClassSecondary, Resource: "core", RetryAfter: -1, Remaining: 4990, Limit: 5000,
				Reason: "secondary rate limit message; no retry-after", Obs: 1},
		},
		{
			name: "secondary with remaining 0 waits until the reset",
			resp: response(403, limits(5000, 0, soon, "core")...),
			body: restBody(msgSecondary, ""),
			want: want{Class: provider.ClassSecondary, Resource: "core", ResetAt: soon, RetryAfter: 2 * time.Minute, Remaining: 0, Limit: 5000,
				Reason: "waits until the reset", Obs: 1},
			obsCause: quota.CauseExhausted,
		},
		{
			name: "secondary with remaining 0 and a far reset is quota",
			resp: response(403, limits(5000, 0, reset, "core")...),
			body: restBody(msgSecondary, ""),
			want: want{Class: provider.ClassQuota, Resource: "core", ResetAt: reset, RetryAfter: 30 * time.Minute, Remaining: 0, Limit: 5000,
				Reason: "(over 5m0s: quota)", Obs: 1},
			obsCause: quota.CauseExhausted,
		},
		{
			name: "content creation secondary on 429",
			resp: response(429),
			body: restBody(msgSecondaryCreation, ""),
			want: want{Class: provider.ClassSecondary, RetryAfter: -1, Remaining: unknown, Limit: unknown, Reason: "429 with secondary rate limit message"},
		},
		{
			name: "legacy abuse detection",
			resp: response(403, "Retry-After", "30"),
			body: restBody(msgAbuse, "https://developer.github.com/v3/#abuse-rate-limits"),
			want: want{Class: provider.ClassSecondary, RetryAfter: 30 * time.Second, Remaining: unknown, Limit: unknown, Reason: "abuse detection message"},
		},
		{
			name: "doc URL about-secondary-rate-limits",
			resp: response(403),
			body: restBody("Forbidden", "https://docs.github.com/free-pro-team@latest/rest/overview/rate-limits-for-the-rest-api#about-secondary-rate-limits"),
			want: want{Class: provider.ClassSecondary, RetryAfter: -1, Remaining: unknown, Limit: unknown, Reason: "documentation_url #about-secondary-rate-limits"},
		},
		{
			name: "doc URL secondary-rate-limits",
			resp: response(403),
			body: restBody("Forbidden", "https://docs.github.com/rest/overview/resources-in-the-rest-api#secondary-rate-limits"),
			want: want{Class: provider.ClassSecondary, RetryAfter: -1, Remaining: unknown, Limit: unknown, Reason: "#secondary-rate-limits"},
		},
		{
			name: "doc URL abuse-rate-limits",
			resp: response(429),
			body: restBody("Forbidden", "https://developer.github.com/v3/#abuse-rate-limits"),
			want: want{Class: provider.ClassSecondary, RetryAfter: -1, Remaining: unknown, Limit: unknown, Reason: "#abuse-rate-limits"},
		},
		{
			name: "GraphQL 200 secondary",
			resp: response(200, limits(5000, 4000, reset, "graphql")...),
			body: `{"errors":[{"message":"` + msgSecondary + `"}]}`,
			want: want{Class: provider.ClassSecondary, Resource: "graphql", RetryAfter: -1, Remaining: 4000, Limit: 5000,
				Reason: "200 with GraphQL error secondary rate limit message", Obs: 1},
		},
		{
			name: "GraphQL 403 secondary",
			resp: response(403, "Retry-After", "120"),
			body: `{"documentation_url":"https://docs.github.com/graphql/overview/rate-limits-and-node-limits-for-the-graphql-api#secondary-rate-limits","message":"` + msgSecondary + `"}`,
			want: want{Class: provider.ClassSecondary, RetryAfter: 2 * time.Minute, Remaining: unknown, Limit: unknown, Reason: "secondary rate limit message"},
		},
		{
			name: "secondary retry-after over 5 minutes is quota",
			resp: response(403, "Retry-After", "600"),
			body: restBody(msgSecondary, ""),
			want: want{Class: provider.ClassQuota, ResetAt: now.Add(10 * time.Minute), RetryAfter: 10 * time.Minute, Remaining: unknown, Limit: unknown,
				Reason: "retry-after 10m0s (over 5m0s: quota)"},
		},
		{
			name: "secondary retry-after exactly 5 minutes stays secondary",
			resp: response(403, "Retry-After", "300"),
			body: restBody(msgSecondary, ""),
			want: want{Class: provider.ClassSecondary, RetryAfter: 5 * time.Minute, Remaining: unknown, Limit: unknown, Reason: "retry-after 5m0s"},
		},
		// 429 with nothing else.
		{
			name: "bare 429 is secondary",
			resp: response(429),
			want: want{Class: provider.ClassSecondary, RetryAfter: -1, Remaining: unknown, Limit: unknown, Reason: "429 without a rate-limit message; no retry-after"},
		},
		{
			name: "bare 429 with retry-after",
			resp: response(429, "Retry-After", "7"),
			want: want{Class: provider.ClassSecondary, RetryAfter: 7 * time.Second, Remaining: unknown, Limit: unknown, Reason: "retry-after 7s"},
		},
		{
			name: "bare 429 with a long retry-after is quota",
			resp: response(429, "Retry-After", "3600"),
			want: want{Class: provider.ClassQuota, ResetAt: now.Add(time.Hour), RetryAfter: time.Hour, Remaining: unknown, Limit: unknown, Reason: "over 5m0s"},
		},
		// §1 GraphQL timeout; other statuses.
		{
			name: "GraphQL timeout 502 is transient",
			resp: response(502),
			body: `{"data":null,"errors":[{"message":"Something went wrong while executing your query. This may be the result of a timeout."}]}`,
			want: want{Class: provider.ClassTransient, RetryAfter: -1, Remaining: unknown, Limit: unknown, Reason: "HTTP 502"},
		},
		{name: "504 transient", resp: response(504), want: want{Class: provider.ClassTransient, RetryAfter: -1, Remaining: unknown, Limit: unknown, Reason: "HTTP 504"}},
		{name: "500 transient", resp: response(500), want: want{Class: provider.ClassTransient, RetryAfter: -1, Remaining: unknown, Limit: unknown, Reason: "HTTP 500"}},
		{name: "503 transient", resp: response(503), want: want{Class: provider.ClassTransient, RetryAfter: -1, Remaining: unknown, Limit: unknown, Reason: "HTTP 503"}},
		{name: "501 permanent", resp: response(501), want: want{Class: provider.ClassPermanent, RetryAfter: -1, Remaining: unknown, Limit: unknown, Reason: "HTTP 501"}},
		{
			name: "422 permanent with message",
			resp: response(422),
			body: `{"message":"Validation Failed","errors":[{"resource":"Issue","code":"missing_field","field":"title"}]}`,
			want: want{Class: provider.ClassPermanent, RetryAfter: -1, Remaining: unknown, Limit: unknown, Reason: "422: Validation Failed"},
		},
		{name: "301 permanent", resp: response(301), want: want{Class: provider.ClassPermanent, RetryAfter: -1, Remaining: unknown, Limit: unknown, Reason: "HTTP 301"}},
		// 401.
		{
			name:     "401 is auth",
			resp:     response(401, limits(60, 0, reset, "core")...),
			body:     `{"message":"Bad credentials","documentation_url":"https://docs.github.com/rest"}`,
			want:     want{Class: provider.ClassAuth, Resource: "core", RetryAfter: -1, Remaining: 0, Limit: 60, Reason: "401: Bad credentials", Obs: 1},
			obsCause: quota.CauseExhausted,
		},
		// Tricky 1: 403 is not a rate limit; remaining 0 on a 404 or success.
		{
			name: "403 Resource not accessible by integration",
			resp: response(403, limits(5000, 4321, reset, "core")...),
			body: restBody(msgIntegration, "https://docs.github.com/rest/issues/issues#create-an-issue"),
			want: want{Class: provider.ClassPermanent, Resource: "core", RetryAfter: -1, Remaining: 4321, Limit: 5000,
				Reason: "403 Resource not accessible by integration (permissions)", Obs: 1},
		},
		{
			name: "403 SAML enforcement",
			resp: response(403, slices.Concat(limits(5000, 4321, reset, "core"), []string{"X-GitHub-SSO", "required; url=https://github.com/orgs/acme/sso?authorization_request=AAA"})...),
			body: restBody(msgSAML, "https://docs.github.com/articles/authenticating-to-a-github-organization-with-saml-single-sign-on/"),
			want: want{Class: provider.ClassPermanent, Resource: "core", RetryAfter: -1, Remaining: 4321, Limit: 5000,
				Reason: "403 with X-GitHub-SSO (SAML enforcement)", Obs: 1},
		},
		{
			name: "403 archived repository",
			resp: response(403),
			body: restBody("Repository was archived so is read-only.", ""),
			want: want{Class: provider.ClassPermanent, RetryAfter: -1, Remaining: unknown, Limit: unknown, Reason: "403: Repository was archived so is read-only."},
		},
		{
			name: "403 missing scopes",
			resp: response(403, "X-Accepted-OAuth-Scopes", "admin:org", "X-OAuth-Scopes", "repo"),
			body: restBody("Must have admin rights to Repository.", ""),
			want: want{Class: provider.ClassPermanent, RetryAfter: -1, Remaining: unknown, Limit: unknown, Reason: "403: Must have admin rights"},
		},
		{
			name: "404 that spent the last unit stays permanent but is observed",
			resp: response(404, limits(5000, 0, reset, "core")...),
			body: restBody("Not Found", ""),
			want: want{Class: provider.ClassPermanent, Resource: "core", RetryAfter: -1, Remaining: 0, Limit: 5000,
				Reason: "404: Not Found", Obs: 1},
			obsCause: quota.CauseExhausted,
		},
		{
			name: "200 that spent the last unit stays ok but is observed",
			resp: response(200, limits(5000, 0, reset, "core")...),
			body: `{}`,
			want: want{Class: provider.ClassOK, Resource: "core", RetryAfter: -1, Remaining: 0, Limit: 5000,
				Reason: "spent the last unit", Obs: 1},
			obsCause: quota.CauseExhausted,
		},
		{
			name: "REST 200 whose content mentions a secondary limit is ok",
			resp: response(200),
			body: `{"sha":"abc","message":"Handle: You have exceeded a secondary rate limit"}`,
			want: want{Class: provider.ClassOK, RetryAfter: -1, Remaining: unknown, Limit: unknown, Reason: "HTTP 200"},
		},
		// Tricky 7: reset encodings.
		{
			name: "reset in epoch milliseconds is rejected, not invented",
			resp: response(403, "X-RateLimit-Limit", "5000", "X-RateLimit-Remaining", "0", "X-RateLimit-Reset", "1785931200000"),
			body: restBody(msgPrimaryUser, ""),
			want: want{Class: provider.ClassQuota, Resource: "core", RetryAfter: -1, Remaining: 0, Limit: 5000, Reason: "reset unknown"},
		},
		{
			name: "negative remaining is rejected",
			resp: response(403, "X-RateLimit-Limit", "5000", "X-RateLimit-Remaining", "-1", "X-RateLimit-Reset", epoch(reset)),
			body: restBody("Forbidden", ""),
			want: want{Class: provider.ClassPermanent, Resource: "core", RetryAfter: -1, Remaining: unknown, Limit: 5000, Reason: "403: Forbidden"},
		},
		{
			name: "retry-after as HTTP-date is relative to Date",
			resp: response(429, "Date", httpDate(now.Add(-time.Hour)), "Retry-After", httpDate(now.Add(-time.Hour+90*time.Second))),
			want: want{Class: provider.ClassSecondary, RetryAfter: 90 * time.Second, Remaining: unknown, Limit: unknown, Reason: "retry-after 1m30s"},
		},
		{
			name: "retry-after as HTTP-date without Date is relative to now",
			resp: response(429, "Retry-After", httpDate(now.Add(45*time.Second))),
			want: want{Class: provider.ClassSecondary, RetryAfter: 45 * time.Second, Remaining: unknown, Limit: unknown, Reason: "retry-after 45s"},
		},
		{
			name: "retry-after HTTP-date in the past is zero",
			resp: response(429, "Retry-After", httpDate(now.Add(-time.Minute))),
			want: want{Class: provider.ClassSecondary, RetryAfter: 0, Remaining: unknown, Limit: unknown, Reason: "retry-after 0s"},
		},
		{
			name: "garbage retry-after is not stated",
			resp: response(429, "Retry-After", "soon"),
			want: want{Class: provider.ClassSecondary, RetryAfter: -1, Remaining: unknown, Limit: unknown, Reason: "no retry-after"},
		},
		// Tricky 11: clock skew.
		{
			name: "Date 1 h behind our clock moves the reset 1 h later",
			resp: response(403,
				"Date", httpDate(now.Add(-time.Hour)),
				"X-RateLimit-Limit", "5000", "X-RateLimit-Remaining", "0", "X-RateLimit-Resource", "core",
				"X-RateLimit-Reset", epoch(now.Add(-time.Hour+20*time.Minute))),
			body: restBody(msgPrimaryUser, ""),
			want: want{Class: provider.ClassQuota, Resource: "core", ResetAt: now.Add(20 * time.Minute), RetryAfter: -1, Remaining: 0, Limit: 5000,
				Reason: "403 with x-ratelimit-remaining: 0", Obs: 1},
			obsCause: quota.CauseExhausted,
		},
		{
			name: "nil response",
			resp: nil,
			want: want{Class: provider.ClassPermanent, RetryAfter: -1, Remaining: unknown, Limit: unknown, Reason: "no HTTP response"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := ClassifyHTTP(tt.resp, []byte(tt.body), now)
			check(t, got, tt.want, tt.obsCause)
		})
	}
}

func TestClassifyHTTPSkewObservation(t *testing.T) {
	t.Parallel()
	// The server's clock is 1 h behind ours: its reset, 20 min after its
	// Date, is 20 min after our now, i.e. 1 h after the raw epoch.
	raw := now.Add(-time.Hour + 20*time.Minute)
	resp := response(200, "Date", httpDate(now.Add(-time.Hour)), "X-RateLimit-Remaining", "10", "X-RateLimit-Reset", epoch(raw))
	out := ClassifyHTTP(resp, nil, now)
	if len(out.Observations) != 1 {
		t.Fatalf("observations = %+v", out.Observations)
	}
	o := out.Observations[0]
	if got := o.ResetAt.Sub(time.Unix(o.RawReset, 0)); got != time.Hour {
		t.Errorf("ResetAt − raw epoch = %v, want 1h", got)
	}
	if o.RawReset != raw.Unix() || o.Limit != unknown || o.Remaining != 10 || o.Resource != "core" {
		t.Errorf("observation = %+v", o)
	}
}

func TestClassifyHTTPFromRaw(t *testing.T) {
	t.Parallel()
	raw := "HTTP/2 403 \r\n" +
		"date: " + httpDate(now) + "\r\n" +
		"content-type: application/json; charset=utf-8\r\n" +
		"x-ratelimit-limit: 5000\r\n" +
		"x-ratelimit-remaining: 0\r\n" +
		"x-ratelimit-reset: " + epoch(now.Add(time.Hour)) + "\r\n" +
		"x-ratelimit-used: 5000\r\n" +
		"x-ratelimit-resource: core\r\n" +
		"transfer-encoding: chunked\r\n\r\n" +
		restBody(msgPrimaryUser, docPrimary)
	resp, body, err := provider.ParseRawHTTP([]byte(raw))
	if err != nil {
		t.Fatal(err)
	}
	check(t, ClassifyHTTP(resp, body, now), want{
		Class: provider.ClassQuota, Resource: "core", ResetAt: now.Add(time.Hour), RetryAfter: -1, Remaining: 0, Limit: 5000,
		Reason: "403 with x-ratelimit-remaining: 0 (resource core)", Obs: 1,
	}, quota.CauseExhausted)
}

func TestObservations(t *testing.T) {
	t.Parallel()
	reset := now.Add(30 * time.Minute)
	tests := []struct {
		name string
		kv   []string
		want *quota.State
	}{
		{
			name: "all headers",
			kv:   limits(5000, 42, reset, "graphql"),
			want: &quota.State{Key: quota.Key{Resource: "graphql"}, Limit: 5000, Remaining: 42, ResetAt: reset, ResetKnown: true, RawReset: reset.Unix(), ObservedAt: now, Source: quota.SourceHeaders},
		},
		{
			name: "exhausted",
			kv:   limits(30, 0, reset, "search"),
			want: &quota.State{Key: quota.Key{Resource: "search"}, Limit: 30, Remaining: 0, ResetAt: reset, ResetKnown: true, RawReset: reset.Unix(), ObservedAt: now, Source: quota.SourceHeaders, Cause: quota.CauseExhausted},
		},
		{
			name: "no Date: raw epoch",
			kv:   []string{"X-RateLimit-Remaining", "7", "X-RateLimit-Reset", "1785931200"},
			want: &quota.State{Key: quota.Key{Resource: "core"}, Limit: unknown, Remaining: 7, ResetAt: time.Unix(1785931200, 0), ResetKnown: true, RawReset: 1785931200, ObservedAt: now, Source: quota.SourceHeaders},
		},
		{
			name: "unparseable Date: raw epoch",
			kv:   []string{"Date", "yesterday", "X-RateLimit-Remaining", "7", "X-RateLimit-Reset", "1785931200"},
			want: &quota.State{Key: quota.Key{Resource: "core"}, Limit: unknown, Remaining: 7, ResetAt: time.Unix(1785931200, 0), ResetKnown: true, RawReset: 1785931200, ObservedAt: now, Source: quota.SourceHeaders},
		},
		{
			name: "resource is lowercased",
			kv:   []string{"X-RateLimit-Remaining", "7", "X-RateLimit-Reset", "1785931200", "X-RateLimit-Resource", "Code_Search"},
			want: &quota.State{Key: quota.Key{Resource: "code_search"}, Limit: unknown, Remaining: 7, ResetAt: time.Unix(1785931200, 0), ResetKnown: true, RawReset: 1785931200, ObservedAt: now, Source: quota.SourceHeaders},
		},
		{name: "none", kv: nil},
		{name: "no reset", kv: []string{"X-RateLimit-Remaining", "0", "X-RateLimit-Limit", "5000"}},
		{name: "no remaining", kv: []string{"X-RateLimit-Reset", "1785931200", "X-RateLimit-Limit", "5000"}},
		{name: "epoch milliseconds", kv: []string{"X-RateLimit-Remaining", "1", "X-RateLimit-Reset", "1785931200000"}},
		{name: "zero reset", kv: []string{"X-RateLimit-Remaining", "1", "X-RateLimit-Reset", "0"}},
		{name: "negative remaining", kv: []string{"X-RateLimit-Remaining", "-3", "X-RateLimit-Reset", "1785931200"}},
		{name: "negative limit", kv: []string{"X-RateLimit-Limit", "-1", "X-RateLimit-Remaining", "3", "X-RateLimit-Reset", "1785931200"}},
		{name: "fractional remaining", kv: []string{"X-RateLimit-Remaining", "3.5", "X-RateLimit-Reset", "1785931200"}},
		{name: "bad resource", kv: []string{"X-RateLimit-Remaining", "3", "X-RateLimit-Reset", "1785931200", "X-RateLimit-Resource", "core; drop table"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := Observations(response(200, tt.kv...).Header, now)
			if tt.want == nil {
				if len(got) != 0 {
					t.Fatalf("got %+v, want no observation", got)
				}
				return
			}
			if len(got) != 1 {
				t.Fatalf("got %d observations, want 1", len(got))
			}
			g := got[0]
			if !g.ResetAt.Equal(tt.want.ResetAt) {
				t.Errorf("ResetAt = %v, want %v", g.ResetAt, tt.want.ResetAt)
			}
			g.ResetAt, tt.want.ResetAt = time.Time{}, time.Time{}
			if g != *tt.want {
				t.Errorf("got %+v\nwant %+v", g, *tt.want)
			}
		})
	}
	if got := Observations(nil, now); got != nil {
		t.Errorf("Observations(nil) = %v", got)
	}
}
