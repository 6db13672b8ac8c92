package cli_test

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/layoverhq/layover/internal/fake"
	"github.com/layoverhq/layover/store/sqlite"
	"github.com/layoverhq/layover/transport"
)

// A pass during a Quota wait: skipped with exit 0, nothing on stdout, the
// command never runs, /rate_limit is not asked once the ledger says skip,
// and three passes leave one activity line.
func TestPassSkippedDuringQuotaWait(t *testing.T) {
	t.Parallel()
	b := setup(t, fake.GitHubConfig{})
	reset := nextSecond(time.Hour)
	b.gh.SetQuota(testToken, "core", 0, reset)
	marker := filepath.Join(b.dir, "ran")

	for i := 0; i < 3; i++ {
		r := b.layover("pass", "--", "sh", "-c", "touch "+marker)
		if r.code != 0 || r.stdout != "" {
			t.Fatalf("pass %d: code %d stdout %q stderr %q; want a quiet exit 0", i, r.code, r.stdout, r.stderr)
		}
	}
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("the pass's command ran during a Quota wait")
	}
	if n := b.gh.Calls("/rate_limit"); n != 1 {
		t.Errorf("/rate_limit asked %d times; want 1 (later passes skip on the ledger)", n)
	}
	act := b.layover("activity", "--json")
	var lines []struct{ Kind, Line string }
	if err := json.Unmarshal([]byte(act.stdout), &lines); err != nil {
		t.Fatalf("activity --json: %v\n%s", err, act.stdout)
	}
	if len(lines) != 1 {
		t.Fatalf("activity has %d lines, want 1: %+v", len(lines), lines)
	}
	want := "skipped: GitHub (" + strings.TrimPrefix(b.base, "http://") + ") Quota wait until "
	if !strings.HasPrefix(lines[0].Line, "skipped: ") || !strings.Contains(lines[0].Line, "Quota wait until") ||
		!strings.Contains(lines[0].Line, "(core: 0 left)") {
		t.Errorf("activity line %q; want like %q ... (core: 0 left)", lines[0].Line, want)
	}
}

// A pass below the reserve skips too, and says so once.
func TestPassSkippedBelowReserve(t *testing.T) {
	t.Parallel()
	b := setup(t, fake.GitHubConfig{})
	b.gh.SetQuota(testToken, "graphql", 120, nextSecond(30*time.Minute))
	marker := filepath.Join(b.dir, "ran")
	for i := 0; i < 2; i++ {
		if r := b.layover("pass", "--", "sh", "-c", "touch "+marker); r.code != 0 || r.stdout != "" {
			t.Fatalf("code %d stdout %q stderr %q", r.code, r.stdout, r.stderr)
		}
	}
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("ran below the reserve of 500")
	}
	act := b.layover("activity")
	if n := strings.Count(act.stdout, "skipped:"); n != 1 || !strings.Contains(act.stdout, "(graphql: 120 left)") {
		t.Fatalf("activity:\n%s\nwant one skip line naming graphql: 120 left", act.stdout)
	}
	// status shows the key's Quota wait for scheduled work, with its cause.
	st := b.layover("status")
	if !strings.Contains(st.stdout, "Quota wait until") || !strings.Contains(st.stdout, "graphql: 120 left, below its reserve") {
		t.Errorf("status does not show the below-reserve wait:\n%s", st.stdout)
	}
	js := b.layover("status", "--json")
	if !strings.Contains(js.stdout, `"cause": "below-reserve"`) || strings.Count(js.stdout, `"wait_until": "`) != 1 {
		t.Errorf("status --json: want graphql below-reserve with its wait_until:\n%s", js.stdout)
	}
	// A lower reserve admits the same pass; its command's code passes through.
	r := b.layover("pass", "--reserve", "graphql=100", "--", "sh", "-c", "touch "+marker+"; exit 3")
	if r.code != 3 {
		t.Fatalf("admitted pass exit %d, want the command's 3; stderr %s", r.code, r.stderr)
	}
	if _, err := os.Stat(marker); err != nil {
		t.Fatal("admitted pass did not run its command")
	}
}

// When the quota check itself fails, the pass goes ahead.
func TestPassProceedsWhenCheckFails(t *testing.T) {
	t.Parallel()
	b := setup(t, fake.GitHubConfig{})
	b.gh.Script("/rate_limit", fake.ServerError(502))
	r := b.layover("pass", "--", "sh", "-c", "echo worked")
	if r.code != 0 || r.stdout != "worked\n" {
		t.Fatalf("code %d stdout %q stderr %q; want the command to run", r.code, r.stdout, r.stderr)
	}
	if !strings.Contains(r.stderr, "quota check failed") {
		t.Errorf("stderr %q does not say the check failed", r.stderr)
	}
}

