package fake

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"
)

// maxAgentAPIBody bounds how much of the API's answer the fake reads.
const maxAgentAPIBody = 64 << 10

// callAPI is FAKE_AGENT_API's opt-in call: a fake Claude Code or Codex
// whose base URL variable is set (ANTHROPIC_BASE_URL, OPENAI_BASE_URL)
// sends one request to the provider's API before it prints, as the real
// CLI's turn would, so a test sees the CLI's traffic pass through whatever
// that URL names (layover's gateway). Claude Code posts a Messages request
// to <ANTHROPIC_BASE_URL>/v1/messages with x-api-key ANTHROPIC_API_KEY (or
// a bearer ANTHROPIC_AUTH_TOKEN); Codex a Responses request to
// <OPENAI_BASE_URL>/responses with a bearer OPENAI_API_KEY. The answer
// decides the mode in place of the script line: a 2xx is ok, a 429 the
// mode "secondary" (Claude Code then prints the API's error body as its
// text), a 529 or 503 overloaded, a 401 auth, anything else or no answer
// fail. It reports whether it called (the CLI and its variable allow it).
//
// Departures: one request, no retries, no stream, no tools.
func (r *agentRun) callAPI() bool {
	if r.getenv("FAKE_AGENT_API") == "" {
		return false
	}
	var url, body string
	h := http.Header{"Content-Type": {"application/json"}}
	switch r.name {
	case AgentClaude:
		base := r.getenv("ANTHROPIC_BASE_URL")
		if base == "" {
			return false
		}
		url = strings.TrimRight(base, "/") + "/v1/messages"
		body = `{"model":"` + claudeModel + `","max_tokens":1024,"messages":[{"role":"user","content":"hello"}]}`
		h.Set("anthropic-version", "2023-06-01")
		if k := r.getenv("ANTHROPIC_API_KEY"); k != "" {
			h.Set("x-api-key", k)
		} else if k := r.getenv("ANTHROPIC_AUTH_TOKEN"); k != "" {
			h.Set("Authorization", "Bearer "+k)
		}
	case AgentCodex:
		base := r.getenv("OPENAI_BASE_URL")
		if base == "" {
			return false
		}
		url = strings.TrimRight(base, "/") + "/responses"
		body = `{"model":"gpt-5-codex","input":"hello"}`
		if k := r.getenv("OPENAI_API_KEY"); k != "" {
			h.Set("Authorization", "Bearer "+k)
		}
	default:
		return false
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		fmt.Fprintf(r.stderr, "fake agent: FAKE_AGENT_API: %v\n", err)
		r.mode = ModeFail
		return true
	}
	req.Header = h
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		fmt.Fprintf(r.stderr, "fake agent: FAKE_AGENT_API: %v\n", err)
		r.mode = ModeFail
		return true
	}
	defer resp.Body.Close()
	answer, _ := io.ReadAll(io.LimitReader(resp.Body, maxAgentAPIBody))
	switch {
	case resp.StatusCode < 300:
		r.mode = ModeOK
	case resp.StatusCode == http.StatusTooManyRequests:
		r.mode = ModeSecondary
		r.apiText = fmt.Sprintf("API Error: 429 %s", bytes.TrimSpace(answer))
	case resp.StatusCode == 529 || resp.StatusCode == http.StatusServiceUnavailable:
		r.mode = ModeOverloaded
	case resp.StatusCode == http.StatusUnauthorized:
		r.mode = ModeAuth
	default:
		r.mode = ModeFail
	}
	return true
}
