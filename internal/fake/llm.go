package fake

import (
	"fmt"
	"math"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"
)

// LLMKind names which LLM API an LLM fake imitates.
type LLMKind string

const (
	Anthropic LLMKind = "anthropic" // POST /v1/messages
	OpenAI    LLMKind = "openai"    // POST /v1/chat/completions
	Gemini    LLMKind = "gemini"    // POST /v1beta/models/{model}:generateContent
)

// LLMConfig configures an LLM fake. The zero value (with a Kind) is usable.
type LLMConfig struct {
	Kind LLMKind
	// Now is the fake's clock (default time.Now).
	Now func() time.Time
	// RequestsPerWindow is the request budget of one window (default 50);
	// Window its length (default one minute).
	RequestsPerWindow int64
	Window            time.Duration
	// Organization is the id the fake returns in anthropic-organization-id
	// or openai-organization (default "org-fake").
	Organization string
	// Model is named in responses and limit texts (default per kind).
	Model string
	// StreamEvents is how many content deltas a streamed answer carries
	// (default 3); each delta's text is StreamDelta(i).
	StreamEvents int
	// StreamGate, when set, holds a streamed answer before each content
	// delta until a value arrives on it (or the client goes away), so a
	// test can see each event reach the client before the next is written.
	// The events before the first delta (message_start, the first chunk's
	// role) are written and flushed at once.
	StreamGate <-chan struct{}
}

// LLMRequest is one request an LLM fake answered.
type LLMRequest struct {
	Method string
	Path   string
	// Stream is whether the request asked for a streamed answer.
	Stream bool
	// Limited is whether the fake answered with its per-minute limit error.
	Limited bool
	// Cancelled is whether the client went away (the request's context
	// ended) before a streamed answer was complete.
	Cancelled bool
}

// LLM fakes one LLM API: answers in the real success shape with the real
// rate-limit headers, and, once the window's budget is spent, the real
// per-minute limit error with its retry hint. Scripted answers (Script)
// imitate the other errors. A request asking for a stream ("stream": true in
// an Anthropic or OpenAI body, Gemini's :streamGenerateContent) is answered
// with the provider's event stream, flushed event by event (see stream).
// Unlike the real services it keeps one budget for every key and counts
// requests only (not tokens).
type LLM struct {
	cfg LLMConfig

	mu        sync.Mutex
	used      int64
	windowEnd time.Time
	scripts   []Response
	calls     int
	requests  []LLMRequest
	cancelled chan struct{}
	srv       *http.Server
}

// NewLLM returns an LLM fake.
func NewLLM(cfg LLMConfig) *LLM {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.RequestsPerWindow <= 0 {
		cfg.RequestsPerWindow = 50
	}
	if cfg.Window <= 0 {
		cfg.Window = time.Minute
	}
	if cfg.Organization == "" {
		cfg.Organization = "org-fake"
	}
	if cfg.Model == "" {
		cfg.Model = map[LLMKind]string{Anthropic: "claude-sonnet-4-5", OpenAI: "gpt-4o", Gemini: "gemini-2.5-pro"}[cfg.Kind]
	}
	if cfg.StreamEvents <= 0 {
		cfg.StreamEvents = 3
	}
	return &LLM{cfg: cfg, cancelled: make(chan struct{}, 1024)}
}

// Start serves the fake at addr ("127.0.0.1:0") and returns its base URL.
func (l *LLM) Start(addr string) (string, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return "", err
	}
	l.mu.Lock()
	l.srv = &http.Server{Handler: l, ReadHeaderTimeout: 10 * time.Second}
	srv := l.srv
	l.mu.Unlock()
	// Serve returns http.ErrServerClosed after Close; a fake has no one to
	// tell of other failures, which the test sees as failed requests.
	go func() { _ = srv.Serve(ln) }()
	return "http://" + ln.Addr().String(), nil
}

// Close stops a started fake.
func (l *LLM) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.srv == nil {
		return nil
	}
	return l.srv.Close()
}

// Script queues canned answers for the next requests.
func (l *LLM) Script(rs ...Response) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.scripts = append(l.scripts, rs...)
}

// Calls is how many requests the fake answered.
func (l *LLM) Calls() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.calls
}

// Requests are the requests the fake answered, in order.
func (l *LLM) Requests() []LLMRequest {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]LLMRequest(nil), l.requests...)
}

// Cancelled receives one value each time a client goes away in the middle
// of a streamed answer (after Requests records it as Cancelled), so a test
// waits for a disconnect to reach the fake rather than polling.
func (l *LLM) Cancelled() <-chan struct{} { return l.cancelled }

// Exhaust spends the rest of the current window's budget.
func (l *LLM) Exhaust() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.refill(l.cfg.Now())
	l.used = l.cfg.RequestsPerWindow
}

func (l *LLM) refill(now time.Time) {
	if !now.Before(l.windowEnd) {
		l.used = 0
		l.windowEnd = now.Add(l.cfg.Window)
	}
}

