package cli_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/layoverhq/layover/internal/fake"
)

// Bad input: a one-line error, exit 2, and no store created or changed.
func TestBadInput(t *testing.T) {
	t.Parallel()
	cases := map[string][]string{
		"no command":       {},
		"unknown command":  {"frobnicate"},
		"unknown flag":     {"pass", "--frob", "--", "true"},
		"missing --":       {"pass", "true"},
		"nothing after --": {"run", "--"},
		"unknown provider": {"pass", "--quota", "gitlab", "--", "true"},
		"unknown resource": {"run", "--quota", "anthropic:cores", "--", "true"},
		"plain gemini":     {"pass", "--quota", "gemini", "--", "true"},
		"submit gitlab":    {"submit", "--quota", "gitlab:core", "--", "true"},
		"bad reserve":      {"pass", "--reserve", "many", "--", "true"},
		"negative jitter":  {"run", "--jitter", "-1s", "--", "true"},
		"bad duration":     {"run", "--max-total-wait", "soon", "--", "true"},
		// Issue 8: values that overflowed a wait or switched pacing off.
		"huge reset margin":   {"run", "--reset-margin=9223372036854775807ns", "--", "true"},
		"huge jitter":         {"run", "--jitter=9223372036854775807ns", "--", "true"},
		"margin past 24h":     {"pass", "--reset-margin", "25h", "--", "true"},
		"cap past 7 days":     {"run", "--max-total-wait", "169h", "--", "true"},
		"resume rate NaN":     {"serve", "--resume-rate", "NaN"},
		"resume rate tiny":    {"serve", "--resume-rate", "1e-300"},
		"resume rate Inf":     {"serve", "--resume-rate", "+Inf"},
		"run resume rate 0":   {"run", "--resume-rate", "0", "--", "true"},
		"run resume rate NaN": {"run", "--resume-rate", "NaN", "--", "true"},
		"reserve CORE":        {"pass", "--reserve", "CORE=5", "--", "true"},
		// Every duration flag has a range.
		"defer-after huge":      {"run", "--defer-after=9223372036854775807ns", "--", "true"},
		"defer-after negative":  {"run", "--defer-after", "-1s", "--", "true"},
		"deadline past 30 days": {"submit", "--deadline", "721h", "--", "true"},
		"deadline far time":     {"submit", "--deadline", "2999-01-01T00:00:00Z", "--", "true"},
		"deadline huge":         {"submit", "--deadline=9223372036854775807ns", "--", "true"},
		"progress past 30 days": {"submit", "--progress-timeout", "721h", "--", "true"},
		"lease past 1h":         {"serve", "--lease", "61m"},
		"lease zero":            {"serve", "--lease", "0s"},
		"heartbeat tiny":        {"serve", "--heartbeat", "1ms"},
		"unknown reset zero":    {"run", "--unknown-reset", "0s", "--", "true"},
		"demo window huge":      {"demo", "--window", "1000h"},
		"classify no input":     {"classify", "--provider", "github"},
		"classify both":         {"classify", "--provider", "github", "--http", "x", "--exit", "1"},
		"classify provider":     {"classify", "--provider", "nope", "--exit", "1"},
		"classify no file":      {"classify", "--provider", "github", "--http", "/nonexistent/file"},
		"status extra arg":      {"status", "now"},
		"postgres bad port":     {"status", "--store", "postgres://u:pw@localhost:notaport/x"},
		"unknown store kind":    {"status", "--store", "mysql://localhost/x"},
		"store is directory":    {"status", "--store", "/"},
	}
	for name, args := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			b := setup(t, fake.GitHubConfig{})
			r := b.layover(args...)
			if r.code != 2 {
				t.Fatalf("exit %d, want 2; stderr %q", r.code, r.stderr)
			}
			if n := strings.Count(strings.TrimRight(r.stderr, "\n"), "\n"); n > 0 && len(args) > 0 {
				t.Errorf("error is %d lines, want one:\n%s", n+1, r.stderr)
			}
			if _, err := os.Stat(b.store); err == nil {
				t.Errorf("bad input created the store")
			}
		})
	}
}

