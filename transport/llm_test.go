package transport_test

import (
	"context"
	"errors"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/layoverhq/layover/clock"
	"github.com/layoverhq/layover/quota"
	"github.com/layoverhq/layover/transport"
)

// llmBundle is an httptest server answering with a scripted list of
// responses (the last one repeats), and a Transport in front of it.
type llmBundle struct {
	clock  *clock.Fake
	srv    *httptest.Server
	host   string
	tr     *transport.Transport
	events chan transport.WaitEvent

	mu    sync.Mutex
	paths []string
}

type llmAnswer struct {
	status int
	header map[string]string
	body   string
}

func setupLLM(t *testing.T, p *transport.Provider, opts transport.Options, answers ...llmAnswer) *llmBundle {
	t.Helper()
	b := &llmBundle{clock: clock.NewFake(t0), events: make(chan transport.WaitEvent, 100)}
	b.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		b.mu.Lock()
		i := min(len(b.paths), len(answers)-1)
		b.paths = append(b.paths, r.URL.Path)
		b.mu.Unlock()
		a := answers[i]
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Date", b.clock.Now().UTC().Format(http.TimeFormat))
		for k, v := range a.header {
			w.Header().Set(k, v)
		}
		w.WriteHeader(a.status)
		_, _ = io.WriteString(w, a.body)
	}))
	t.Cleanup(b.srv.Close)
	u, _ := url.Parse(b.srv.URL)
	b.host = u.Host
	opts.Provider = p
	opts.Clock = b.clock
	opts.Rand = rand.New(rand.NewPCG(3, 4))
	opts.OnWait = func(ev transport.WaitEvent) {
		b.events <- ev
		b.clock.Set(ev.Until)
	}
	tr, err := transport.New(b.srv.Client().Transport, &opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = tr.Close() })
	b.tr = tr
	return b
}

func (b *llmBundle) post(t *testing.T, path string, hdr ...string) (*http.Response, error) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, b.srv.URL+path, strings.NewReader(`{"model":"m"}`))
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := b.tr.RoundTrip(req)
	if resp != nil {
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	return resp, err
}

func (b *llmBundle) calls() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.paths)
}

// Anthropic: a 429 rate_limit_error with retry-after is a throttle; the
// POST (its body replayable) is sent again after the stated wait, and the
// keys use the organisation id the response named.
func TestAnthropicThrottleIsRetriedUnderTheOrganisation(t *testing.T) {
	t.Parallel()
	reset := t0.Add(time.Minute).Format(time.RFC3339)
	b := setupLLM(t, transport.Anthropic(), transport.Options{},
		llmAnswer{429, map[string]string{"Retry-After": "20", "Anthropic-Organization-Id": "org-1"},
			`{"type":"error","error":{"type":"rate_limit_error","message":"This request (key sk-ant-secret) would exceed the rate limit for your organization of 50 requests per minute."}}`},
		llmAnswer{200, map[string]string{"Anthropic-Organization-Id": "org-1",
			"Anthropic-Ratelimit-Requests-Limit": "50", "Anthropic-Ratelimit-Requests-Remaining": "49",
			"Anthropic-Ratelimit-Requests-Reset": reset},
			`{"type":"message","content":[{"type":"text","text":"hi"}]}`})

	resp, err := b.post(t, "/v1/messages", "X-Api-Key", "sk-ant-secret")
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("RoundTrip = %v, %v; want 200", resp, err)
	}
	if b.calls() != 2 {
		t.Errorf("server saw %d requests, want 2", b.calls())
	}
	ev := <-b.events
	want := quota.Key{Host: b.host, Principal: "org-1", Resource: "requests"}
	if ev.Kind != transport.WaitSecondary || ev.Wait != 20*time.Second || ev.Key != want {
		t.Errorf("wait = %+v, want 20s secondary on %v", ev, want)
	}
	if strings.Contains(ev.Reason, "sk-ant-secret") {
		t.Errorf("the wait's reason shows the key: %q", ev.Reason)
	}
	s, ok := stateOf(b.tr, want)
	if !ok || s.Remaining != 49 || s.Limit != 50 {
		t.Errorf("state = %+v, want 49 of 50 requests under org-1", s)
	}
	for _, s := range b.tr.States() {
		if strings.Contains(s.Principal, "sk-ant") {
			t.Errorf("a token reached the ledger: %+v", s)
		}
	}
}

