package cli_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/layoverhq/layover/internal/fake"
)

// classify reads each LLM API's real error shapes as curl -i prints them.
func TestClassifyLLMResponses(t *testing.T) {
	t.Parallel()
	b := setup(t, fake.GitHubConfig{})
	cases := []struct {
		name, provider, raw string
		class, resource     string
	}{
		{"anthropic per-minute", "anthropic", "HTTP/2 429\r\ndate: Mon, 30 Nov 2026 10:00:00 GMT\r\nretry-after: 12\r\n" +
			"anthropic-ratelimit-requests-limit: 50\r\nanthropic-ratelimit-requests-remaining: 0\r\n" +
			"anthropic-ratelimit-requests-reset: 2026-11-30T10:00:12Z\r\n\r\n" +
			`{"type":"error","error":{"type":"rate_limit_error","message":"Number of request tokens has exceeded your per-minute rate limit"},"request_id":"req_1"}`,
			"secondary", "requests"},
		{"anthropic overloaded", "anthropic", "HTTP/1.1 529 \r\n\r\n" + `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`,
			"transient", ""},
		{"openai insufficient quota", "openai", "HTTP/1.1 429 Too Many Requests\r\ncontent-type: application/json\r\n\r\n" +
			`{"error":{"message":"You exceeded your current quota, please check your plan and billing details. For more information on this error, read the docs: https://platform.openai.com/docs/guides/error-codes/api-errors.","type":"insufficient_quota","param":null,"code":"insufficient_quota"}}`,
			"quota", ""},
		{"gemini per day", "gemini", "HTTP/1.1 429 Too Many Requests\r\n\r\n" +
			`{"error":{"code":429,"message":"You exceeded your current quota, please check your plan and billing details.","status":"RESOURCE_EXHAUSTED","details":[{"@type":"type.googleapis.com/google.rpc.QuotaFailure","violations":[{"quotaMetric":"generativelanguage.googleapis.com/generate_content_free_tier_requests","quotaId":"GenerateRequestsPerDayPerProjectPerModel-FreeTier","quotaDimensions":{"location":"global","model":"gemini-2.5-pro"},"quotaValue":"50"}]}]}}`,
			"quota", ""},
	}
	for _, tc := range cases {
		file := filepath.Join(b.dir, tc.provider+"-"+tc.class+".txt")
		if err := os.WriteFile(file, []byte(tc.raw), 0o600); err != nil {
			t.Fatal(err)
		}
		r := b.layover("classify", "--provider", tc.provider, "--http", file)
		if r.code != 0 {
			t.Fatalf("%s: exit %d %s", tc.name, r.code, r.stderr)
		}
		var out struct {
			Class, Provider string
			Resource        *string
		}
		if err := json.Unmarshal([]byte(r.stdout), &out); err != nil {
			t.Fatalf("%s: %v: %s", tc.name, err, r.stdout)
		}
		if out.Class != tc.class || out.Provider != tc.provider || (tc.resource != "" && (out.Resource == nil || *out.Resource != tc.resource)) {
			t.Errorf("%s: got %s", tc.name, r.stdout)
		}
	}
	if r := b.layover("classify", "--provider", "anthropic", "--exit", "1"); r.code != 2 {
		t.Errorf("an HTTP provider with --exit: exit %d", r.code)
	}
}
