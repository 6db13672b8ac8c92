package fake

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/layoverhq/layover/provider"
	"github.com/layoverhq/layover/provider/agentcli"
	"github.com/layoverhq/layover/provider/registry"
)

// TestAgentStart runs each of the six fake CLIs as its StartCmd with a
// brief that needs quoting: the fake receives the brief whole, a limited
// run classifies as a quota, and it reports the session its ResumeCmd
// then continues.
func TestAgentStart(t *testing.T) {
	t.Parallel()
	const brief = "review the parser's changes; don't push"
	for _, a := range agentcli.Agents() {
		t.Run(a.Name, func(t *testing.T) {
			t.Parallel()
			log := filepath.Join(t.TempDir(), "args.log")
			env := agentEnv(t, []string{"limit", "ok"}, "FAKE_AGENT_LOG", log)
			argv := shellWords(t, strings.ReplaceAll(a.StartCmd, "{prompt}", agentcli.ShellQuote(brief)))
			if argv[0] != a.Program {
				t.Fatalf("StartCmd runs %q", argv[0])
			}
			code, stdout, stderr := runAgent(argv[0], argv[1:], env)
			classify, _ := registry.CLIClassifier(a.Provider)
			if got := classify(code, []byte(stdout), []byte(stderr), agentNow, nil); got.Class != provider.ClassQuota {
				t.Fatalf("limited start classified %s (%s)\nstdout: %s\nstderr: %s", got.Class, got.Reason, stdout, stderr)
			}
			id := agentcli.SessionID([]byte(stdout), []byte(stderr))
			if id == "" {
				t.Fatalf("no session id\nstdout: %s\nstderr: %s", stdout, stderr)
			}
			resume := shellWords(t, strings.ReplaceAll(a.ResumeCmd, "{session_id}", agentcli.ShellQuote(id)))
			code, stdout, stderr = runAgent(resume[0], resume[1:], env)
			if got := agentcli.SessionID([]byte(stdout), []byte(stderr)); code != 0 || got != id {
				t.Errorf("resume: exit %d, session %q, want 0 and %q", code, got, id)
			}
			data, err := os.ReadFile(log)
			if err != nil {
				t.Fatal(err)
			}
			if first, _, _ := strings.Cut(string(data), "\n"); !strings.Contains(first, brief) {
				t.Errorf("the start's log line %q lacks the brief", first)
			}
		})
	}
}
