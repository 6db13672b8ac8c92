package openai

import (
	"net/http"
	"strings"
	"testing"
)

// BenchmarkClassifyHTTP measures the cost of classifying one response.
func BenchmarkClassifyHTTP(b *testing.B) {
	hdrs := join([]string{"Date", httpDate(now), "openai-organization", "org-8s7dj2klq0"},
		limits("requests", "500", "499", "120ms"), limits("tokens", "30000", "29000", "2s"))
	okBody := `{"id":"chatcmpl-1","object":"chat.completion","model":"gpt-4o","choices":[{"index":0,"message":{"role":"assistant","content":"` +
		strings.Repeat("lorem ipsum ", 200) + `"},"finish_reason":"stop"}],"usage":{"prompt_tokens":25,"completion_tokens":600}}`
	var stream strings.Builder
	for range 200 {
		stream.WriteString("data: {\"id\":\"chatcmpl-1\",\"choices\":[{\"delta\":{\"content\":\"lorem ipsum \"}}]}\n\n")
	}
	ok := stream.String() + "data: [DONE]\n\n"
	failed := stream.String() + "data: " + errBody("tokens", "rate_limit_exceeded", msgTPM) + "\n\n"
	cases := []struct {
		name string
		resp *http.Response
		body string
	}{
		{"200-json", response(200, hdrs...), okBody},
		{"200-stream", response(200, append(hdrs, "Content-Type", "text/event-stream")...), ok},
		{"200-stream-error", response(200, append(hdrs, "Content-Type", "text/event-stream")...), failed},
		{"429-rate-limit", response(429, hdrs...), errBody("tokens", "rate_limit_exceeded", msgTPM)},
		{"429-insufficient-quota", response(429, hdrs...), errBody("insufficient_quota", "insufficient_quota", msgQuota)},
	}
	for _, c := range cases {
		body := []byte(c.body)
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(body)))
			for b.Loop() {
				ClassifyHTTP(c.resp, body, now)
			}
		})
	}
}
