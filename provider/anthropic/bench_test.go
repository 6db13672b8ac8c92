package anthropic

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/layoverhq/layover/provider/internal/providertest"
)

// BenchmarkClassifyHTTP measures the cost of classifying one response.
func BenchmarkClassifyHTTP(b *testing.B) {
	minute := now.Add(time.Minute)
	okHeaders := slices.Concat([]string{"Date", httpDate(now), "anthropic-organization-id", "5f4bc7ac-3b1c-4f3f-8f3a-0c1d2e3f4a5b"},
		familyHeaders("requests", 4000, 3999, minute), familyHeaders("tokens", 480000, 479000, minute),
		familyHeaders("input-tokens", 400000, 399000, minute), familyHeaders("output-tokens", 80000, 79000, minute))
	okBody := `{"id":"msg_01","type":"message","role":"assistant","model":"claude-sonnet-4-5","content":[{"type":"text","text":"` +
		strings.Repeat("lorem ipsum ", 200) + `"}],"stop_reason":"end_turn","usage":{"input_tokens":25,"output_tokens":600}}`
	var stream strings.Builder
	stream.WriteString(sse("message_start", streamStart))
	for range 200 {
		stream.WriteString(sse("content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"lorem ipsum "}}`))
	}
	cases := []providertest.Case{
		{Name: "200-json", Resp: response(200, okHeaders...), Body: okBody},
		{Name: "200-stream", Resp: response(200, append(okHeaders, "Content-Type", "text/event-stream")...), Body: stream.String()},
		{Name: "200-stream-error", Resp: response(200, append(okHeaders, "Content-Type", "text/event-stream")...),
			Body: stream.String() + sse("error", errBody("overloaded_error", "Overloaded"))},
		{Name: "429-rate-limit", Resp: response(429, append(okHeaders, "retry-after", "30")...), Body: errBody("rate_limit_error", msgOrgInputTokens)},
		{Name: "429-spend-cap", Resp: response(429, okHeaders...), Body: spendCapBody(msgSpendCap)},
	}
	providertest.BenchmarkHTTP(b, cases, ClassifyHTTP)
}
