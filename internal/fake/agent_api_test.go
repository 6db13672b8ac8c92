package fake

import (
	"bytes"
	"strings"
	"testing"
)

// With FAKE_AGENT_API, a fake Claude Code or Codex calls the API its base
// URL names, and the API's answer decides what it prints: a success is the
// CLI's answer, a 429 its rate-limit failure (Claude Code's carrying the
// API's body).
func TestAgentCallsTheAPIItsBaseURLNames(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		cli, kind, baseVar, suffix, keyVar, limitText string
		args                                          []string
	}{
		{AgentClaude, string(Anthropic), "ANTHROPIC_BASE_URL", "", "ANTHROPIC_API_KEY", "rate_limit_error", []string{"-p", "--output-format", "json", "hi"}},
		{AgentCodex, string(OpenAI), "OPENAI_BASE_URL", "/v1", "OPENAI_API_KEY", "last status: 429", []string{"exec", "--json", "hi"}},
	} {
		t.Run(c.cli, func(t *testing.T) {
			t.Parallel()
			l := NewLLM(LLMConfig{Kind: LLMKind(c.kind)})
			base, err := l.Start("127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			defer l.Close()
			env := map[string]string{"FAKE_AGENT_API": "1", c.baseVar: base + c.suffix, c.keyVar: "sk-test"}
			run := func() (int, string) {
				var out, errb bytes.Buffer
				code := Agent(c.cli, c.args, func(k string) string { return env[k] }, &out, &errb)
				return code, out.String() + errb.String()
			}
			if code, out := run(); code != 0 || !strings.Contains(out, "done") {
				t.Fatalf("ok call: exit %d\n%s", code, out)
			}
			l.Exhaust()
			if code, out := run(); code != 1 || !strings.Contains(out, c.limitText) {
				t.Fatalf("limited call: exit %d, want 1 and %q\n%s", code, c.limitText, out)
			}
			rs := l.Requests()
			if len(rs) != 2 || !rs[1].Limited {
				t.Fatalf("requests %+v", rs)
			}
			want := map[string]string{AgentClaude: "/v1/messages", AgentCodex: "/v1/responses"}[c.cli]
			if rs[0].Path != want {
				t.Fatalf("path %q, want %q", rs[0].Path, want)
			}
			delete(env, c.baseVar)
			if code, _ := run(); code != 0 || l.Calls() != 2 {
				t.Fatalf("without a base URL: exit %d, %d calls (want 0 and no new call)", code, l.Calls())
			}
		})
	}
}