// OpenAI: insufficient_quota is quota with an unknown reset. In defer mode
// the 429 is returned as is, the rejection is stored before RoundTrip
// returns (with the assumed reset), and the next request defers.
func TestOpenAIInsufficientQuotaIsStoredAndDefers(t *testing.T) {
	t.Parallel()
	st := newMemStore()
	b := setupLLM(t, transport.OpenAI(), transport.Options{Store: st, Mode: transport.ModeDefer},
		llmAnswer{429, nil, `{"error":{"message":"You exceeded your current quota, please check your plan and billing details.","type":"insufficient_quota","param":null,"code":"insufficient_quota"}}`})

	resp, err := b.post(t, "/v1/chat/completions", "Authorization", "Bearer sk-proj-secret")
	if err != nil || resp.StatusCode != http.StatusTooManyRequests {
		t.Fatalf("RoundTrip = %v, %v; want the 429", resp, err)
	}
	key := quota.Key{Host: b.host, Principal: quota.TokenPrincipal("sk-proj-secret"), Resource: "billing"}
	s, ok := st.state(key)
	if !ok || s.Source != quota.SourceRejected || s.ResetKnown || !s.ResetAt.Equal(t0.Add(quota.DefaultUnknownReset)) {
		t.Fatalf("stored = %+v (found %v), want a rejected billing state with the assumed reset", s, ok)
	}
	_, err = b.post(t, "/v1/chat/completions", "Authorization", "Bearer sk-proj-secret")
	var de *quota.DeferralError
	if !errors.As(err, &de) || de.Key != key {
		t.Fatalf("second err = %v, want a DeferralError on %v", err, key)
	}
	if b.calls() != 1 {
		t.Errorf("server saw %d requests, want 1", b.calls())
	}
}

// Gemini: a daily quota of one model holds back that model only.
func TestGeminiModelQuotaHoldsBackOnlyThatModel(t *testing.T) {
	t.Parallel()
	body := `{"error":{"code":429,"message":"You exceeded your current quota.","status":"RESOURCE_EXHAUSTED","details":[` +
		`{"@type":"type.googleapis.com/google.rpc.QuotaFailure","violations":[{"quotaMetric":"generativelanguage.googleapis.com/generate_content_free_tier_requests","quotaId":"GenerateRequestsPerDayPerProjectPerModel-FreeTier","quotaDimensions":{"location":"global","model":"gemini-2.5-pro"},"quotaValue":"100"}]},` +
		`{"@type":"type.googleapis.com/google.rpc.RetryInfo","retryDelay":"3600s"}]}}`
	b := setupLLM(t, transport.Gemini(), transport.Options{Mode: transport.ModeDefer},
		llmAnswer{429, nil, body},
		llmAnswer{200, nil, `{"candidates":[]}`})

	const pro, flash = "/v1beta/models/gemini-2.5-pro:generateContent", "/v1beta/models/gemini-2.5-flash:generateContent"
	if resp, err := b.post(t, pro, "X-Goog-Api-Key", "AIza-secret"); err != nil || resp.StatusCode != 429 {
		t.Fatalf("first = %v, %v; want the 429", resp, err)
	}
	if resp, err := b.post(t, flash, "X-Goog-Api-Key", "AIza-secret"); err != nil || resp.StatusCode != 200 {
		t.Fatalf("flash = %v, %v; want 200", resp, err)
	}
	_, err := b.post(t, pro, "X-Goog-Api-Key", "AIza-secret")
	var de *quota.DeferralError
	if !errors.As(err, &de) || de.Key.Resource != "requests-per-day:gemini-2.5-pro" {
		t.Fatalf("pro again: err = %v, want a DeferralError on requests-per-day:gemini-2.5-pro", err)
	}
	if !de.ResumeAt.After(t0.Add(time.Hour)) {
		t.Errorf("ResumeAt = %s, want after the stated hour", de.ResumeAt)
	}
}

// A provider's message that echoes the key never reaches a wait's reason.
func TestReasonsMaskTheKey(t *testing.T) {
	t.Parallel()
	b := setupLLM(t, transport.OpenAI(), transport.Options{},
		llmAnswer{500, nil, `{"error":{"message":"The server had an error with key sk-proj-secret-key while processing","type":"server_error","param":null,"code":null}}`},
		llmAnswer{200, nil, `{}`})
	req, _ := http.NewRequest(http.MethodGet, b.srv.URL+"/v1/models", nil)
	req.Header.Set("Authorization", "Bearer sk-proj-secret-key")
	resp, err := b.tr.RoundTrip(req)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("RoundTrip = %v, %v; want 200 after a retry", resp, err)
	}
	resp.Body.Close()
	ev := <-b.events
	if ev.Kind != transport.WaitTransient || !strings.Contains(ev.Reason, "500") {
		t.Errorf("wait = %+v, want a transient wait naming the 500", ev)
	}
	if strings.Contains(ev.Reason, "sk-proj-secret-key") {
		t.Errorf("the wait's reason shows the key: %q", ev.Reason)
	}
}

