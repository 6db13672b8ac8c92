package cli_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/layoverhq/layover/internal/fake"
)

// A Claude Code run that hits its usage limit waits for the reset its
// stream declared, then continues the same session with --resume-cmd.
func TestRunClaudeCodeWaitsAndResumesSession(t *testing.T) {
	t.Parallel()
	b := setup(t, fake.GitHubConfig{})
	script := filepath.Join(b.dir, "agent-script")
	reset := time.Now().Add(2 * time.Second).Unix()
	if err := os.WriteFile(script, []byte(fmt.Sprintf("limit %d\nok\n", reset)), 0o600); err != nil {
		t.Fatal(err)
	}
	b.env["FAKE_AGENT_SCRIPT"] = script
	b.env["FAKE_AGENT_LOG"] = filepath.Join(b.dir, "agent.log")
	b.env["FAKE_AGENT_SESSION"] = "sess-1234"

	r := b.layover("run", "--provider", "claude-code", "--reset-margin", "0s", "--jitter", "0s",
		"--resume-cmd", "claude -p --resume {session_id} 'carry on'", "--",
		"claude", "-p", "fix the flaky test", "--output-format", "stream-json")
	if r.code != 0 {
		t.Fatalf("exit %d\nstderr:\n%s", r.code, r.stderr)
	}
	lines := strings.Split(strings.TrimSpace(r.stderr), "\n")
	if last := lines[len(lines)-1]; !strings.HasPrefix(last, "Waited ") || !strings.Contains(last, "for the Claude Code quota (five_hour)") {
		t.Errorf("last stderr line %q", last)
	}
	log, _ := os.ReadFile(b.env["FAKE_AGENT_LOG"])
	calls := strings.Split(strings.TrimSpace(string(log)), "\n")
	if len(calls) != 2 || !strings.Contains(calls[1], "--resume sess-1234") {
		t.Fatalf("agent calls %q; want the original then a resume of sess-1234", calls)
	}
	st := b.layover("status", "--json")
	if !strings.Contains(st.stdout, `"host": "claude-code"`) || !strings.Contains(st.stdout, `"resource": "five_hour"`) {
		t.Errorf("the ledger lacks the Claude Code quota:\n%s", st.stdout)
	}
}

// A zero exit is ok whatever an agent printed, and retry notices are not
// quotas.
func TestRunAgentZeroExitIsOK(t *testing.T) {
	t.Parallel()
	b := setup(t, fake.GitHubConfig{})
	r := b.layover("run", "--provider", "auto", "--", "sh", "-c",
		`echo '{"type":"system","subtype":"api_retry","attempt":1,"error_status":429,"error":"rate_limit"}'; echo "You've hit your limit · resets 4:50am"`)
	if r.code != 0 || strings.Contains(r.stderr, "wait") {
		t.Fatalf("exit %d stderr %q", r.code, r.stderr)
	}
}