// ServeHTTP implements http.Handler.
func (l *LLM) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	stream, sse := l.wantsStream(r)
	l.mu.Lock()
	l.calls++
	l.requests = append(l.requests, LLMRequest{Method: r.Method, Path: r.URL.Path, Stream: stream})
	index := len(l.requests) - 1
	now := l.cfg.Now()
	l.refill(now)
	var canned *Response
	if len(l.scripts) > 0 {
		canned = &l.scripts[0]
		l.scripts = l.scripts[1:]
	}
	limited := canned == nil && l.used >= l.cfg.RequestsPerWindow
	if canned == nil && !limited {
		l.used++
	}
	remaining := l.cfg.RequestsPerWindow - l.used
	wait := l.windowEnd.Sub(now)
	l.requests[index].Limited = limited
	l.mu.Unlock()

	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Date", now.UTC().Format(http.TimeFormat))
	l.rateHeaders(h, remaining, now, wait)
	if canned != nil {
		for k, v := range canned.Header {
			h[k] = v
		}
		w.WriteHeader(max(canned.Status, 200))
		fmt.Fprint(w, canned.Body)
		return
	}
	if limited {
		secs := int(math.Ceil(wait.Seconds()))
		status, body := l.limitError(secs, wait)
		if l.cfg.Kind != Gemini {
			h.Set("Retry-After", strconv.Itoa(secs))
		}
		w.WriteHeader(status)
		// A client that went away sees no answer; there is no one else to
		// tell.
		_, _ = w.Write(body)
		return
	}
	if stream {
		if !l.stream(w, r, sse) {
			l.mu.Lock()
			l.requests[index].Cancelled = true
			l.mu.Unlock()
			select {
			case l.cancelled <- struct{}{}:
			default:
			}
		}
		return
	}
	// As above.
	_, _ = w.Write(l.success())
}

func (l *LLM) rateHeaders(h http.Header, remaining int64, now time.Time, wait time.Duration) {
	limit := strconv.FormatInt(l.cfg.RequestsPerWindow, 10)
	rem := strconv.FormatInt(max(remaining, 0), 10)
	switch l.cfg.Kind {
	case Anthropic:
		h.Set("anthropic-organization-id", l.cfg.Organization)
		h.Set("anthropic-ratelimit-requests-limit", limit)
		h.Set("anthropic-ratelimit-requests-remaining", rem)
		h.Set("anthropic-ratelimit-requests-reset", now.Add(wait).UTC().Format(time.RFC3339))
	case OpenAI:
		h.Set("openai-organization", l.cfg.Organization)
		h.Set("x-ratelimit-limit-requests", limit)
		h.Set("x-ratelimit-remaining-requests", rem)
		h.Set("x-ratelimit-reset-requests", wait.Round(time.Millisecond).String())
	}
}

func (l *LLM) limitError(secs int, wait time.Duration) (int, []byte) {
	switch l.cfg.Kind {
	case Anthropic:
		return 429, mustJSON(map[string]any{"type": "error", "request_id": "req_fake",
			"error": map[string]any{"type": "rate_limit_error", "message": fmt.Sprintf(
				"This request would exceed the rate limit for your organization (%s) of %d requests per minute. For details, refer to: https://docs.claude.com/en/api/rate-limits.",
				l.cfg.Organization, l.cfg.RequestsPerWindow)}})
	case OpenAI:
		return 429, mustJSON(map[string]any{"error": map[string]any{"type": "requests", "param": nil, "code": "rate_limit_exceeded",
			"message": fmt.Sprintf("Rate limit reached for %s in organization %s on requests per min (RPM): Limit %d, Used %d, Requested 1. Please try again in %s. Visit https://platform.openai.com/account/rate-limits to learn more.",
				l.cfg.Model, l.cfg.Organization, l.cfg.RequestsPerWindow, l.cfg.RequestsPerWindow, wait.Round(time.Millisecond))}})
	default:
		return 429, mustJSON(map[string]any{"error": map[string]any{"code": 429, "status": "RESOURCE_EXHAUSTED",
			"message": fmt.Sprintf("You exceeded your current quota, please check your plan and billing details. Please retry in %ds.", secs),
			"details": []any{
				map[string]any{"@type": "type.googleapis.com/google.rpc.QuotaFailure", "violations": []any{map[string]any{
					"quotaMetric":     "generativelanguage.googleapis.com/generate_content_free_tier_requests",
					"quotaId":         "GenerateRequestsPerMinutePerProjectPerModel-FreeTier",
					"quotaDimensions": map[string]any{"location": "global", "model": l.cfg.Model},
					"quotaValue":      strconv.FormatInt(l.cfg.RequestsPerWindow, 10)}}},
				map[string]any{"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": strconv.Itoa(secs) + "s"},
			}}})
	}
}

func (l *LLM) success() []byte {
	switch l.cfg.Kind {
	case Anthropic:
		return mustJSON(map[string]any{"id": "msg_fake", "type": "message", "role": "assistant", "model": l.cfg.Model,
			"content": []any{map[string]any{"type": "text", "text": "ok"}}, "stop_reason": "end_turn",
			"usage": map[string]any{"input_tokens": 10, "output_tokens": 1}})
	case OpenAI:
		return mustJSON(map[string]any{"id": "chatcmpl-fake", "object": "chat.completion", "model": l.cfg.Model,
			"choices": []any{map[string]any{"index": 0, "finish_reason": "stop",
				"message": map[string]any{"role": "assistant", "content": "ok"}}},
			"usage": map[string]any{"prompt_tokens": 10, "completion_tokens": 1, "total_tokens": 11}})
	default:
		return mustJSON(map[string]any{"candidates": []any{map[string]any{"finishReason": "STOP",
			"content": map[string]any{"role": "model", "parts": []any{map[string]any{"text": "ok"}}}}},
			"usageMetadata": map[string]any{"promptTokenCount": 10, "candidatesTokenCount": 1, "totalTokenCount": 11}})
	}
}

// OverloadedError is the Anthropic 529 overload answer.
func OverloadedError() Response {
	return Response{Status: 529, Body: `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"},"request_id":"req_fake"}`}
}

// InsufficientQuota is OpenAI's 429 for an account out of credit.
func InsufficientQuota() Response {
	return Response{Status: 429, Body: `{"error":{"message":"You exceeded your current quota, please check your plan and billing details. For more information on this error, read the docs: https://platform.openai.com/docs/guides/error-codes/api-errors.","type":"insufficient_quota","param":null,"code":"insufficient_quota"}}`}
}
