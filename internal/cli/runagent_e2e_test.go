package cli_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/layoverhq/layover/internal/fake"
	"github.com/layoverhq/layover/provider/agentcli"
)

// Issue 10: `run --agent NAME` classifies with that agent CLI's signals and,
// with no --resume-cmd, continues its session after the wait with the CLI's
// built-in resume: for each of the six, the fake CLI hits its usage limit,
// and its second invocation is the resume of the session it reported,
// carrying the short resume instruction, not the brief.
func TestRunAgentResumesWithItsBuiltInResume(t *testing.T) {
	t.Parallel()
	for name, argv := range map[string][]string{
		"claude":      {"claude", "-p", "fix the flaky test", "--output-format", "stream-json"},
		"codex":       {"codex", "exec", "--json", "fix the flaky test"},
		"copilot":     {"copilot", "-p", "fix the flaky test", "--output-format", "json"},
		"kimi":        {"kimi", "--print", "--output-format", "stream-json", "-p", "fix the flaky test"},
		"gemini":      {"gemini", "-p", "fix the flaky test", "--output-format", "stream-json"},
		"antigravity": {"agy", "-p", "fix the flaky test", "--output-format", "stream-json"},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			b := setup(t, fake.GitHubConfig{})
			bin := filepath.Join(b.dir, "bin")
			if err := os.Mkdir(bin, 0o700); err != nil {
				t.Fatal(err)
			}
			// The fake agent acts as the CLI its program name names.
			if err := os.Symlink(filepath.Join(binDir, "claude"), filepath.Join(bin, argv[0])); err != nil {
				t.Fatal(err)
			}
			b.env["PATH"] = bin + ":" + b.env["PATH"]
			script := filepath.Join(b.dir, "agent-script")
			reset := time.Now().Add(2 * time.Second).Unix()
			if err := os.WriteFile(script, []byte(fmt.Sprintf("limit %d\nok\n", reset)), 0o600); err != nil {
				t.Fatal(err)
			}
			b.env["FAKE_AGENT_SCRIPT"] = script
			b.env["FAKE_AGENT_LOG"] = filepath.Join(b.dir, "agent.log")
			b.env["FAKE_AGENT_SESSION"] = "sess-1234"

			r := b.layover(runArgs([]string{"--agent", name, "--unknown-reset", "2s"}, argv...)...)
			if r.code != 0 {
				t.Fatalf("exit %d\nstderr:\n%s", r.code, r.stderr)
			}
			log, _ := os.ReadFile(b.env["FAKE_AGENT_LOG"])
			calls := strings.Split(strings.TrimSpace(string(log)), "\n")
			if len(calls) != 2 || !strings.Contains(calls[1], "sess-1234") ||
				!strings.Contains(calls[1], agentcli.ResumeInstruction) || strings.Contains(calls[1], "flaky") {
				t.Fatalf("agent calls %q; want the brief, then the built-in resume of sess-1234", calls)
			}
		})
	}
}

// An unknown --agent is exit 2 naming the six; so is a --provider that
// contradicts it. Nothing runs.
func TestRunAgentRefusesBadNames(t *testing.T) {
	t.Parallel()
	b := setup(t, fake.GitHubConfig{})
	marker := filepath.Join(b.dir, "ran")
	r := b.layover("run", "--agent", "cursor", "--", "touch", marker)
	if r.code != 2 || !strings.Contains(r.stderr, `unknown agent "cursor" (known: claude, codex, copilot, kimi, gemini, antigravity)`) {
		t.Errorf("unknown agent: exit %d %q", r.code, r.stderr)
	}
	checkOneLine(t, r.stderr)
	r = b.layover("run", "--agent", "codex", "--provider", "claude-code", "--", "touch", marker)
	if r.code != 2 || !strings.Contains(r.stderr, "--provider claude-code") {
		t.Errorf("contradicting --provider: exit %d %q", r.code, r.stderr)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Error("the command ran")
	}
}
