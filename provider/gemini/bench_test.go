package gemini

import (
	"strings"
	"testing"

	"github.com/layoverhq/layover/provider/internal/providertest"
)

// BenchmarkClassifyHTTP measures the cost of classifying one response.
func BenchmarkClassifyHTTP(b *testing.B) {
	okBody := `{"candidates":[{"content":{"parts":[{"text":"` + strings.Repeat("lorem ipsum ", 200) +
		`"}],"role":"model"},"finishReason":"STOP"}],"usageMetadata":{"promptTokenCount":25,"candidatesTokenCount":600}}`
	var stream strings.Builder
	for range 200 {
		stream.WriteString("data: {\"candidates\":[{\"content\":{\"parts\":[{\"text\":\"lorem ipsum \"}]}}]}\r\n\r\n")
	}
	perMinute := quotaFailure(violationJSON(metricRequests, idPerMinute, "gemini-2.5-pro", "5"))
	perDay := quotaFailure(violationJSON(metricRequests, idPerDayFree, "gemini-2.5-pro", "100"))
	cases := []providertest.Case{
		{Name: "200-json", Resp: response(200, "Date", httpDate(now)), Body: okBody},
		{Name: "200-stream", Resp: response(200, "Date", httpDate(now), "Content-Type", "text/event-stream"), Body: stream.String()},
		{Name: "200-stream-error", Resp: response(200, "Date", httpDate(now), "Content-Type", "text/event-stream"),
			Body: stream.String() + "data: " + gErr(503, "UNAVAILABLE", msgOverloaded) + "\r\n\r\n"},
		{Name: "429-per-minute", Resp: response(429, "Date", httpDate(now)), Body: gErr(429, "RESOURCE_EXHAUSTED", msgPerMinute, perMinute, help, retryInfo("26s"))},
		{Name: "429-per-day", Resp: response(429, "Date", httpDate(now)), Body: gErr(429, "RESOURCE_EXHAUSTED", msgExceeded, perDay, help, retryInfo("37025s"))},
	}
	providertest.BenchmarkHTTP(b, cases, ClassifyHTTP)
}
