package cli_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/layoverhq/layover/internal/fake"
	"github.com/layoverhq/layover/provider/agentcli"
	"github.com/layoverhq/layover/store/postgres/pgtest"
)

// onEachStore runs test on a fresh world whose store is SQLite, then one
// whose store is a PostgreSQL schema (skipped without
// LAYOVER_TEST_POSTGRES), side by side.
func onEachStore(t *testing.T, cfg fake.GitHubConfig, test func(t *testing.T, b *bundle)) {
	for _, kind := range []string{"sqlite", "postgres"} {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			b := setup(t, cfg)
			if kind == "postgres" {
				b.env["LAYOVER_STORE"] = pgtest.Schema(t)
			}
			test(t, b)
		})
	}
}

// showHistory is what these tests read of show --json beyond shownJob.
type showHistory struct {
	State     string `json:"state"`
	Stage     string `json:"stage"`
	SessionID string `json:"session_id"`
	Checks    []struct {
		Trigger  string `json:"trigger"`
		ExitCode *int   `json:"exit_code"`
		Result   string `json:"result"`
	} `json:"checks"`
	Transitions []struct{ From, To, Reason string } `json:"transitions"`
	Attempts    []struct {
		WaitedS float64 `json:"waited_s"`
	} `json:"attempts"`
	Receipts []json.RawMessage `json:"receipts"`
	Owners   []struct {
		Host    string `json:"host"`
		Matches bool   `json:"matches"`
	} `json:"receipt_owners"`
}

func (b *bundle) history(id string) showHistory {
	b.t.Helper()
	r := b.layover("show", id, "--json")
	var h showHistory
	if err := json.Unmarshal([]byte(r.stdout), &h); err != nil {
		b.t.Fatalf("show --json: %v\n%s", err, r.stdout)
	}
	return h
}

// agentBin puts the fake agent on PATH under each agent CLI's program name.
func (b *bundle) agentBin() {
	b.t.Helper()
	dir := filepath.Join(b.dir, "agents")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		b.t.Fatal(err)
	}
	for _, a := range agentcli.Agents() {
		if err := os.Symlink(filepath.Join(binDir, "claude"), filepath.Join(dir, a.Program)); err != nil && !os.IsExist(err) {
			b.t.Fatal(err)
		}
	}
	b.env["PATH"] = dir + ":" + b.env["PATH"]
}

// The brief each agent CLI is first given, in its non-interactive form.
var agentBriefs = map[string][]string{
	"claude":      {"claude", "-p", "fix the flaky test", "--output-format", "stream-json", "--verbose"},
	"codex":       {"codex", "exec", "--json", "fix the flaky test"},
	"copilot":     {"copilot", "-p", "fix the flaky test", "--output-format", "json"},
	"kimi":        {"kimi", "--print", "--output-format", "stream-json", "-p", "fix the flaky test"},
	"gemini":      {"gemini", "-p", "fix the flaky test", "--output-format", "stream-json"},
	"antigravity": {"agy", "-p", "fix the flaky test", "--output-format", "stream-json"},
}

