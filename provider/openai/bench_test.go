package openai

import (
	"slices"
	"strings"
	"testing"

	"github.com/layoverhq/layover/provider/internal/providertest"
)

// BenchmarkClassifyHTTP measures the cost of classifying one response.
func BenchmarkClassifyHTTP(b *testing.B) {
	hdrs := slices.Concat([]string{"Date", httpDate(now), "openai-organization", "org-8s7dj2klq0"},
		limits("requests", "500", "499", "120ms"), limits("tokens", "30000", "29000", "2s"))
	okBody := `{"id":"chatcmpl-1","object":"chat.completion","model":"gpt-4o","choices":[{"index":0,"message":{"role":"assistant","content":"` +
		strings.Repeat("lorem ipsum ", 200) + `"},"finish_reason":"stop"}],"usage":{"prompt_tokens":25,"completion_tokens":600}}`
	var stream strings.Builder
	for range 200 {
		stream.WriteString("data: {\"id\":\"chatcmpl-1\",\"choices\":[{\"delta\":{\"content\":\"lorem ipsum \"}}]}\n\n")
	}
	ok := stream.String() + "data: [DONE]\n\n"
	failed := stream.String() + "data: " + errBody("tokens", "rate_limit_exceeded", msgTPM) + "\n\n"
	cases := []providertest.Case{
		{Name: "200-json", Resp: response(200, hdrs...), Body: okBody},
		{Name: "200-stream", Resp: response(200, append(hdrs, "Content-Type", "text/event-stream")...), Body: ok},
		{Name: "200-stream-error", Resp: response(200, append(hdrs, "Content-Type", "text/event-stream")...), Body: failed},
		{Name: "429-rate-limit", Resp: response(429, hdrs...), Body: errBody("tokens", "rate_limit_exceeded", msgTPM)},
		{Name: "429-insufficient-quota", Resp: response(429, hdrs...), Body: errBody("insufficient_quota", "insufficient_quota", msgQuota)},
	}
	providertest.BenchmarkHTTP(b, cases, ClassifyHTTP)
}