// classify reads a raw response as curl -i prints it.
// An unknown --quota provider or resource names the known ones, on pass,
// run and submit alike.
func TestUnknownQuotaListsTheKnownOnes(t *testing.T) {
	t.Parallel()
	b := setup(t, fake.GitHubConfig{})
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"pass", "--quota", "gitlab", "--", "true"}, "known: github, anthropic, openai, gemini, claude-code, codex, copilot, kimi, gemini-cli"},
		{[]string{"run", "--quota", "anthropic:cores", "--", "true"}, "known: requests, tokens, input-tokens"},
		{[]string{"submit", "--quota", "claude-code:unified-5h", "--", "true"}, "known: usage, five_hour, seven_day"},
	} {
		r := b.layover(c.args...)
		if r.code != 2 || !strings.Contains(r.stderr, c.want) {
			t.Errorf("%v: exit %d, stderr %q; want 2 and %q", c.args, r.code, r.stderr, c.want)
		}
	}
}

func TestClassifyHTTPFile(t *testing.T) {
	t.Parallel()
	b := setup(t, fake.GitHubConfig{})
	raw := "HTTP/2 403\r\nx-ratelimit-limit: 5000\r\nx-ratelimit-remaining: 0\r\nx-ratelimit-reset: 1764500000\r\n" +
		"x-ratelimit-resource: core\r\ndate: Sun, 30 Nov 2025 10:00:00 GMT\r\ncontent-type: application/json\r\n\r\n" +
		`{"message":"API rate limit exceeded for user ID 1.","documentation_url":"https://docs.github.com/rest/overview/rate-limits-for-the-rest-api"}`
	file := filepath.Join(b.dir, "resp.txt")
	if err := os.WriteFile(file, []byte(raw), 0o600); err != nil {
		t.Fatal(err)
	}
	r := b.layover("classify", "--provider", "github", "--http", file)
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	for _, want := range []string{`"class":"quota"`, `"provider":"github"`, `"resource":"core"`, `"remaining":0`, `"limit":5000`, `"reset_at":"20`} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("classify output %s lacks %s", r.stdout, want)
		}
	}
	if err := os.WriteFile(file, []byte("hello world\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if r := b.layover("classify", "--provider", "github", "--http", file); r.code != 2 {
		t.Errorf("not an HTTP response: exit %d", r.code)
	}
}

// classify reads a failed gh's exit code and stderr.
func TestClassifyCommandOutput(t *testing.T) {
	t.Parallel()
	b := setup(t, fake.GitHubConfig{})
	file := filepath.Join(b.dir, "stderr.txt")
	if err := os.WriteFile(file, []byte("gh: You have exceeded a secondary rate limit. Please wait a few minutes before you try again. (HTTP 403)\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	r := b.layover("classify", "--provider", "github", "--exit", "1", "--stderr", file)
	if r.code != 0 || !strings.Contains(r.stdout, `"class":"secondary"`) {
		t.Fatalf("exit %d out %s err %s", r.code, r.stdout, r.stderr)
	}
	r = b.layover("classify", "--provider", "github", "--exit", "0", "--stderr", file)
	if !strings.Contains(r.stdout, `"class":"ok"`) {
		t.Fatalf("a zero exit is ok whatever it printed: %s", r.stdout)
	}
}

// A PostgreSQL store that cannot be reached fails in one line that names it
// without its password, exit 125 (layover failed; see TestUnusableStoreExits125).
func TestUnreachablePostgresStore(t *testing.T) {
	t.Parallel()
	b := setup(t, fake.GitHubConfig{})
	r := b.layover("status", "--store", "postgres://layover:s3cretpw@127.0.0.1:1/fleet?connect_timeout=5")
	if r.code != 125 {
		t.Fatalf("exit %d, want 125; stderr %q", r.code, r.stderr)
	}
	if strings.Contains(r.stderr, "s3cretpw") || !strings.Contains(r.stderr, "127.0.0.1:1") ||
		strings.Count(r.stderr, "connection refused") != 1 || strings.Count(strings.TrimRight(r.stderr, "\n"), "\n") > 0 {
		t.Errorf("stderr %q: want one line naming the store, password masked", r.stderr)
	}
}
