package fake

import (
	"bytes"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

type ghResult struct {
	code           int
	stdout, stderr string
}

// runGH runs the fake gh in process with env as its whole environment.
func runGH(env map[string]string, args ...string) ghResult {
	var out, errb bytes.Buffer
	code := GH(args, func(k string) string { return env[k] }, &out, &errb)
	return ghResult{code, out.String(), errb.String()}
}

func (r ghResult) want(t *testing.T, code int, stdout, stderr string) {
	t.Helper()
	if r.code != code || r.stdout != stdout || r.stderr != stderr {
		t.Fatalf("gh exit %d\nstdout %q\nstderr %q\nwant exit %d\nstdout %q\nstderr %q", r.code, r.stdout, r.stderr, code, stdout, stderr)
	}
}

// ghEnv starts a fake GitHub behind an httptest server and returns it with
// an environment pointing gh at it.
func ghEnv(t *testing.T, cfg GitHubConfig) (*GitHub, string, map[string]string) {
	t.Helper()
	if cfg.Now == nil {
		cfg.Now = newTestClock().Now
	}
	g := NewGitHub(cfg)
	srv := httptest.NewServer(g)
	t.Cleanup(srv.Close)
	return g, srv.URL, map[string]string{"GITHUB_API_URL": srv.URL, "GH_TOKEN": "tok", "GH_REPO": "o/r"}
}

func TestGHAPISuccess(t *testing.T) {
	t.Parallel()
	g, _, env := ghEnv(t, GitHubConfig{})
	runGH(env, "api", "user").want(t, 0, `{"login":"octocat","id":1}`, "")
	runGH(env, "api", "/user").want(t, 0, `{"login":"octocat","id":1}`, "")
	if n := g.Calls("/user"); n != 2 {
		t.Fatalf("Calls(/user) = %d", n)
	}
	runGH(env, "api", "rate_limit", "--jq", ".resources.core.remaining").want(t, 0, "4998\n", "")
	runGH(env, "api", "--silent", "user").want(t, 0, "", "")

	// Fields make a POST with a JSON body; -X GET moves them to the query.
	runGH(env, "api", "repos/:owner/:repo/issues", "-f", "title=hi", "-F", "n=3").
		want(t, 0, `{"method":"POST","path":"/repos/o/r/issues"}`, "")
	runGH(env, "api", "-X", "GET", "search/issues", "-f", "q=is:open").
		want(t, 0, `{"method":"GET","path":"/search/issues","total_count":0,"incomplete_results":false,"items":[]}`, "")
	runGH(env, "api", "--method=DELETE", "repos/o/r/labels/x").
		want(t, 0, `{"method":"DELETE","path":"/repos/o/r/labels/x"}`, "")

	reqs := g.Requests()
	if last := reqs[len(reqs)-2]; last.Method != "GET" || last.Resource != "search" {
		t.Fatalf("search request = %+v", last)
	}
}

func TestGHAPIInclude(t *testing.T) {
	t.Parallel()
	_, _, env := ghEnv(t, GitHubConfig{})
	r := runGH(env, "api", "-i", "user")
	if r.code != 0 || r.stderr != "" {
		t.Fatalf("exit %d stderr %q", r.code, r.stderr)
	}
	for _, want := range []string{
		"HTTP/1.1 200 OK\n",
		"Content-Type: application/json; charset=utf-8\r\n",
		"X-Ratelimit-Remaining: 4999\r\n",
		"X-Ratelimit-Resource: core\r\n",
		"\r\n\r\n" + `{"login":"octocat","id":1}`,
	} {
		if !strings.Contains(r.stdout, want) {
			t.Fatalf("stdout %q lacks %q", r.stdout, want)
		}
	}
	if !strings.HasPrefix(r.stdout, "HTTP/1.1 200 OK\n") {
		t.Fatalf("stdout %q", r.stdout)
	}
}

func TestGHAPIErrors(t *testing.T) {
	t.Parallel()
	g, _, env := ghEnv(t, GitHubConfig{UserID: 7})

	g.Exhaust("tok", "core")
	r := runGH(env, "api", "user")
	r.want(t, 1, `{"message":"API rate limit exceeded for user ID 7.","documentation_url":"https://docs.github.com/rest/overview/rate-limits-for-the-rest-api"}`,
		"gh: API rate limit exceeded for user ID 7. (HTTP 403)\n")

	g.Script("/repos/o/r", SecondaryLimit(60))
	r = runGH(env, "api", "-i", "repos/o/r")
	if r.code != 1 || r.stderr != "gh: You have exceeded a secondary rate limit. Please wait a few minutes before you try again. (HTTP 403)\n" {
		t.Fatalf("secondary: exit %d stderr %q", r.code, r.stderr)
	}
	if !strings.HasPrefix(r.stdout, "HTTP/1.1 403 Forbidden\n") || !strings.Contains(r.stdout, "Retry-After: 60\r\n") {
		t.Fatalf("secondary -i stdout %q", r.stdout)
	}

	g.Script("/repos/o/r", ServerError(502), Response{Status: 503, Header: http.Header{"Content-Type": {"text/html"}}, Body: "<html>unicorn</html>"})
	runGH(env, "api", "repos/o/r").want(t, 1, `{"message":"Bad Gateway"}`, "gh: Bad Gateway (HTTP 502)\n")
	runGH(env, "api", "repos/o/r").want(t, 1, "<html>unicorn</html>", "gh: HTTP 503\n")

	g.Script("/orgs/octo-org", SAMLEnforced())
	r = runGH(env, "api", "orgs/octo-org")
	if r.code != 1 || r.stderr != "gh: "+SAMLEnforcedMessage+" (HTTP 403)\nAuthorize in your web browser:  "+SAMLEnforcedSSOURL+"\n" {
		t.Fatalf("SAML: exit %d stderr %q", r.code, r.stderr)
	}
}

func TestGHAPIGraphQL(t *testing.T) {
	t.Parallel()
	g, _, env := ghEnv(t, GitHubConfig{Limits: map[string]int64{"graphql": 1}})
	runGH(env, "api", "graphql", "-f", "query={ viewer { login } }").
		want(t, 0, `{"data":{"viewer":{"login":"octocat"}}}`, "")

	runGH(env, "api", "graphql", "-f", "query={ viewer { login } }").
		want(t, 1, `{"errors":[{"type":"RATE_LIMITED","message":"API rate limit exceeded for user ID 1."}]}`,
			"gh: API rate limit exceeded for user ID 1.\n")

	g.Script("/graphql", Response{Body: `{"data":null,"errors":[{"message":"first","path":["a"]},{"message":"second"}]}`})
	runGH(env, "api", "graphql", "-f", "query={ a }").
		want(t, 1, `{"data":null,"errors":[{"message":"first","path":["a"]},{"message":"second"}]}`, "gh: first\nsecond\n")

	reqs := g.Requests()
	if reqs[0].Method != "POST" || reqs[0].Path != "/graphql" || reqs[0].Resource != "graphql" {
		t.Fatalf("graphql request = %+v", reqs[0])
	}
}

func TestGHPRCreate(t *testing.T) {
	t.Parallel()
	g, base, env := ghEnv(t, GitHubConfig{})
	runGH(env, "pr", "create", "--title", "Fix it", "--body", "Because.").
		want(t, 0, "https://github.com/o/r/pull/1\n", "")
	runGH(env, "pr", "create", "-t", "Again", "-R", "x/y").
		want(t, 0, "https://github.com/x/y/pull/1\n", "")

	g.Exhaust("tok", "core")
	runGH(env, "pr", "create", "--title", "T").
		want(t, 1, "", "HTTP 403: API rate limit exceeded for user ID 1. ("+base+"/repos/o/r/pulls)\n")

	g.Script("/repos/o/r/pulls", SecondaryLimit(0), SAMLEnforced(), Response{Status: 422, Body: `{"message":"Validation Failed","errors":[{"resource":"PullRequest","code":"custom","message":"A pull request already exists for o:fake-branch."}]}`})
	runGH(env, "pr", "create", "--title", "T").
		want(t, 1, "", "HTTP 403: "+SecondaryLimitMessage+" ("+base+"/repos/o/r/pulls)\n")
	runGH(env, "pr", "create", "--title", "T").
		want(t, 1, "", "HTTP 403: "+SAMLEnforcedMessage+" ("+base+"/repos/o/r/pulls)\nAuthorize in your web browser:  "+SAMLEnforcedSSOURL+"\n")
	runGH(env, "pr", "create", "--title", "T").
		want(t, 1, "", "HTTP 422: Validation Failed ("+base+"/repos/o/r/pulls)\nA pull request already exists for o:fake-branch.\n")

	runGH(env, "pr", "create").
		want(t, 1, "", "must provide `--title` and `--body` (or `--fill` or `fill-first` or `--fillverbose`) when not running interactively\n")
	delete(env, "GH_REPO")
	runGH(env, "pr", "create", "--title", "T").
		want(t, 1, "", "failed to run git: fatal: not a git repository (or any of the parent directories): .git\n")
}

func TestGHPRList(t *testing.T) {
	t.Parallel()
	clk := newTestClock()
	g, base, env := ghEnv(t, GitHubConfig{Now: clk.Now, Limits: map[string]int64{"graphql": 1}})
	runGH(env, "pr", "create", "--title", "Fix it", "--head", "fix").want(t, 0, "https://github.com/o/r/pull/1\n", "")
	runGH(env, "pr", "list").want(t, 0, "1\tFix it\tfix\tOPEN\t2026-11-10T09:30:15Z\n", "")

	runGH(env, "pr", "list").want(t, 1, "", "GraphQL: API rate limit exceeded for user ID 1.\n")

	g.Script("/graphql",
		Response{Body: `{"errors":[{"type":"RATE_LIMITED","path":["repository"],"message":"API rate limit exceeded for user ID 1."}]}`},
		Response{Body: `{"errors":[{"message":"a","path":["repository","pullRequests",0]},{"message":"b"}]}`},
		ServerError(504))
	runGH(env, "pr", "list").want(t, 1, "", "GraphQL: API rate limit exceeded for user ID 1. (repository)\n")
	runGH(env, "pr", "list").want(t, 1, "", "GraphQL: a (repository.pullRequests.0), b\n")
	runGH(env, "pr", "list").want(t, 1, "", "HTTP 504: Gateway Timeout ("+base+"/graphql)\n")

	// After the window the quota is back.
	clk.Advance(time.Hour)
	runGH(env, "pr", "list", "-R", "other/repo").want(t, 0, "", "")
}

func TestGHAuth(t *testing.T) {
	t.Parallel()
	_, base, _ := ghEnv(t, GitHubConfig{Tokens: []string{"good"}})

	runGH(map[string]string{"GH_TOKEN": "abc"}, "auth", "token").want(t, 0, "abc\n", "")
	runGH(map[string]string{"GITHUB_TOKEN": "def"}, "auth", "token").want(t, 0, "def\n", "")
	runGH(map[string]string{"GH_TOKEN": "abc", "FAKE_GH_AUTH_TOKEN": "stored"}, "auth", "token").want(t, 0, "stored\n", "")
	runGH(nil, "auth", "token").want(t, 1, "", "no oauth token found for github.com\n")

	noToken := map[string]string{"GITHUB_API_URL": base, "GH_REPO": "o/r"}
	for _, args := range [][]string{{"api", "user"}, {"pr", "create", "--title", "T"}, {"pr", "list"}} {
		runGH(noToken, args...).want(t, 4, "", ghAuthHelp)
	}
	if !strings.Contains(ghAuthHelp, "To get started with GitHub CLI, please run:  gh auth login\n") {
		t.Fatal("auth help text changed")
	}

	// The token gh keeps in its config is used when the environment has none.
	stored := map[string]string{"GITHUB_API_URL": base, "FAKE_GH_AUTH_TOKEN": "good"}
	runGH(stored, "api", "user").want(t, 0, `{"login":"octocat","id":1}`, "")

	bad := map[string]string{"GITHUB_API_URL": base, "GH_TOKEN": "bad", "GH_REPO": "o/r"}
	runGH(bad, "api", "user").want(t, 1, `{"message":"Bad credentials","documentation_url":"https://docs.github.com/rest","status":"401"}`,
		"gh: Bad credentials (HTTP 401)\n")
	runGH(bad, "pr", "list").want(t, 1, "", "HTTP 401: Bad credentials ("+base+"/graphql)\nTry authenticating with:  gh auth login\n")
}

func TestGHUsageErrors(t *testing.T) {
	t.Parallel()
	_, _, env := ghEnv(t, GitHubConfig{})
	r := runGH(env, "frobnicate")
	if r.code != 1 || !strings.HasPrefix(r.stderr, "unknown command \"frobnicate\" for \"gh\"\n\n") {
		t.Fatalf("unknown command: %+v", r)
	}
	r = runGH(env, "pr", "merge")
	if r.code != 1 || !strings.HasPrefix(r.stderr, "unknown command \"merge\" for \"gh pr\"\n") {
		t.Fatalf("unknown pr command: %+v", r)
	}
	r = runGH(env, "api", "--bogus", "user")
	if r.code != 1 || !strings.HasPrefix(r.stderr, "unknown flag: --bogus\n\nUsage:  gh api") {
		t.Fatalf("unknown flag: %+v", r)
	}
	r = runGH(env, "api", "-z", "user")
	if r.code != 1 || !strings.HasPrefix(r.stderr, "unknown shorthand flag: 'z' in -z\n") {
		t.Fatalf("unknown shorthand: %+v", r)
	}
	runGH(env, "api").want(t, 1, "", "accepts 1 arg(s), received 0\n")
	if r := runGH(env); r.code != 0 || !strings.Contains(r.stdout, "USAGE") {
		t.Fatalf("no args: %+v", r)
	}
	runGH(env, "--version").want(t, 0, "gh version "+GHVersion+"\nhttps://github.com/cli/cli/releases/latest\n", "")
}

func TestGHNetworkFailure(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	env := map[string]string{"GITHUB_API_URL": "http://" + addr, "GH_TOKEN": "tok", "GH_REPO": "o/r"}
	r := runGH(env, "api", "user")
	prefix := `Get "http://` + addr + `/user": dial tcp ` + addr + ": "
	if r.code != 1 || !strings.HasPrefix(r.stderr, prefix) || r.stdout != "" {
		t.Fatalf("refused: %+v, want stderr prefix %q", r, prefix)
	}
	r = runGH(env, "pr", "create", "--title", "T")
	if r.code != 1 || !strings.HasPrefix(r.stderr, `Post "http://`+addr+`/repos/o/r/pulls": `) {
		t.Fatalf("refused pr create: %+v", r)
	}

	// A name that does not resolve prints gh's DNS text.
	var errb bytes.Buffer
	c := &ghCLI{stderr: &errb}
	dnsErr := &url.Error{Op: "Get", URL: "https://api.example.invalid/user", Err: &net.OpError{Op: "dial", Net: "tcp", Err: &net.DNSError{Err: "no such host", Name: "api.example.invalid", IsNotFound: true}}}
	if code := c.printRequestError(dnsErr); code != 1 || errb.String() != "error connecting to api.example.invalid\ncheck your internet connection or https://githubstatus.com\n" {
		t.Fatalf("dns: %d %q", code, errb.String())
	}
	if !errors.As(error(dnsErr), new(*net.DNSError)) {
		t.Fatal("test error does not wrap a DNSError")
	}
}

func TestGHLog(t *testing.T) {
	t.Parallel()
	_, _, env := ghEnv(t, GitHubConfig{})
	log := filepath.Join(t.TempDir(), "gh.log")
	env["FAKE_GH_LOG"] = log
	runGH(env, "api", "rate_limit")
	runGH(env, "pr", "list", "-R", "o/r")
	runGH(env, "nonsense")
	b, err := os.ReadFile(log)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := string(b), "api rate_limit\npr list -R o/r\nnonsense\n"; got != want {
		t.Fatalf("log %q, want %q", got, want)
	}
}

func TestGHFlagParsing(t *testing.T) {
	t.Parallel()
	fs := newFlagSet("", flagSpec{long: "include", short: 'i'}, flagSpec{long: "method", short: 'X', value: true},
		flagSpec{long: "raw-field", short: 'f', value: true}, flagSpec{long: "draft"})
	pos, err := fs.parse([]string{"-iXPOST", "a", "--raw-field=x=1", "-f", "y=2", "--draft=false", "--", "-b"})
	if err != nil {
		t.Fatal(err)
	}
	if !fs.has("include") || fs.last("method") != "POST" || fs.has("draft") {
		t.Fatalf("flags %v", fs.vals)
	}
	if got := fs.values("raw-field"); len(got) != 2 || got[0] != "x=1" || got[1] != "y=2" {
		t.Fatalf("raw-field %v", got)
	}
	if len(pos) != 2 || pos[0] != "a" || pos[1] != "-b" {
		t.Fatalf("positional %v", pos)
	}
	if _, err := fs.parse([]string{"--method"}); err == nil || err.Error() != "flag needs an argument: --method" {
		t.Fatalf("missing value: %v", err)
	}
}

func TestGHJQPaths(t *testing.T) {
	t.Parallel()
	body := []byte(`{"a":{"b":[{"n":"x"},{"n":"y"}],"c":3}}`)
	for expr, want := range map[string]string{
		".":         `{"a":{"b":[{"n":"x"},{"n":"y"}],"c":3}}` + "\n",
		".a.c":      "3\n",
		".a.b[1].n": "y\n",
		".a.b[].n":  "x\ny\n",
		".a.b[-1]":  `{"n":"y"}` + "\n",
		".missing":  "null\n",
	} {
		var out bytes.Buffer
		if err := jqPaths(&out, body, expr); err != nil || out.String() != want {
			t.Errorf("jq %s = %q, %v; want %q", expr, out.String(), err, want)
		}
	}
	if err := jqPaths(&bytes.Buffer{}, body, ".a | length"); err == nil {
		t.Error("unsupported expression accepted")
	}
}
