package fake

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// testClock is a settable clock for the fakes.
type testClock struct {
	mu sync.Mutex
	t  time.Time
}

func newTestClock() *testClock {
	return &testClock{t: time.Date(2026, 11, 10, 9, 30, 15, 500_000_000, time.UTC)}
}

func (c *testClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *testClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

type answer struct {
	status int
	header http.Header
	body   string
}

func call(t *testing.T, h http.Handler, method, path, token, body string) answer {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req := httptest.NewRequest(method, path, rd)
	if token != "" {
		req.Header.Set("Authorization", "token "+token)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	res := rec.Result()
	b, _ := io.ReadAll(res.Body)
	return answer{res.StatusCode, res.Header, string(b)}
}

func wantRate(t *testing.T, a answer, resource string, limit, remaining, used, reset int64) {
	t.Helper()
	got := []string{
		a.header.Get("X-Ratelimit-Resource"),
		a.header.Get("X-Ratelimit-Limit"),
		a.header.Get("X-Ratelimit-Remaining"),
		a.header.Get("X-Ratelimit-Used"),
		a.header.Get("X-Ratelimit-Reset"),
	}
	want := []string{resource, itoa(limit), itoa(remaining), itoa(used), itoa(reset)}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("rate headers (resource, limit, remaining, used, reset) = %v, want %v", got, want)
		}
	}
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

func TestGitHubUserChargesCore(t *testing.T) {
	t.Parallel()
	clk := newTestClock()
	g := NewGitHub(GitHubConfig{Now: clk.Now, Login: "hubot", UserID: 42})
	reset := clk.Now().Add(time.Hour).Truncate(time.Second).Unix()

	for i := int64(1); i <= 3; i++ {
		a := call(t, g, "GET", "/user", "tok", "")
		if a.status != 200 || a.body != `{"login":"hubot","id":42}` {
			t.Fatalf("GET /user = %d %s", a.status, a.body)
		}
		wantRate(t, a, "core", 5000, 5000-i, i, reset)
		if ct := a.header.Get("Content-Type"); ct != "application/json; charset=utf-8" {
			t.Fatalf("Content-Type = %q", ct)
		}
		if d := a.header.Get("Date"); d != "Tue, 10 Nov 2026 09:30:15 GMT" {
			t.Fatalf("Date = %q", d)
		}
	}
	if n := g.Calls("/user"); n != 3 {
		t.Fatalf("Calls(/user) = %d, want 3", n)
	}
	reqs := g.Requests()
	if len(reqs) != 3 || reqs[0] != (RecordedRequest{Method: "GET", Path: "/user", Token: "tok", Resource: "core", Reset: reset, Status: 200}) {
		t.Fatalf("Requests() = %+v", reqs)
	}
}

func TestGitHubRateLimitIsFree(t *testing.T) {
	t.Parallel()
	clk := newTestClock()
	g := NewGitHub(GitHubConfig{Now: clk.Now, Limits: map[string]int64{"source_import": 100}})
	reset := clk.Now().Add(time.Hour).Truncate(time.Second).Unix()
	call(t, g, "GET", "/user", "tok", "")
	call(t, g, "GET", "/search/issues", "tok", "")
	for range 2 {
		a := call(t, g, "GET", "/rate_limit", "tok", "")
		if a.status != 200 {
			t.Fatalf("status %d", a.status)
		}
		wantRate(t, a, "core", 5000, 4999, 1, reset)
		r := itoa(reset)
		want := `{"resources":{` +
			`"core":{"limit":5000,"used":1,"remaining":4999,"reset":` + r + `},` +
			`"search":{"limit":30,"used":1,"remaining":29,"reset":` + r + `},` +
			`"graphql":{"limit":5000,"used":0,"remaining":5000,"reset":` + r + `},` +
			`"integration_manifest":{"limit":5000,"used":0,"remaining":5000,"reset":` + r + `},` +
			`"code_search":{"limit":10,"used":0,"remaining":10,"reset":` + r + `},` +
			`"source_import":{"limit":100,"used":0,"remaining":100,"reset":` + r + `}},` +
			`"rate":{"limit":5000,"used":1,"remaining":4999,"reset":` + r + `}}`
		if a.body != want {
			t.Fatalf("body\n got %s\nwant %s", a.body, want)
		}
	}
	if got := g.Requests()[2].Resource; got != "" {
		t.Fatalf("rate_limit charged %q", got)
	}
}

func TestGitHubExhaustedRESTAndRefill(t *testing.T) {
	t.Parallel()
	clk := newTestClock()
	g := NewGitHub(GitHubConfig{Now: clk.Now, UserID: 583231, Limits: map[string]int64{"core": 2}})
	reset := clk.Now().Add(time.Hour).Truncate(time.Second).Unix()

	call(t, g, "GET", "/repos/o/r", "tok", "")
	a := call(t, g, "GET", "/repos/o/r", "tok", "")
	if a.status != 200 || a.body != `{"method":"GET","path":"/repos/o/r"}` {
		t.Fatalf("second call = %d %s", a.status, a.body)
	}
	wantRate(t, a, "core", 2, 0, 2, reset) // a success can spend the last unit

	clk.Advance(59 * time.Minute)
	a = call(t, g, "GET", "/repos/o/r", "tok", "")
	if a.status != 403 {
		t.Fatalf("status = %d, want 403", a.status)
	}
	want := `{"message":"API rate limit exceeded for user ID 583231.","documentation_url":"https://docs.github.com/rest/overview/rate-limits-for-the-rest-api"}`
	if a.body != want {
		t.Fatalf("body\n got %s\nwant %s", a.body, want)
	}
	wantRate(t, a, "core", 2, 0, 3, reset)

	// Another token has a bucket of its own.
	if a := call(t, g, "GET", "/repos/o/r", "other", ""); a.status != 200 {
		t.Fatalf("other token: %d", a.status)
	}

	clk.Advance(time.Minute) // exactly at the reset
	a = call(t, g, "POST", "/repos/o/r/issues", "tok", `{"title":"x"}`)
	if a.status != 201 || a.body != `{"method":"POST","path":"/repos/o/r/issues"}` {
		t.Fatalf("after reset = %d %s", a.status, a.body)
	}
	wantRate(t, a, "core", 2, 1, 1, clk.Now().Add(time.Hour).Truncate(time.Second).Unix())
}

func TestGitHubAnonymous(t *testing.T) {
	t.Parallel()
	clk := newTestClock()
	g := NewGitHub(GitHubConfig{Now: clk.Now})
	a := call(t, g, "GET", "/repos/o/r", "", "")
	reset := clk.Now().Add(time.Hour).Truncate(time.Second).Unix()
	wantRate(t, a, "core", 60, 59, 1, reset)

	g.Exhaust("", "core")
	a = call(t, g, "GET", "/repos/o/r", "", "")
	// httptest.NewRequest's client address is 192.0.2.1.
	want := `{"message":"API rate limit exceeded for 192.0.2.1. (But here's the good news: Authenticated requests get a higher rate limit. Check out the documentation for more details.)","documentation_url":"https://docs.github.com/rest/overview/rate-limits-for-the-rest-api"}`
	if a.status != 403 || a.body != want {
		t.Fatalf("anonymous exhausted = %d\n got %s\nwant %s", a.status, a.body, want)
	}
	wantRate(t, a, "core", 60, 0, 61, reset)

	// A token still has its own quota.
	if a := call(t, g, "GET", "/repos/o/r", "tok", ""); a.status != 200 {
		t.Fatalf("with token: %d", a.status)
	}
	if a := call(t, g, "POST", "/graphql", "", `{"query":"{viewer{login}}"}`); a.status != 401 {
		t.Fatalf("anonymous graphql: %d %s", a.status, a.body)
	}
}

func TestGitHubGraphQL(t *testing.T) {
	t.Parallel()
	clk := newTestClock()
	g := NewGitHub(GitHubConfig{Now: clk.Now, Limits: map[string]int64{"graphql": 1}})
	reset := clk.Now().Add(time.Hour).Truncate(time.Second).Unix()

	a := call(t, g, "POST", "/graphql", "tok", `{"query":"{ viewer { login } }"}`)
	if a.status != 200 || a.body != `{"data":{"viewer":{"login":"octocat"}}}` {
		t.Fatalf("graphql = %d %s", a.status, a.body)
	}
	wantRate(t, a, "graphql", 1, 0, 1, reset)

	a = call(t, g, "POST", "/graphql", "tok", `{"query":"{ viewer { login } }"}`)
	want := `{"errors":[{"type":"RATE_LIMITED","message":"API rate limit exceeded for user ID 1."}]}`
	if a.status != 200 || a.body != want {
		t.Fatalf("exhausted graphql = %d\n got %s\nwant %s", a.status, a.body, want)
	}
	wantRate(t, a, "graphql", 1, 0, 2, reset)

	// REST is a separate bucket.
	if a := call(t, g, "GET", "/user", "tok", ""); a.status != 200 {
		t.Fatalf("REST after graphql exhaustion: %d", a.status)
	}
	// A malformed query costs nothing.
	if a := call(t, g, "POST", "/graphql", "tok", `{`); a.status != 400 {
		t.Fatalf("malformed query: %d", a.status)
	}
	if got := g.Requests()[3].Resource; got != "" {
		t.Fatalf("malformed query charged %q", got)
	}
}

func TestGitHubSearchResources(t *testing.T) {
	t.Parallel()
	g := NewGitHub(GitHubConfig{Now: newTestClock().Now})
	a := call(t, g, "GET", "/search/issues?q=is:open", "tok", "")
	if a.status != 200 || a.header.Get("X-Ratelimit-Resource") != "search" || a.header.Get("X-Ratelimit-Remaining") != "29" {
		t.Fatalf("search: %d %v", a.status, a.header)
	}
	a = call(t, g, "GET", "/search/code?q=x", "tok", "")
	if a.header.Get("X-Ratelimit-Resource") != "code_search" || a.header.Get("X-Ratelimit-Remaining") != "9" {
		t.Fatalf("code search: %v", a.header)
	}
}

func TestGitHubScripted(t *testing.T) {
	t.Parallel()
	clk := newTestClock()
	g := NewGitHub(GitHubConfig{Now: clk.Now})
	g.Script("/user", SecondaryLimit(30), SecondaryLimit(0), ServerError(502), PermissionDenied(), SAMLEnforced(),
		Response{Status: 429, Header: http.Header{"X-Ratelimit-Remaining": {"0"}, "X-Ratelimit-Used": nil}, Body: "{}"})

	a := call(t, g, "GET", "/user", "tok", "")
	wantSecondary := `{"message":"You have exceeded a secondary rate limit. Please wait a few minutes before you try again.","documentation_url":"https://docs.github.com/free-pro-team@latest/rest/overview/rate-limits-for-the-rest-api#about-secondary-rate-limits"}`
	if a.status != 403 || a.body != wantSecondary || a.header.Get("Retry-After") != "30" {
		t.Fatalf("secondary = %d %v %s", a.status, a.header, a.body)
	}
	if a.header.Get("X-Ratelimit-Remaining") != "5000" {
		t.Fatalf("secondary remaining = %q, want the bucket's 5000", a.header.Get("X-Ratelimit-Remaining"))
	}
	a = call(t, g, "GET", "/user", "tok", "")
	if _, ok := a.header["Retry-After"]; ok || a.body != wantSecondary {
		t.Fatalf("secondary without retry-after: %v %s", a.header, a.body)
	}
	a = call(t, g, "GET", "/user", "tok", "")
	if a.status != 502 || a.body != `{"message":"Bad Gateway"}` {
		t.Fatalf("server error = %d %s", a.status, a.body)
	}
	a = call(t, g, "GET", "/user", "tok", "")
	if a.status != 403 || !strings.Contains(a.body, `"message":"Resource not accessible by integration"`) || a.header.Get("X-Ratelimit-Remaining") == "0" {
		t.Fatalf("permission denied = %d %v %s", a.status, a.header, a.body)
	}
	a = call(t, g, "GET", "/user", "tok", "")
	if a.status != 403 || !strings.Contains(a.body, "SAML enforcement") || a.header.Get("X-Github-Sso") != "required; url="+SAMLEnforcedSSOURL {
		t.Fatalf("SAML = %d %v %s", a.status, a.header, a.body)
	}
	a = call(t, g, "GET", "/user", "tok", "")
	if a.status != 429 || a.header.Get("X-Ratelimit-Remaining") != "0" || a.header.Get("X-Ratelimit-Limit") != "5000" {
		t.Fatalf("custom = %d %v", a.status, a.header)
	}
	if _, ok := a.header["X-Ratelimit-Used"]; ok {
		t.Fatalf("nil header value did not remove X-Ratelimit-Used")
	}
	// The queue is empty: normal handling, and the first charge.
	a = call(t, g, "GET", "/user", "tok", "")
	if a.status != 200 || a.header.Get("X-Ratelimit-Remaining") != "4999" {
		t.Fatalf("after script = %d %v", a.status, a.header)
	}
	if n := g.Calls("/user"); n != 7 {
		t.Fatalf("Calls = %d, want 7", n)
	}
	reqs := g.Requests()
	if !reqs[0].Scripted || reqs[0].Resource != "" || reqs[0].Status != 403 || reqs[6].Scripted {
		t.Fatalf("Requests() = %+v", reqs)
	}
	// Scripts are per exact path.
	if a := call(t, g, "GET", "/users", "tok", ""); a.status != 200 {
		t.Fatalf("other path: %d", a.status)
	}
}

func TestGitHubBadCredentials(t *testing.T) {
	t.Parallel()
	clk := newTestClock()
	g := NewGitHub(GitHubConfig{Now: clk.Now, Tokens: []string{"good"}})
	a := call(t, g, "GET", "/user", "bad", "")
	want := `{"message":"Bad credentials","documentation_url":"https://docs.github.com/rest","status":"401"}`
	if a.status != 401 || a.body != want {
		t.Fatalf("bad token = %d %s", a.status, a.body)
	}
	wantRate(t, a, "core", 60, 59, 1, clk.Now().Add(time.Hour).Truncate(time.Second).Unix())
	if a := call(t, g, "POST", "/graphql", "bad", `{"query":"{}"}`); a.status != 401 || a.body != want {
		t.Fatalf("bad token graphql = %d %s", a.status, a.body)
	}
	if a := call(t, g, "GET", "/user", "good", ""); a.status != 200 {
		t.Fatalf("good token = %d", a.status)
	}
	if a := call(t, g, "GET", "/user", "", ""); a.status != 401 || !strings.Contains(a.body, "Requires authentication") {
		t.Fatalf("no token on /user = %d %s", a.status, a.body)
	}
}

func TestGitHubSetQuota(t *testing.T) {
	t.Parallel()
	clk := newTestClock()
	g := NewGitHub(GitHubConfig{Now: clk.Now, Window: 10 * time.Minute})
	reset := clk.Now().Add(90 * time.Second)
	g.SetQuota("tok", "core", 3, reset)
	a := call(t, g, "GET", "/user", "tok", "")
	wantRate(t, a, "core", 5000, 2, 4998, reset.Unix())

	g.Exhaust("tok", "core")
	a = call(t, g, "GET", "/user", "tok", "")
	if a.status != 403 {
		t.Fatalf("after Exhaust: %d", a.status)
	}
	wantRate(t, a, "core", 5000, 0, 5001, reset.Unix())

	clk.Advance(90 * time.Second)
	a = call(t, g, "GET", "/user", "tok", "")
	wantRate(t, a, "core", 5000, 4999, 1, clk.Now().Add(10*time.Minute).Truncate(time.Second).Unix())

	// A reset in the past refills on the next request.
	g.SetQuota("tok", "graphql", 0, clk.Now().Add(-time.Second))
	a = call(t, g, "POST", "/graphql", "tok", `{"query":"{viewer{login}}"}`)
	if !strings.HasPrefix(a.body, `{"data"`) || a.header.Get("X-Ratelimit-Remaining") != "4999" {
		t.Fatalf("past reset: %v %s", a.header, a.body)
	}
}

func TestGitHubPullRequests(t *testing.T) {
	t.Parallel()
	clk := newTestClock()
	g := NewGitHub(GitHubConfig{Now: clk.Now})
	a := call(t, g, "POST", "/repos/o/r/pulls", "tok", `{"title":"Fix it","head":"fix","base":"main"}`)
	if a.status != 201 {
		t.Fatalf("create = %d %s", a.status, a.body)
	}
	var pr struct {
		Method  string `json:"method"`
		Path    string `json:"path"`
		Number  int    `json:"number"`
		HTMLURL string `json:"html_url"`
	}
	if err := json.Unmarshal([]byte(a.body), &pr); err != nil || pr.Number != 1 || pr.HTMLURL != "https://github.com/o/r/pull/1" || pr.Path != "/repos/o/r/pulls" {
		t.Fatalf("create body %s (%v)", a.body, err)
	}
	if a := call(t, g, "POST", "/repos/o/r/pulls", "tok", `{"head":"x"}`); a.status != 422 {
		t.Fatalf("no title = %d", a.status)
	}
	a = call(t, g, "POST", "/graphql", "tok", `{"query":"query { repository { pullRequests { nodes { number } } } }","variables":{"owner":"o","repo":"r"}}`)
	want := `{"data":{"repository":{"pullRequests":{"totalCount":1,"nodes":[{"number":1,"title":"Fix it","state":"OPEN","url":"https://github.com/o/r/pull/1","headRefName":"fix","isDraft":false,"createdAt":"2026-11-10T09:30:15Z"}]}}}}`
	if a.body != want {
		t.Fatalf("list\n got %s\nwant %s", a.body, want)
	}
}

func TestGitHubServerConcurrent(t *testing.T) {
	t.Parallel()
	g := NewGitHub(GitHubConfig{})
	base, err := g.Start("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	if _, err := g.Start("127.0.0.1:0"); err == nil {
		t.Fatal("second Start succeeded")
	}

	const n = 40
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for range n {
		wg.Go(func() {
			req, _ := http.NewRequest("GET", base+"/user", nil)
			req.Header.Set("Authorization", "Bearer tok")
			res, err := http.DefaultClient.Do(req)
			if err != nil {
				errs <- err
				return
			}
			_, _ = io.Copy(io.Discard, res.Body)
			res.Body.Close()
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	res, err := http.Get(base + "/rate_limit")
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if got := res.Header.Get("X-Ratelimit-Limit"); got != "60" { // anonymous
		t.Fatalf("anonymous limit %q", got)
	}
	req, _ := http.NewRequest("GET", base+"/rate_limit", nil)
	req.Header.Set("Authorization", "token tok")
	res, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if got := res.Header.Get("X-Ratelimit-Remaining"); got != strconv.Itoa(5000-n) {
		t.Fatalf("remaining after %d concurrent calls = %s", n, got)
	}
	if err := g.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := http.Get(base + "/rate_limit"); err == nil {
		t.Fatal("server still answering after Close")
	}
}
