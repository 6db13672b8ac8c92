package anthropic

import (
	"net/http"
	"strings"
	"testing"
	"time"
)

// BenchmarkClassifyHTTP measures the cost of classifying one response.
func BenchmarkClassifyHTTP(b *testing.B) {
	minute := now.Add(time.Minute)
	okHeaders := join([]string{"Date", httpDate(now), "anthropic-organization-id", "5f4bc7ac-3b1c-4f3f-8f3a-0c1d2e3f4a5b"},
		familyHeaders("requests", 4000, 3999, minute), familyHeaders("tokens", 480000, 479000, minute),
		familyHeaders("input-tokens", 400000, 399000, minute), familyHeaders("output-tokens", 80000, 79000, minute))
	okBody := `{"id":"msg_01","type":"message","role":"assistant","model":"claude-sonnet-4-5","content":[{"type":"text","text":"` +
		strings.Repeat("lorem ipsum ", 200) + `"}],"stop_reason":"end_turn","usage":{"input_tokens":25,"output_tokens":600}}`
	var stream strings.Builder
	stream.WriteString(sse("message_start", streamStart))
	for range 200 {
		stream.WriteString(sse("content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"lorem ipsum "}}`))
	}
	cases := []struct {
		name string
		resp *http.Response
		body string
	}{
		{"200-json", response(200, okHeaders...), okBody},
		{"200-stream", response(200, append(okHeaders, "Content-Type", "text/event-stream")...), stream.String()},
		{"200-stream-error", response(200, append(okHeaders, "Content-Type", "text/event-stream")...),
			stream.String() + sse("error", errBody("overloaded_error", "Overloaded"))},
		{"429-rate-limit", response(429, append(okHeaders, "retry-after", "30")...), errBody("rate_limit_error", msgOrgInputTokens)},
		{"429-spend-cap", response(429, okHeaders...), spendCapBody(msgSpendCap)},
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
