package gateway

import (
	"net/url"
	"testing"
)

// Each export is the gateway's route for its provider in the form its
// clients expect: the API root for Anthropic and Gemini, /v1 for OpenAI.
func TestEnvPointsEachClientAtItsRoute(t *testing.T) {
	t.Parallel()
	for _, base := range []string{"http://127.0.0.1:8089", "http://127.0.0.1:8089/"} {
		got := map[string]string{}
		for _, e := range Env(base) {
			if e.For == "" {
				t.Errorf("%s names no client", e.Name)
			}
			if _, err := url.Parse(e.Value); err != nil {
				t.Errorf("%s=%q: %v", e.Name, e.Value, err)
			}
			got[e.Name] = e.Value
		}
		want := map[string]string{
			"ANTHROPIC_BASE_URL":     "http://127.0.0.1:8089/anthropic",
			"OPENAI_BASE_URL":        "http://127.0.0.1:8089/openai/v1",
			"GOOGLE_GEMINI_BASE_URL": "http://127.0.0.1:8089/gemini",
		}
		if len(got) != len(want) {
			t.Fatalf("Env(%q) = %v", base, got)
		}
		for k, v := range want {
			if got[k] != v {
				t.Errorf("Env(%q)[%s] = %q, want %q", base, k, got[k], v)
			}
		}
	}
}