// Each agent CLI's job, deferred under serve when its limit hits, continues
// the same session after the wait: the fake receives the resume with the
// captured session and the short instruction, not the brief again.
func TestServeContinuesEachAgentsSession(t *testing.T) {
	t.Parallel()
	for _, a := range agentcli.Agents() {
		t.Run(a.Name, func(t *testing.T) {
			t.Parallel()
			onEachStore(t, fake.GitHubConfig{}, func(t *testing.T, b *bundle) {
				b.agentBin()
				script := filepath.Join(b.dir, "agent-script")
				writeTestFile(t, script, fmt.Sprintf("limit %d\nok\n", nextSecond(2*time.Second).Unix()))
				session := "5f0c8a52-" + a.Name
				b.env["FAKE_AGENT_SCRIPT"], b.env["FAKE_AGENT_SESSION"] = script, session
				b.env["FAKE_AGENT_LOG"] = filepath.Join(b.dir, "agent.log")
				serve := b.start("serve", "--lease", "3s", "--heartbeat", "500ms", "--reset-margin", "0s", "--jitter", "0s",
					"--unknown-reset", "2s")
				serve.waitLine(t, "layover serve started")
				brief := agentBriefs[a.Name]
				r := b.layover(append([]string{"submit", "--id", "agent-job", "--agent", a.Name, "--"}, brief...)...)
				if r.code != 0 {
					t.Fatalf("submit: exit %d %s", r.code, r.stderr)
				}
				b.awaitJob("agent-job", "complete")
				h := b.history("agent-job")
				if h.SessionID != session {
					t.Errorf("session %q, want %q captured from the failed run", h.SessionID, session)
				}
				if !strings.Contains(transitionsOf(h), "running>deferred") {
					t.Errorf("transitions %s: the limit must defer the job", transitionsOf(h))
				}
				// The resume's waited_s is its time deferred (under 2 s: CLIs
				// that print a reset to the minute resume at once), the
				// first attempt's none.
				if len(h.Attempts) != 2 || h.Attempts[0].WaitedS != 0 || !(h.Attempts[1].WaitedS > 0 && h.Attempts[1].WaitedS < 10) {
					t.Errorf("attempts %+v: want waited_s 0, then the quota wait's seconds", h.Attempts)
				}
				data, _ := os.ReadFile(b.env["FAKE_AGENT_LOG"])
				calls := strings.Split(strings.TrimSpace(string(data)), "\n")
				if len(calls) != 2 {
					t.Fatalf("agent calls %q; want the brief, then one resume", calls)
				}
				resume := calls[1]
				if !strings.Contains(resume, session) || !strings.Contains(resume, "Continue the interrupted task") ||
					strings.Contains(resume, "fix the flaky test") {
					t.Fatalf("the resume the agent received: %s\nwant session %s and the resume instruction, not the brief", resume, session)
				}
			})
		})
	}
}

// A job whose session could not be captured restarts from its brief, and
// show says so.
func TestServeResumeWithoutSessionRestartsFromBrief(t *testing.T) {
	onEachStore(t, fake.GitHubConfig{}, func(t *testing.T, b *bundle) {
		b.agentBin()
		script := filepath.Join(b.dir, "agent-script")
		writeTestFile(t, script, fmt.Sprintf("limit-text %d\nok\n", nextSecond(2*time.Second).Unix()))
		b.env["FAKE_AGENT_SCRIPT"], b.env["FAKE_AGENT_LOG"] = script, filepath.Join(b.dir, "agent.log")
		serve := b.start("serve", "--lease", "3s", "--heartbeat", "500ms", "--reset-margin", "0s", "--jitter", "0s")
		serve.waitLine(t, "layover serve started")
		// Claude Code's text output names no session.
		if r := b.layover("submit", "--id", "j", "--agent", "claude", "--", "claude", "-p", "fix the flaky test"); r.code != 0 {
			t.Fatalf("submit: %s", r.stderr)
		}
		b.awaitJob("j", "complete")
		h := b.history("j")
		if !strings.Contains(reasonsOf(h), "no agent session was captured, so the job restarts from its brief") {
			t.Fatalf("transitions do not say the job restarted from its brief: %s", reasonsOf(h))
		}
		data, _ := os.ReadFile(b.env["FAKE_AGENT_LOG"])
		if calls := strings.Split(strings.TrimSpace(string(data)), "\n"); len(calls) != 2 || calls[1] != calls[0] {
			t.Fatalf("agent calls %q; want the brief twice", calls)
		}
	})
}