// Separate users' quotas are separate: one user's exhaustion does not hold
// back another's pass.
func TestPassSeparatesPrincipals(t *testing.T) {
	t.Parallel()
	b := setup(t, fake.GitHubConfig{})
	b.gh.SetQuota(testToken, "core", 0, nextSecond(time.Hour))
	if r := b.layover("pass", "--principal", "alice", "--", "true"); r.code != 0 {
		t.Fatal(r.stderr)
	}
	b.env["GH_TOKEN"] = "test-token-2"
	marker := filepath.Join(b.dir, "ran")
	if r := b.layover("pass", "--principal", "bob", "--", "touch", marker); r.code != 0 {
		t.Fatalf("bob's pass: %d %s", r.code, r.stderr)
	}
	if _, err := os.Stat(marker); err != nil {
		t.Fatal("bob's pass was held back by alice's exhaustion")
	}
	st := b.layover("status", "--json")
	var s struct {
		Quota []struct {
			Principal, Resource, Cause string
			InWait                     bool `json:"in_wait"`
		}
	}
	if err := json.Unmarshal([]byte(st.stdout), &s); err != nil {
		t.Fatal(err)
	}
	for _, q := range s.Quota {
		if q.Resource == "core" && q.InWait != (q.Principal == "alice") {
			t.Errorf("%s core in_wait=%v", q.Principal, q.InWait)
		}
	}
}

// The login of a token is learned once and its quota rows follow it.
func TestPassLearnsLogin(t *testing.T) {
	t.Parallel()
	b := setup(t, fake.GitHubConfig{Login: "hubot"})
	if r := b.layover("pass", "--", "true"); r.code != 0 {
		t.Fatal(r.stderr)
	}
	st := b.layover("status", "--json")
	if !strings.Contains(st.stdout, `"principal": "hubot"`) || strings.Contains(st.stdout, `"tok:`) {
		t.Fatalf("status after learning the login:\n%s", st.stdout)
	}
	if strings.Contains(st.stdout, testToken) {
		t.Fatal("the token reached the store")
	}
	if n := b.gh.Calls("/user"); n != 1 {
		t.Fatalf("/user asked %d times, want 1", n)
	}
	b.layover("pass", "--", "true")
	if n := b.gh.Calls("/user"); n != 1 {
		t.Fatalf("/user asked again (%d) for a known token", n)
	}
}

// pass --quota anthropic skips while the ledger holds the Anthropic key
// exhausted as a Go program's transport recorded it: on the host of
// ANTHROPIC_BASE_URL, under the organisation the response named (which the
// transport learned for the key's fingerprint). Exit 0, the command never
// runs, GitHub is never asked, and the activity line and status name
// Anthropic. A pass with another key, whose quota nobody has seen
// exhausted, runs.
func TestPassSkipsOnAnAnthropicKeyTheTransportRecorded(t *testing.T) {
	t.Parallel()
	b := setup(t, fake.GitHubConfig{})
	llm := fake.NewLLM(fake.LLMConfig{Kind: fake.Anthropic, RequestsPerWindow: 1, Window: time.Hour})
	base, err := llm.Start("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = llm.Close() })
	const key = "sk-ant-api03-e2e-0123456789abcdef"
	spendTheWindow(t, b.store, base, key)

	b.env["ANTHROPIC_BASE_URL"], b.env["ANTHROPIC_API_KEY"] = base, key
	marker := filepath.Join(b.dir, "ran")
	r := b.layover("pass", "--quota", "anthropic", "--", "sh", "-c", "touch "+marker)
	if r.code != 0 || r.stdout != "" || r.stderr != "" {
		t.Fatalf("pass: code %d stdout %q stderr %q; want a quiet exit 0", r.code, r.stdout, r.stderr)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("the pass's command ran while its Anthropic key is exhausted")
	}
	if n := len(b.gh.Requests()); n != 0 {
		t.Errorf("GitHub asked %d times for a pass on an Anthropic quota", n)
	}
	act := b.layover("activity", "--json")
	var lines []struct{ Kind, Line string }
	if err := json.Unmarshal([]byte(act.stdout), &lines); err != nil {
		t.Fatalf("activity --json: %v\n%s", err, act.stdout)
	}
	if len(lines) != 1 || !strings.HasPrefix(lines[0].Line, "skipped: Anthropic Quota wait until ") ||
		!strings.Contains(lines[0].Line, "(requests: 0 left)") {
		t.Errorf("activity %+v; want one line: skipped: Anthropic Quota wait until … (requests: 0 left)", lines)
	}

	if st := b.layover("status"); !strings.Contains(st.stdout, "Anthropic Quota wait until ") {
		t.Errorf("status does not name the Anthropic quota:\n%s", st.stdout)
	}

	b.env["ANTHROPIC_API_KEY"] = "sk-ant-api03-another-key-0123456789"
	if r := b.layover("pass", "--quota", "anthropic:requests", "--", "sh", "-c", "touch "+marker); r.code != 0 {
		t.Fatalf("pass with another key: code %d stderr %q", r.code, r.stderr)
	}
	if _, err := os.Stat(marker); err != nil {
		t.Error("the pass with another key did not run its command")
	}
}

// spendTheWindow sends one request with key through layover's transport
// on the store at path, to a fake Anthropic whose window allows one: the
// response says none remains for an hour, and the transport records it.
func spendTheWindow(t *testing.T, path, base, key string) {
	t.Helper()
	st, err := sqlite.Open(t.Context(), path)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	tr, err := transport.New(nil, &transport.Options{Provider: transport.Anthropic(), Store: st})
	if err != nil {
		t.Fatal(err)
	}
	req, err := http.NewRequest(http.MethodPost, base+"/v1/messages", strings.NewReader(`{"model":"claude-sonnet-4-5"}`))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("X-Api-Key", key)
	resp, err := tr.RoundTrip(req)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("the transport's request: %v, %v", resp, err)
	}
	resp.Body.Close()
	if err := tr.Close(); err != nil {
		t.Fatal(err)
	}
}
