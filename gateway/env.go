package gateway

import "strings"

// Export is one environment variable that points a client at the gateway.
type Export struct {
	// Name is the variable, Value its value.
	Name, Value string
	// For names the agent CLIs and SDKs that read it.
	For string
}

// Env returns the exports that point each agent CLI and SDK at a gateway
// whose base URL is baseURL ("http://127.0.0.1:8089"; a trailing slash is
// ignored). Each client's base URL has the form that client expects
// (docs/gateway.md):
//
//   - ANTHROPIC_BASE_URL, read by Claude Code and anthropic-sdk-go, is the
//     API's root: the clients add /v1/messages.
//   - OPENAI_BASE_URL, read by Codex and openai-go, includes /v1: the
//     clients add /chat/completions or /responses.
//   - GOOGLE_GEMINI_BASE_URL, read by Gemini CLI and Google's Gen AI SDKs
//     (google.golang.org/genai, @google/genai), is the API's root: the
//     clients add the version (/v1beta/models/…).
func Env(baseURL string) []Export {
	base := strings.TrimRight(baseURL, "/")
	return []Export{
		{Name: "ANTHROPIC_BASE_URL", Value: base + "/anthropic", For: "Claude Code, anthropic-sdk-go"},
		{Name: "OPENAI_BASE_URL", Value: base + "/openai/v1", For: "Codex, openai-go"},
		{Name: "GOOGLE_GEMINI_BASE_URL", Value: base + "/gemini", For: "Gemini CLI, Google Gen AI SDKs"},
	}
}