// An authentication failure waits for credentials, not for a quota: the
// host re-checks the token (GET /user) on its backoff and runs the job once
// GitHub accepts it.
func TestServeAuthWaitRunsWhenTheTokenWorks(t *testing.T) {
	onEachStore(t, fake.GitHubConfig{Tokens: []string{"another-token"}}, func(t *testing.T, b *bundle) {
		serve := b.start("serve", "--lease", "3s", "--heartbeat", "500ms", "--auth-recheck", "1s")
		serve.waitLine(t, "layover serve started")
		if r := b.layover("submit", "--id", "j", "--quota", "github", "--", "gh", "api", "/repos/octo/demo"); r.code != 0 {
			t.Fatalf("submit: %s", r.stderr)
		}
		b.awaitJob("j", "auth-wait")
		// The first check (GET /user, after 1 s) still finds the token
		// refused.
		before, deadline := b.gh.Calls("/user"), time.Now().Add(30*time.Second)
		for b.gh.Calls("/user") == before && time.Now().Before(deadline) {
			time.Sleep(50 * time.Millisecond)
		}
		j := b.show("j")
		if j.State != "auth-wait" || !strings.HasPrefix(j.Stage, "Waiting for credentials since ") {
			t.Fatalf("after a refused check: %s (%s)", j.State, j.Stage)
		}
		st := b.layover("status")
		if !strings.Contains(st.stdout, "1 auth-wait (waiting for credentials)") {
			t.Errorf("status does not name the wait for credentials:\n%s", st.stdout)
		}
		b.gh.AcceptTokens(testToken)
		b.awaitJob("j", "complete")
		if got := transitionsOf(b.history("j")); !strings.Contains(got, "running>auth-wait auth-wait>ready ready>running running>complete") {
			t.Fatalf("transitions %s", got)
		}
		if err := serve.cmd.Process.Signal(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
		serve.wait(t)
	})
}

// An agent job in auth-wait is re-checked with its CLI's own status
// command (claude auth status), and runs once the agent is logged in.
func TestServeAgentAuthWaitUsesItsStatusCommand(t *testing.T) {
	onEachStore(t, fake.GitHubConfig{}, func(t *testing.T, b *bundle) {
		b.agentBin()
		login := filepath.Join(b.dir, "logged-in")
		b.env["FAKE_AGENT_LOGIN"], b.env["FAKE_AGENT_LOG"] = login, filepath.Join(b.dir, "agent.log")
		serve := b.start("serve", "--lease", "3s", "--heartbeat", "500ms", "--auth-recheck", "1s")
		serve.waitLine(t, "layover serve started")
		if r := b.layover(append([]string{"submit", "--id", "j", "--agent", "claude", "--"}, agentBriefs["claude"]...)...); r.code != 0 {
			t.Fatalf("submit: %s", r.stderr)
		}
		b.awaitJob("j", "auth-wait")
		writeTestFile(t, login, "")
		b.awaitJob("j", "complete")
		data, _ := os.ReadFile(b.env["FAKE_AGENT_LOG"])
		if !strings.Contains(string(data), "auth status") {
			t.Fatalf("the host never ran claude auth status; agent calls:\n%s", data)
		}
	})
}

// A transient failure reconciles before the retry: the check command runs,
// is recorded, and its exit 0 completes the job without running it again.
func TestServeTransientRetryReconcilesFirst(t *testing.T) {
	onEachStore(t, fake.GitHubConfig{}, func(t *testing.T, b *bundle) {
		b.gh.Script("/repos/octo/demo", fake.ServerError(502))
		serve := b.start("serve", "--lease", "3s", "--heartbeat", "500ms", "--retry-backoff", "1s")
		serve.waitLine(t, "layover serve started")
		if r := b.layover("submit", "--id", "j", "--check-cmd", "exit 0", "--", "gh", "api", "/repos/octo/demo"); r.code != 0 {
			t.Fatalf("submit: %s", r.stderr)
		}
		b.awaitJob("j", "complete")
		h := b.history("j")
		if len(h.Checks) != 1 || h.Checks[0].Trigger != "transient retry" || h.Checks[0].Result != "complete" {
			t.Fatalf("checks %+v: want one before the transient retry, which completed the job", h.Checks)
		}
		if n := b.ghRuns(); n != 1 {
			t.Fatalf("gh ran %d times; the check said the outcome already holds", n)
		}
	})
}

// A job whose host died is re-claimed by another host, which reconciles
// before running it again.
func TestServeLostLeaseReconcilesFirst(t *testing.T) {
	onEachStore(t, fake.GitHubConfig{}, func(t *testing.T, b *bundle) {
		marker, started := filepath.Join(b.dir, "second-run"), filepath.Join(b.dir, "started")
		first := b.start("serve", "--lease", "2s", "--heartbeat", "500ms")
		first.waitLine(t, "layover serve started")
		job := "if [ -f " + marker + " ]; then exit 0; fi; touch " + started + "; sleep 60"
		if r := b.layover("submit", "--id", "j", "--check-cmd", "touch "+marker+"; exit 1", "--", "sh", "-c", job); r.code != 0 {
			t.Fatalf("submit: %s", r.stderr)
		}
		deadline := time.Now().Add(30 * time.Second)
		for _, err := os.Stat(started); err != nil && time.Now().Before(deadline); _, err = os.Stat(started) {
			time.Sleep(50 * time.Millisecond)
		}
		if err := first.cmd.Process.Kill(); err != nil {
			t.Fatal(err)
		}
		first.wait(t)
		second := b.start("serve", "--lease", "2s", "--heartbeat", "500ms")
		second.waitLine(t, "layover serve started")
		b.awaitJob("j", "complete")
		h := b.history("j")
		if len(h.Checks) != 1 || h.Checks[0].Trigger != "lease lost" || h.Checks[0].Result != "run" {
			t.Fatalf("checks %+v: want one, before the re-claim's run", h.Checks)
		}
	})
}

// A chain of deferrals stops at its first resume_by: when the quota is
// still short there, the job is cancelled rather than deferred past it.
func TestServeDeferralChainStopsAtItsFirstResumeBy(t *testing.T) {
	onEachStore(t, fake.GitHubConfig{}, func(t *testing.T, b *bundle) {
		b.gh.SetQuota(testToken, "core", 0, nextSecond(2*time.Second))
		serve := b.start("serve", "--lease", "3s", "--heartbeat", "500ms", "--reset-margin", "0s", "--jitter", "0s")
		serve.waitLine(t, "layover serve started")
		if r := b.layover("submit", "--id", "j", "--quota", "github", "--deadline", "6s", "--", "gh", "api", "/repos/octo/demo"); r.code != 0 {
			t.Fatalf("submit: %s", r.stderr)
		}
		b.awaitJob("j", "deferred")
		// Still exhausted at the wake-up, with a reset past the chain's
		// resume_by (the job's deadline).
		b.gh.SetQuota(testToken, "core", 0, nextSecond(time.Minute))
		b.awaitJob("j", "cancelled")
		h := b.history("j")
		if len(h.Receipts) != 1 {
			t.Fatalf("%d receipts: the chain may not grow past its first resume_by", len(h.Receipts))
		}
		if len(h.Owners) != 1 || !h.Owners[0].Matches {
			t.Fatalf("wake-up evidence %+v: the receipt's digests must be the recorded wake-up's", h.Owners)
		}
	})
}

func transitionsOf(h showHistory) string {
	var parts []string
	for _, tr := range h.Transitions {
		parts = append(parts, tr.From+">"+tr.To)
	}
	return strings.Join(parts, " ")
}

func reasonsOf(h showHistory) string {
	var parts []string
	for _, tr := range h.Transitions {
		parts = append(parts, tr.Reason)
	}
	return strings.Join(parts, "; ")
}

func writeTestFile(t *testing.T, path, s string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(s), 0o600); err != nil {
		t.Fatal(err)
	}
}
