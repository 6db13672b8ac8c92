package github

import (
	"strings"
	"testing"
	"time"

	"github.com/layoverhq/layover/provider"
	"github.com/layoverhq/layover/quota"
)

// ghInclude renders `gh api -i` output: status line, sorted headers, blank
// line, body, as gh prints them.
func ghInclude(status string, headers []string, body string) string {
	var b strings.Builder
	b.WriteString("HTTP/2.0 " + status + "\r\n")
	for i := 0; i+1 < len(headers); i += 2 {
		b.WriteString(headers[i] + ": " + headers[i+1] + "\r\n")
	}
	b.WriteString("\r\n")
	b.WriteString(body)
	return b.String()
}

func TestClassifyCLI(t *testing.T) {
	t.Parallel()
	reset := now.Add(40 * time.Minute)
	skewedDate := now.Add(-time.Hour)
	skewedReset := skewedDate.Add(25 * time.Minute) // 25 min after the server's Date
	tests := []struct {
		name   string
		exit   int
		stdout string
		stderr string
		want   want
		// obsCause is the Cause of every observation.
		obsCause quota.Cause
	}{
		{
			name:   "exit 0 is ok whatever it printed",
			exit:   0,
			stderr: "GraphQL: " + msgGraphQLAlready + "\nretrying in 60s",
			want:   want{Class: provider.ClassOK, RetryAfter: -1, Remaining: unknown, Limit: unknown, Reason: "exit 0"},
		},
		{
			name:   "exit 0 with gh api -i headers is observed",
			exit:   0,
			stdout: ghInclude("200 OK", []string{"Date", httpDate(now), "X-Ratelimit-Limit", "5000", "X-Ratelimit-Remaining", "12", "X-Ratelimit-Reset", epoch(reset), "X-Ratelimit-Resource", "core"}, "{}"),
			want:   want{Class: provider.ClassOK, Resource: "core", RetryAfter: -1, Remaining: 12, Limit: 5000, Reason: "exit 0", Obs: 1},
		},
		// go-gh REST form: HTTP <status>: <message> (<url>).
		{
			name:   "HTTP 403 user ID text",
			exit:   1,
			stderr: "HTTP 403: " + msgPrimaryUser + " (https://api.github.com/repos/acme/app/pulls?per_page=100)\n",
			want:   want{Class: provider.ClassQuota, Resource: "core", RetryAfter: -1, Remaining: unknown, Limit: unknown, Reason: `gh: HTTP 403 with "rate limit exceeded" message (resource core), reset unknown`},
		},
		{
			name:   "HTTP 403 IP text on a search URL",
			exit:   1,
			stderr: "HTTP 403: " + msgPrimaryIP + " (https://api.github.com/search/issues?q=repo%3Aacme%2Fapp)\n",
			want:   want{Class: provider.ClassQuota, Resource: "search", RetryAfter: -1, Remaining: unknown, Limit: unknown, Reason: "resource search"},
		},
		{
			name:   "installation text on a code search URL",
			exit:   1,
			stderr: "HTTP 403: " + msgPrimaryInstallation + " (https://api.github.com/search/code?q=foo)",
			want:   want{Class: provider.ClassQuota, Resource: "code_search", RetryAfter: -1, Remaining: unknown, Limit: unknown, Reason: "resource code_search"},
		},
		{
			name:   "wrapped with a context prefix",
			exit:   1,
			stderr: "failed to get runs: HTTP 403: " + msgPrimaryUser + " (https://api.github.com/repos/acme/app/actions/runs?per_page=20)",
			want:   want{Class: provider.ClassQuota, Resource: "core", RetryAfter: -1, Remaining: unknown, Limit: unknown, Reason: "gh: HTTP 403 with"},
		},
		{
			name:   "GHES search URL",
			exit:   1,
			stderr: "HTTP 403: " + msgPrimaryUser + " (https://ghes.example.com/api/v3/search/commits?q=x)",
			want:   want{Class: provider.ClassQuota, Resource: "search", RetryAfter: -1, Remaining: unknown, Limit: unknown, Reason: "resource search"},
		},
		// GraphQL: <msg> (<path>) joined by ", ".
		{
			name:   "GraphQL already exceeded",
			exit:   1,
			stderr: "GraphQL: " + msgGraphQLAlready + "\n",
			want:   want{Class: provider.ClassQuota, Resource: "graphql", RetryAfter: -1, Remaining: unknown, Limit: unknown, Reason: "resource graphql"},
		},
		{
			name:   "GraphQL joined errors with paths",
			exit:   1,
			stderr: "GraphQL: Could not resolve to a Repository with the name 'acme/x'. (repository), API rate limit exceeded for user ID 1234567. (viewer)",
			want:   want{Class: provider.ClassQuota, Resource: "graphql", RetryAfter: -1, Remaining: unknown, Limit: unknown, Reason: "resource graphql"},
		},
		{
			name:   "GraphQL secondary",
			exit:   1,
			stderr: "GraphQL: " + msgSecondary,
			want:   want{Class: provider.ClassSecondary, RetryAfter: -1, Remaining: unknown, Limit: unknown, Reason: "secondary rate limit message; no retry-after"},
		},
		// gh api: gh: <message> (HTTP <status>) and the JSON body on stdout.
		{
			name:   "gh api secondary",
			exit:   1,
			stdout: restBody(msgSecondary, "https://docs.github.com/rest/overview/rate-limits-for-the-rest-api#about-secondary-rate-limits"),
			stderr: "gh: " + msgSecondary + " (HTTP 403)\n",
			want:   want{Class: provider.ClassSecondary, RetryAfter: -1, Remaining: unknown, Limit: unknown, Reason: "gh: HTTP 403 with secondary rate limit message; no retry-after"},
		},
		{
			name:   "gh api content creation secondary",
			exit:   1,
			stderr: "gh: " + msgSecondaryCreation + " (HTTP 403)",
			want:   want{Class: provider.ClassSecondary, RetryAfter: -1, Remaining: unknown, Limit: unknown, Reason: "secondary rate limit message"},
		},
		{
			name:   "gh api legacy abuse detection",
			exit:   1,
			stderr: "gh: " + msgAbuse + " (HTTP 403)",
			want:   want{Class: provider.ClassSecondary, RetryAfter: -1, Remaining: unknown, Limit: unknown, Reason: "abuse detection message"},
		},
		{
			name:   "gh api secondary known only from documentation_url",
			exit:   1,
			stdout: restBody("Forbidden", "https://developer.github.com/v3/#abuse-rate-limits"),
			stderr: "gh: Forbidden (HTTP 403)",
			want:   want{Class: provider.ClassSecondary, RetryAfter: -1, Remaining: unknown, Limit: unknown, Reason: "#abuse-rate-limits"},
		},
		{
			name:   "gh api primary, JSON body on stdout",
			exit:   1,
			stdout: restBody(msgPrimaryUser, docPrimary),
			stderr: "gh: " + msgPrimaryUser + " (HTTP 403)",
			want:   want{Class: provider.ClassQuota, Resource: "core", RetryAfter: -1, Remaining: unknown, Limit: unknown, Reason: "reset unknown"},
		},
		{
			name:   "gh api graphql RATE_LIMITED body",
			exit:   1,
			stdout: `{"data":null,"errors":[{"type":"RATE_LIMITED","message":"` + msgPrimaryUser + `"}]}`,
			stderr: "gh: " + msgPrimaryUser,
			want:   want{Class: provider.ClassQuota, Resource: "graphql", RetryAfter: -1, Remaining: unknown, Limit: unknown, Reason: "GraphQL error type RATE_LIMITED"},
		},
		// gh api -i: header lines on stdout give the reset.
		{
			name: "gh api -i primary with skewed Date",
			exit: 1,
			stdout: ghInclude("403 Forbidden", []string{
				"Content-Type", "application/json; charset=utf-8",
				"Date", httpDate(skewedDate),
				"X-Ratelimit-Limit", "5000",
				"X-Ratelimit-Remaining", "0",
				"X-Ratelimit-Reset", epoch(skewedReset),
				"X-Ratelimit-Resource", "core",
				"X-Ratelimit-Used", "5000",
			}, restBody(msgPrimaryUser, docPrimary)),
			stderr: "gh: " + msgPrimaryUser + " (HTTP 403)",
			want: want{Class: provider.ClassQuota, Resource: "core", ResetAt: now.Add(25 * time.Minute), RetryAfter: -1, Remaining: 0, Limit: 5000,
				Reason: "403 with x-ratelimit-remaining: 0 (resource core)", Obs: 1},
			obsCause: quota.CauseExhausted,
		},
		{
			name: "gh api -i graphql 200 with RATE_LIMITED",
			exit: 1,
			stdout: ghInclude("200 OK", []string{
				"Date", httpDate(now),
				"X-Ratelimit-Limit", "5000", "X-Ratelimit-Remaining", "0",
				"X-Ratelimit-Reset", epoch(reset), "X-Ratelimit-Resource", "graphql",
			}, `{"errors":[{"type":"RATE_LIMITED","message":"`+msgPrimaryUser+`"}]}`),
			stderr: "gh: " + msgPrimaryUser,
			want: want{Class: provider.ClassQuota, Resource: "graphql", ResetAt: reset, RetryAfter: -1, Remaining: 0, Limit: 5000,
				Reason: "GraphQL error type RATE_LIMITED", Obs: 1},
			obsCause: quota.CauseExhausted,
		},
		{
			name: "gh api -i secondary with Retry-After, coloured",
			exit: 1,
			stdout: "HTTP/2.0 403 Forbidden\r\n\x1b[1;34mDate\x1b[m: " + httpDate(now) + "\r\n" +
				"\x1b[1;34mRetry-After\x1b[m: 60\r\n\x1b[1;34mX-Ratelimit-Remaining\x1b[m: 4990\r\n" +
				"\x1b[1;34mX-Ratelimit-Reset\x1b[m: " + epoch(reset) + "\r\n\r\n" + restBody(msgSecondary, ""),
			stderr: "gh: " + msgSecondary + " (HTTP 403)",
			want: want{Class: provider.ClassSecondary, Resource: "core", RetryAfter: time.Minute, Remaining: 4990, Limit: unknown,
				Reason: "retry-after 1m0s", Obs: 1},
		},
		{
			name: "gh api -i secondary with a long Retry-After is quota",
			exit: 1,
			stdout: ghInclude("429 Too Many Requests", []string{"Retry-After", "900"},
				restBody(msgSecondary, "")),
			stderr: "gh: " + msgSecondary + " (HTTP 429)",
			want: want{Class: provider.ClassQuota, ResetAt: now.Add(15 * time.Minute), RetryAfter: 15 * time.Minute, Remaining: unknown, Limit: unknown,
				Reason: "over 5m0s: quota"},
		},
		{
			name:   "gh api -i paginated: the last block counts",
			exit:   1,
			stdout: ghInclude("200 OK", []string{"X-Ratelimit-Remaining", "1", "X-Ratelimit-Reset", epoch(reset)}, "[]") + "\n" + ghInclude("403 Forbidden", []string{"X-Ratelimit-Remaining", "0", "X-Ratelimit-Reset", epoch(reset)}, restBody(msgPrimaryUser, "")),
			stderr: "gh: " + msgPrimaryUser + " (HTTP 403)",
			want: want{Class: provider.ClassQuota, Resource: "core", ResetAt: reset, RetryAfter: -1, Remaining: 0, Limit: unknown,
				Reason: "403 with x-ratelimit-remaining: 0", Obs: 1},
			obsCause: quota.CauseExhausted,
		},
		// auth.
		{
			name:   "HTTP 401 Bad credentials",
			exit:   1,
			stderr: "HTTP 401: Bad credentials (https://api.github.com/graphql)\nTry authenticating with:  gh auth login",
			want:   want{Class: provider.ClassAuth, RetryAfter: -1, Remaining: unknown, Limit: unknown, Reason: "HTTP 401"},
		},
		{
			name:   "gh api 401",
			exit:   1,
			stderr: "gh: Bad credentials (HTTP 401)",
			want:   want{Class: provider.ClassAuth, RetryAfter: -1, Remaining: unknown, Limit: unknown, Reason: "HTTP 401"},
		},
		{
			name:   "Bad credentials text alone",
			exit:   1,
			stderr: "error: Bad credentials",
			want:   want{Class: provider.ClassAuth, RetryAfter: -1, Remaining: unknown, Limit: unknown, Reason: "bad credentials"},
		},
		{
			name:   "exit 4 no credentials",
			exit:   4,
			stderr: "To get started with GitHub CLI, please run:  gh auth login\nAlternatively, populate the GH_TOKEN environment variable with a GitHub API authentication token.",
			want:   want{Class: provider.ClassAuth, RetryAfter: -1, Remaining: unknown, Limit: unknown, Reason: "exit 4"},
		},
		{
			name:   "gh auth login hint with exit 1",
			exit:   1,
			stderr: "You are not logged into any GitHub hosts. To log in, run: gh auth login",
			want:   want{Class: provider.ClassAuth, RetryAfter: -1, Remaining: unknown, Limit: unknown, Reason: "gh auth login"},
		},
		// transient.
		{
			name:   "HTTP 502",
			exit:   1,
			stderr: "HTTP 502: Bad Gateway (https://api.github.com/graphql)",
			want:   want{Class: provider.ClassTransient, RetryAfter: -1, Remaining: unknown, Limit: unknown, Reason: "HTTP 502"},
		},
		{
			name:   "gh api bare HTTP 503",
			exit:   1,
			stderr: "gh: HTTP 503",
			want:   want{Class: provider.ClassTransient, RetryAfter: -1, Remaining: unknown, Limit: unknown, Reason: "HTTP 503"},
		},
		{
			name:   "connection refused",
			exit:   1,
			stderr: `Post "https://api.github.com/graphql": dial tcp 140.82.112.6:443: connect: connection refused`,
			want:   want{Class: provider.ClassTransient, RetryAfter: -1, Remaining: unknown, Limit: unknown, Reason: "connection refused"},
		},
		{
			name:   "i/o timeout",
			exit:   1,
			stderr: `Get "https://api.github.com/user": dial tcp: lookup api.github.com: i/o timeout`,
			want:   want{Class: provider.ClassTransient, RetryAfter: -1, Remaining: unknown, Limit: unknown, Reason: "i/o timeout"},
		},
		{
			name:   "TLS handshake timeout",
			exit:   1,
			stderr: `Post "https://api.github.com/graphql": net/http: TLS handshake timeout`,
			want:   want{Class: provider.ClassTransient, RetryAfter: -1, Remaining: unknown, Limit: unknown, Reason: "tls handshake timeout"},
		},
		{
			name:   "connection reset",
			exit:   1,
			stderr: `Post "https://api.github.com/graphql": read tcp 10.0.0.2:5555->140.82.112.6:443: read: connection reset by peer`,
			want:   want{Class: provider.ClassTransient, RetryAfter: -1, Remaining: unknown, Limit: unknown, Reason: "connection reset"},
		},
		{
			name:   "gh cannot connect",
			exit:   1,
			stderr: "error connecting to api.github.com\ncheck your internet connection or https://githubstatus.com",
			want:   want{Class: provider.ClassTransient, RetryAfter: -1, Remaining: unknown, Limit: unknown, Reason: "error connecting to"},
		},
		// permanent.
		{
			name:   "gh api -i 200 then a jq failure",
			exit:   1,
			stdout: ghInclude("200 OK", []string{"X-Ratelimit-Remaining", "4000", "X-Ratelimit-Reset", epoch(reset)}, "{}"),
			stderr: "failed to parse jq expression",
			want:   want{Class: provider.ClassPermanent, Resource: "core", RetryAfter: -1, Remaining: 4000, Limit: unknown, Reason: "exit 1: failed to parse jq expression", Obs: 1},
		},
		{
			name:   "HTTP 501",
			exit:   1,
			stderr: "HTTP 501: Not Implemented (https://api.github.com/x)",
			want:   want{Class: provider.ClassPermanent, RetryAfter: -1, Remaining: unknown, Limit: unknown, Reason: "501"},
		},
		{
			name:   "exit 2 cancelled",
			exit:   2,
			stderr: "",
			want:   want{Class: provider.ClassPermanent, RetryAfter: -1, Remaining: unknown, Limit: unknown, Reason: "cancelled"},
		},
		{
			name:   "404",
			exit:   1,
			stderr: "HTTP 404: Not Found (https://api.github.com/repos/acme/x)",
			want:   want{Class: provider.ClassPermanent, RetryAfter: -1, Remaining: unknown, Limit: unknown, Reason: "gh: 404: Not Found"},
		},
		{
			name:   "403 integration permissions",
			exit:   1,
			stderr: "HTTP 403: " + msgIntegration + " (https://api.github.com/repos/acme/app/issues)\nThis API operation needs the \"admin:org\" scope. To request it, run:  gh auth refresh -h github.com -s admin:org",
			want:   want{Class: provider.ClassPermanent, RetryAfter: -1, Remaining: unknown, Limit: unknown, Reason: "Resource not accessible by integration"},
		},
		{
			name:   "bare HTTP 429 is secondary",
			exit:   1,
			stderr: "HTTP 429 (https://api.github.com/repos/acme/app)",
			want:   want{Class: provider.ClassSecondary, RetryAfter: -1, Remaining: unknown, Limit: unknown, Reason: "429 without a rate-limit message"},
		},
		{
			name:   "rate-limit words in the command's own stdout are not evidence",
			exit:   1,
			stdout: "#12  API rate limit exceeded for user ID 1 in CI  bug\n",
			stderr: "HTTP 404: Not Found (https://api.github.com/repos/acme/app/issues/13)",
			want:   want{Class: provider.ClassPermanent, RetryAfter: -1, Remaining: unknown, Limit: unknown, Reason: "404"},
		},
		{
			name:   "unknown failure",
			exit:   1,
			stderr: "could not find pull request",
			want:   want{Class: provider.ClassPermanent, RetryAfter: -1, Remaining: unknown, Limit: unknown, Reason: "exit 1: could not find pull request"},
		},
		{
			name: "empty output",
			exit: 1,
			want: want{Class: provider.ClassPermanent, RetryAfter: -1, Remaining: unknown, Limit: unknown, Reason: "exit 1"},
		},
		{
			name:   "only the last 64 KiB of stderr is scanned",
			exit:   1,
			stderr: "GraphQL: " + msgGraphQLAlready + "\n" + strings.Repeat("noise\n", 20000) + "HTTP 404: Not Found (https://api.github.com/x)",
			want:   want{Class: provider.ClassPermanent, RetryAfter: -1, Remaining: unknown, Limit: unknown, Reason: "404"},
		},
		{
			name:   "message after megabytes of noise",
			exit:   1,
			stderr: strings.Repeat("x", 1<<20) + "\nHTTP 403: " + msgPrimaryUser + " (https://api.github.com/user)",
			want:   want{Class: provider.ClassQuota, Resource: "core", RetryAfter: -1, Remaining: unknown, Limit: unknown, Reason: "rate limit exceeded"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := ClassifyCLI(tt.exit, []byte(tt.stdout), []byte(tt.stderr), now)
			check(t, got, tt.want, tt.obsCause)
		})
	}
}

