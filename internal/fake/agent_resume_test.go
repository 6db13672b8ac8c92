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

// agentBrief is the original prompt of the resume tests.
const agentBrief = "implement the parser described in issue 12"

// firstRun is how each CLI is first run on the brief, in a form that
// reports its session.
var firstRun = map[string][]string{
	"claude":      {"-p", "--output-format", "stream-json", "--verbose", agentBrief},
	"codex":       {"exec", agentBrief},
	"copilot":     {"-p", agentBrief},
	"kimi":        {"--print", "-p", agentBrief},
	"gemini":      {"-p", agentBrief, "--output-format", "stream-json"},
	"antigravity": {"-p", agentBrief, "--output-format", "stream-json"},
}

// shellWords splits a command of plain words, single-quoted strings and
// backslash escapes, as the agents' ResumeCmd and StartCmd templates are
// written and agentcli.ShellQuote quotes.
func shellWords(t *testing.T, cmd string) []string {
	t.Helper()
	var words []string
	var cur strings.Builder
	inWord, quoted, escaped := false, false, false
	for _, c := range cmd {
		switch {
		case escaped:
			cur.WriteRune(c)
			escaped = false
		case c == '\\' && !quoted:
			escaped, inWord = true, true
		case c == '\'':
			quoted, inWord = !quoted, true
		case c == ' ' && !quoted:
			if inWord {
				words = append(words, cur.String())
				cur.Reset()
				inWord = false
			}
		default:
			cur.WriteRune(c)
			inWord = true
		}
	}
	if quoted {
		t.Fatalf("unbalanced quote in %q", cmd)
	}
	if inWord {
		words = append(words, cur.String())
	}
	return words
}

// TestAgentResume runs each of the six fake CLIs as a limited first run,
// then as its built-in resume (agentcli.Agents' ResumeCmd with the
// captured session): the resumed run continues the same session, and the
// fake received the resume flag, the session and ResumeInstruction, not
// the brief.
func TestAgentResume(t *testing.T) {
	t.Parallel()
	for _, a := range agentcli.Agents() {
		t.Run(a.Name, func(t *testing.T) {
			t.Parallel()
			log := filepath.Join(t.TempDir(), "args.log")
			env := agentEnv(t, []string{"limit", "ok"}, "FAKE_AGENT_LOG", log)
			code, stdout, stderr := runAgent(a.Program, firstRun[a.Name], env)
			classify, ok := registry.CLIClassifier(a.Provider)
			if !ok {
				t.Fatalf("no classifier for %q", a.Provider)
			}
			if got := classify(code, []byte(stdout), []byte(stderr), agentNow, nil); got.Class != provider.ClassQuota {
				t.Fatalf("first run classified %s (%s)", got.Class, got.Reason)
			}
			id := agentcli.SessionID([]byte(stdout), []byte(stderr))
			if id == "" {
				t.Fatalf("no session id\nstdout: %s\nstderr: %s", stdout, stderr)
			}
			argv := shellWords(t, strings.ReplaceAll(a.ResumeCmd, "{session_id}", "'"+id+"'"))
			if argv[0] != a.Program {
				t.Fatalf("ResumeCmd runs %q", argv[0])
			}
			code, stdout, stderr = runAgent(argv[0], argv[1:], env)
			if code != 0 {
				t.Fatalf("resume: exit %d\nstdout: %s\nstderr: %s", code, stdout, stderr)
			}
			if got := agentcli.SessionID([]byte(stdout), []byte(stderr)); got != id {
				t.Errorf("resume reported session %q, want %q", got, id)
			}
			data, err := os.ReadFile(log)
			if err != nil {
				t.Fatal(err)
			}
			lines := strings.Split(strings.TrimSpace(string(data)), "\n")
			if len(lines) != 2 {
				t.Fatalf("log has %d lines: %q", len(lines), lines)
			}
			flag := strings.Fields(a.ResumeCmd[:strings.Index(a.ResumeCmd, "{session_id}")])
			resumed := lines[1]
			for _, want := range []string{flag[len(flag)-1] + " " + id, agentcli.ResumeInstruction} {
				if !strings.Contains(resumed, want) {
					t.Errorf("resume log line %q lacks %q", resumed, want)
				}
			}
			if strings.Contains(resumed, agentBrief) {
				t.Errorf("resume log line %q holds the brief", resumed)
			}
			if !strings.Contains(lines[0], agentBrief) {
				t.Errorf("first log line %q lacks the brief", lines[0])
			}
		})
	}
}

// TestAgentLogin: with FAKE_AGENT_LOGIN naming a missing file every run
// fails with the CLI's auth error and its credentials check exits
// non-zero, without taking a script line; once the file exists the check
// exits 0 and the script goes on.
func TestAgentLogin(t *testing.T) {
	t.Parallel()
	for _, a := range agentcli.Agents() {
		t.Run(a.Name, func(t *testing.T) {
			t.Parallel()
			login := filepath.Join(t.TempDir(), "logged-in")
			env := agentEnv(t, []string{"limit", "ok"}, "FAKE_AGENT_LOGIN", login)
			classify, _ := registry.CLIClassifier(a.Provider)
			check := func(want int) {
				t.Helper()
				if a.AuthCheck == nil {
					return
				}
				if code, stdout, stderr := runAgent(a.AuthCheck[0], a.AuthCheck[1:], env); code != want {
					t.Errorf("%v: exit %d, want %d\nstdout: %s\nstderr: %s", a.AuthCheck, code, want, stdout, stderr)
				}
			}
			for range 2 {
				code, stdout, stderr := runAgent(a.Program, firstRun[a.Name], env)
				if got := classify(code, []byte(stdout), []byte(stderr), agentNow, nil); code == 0 || got.Class != provider.ClassAuth {
					t.Fatalf("logged out: exit %d classified %s (%s)\nstdout: %s\nstderr: %s", code, got.Class, got.Reason, stdout, stderr)
				}
				check(1)
			}
			if err := os.WriteFile(login, nil, 0o600); err != nil {
				t.Fatal(err)
			}
			check(0)
			code, stdout, stderr := runAgent(a.Program, firstRun[a.Name], env)
			if got := classify(code, []byte(stdout), []byte(stderr), agentNow, nil); got.Class != provider.ClassQuota {
				t.Errorf("logged in: the script's first line (limit) gave %s (%s)", got.Class, got.Reason)
			}
		})
	}
	// Without FAKE_AGENT_LOGIN the checks pass.
	for _, check := range [][]string{{"claude", "auth", "status"}, {"codex", "login", "status"}} {
		if code, stdout, _ := runAgent(check[0], check[1:], map[string]string{}); code != 0 {
			t.Errorf("%v: exit %d (%s)", check, code, stdout)
		}
	}
}

// TestAgentAuthChecks: the fakes' credentials checks are the ones
// agentcli.Agents names.
func TestAgentAuthChecks(t *testing.T) {
	t.Parallel()
	for _, a := range agentcli.Agents() {
		r := &agentRun{name: agentName(a.Program), args: nil}
		if a.AuthCheck != nil {
			r.args = a.AuthCheck[1:]
		}
		if r.isAuthCheck() != (a.AuthCheck != nil) {
			t.Errorf("%s: AuthCheck %v, the fake's check disagrees", a.Name, a.AuthCheck)
		}
	}
}