// Requests to a host no provider claims pass through untouched when the
// provider is chosen by host.
func TestUnknownHostPassesThrough(t *testing.T) {
	t.Parallel()
	calls := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls++
		w.Header().Set("X-Ratelimit-Remaining", "0")
		w.Header().Set("X-Ratelimit-Reset", "1900000000")
		w.WriteHeader(http.StatusBadGateway)
	}))
	t.Cleanup(srv.Close)
	tr, err := transport.New(srv.Client().Transport, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := (&http.Client{Transport: tr}).Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadGateway || calls != 1 {
		t.Errorf("status %d after %d calls, want the 502 after 1", resp.StatusCode, calls)
	}
	if s := tr.States(); len(s) != 0 {
		t.Errorf("observed %+v from an unknown host", s)
	}
}

// The principal is the login the store learned for the token.
func TestLearnedLoginIsThePrincipal(t *testing.T) {
	t.Parallel()
	st := newMemStore()
	b := setup(t, setupOpts{opts: transport.Options{Store: st}})
	st.logins[quota.TokenFingerprint(token)] = "octocat"

	status, _, err := b.do(t, b.request(t, context.Background(), http.MethodGet, "/repos/o/r", nil))
	if err != nil || status != http.StatusOK {
		t.Fatalf("Do = %d, %v", status, err)
	}
	want := quota.Key{Host: b.host, Principal: "octocat", Resource: "core"}
	if _, ok := stateOf(b.tr, want); !ok {
		t.Errorf("states = %+v, want one under octocat", b.tr.States())
	}
}

// The organisation a response names is remembered in the store as the
// token's learned principal (merging what was kept under its fingerprint):
// a Transport started later, another process, finds the key's exhaustion
// under it before its first request, and defers without sending.
func TestLearnedOrganisationHoldsAcrossTransports(t *testing.T) {
	t.Parallel()
	st := newMemStore()
	b := setupLLM(t, transport.Anthropic(), transport.Options{Store: st},
		llmAnswer{200, map[string]string{"Anthropic-Organization-Id": "org-1",
			"Anthropic-Ratelimit-Requests-Limit": "50", "Anthropic-Ratelimit-Requests-Remaining": "0",
			"Anthropic-Ratelimit-Requests-Reset": t0.Add(time.Hour).Format(time.RFC3339)},
			`{"type":"message","content":[]}`})
	if resp, err := b.post(t, "/v1/messages", "X-Api-Key", "sk-ant-secret"); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("RoundTrip = %v, %v; want 200", resp, err)
	}
	if login, ok, _ := st.Login(context.Background(), b.host, quota.TokenFingerprint("sk-ant-secret")); !ok || login != "org-1" {
		t.Fatalf("learned principal = %q, %v; want org-1", login, ok)
	}

	later, err := transport.New(b.srv.Client().Transport, &transport.Options{Provider: transport.Anthropic(), Store: st,
		Clock: b.clock, Mode: transport.ModeDefer})
	if err != nil {
		t.Fatal(err)
	}
	req, err := http.NewRequest(http.MethodPost, b.srv.URL+"/v1/messages", strings.NewReader(`{"model":"m"}`))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("X-Api-Key", "sk-ant-secret")
	_, err = later.RoundTrip(req)
	var de *quota.DeferralError
	if want := (quota.Key{Host: b.host, Principal: "org-1", Resource: "requests"}); !errors.As(err, &de) || de.Key != want {
		t.Fatalf("a later transport's request: %v, want a DeferralError on %v", err, want)
	}
	if b.calls() != 1 {
		t.Errorf("server saw %d requests, want 1: the later transport sent despite the exhaustion", b.calls())
	}
}

func TestNewRejectsBadOptions(t *testing.T) {
	t.Parallel()
	bad := quota.DefaultPolicy()
	bad.Jitter = -time.Second
	tests := []struct {
		name string
		opts *transport.Options
	}{
		{"bad policy", &transport.Options{Policy: &bad}},
		{"provider without Classify", &transport.Options{Provider: &transport.Provider{Name: "x"}}},
		{"unknown mode", &transport.Options{Mode: transport.Mode(7)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if _, err := transport.New(nil, tt.opts); err == nil {
				t.Error("New accepted it")
			}
		})
	}
	if _, err := transport.New(nil, nil); err != nil {
		t.Errorf("New(nil, nil) = %v", err)
	}
}
