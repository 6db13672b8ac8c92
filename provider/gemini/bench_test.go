package gemini

import (
	"net/http"
	"strings"
	"testing"
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
	cases := []struct {
		name string
		resp *http.Response
		body string
	}{
		{"200-json", response(200, "Date", httpDate(now)), okBody},
		{"200-stream", response(200, "Date", httpDate(now), "Content-Type", "text/event-stream"), stream.String()},
		{"200-stream-error", response(200, "Date", httpDate(now), "Content-Type", "text/event-stream"),
			stream.String() + "data: " + gErr(503, "UNAVAILABLE", msgOverloaded) + "\r\n\r\n"},
		{"429-per-minute", response(429, "Date", httpDate(now)), gErr(429, "RESOURCE_EXHAUSTED", msgPerMinute, perMinute, help, retryInfo("26s"))},
		{"429-per-day", response(429, "Date", httpDate(now)), gErr(429, "RESOURCE_EXHAUSTED", msgExceeded, perDay, help, retryInfo("37025s"))},
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
