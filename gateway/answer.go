package gateway

import (
	"encoding/json"
	"math"
	"net/http"
	"strconv"
	"time"

	"github.com/layoverhq/layover/quota"
	"github.com/layoverhq/layover/textsafe"
)

// DeferredHeader marks a response the gateway made itself for a request
// it did not send (docs/gateway.md, Answered locally).
const DeferredHeader = "X-Layover-Deferred"

// maxReason bounds the reason text in a local answer's message.
const maxReason = 300

// retryAfterSeconds is d in whole seconds, rounded up, at least 1, at most
// a day: what a local answer's retry-after says.
func retryAfterSeconds(d time.Duration) int64 {
	const day = 24 * 60 * 60
	if d <= 0 {
		return 1
	}
	s := int64(math.Ceil(d.Seconds()))
	return min(max(s, 1), day)
}

// writeDeferred answers a request the gateway did not send because its key
// is held back: 429, retry-after (and retry-after-ms, read first by the
// Stainless SDKs), x-should-retry: true, DeferredHeader, and the error body
// of route's provider, as its SDKs parse it.
func writeDeferred(w http.ResponseWriter, route string, de *quota.DeferralError, now time.Time) {
	wait := time.Duration(0)
	if !de.ResumeAt.IsZero() {
		wait = de.ResumeAt.Sub(now)
	}
	secs := retryAfterSeconds(wait)
	ms := max(int64(math.Ceil(float64(wait)/float64(time.Millisecond))), 1)
	ms = min(ms, secs*1000)
	msg := "layover gateway: not sent, this key's quota is held back"
	switch de.Cause {
	case quota.CauseBelowReserve:
		msg = "layover gateway: not sent, a low-priority request stops at this key's reserve"
	case quota.CausePacing:
		msg = "layover gateway: not sent, a low-priority request is paced to keep this key's reserve"
	}
	if !de.ResumeAt.IsZero() {
		msg += " until " + de.ResumeAt.UTC().Format(time.RFC3339)
	}
	if r := textsafe.Line(de.Reason, maxReason); r != "" {
		msg += " (" + r + ")"
	}
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Retry-After", strconv.FormatInt(secs, 10))
	h.Set("Retry-After-Ms", strconv.FormatInt(ms, 10))
	h.Set("X-Should-Retry", "true")
	h.Set(DeferredHeader, "1")
	w.WriteHeader(http.StatusTooManyRequests)
	_, _ = w.Write(rateLimitBody(route, msg, secs))
}

// rateLimitBody is the rate-limit error body of route's provider, with the
// wait of secs seconds where that provider's clients look for it: OpenAI's
// message ends "Please try again in Ns.", Gemini's "Please retry in Ns."
// and its details hold a google.rpc.RetryInfo (docs/gateway.md).
func rateLimitBody(route, msg string, secs int64) []byte {
	n := strconv.FormatInt(secs, 10)
	var v any
	switch route {
	case Anthropic:
		v = map[string]any{"type": "error", "error": map[string]any{"type": "rate_limit_error", "message": msg + "; retry after " + n + " s"}}
	case OpenAI:
		v = map[string]any{"error": map[string]any{"message": msg + ". Please try again in " + n + "s.", "type": "requests", "param": nil, "code": "rate_limit_exceeded"}}
	default: // Gemini
		v = map[string]any{"error": map[string]any{"code": http.StatusTooManyRequests, "message": msg + ". Please retry in " + n + "s.", "status": "RESOURCE_EXHAUSTED",
			"details": []any{map[string]any{"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": n + "s"}}}}
	}
	b, _ := json.Marshal(v) // maps of strings: cannot fail
	return append(b, '\n')
}

// writeError answers with the gateway's own error: status and
// {"error":{"message":…,"type":"layover_gateway_error"}}.
func writeError(w http.ResponseWriter, status int, msg string) {
	b, _ := json.Marshal(map[string]any{"error": map[string]any{"message": msg, "type": "layover_gateway_error"}})
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	_, _ = w.Write(append(b, '\n'))
}
