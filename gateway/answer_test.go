package gateway

import (
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/layoverhq/layover/provider"
	"github.com/layoverhq/layover/provider/anthropic"
	"github.com/layoverhq/layover/provider/gemini"
	"github.com/layoverhq/layover/provider/openai"
	"github.com/layoverhq/layover/quota"
)

// A local answer carries the hints each provider's clients parse, and
// layover's own classifiers read it as a quota or throttle with the wait
// it states (here 20 s), from the headers and from the body alone.
func TestLocalAnswerClassified(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	classify := map[string]func(*http.Response, []byte, time.Time) provider.Outcome{
		Anthropic: anthropic.ClassifyHTTP, OpenAI: openai.ClassifyHTTP, Gemini: gemini.ClassifyHTTP,
	}
	for _, route := range Routes() {
		for _, headers := range []bool{true, false} {
			rec := httptest.NewRecorder()
			writeDeferred(rec, route, &quota.DeferralError{ResumeAt: now.Add(20 * time.Second), Cause: quota.CauseExhausted}, now)
			resp := rec.Result()
			if !headers {
				if route == Anthropic {
					continue // Anthropic's body has no wait of its own
				}
				resp.Header = http.Header{"Content-Type": {"application/json"}}
			}
			out := classify[route](resp, rec.Body.Bytes(), now)
			wait := out.RetryAfter
			if !out.ResetAt.IsZero() {
				wait = out.ResetAt.Sub(now)
			}
			if out.Class != provider.ClassQuota && out.Class != provider.ClassSecondary || wait < 19*time.Second || wait > 21*time.Second {
				t.Errorf("%s (headers %v): %s reset %v retry-after %v (%s); want quota or throttle, 20 s: %s",
					route, headers, out.Class, out.ResetAt, out.RetryAfter, out.Reason, rec.Body.String())
			}
		}
	}
}
