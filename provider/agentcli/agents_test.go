package agentcli

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

func TestAgents(t *testing.T) {
	t.Parallel()
	var names []string
	for _, a := range Agents() {
		names = append(names, a.Name)
		if strings.Count(a.ResumeCmd, "{session_id}") != 1 {
			t.Errorf("%s: ResumeCmd %q holds {session_id} %d times", a.Name, a.ResumeCmd, strings.Count(a.ResumeCmd, "{session_id}"))
		}
		if !strings.Contains(a.ResumeCmd, "'"+ResumeInstruction+"'") {
			t.Errorf("%s: ResumeCmd %q does not send ResumeInstruction as one word", a.Name, a.ResumeCmd)
		}
		if !strings.HasPrefix(a.ResumeCmd, a.Program+" ") {
			t.Errorf("%s: ResumeCmd %q does not run %s", a.Name, a.ResumeCmd, a.Program)
		}
		if strings.Count(a.StartCmd, "{prompt}") != 1 || !strings.HasPrefix(a.StartCmd, a.Program+" ") {
			t.Errorf("%s: StartCmd %q does not run %s with {prompt} once", a.Name, a.StartCmd, a.Program)
		}
		if a.AuthCheck != nil && a.AuthCheck[0] != a.Program {
			t.Errorf("%s: AuthCheck %q does not run %s", a.Name, a.AuthCheck, a.Program)
		}
		if got, ok := AgentNamed(a.Name); !ok || got.Provider != a.Provider {
			t.Errorf("AgentNamed(%q) = %+v, %v", a.Name, got, ok)
		}
		if got, ok := AgentNamed(a.Provider); !ok || got.Name != a.Name {
			t.Errorf("AgentNamed(%q) = %+v, %v", a.Provider, got, ok)
		}
	}
	if want := []string{"claude", "codex", "copilot", "kimi", "gemini", "antigravity"}; !slices.Equal(names, want) {
		t.Errorf("Agents() = %q, want %q", names, want)
	}
	if strings.ContainsAny(ResumeInstruction, `'\`) {
		t.Errorf("ResumeInstruction %q holds a quote", ResumeInstruction)
	}
	for _, alias := range []string{"claude-code", "gemini-cli", "agy"} {
		if _, ok := AgentNamed(alias); !ok {
			t.Errorf("AgentNamed(%q) not found", alias)
		}
	}
	if _, ok := AgentNamed("cursor"); ok {
		t.Error("AgentNamed(cursor) found")
	}
	// The caller's copy is its own.
	a := Agents()
	a[0].AuthCheck[0] = "x"
	if Agents()[0].AuthCheck[0] != "claude" {
		t.Error("Agents shares AuthCheck")
	}
}

func TestShellQuote(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"":               "''",
		"review it":      "'review it'",
		"it's $HOME `x`": `'it'\''s $HOME ` + "`x`'",
	} {
		if got := ShellQuote(in); got != want {
			t.Errorf("ShellQuote(%q) = %s, want %s", in, got, want)
		}
		out, err := exec.Command("/bin/sh", "-c", "printf %s "+ShellQuote(in)).Output()
		if err != nil || string(out) != in {
			t.Errorf("sh read ShellQuote(%q) as %q (%v)", in, out, err)
		}
	}
}