func TestUnwrapGHLine(t *testing.T) {
	t.Parallel()
	tests := []struct {
		line string
		want ghLine
	}{
		{"HTTP 403: " + msgPrimaryUser + " (https://api.github.com/user)",
			ghLine{message: msgPrimaryUser, status: 403, url: "https://api.github.com/user"}},
		{"HTTP 403: " + msgPrimaryIP + " (https://api.github.com/search/issues?q=a)",
			ghLine{message: msgPrimaryIP, status: 403, url: "https://api.github.com/search/issues?q=a"}},
		{"HTTP 502 (https://api.github.com/graphql)",
			ghLine{status: 502, url: "https://api.github.com/graphql"}},
		{"gh: " + msgSecondary + " (HTTP 403)", ghLine{message: msgSecondary, status: 403}},
		{"gh: HTTP 404", ghLine{status: 404}},
		{"gh: " + msgPrimaryUser, ghLine{message: msgPrimaryUser}},
		{"GraphQL: " + msgGraphQLAlready, ghLine{message: msgGraphQLAlready, graphql: true}},
		{"GraphQL: a (x.y), b (z)", ghLine{message: "a (x.y), b (z)", graphql: true}},
		{"failed to create issue: HTTP 410: Issues are disabled for this repo (https://api.github.com/repos/a/b/issues)",
			ghLine{message: "Issues are disabled for this repo", status: 410, url: "https://api.github.com/repos/a/b/issues"}},
		{"plain text", ghLine{message: "plain text"}},
	}
	for _, tt := range tests {
		if got := unwrapGHLine(tt.line); got != tt.want {
			t.Errorf("unwrapGHLine(%q)\n got %+v\nwant %+v", tt.line, got, tt.want)
		}
	}
}
