package gateway_test

import (
	"compress/gzip"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/layoverhq/layover/gateway"
)

// A gzipped rejection is still read and recorded: the gateway does not pass
// the client's Accept-Encoding upstream, its own transport negotiates and
// decompresses, and the client gets the plain body without the compressed
// one's Content-Encoding or Content-Length.
func TestGzippedRejectionRecorded(t *testing.T) {
	t.Parallel()
	const body = `{"error":{"message":"You exceeded your current quota, please check your plan and billing details.","type":"insufficient_quota","param":null,"code":"insufficient_quota"}}`
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if !strings.Contains(r.Header.Get("Accept-Encoding"), "gzip") {
			w.WriteHeader(http.StatusTooManyRequests)
			_, _ = io.WriteString(w, body)
			return
		}
		w.Header().Set("Content-Encoding", "gzip")
		w.WriteHeader(http.StatusTooManyRequests)
		zw := gzip.NewWriter(w)
		_, _ = io.WriteString(zw, body)
		_ = zw.Close()
	}))
	defer up.Close()
	b := newBench(t, gateway.Options{Upstreams: map[string]string{gateway.OpenAI: up.URL}})
	hdr := keyHeader(gateway.OpenAI, "sk-proj-gzip-0123456789")
	hdr.Set("Accept-Encoding", "gzip, br")
	resp, got := b.do(t, t.Context(), http.MethodPost, llmPaths[gateway.OpenAI], `{}`, hdr)
	if resp.StatusCode != 429 || resp.Header.Get("Content-Encoding") != "" || got != body {
		t.Fatalf("answer: %d %q %q; want the plain 429 body", resp.StatusCode, resp.Header.Get("Content-Encoding"), got)
	}
	if resp.ContentLength != -1 && resp.ContentLength != int64(len(body)) {
		t.Errorf("Content-Length %d of a %d-byte body", resp.ContentLength, len(body))
	}
	exhausted := 0
	for _, s := range b.g.States()[gateway.OpenAI] {
		if s.Exhausted(b.clock.Now()) {
			exhausted++
		}
	}
	if exhausted == 0 {
		t.Errorf("the gzipped insufficient_quota was not recorded: %+v", b.g.States()[gateway.OpenAI])
	}
}

// exhaustingUpstream answers the first request with the key exhausted for
// 20 s, then 50 left; it sends on calls once per request.
func exhaustingUpstream(t *testing.T, b *bench, calls chan<- struct{}) string {
	var mu sync.Mutex
	first := true
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.ReadAll(r.Body)
		now := b.clock.Now()
		mu.Lock()
		remaining := "50"
		if first {
			remaining, first = "0", false
		}
		mu.Unlock()
		h := w.Header()
		h.Set("Date", now.Format(http.TimeFormat))
		h.Set("Anthropic-Ratelimit-Requests-Limit", "100")
		h.Set("Anthropic-Ratelimit-Requests-Remaining", remaining)
		h.Set("Anthropic-Ratelimit-Requests-Reset", now.Add(20*time.Second).Format(time.RFC3339))
		_, _ = io.WriteString(w, `{}`)
		calls <- struct{}{}
	}))
	t.Cleanup(up.Close)
	return up.URL
}

// After a reset, a fresh request of the key (one that was never held)
// waits its pacer slot too: the first second after the reset sends no
// more than the resume rate.
func TestFreshRequestPacedAfterReset(t *testing.T) {
	t.Parallel()
	b := &bench{}
	calls := make(chan struct{}, 16)
	u := exhaustingUpstream(t, b, calls)
	*b = *newBench(t, gateway.Options{Policy: noMargin(), ResumeRate: 10, Upstreams: map[string]string{gateway.Anthropic: u}})
	key := keyHeader(gateway.Anthropic, "sk-ant-fresh-0123456789")
	b.do(t, t.Context(), http.MethodPost, llmPaths[gateway.Anthropic], `{}`, key)
	<-calls
	timers := b.clock.TimerAdded()
	done := make(chan int, 2)
	send := func() {
		resp, _ := b.do(t, context.Background(), http.MethodPost, llmPaths[gateway.Anthropic], `{}`, key)
		done <- resp.StatusCode
	}
	go send()
	<-timers // held
	b.clock.Advance(20 * time.Second)
	<-calls // the held one goes at the reset
	if code := <-done; code != 200 {
		t.Fatalf("held request: %d", code)
	}
	go send() // fresh, at the reset
	<-timers  // waits its slot
	if n := len(calls); n != 0 {
		t.Fatalf("a fresh request went out %d at once after the reset", n)
	}
	b.clock.Advance(100 * time.Millisecond)
	<-calls
	if code := <-done; code != 200 {
		t.Errorf("fresh request: %d", code)
	}
}

// The wait for a pacer slot comes out of the hold budget: a request whose
// slot falls past start+MaxHold is answered locally with retry-after to
// the slot, not held longer.
func TestPacerSlotWithinMaxHold(t *testing.T) {
	t.Parallel()
	b := &bench{}
	calls := make(chan struct{}, 16)
	u := exhaustingUpstream(t, b, calls)
	*b = *newBench(t, gateway.Options{Policy: noMargin(), ResumeRate: 10, MaxHold: 20 * time.Second, Upstreams: map[string]string{gateway.Anthropic: u}})
	key := keyHeader(gateway.Anthropic, "sk-ant-budget-0123456789")
	b.do(t, t.Context(), http.MethodPost, llmPaths[gateway.Anthropic], `{}`, key)
	<-calls
	timers := b.clock.TimerAdded()
	type res struct {
		code int
		ra   string
	}
	done := make(chan res, 2)
	for range 2 {
		go func() {
			resp, _ := b.do(t, context.Background(), http.MethodPost, llmPaths[gateway.Anthropic], `{}`, key)
			done <- res{resp.StatusCode, resp.Header.Get("Retry-After")}
		}()
	}
	<-timers
	<-timers // both held until the reset, exactly their budget
	b.clock.Advance(20 * time.Second)
	got := map[int]string{}
	for range 2 {
		select {
		case r := <-done:
			got[r.code] = r.ra
		case <-timers:
			t.Fatal("a request waits for a slot past its max hold")
		}
	}
	if _, ok := got[200]; !ok || got[429] != "1" {
		t.Errorf("answers %v; want one sent and one 429 with retry-after 1", got)
	}
}

// Every x-layover-* request header is the gateway's own: none is forwarded.
func TestLayoverHeadersStripped(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var got http.Header
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		got = r.Header.Clone()
		mu.Unlock()
		_, _ = io.WriteString(w, `{}`)
	}))
	defer up.Close()
	b := newBench(t, gateway.Options{Upstreams: map[string]string{gateway.OpenAI: up.URL}})
	b.do(t, t.Context(), http.MethodGet, "/openai/v1/models", "", http.Header{
		"X-Layover-Priority": {"low"}, "X-Layover-Trace": {"1"}, "x-layover-other": {"2"}, "X-Keep": {"yes"}})
	mu.Lock()
	defer mu.Unlock()
	for k := range got {
		if strings.HasPrefix(strings.ToLower(k), "x-layover-") {
			t.Errorf("%s forwarded", k)
		}
	}
	if got.Get("X-Keep") != "yes" {
		t.Errorf("X-Keep not forwarded: %v", got)
	}
}

// An upstream failure's text is bounded and stripped of control characters
// before it reaches the 502's body and the log.
func TestUpstreamErrorBounded(t *testing.T) {
	t.Parallel()
	long := "dial: \x1b[31mred\x1b[0m\r\nline " + strings.Repeat("x", 20000)
	next := roundTripFunc(func(*http.Request) (*http.Response, error) { return nil, errors.New(long) })
	b := newBench(t, gateway.Options{Next: next})
	resp, body := b.do(t, t.Context(), http.MethodGet, "/openai/v1/models", "", nil)
	if resp.StatusCode != 502 || !strings.Contains(body, "red") {
		t.Fatalf("%d %.200s; want 502 with the cause", resp.StatusCode, body)
	}
	for what, text := range map[string]string{"body": body, "log": b.logs.String()} {
		if len(text) > 2000 || strings.Contains(text, "\x1b") || strings.Contains(text, `\u001b`) || strings.Contains(text, `\x1b`) || strings.Contains(text, `\r`) {
			t.Errorf("%s unbounded or with control characters: %d bytes %.300q", what, len(text), text)
		}
	}
}

// A path whose decoded segments include "." or ".." is refused with a
// 400 JSON error and never reaches the upstream; "..." is a name.
func TestDotSegmentsRefused(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var paths []string
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		paths = append(paths, r.URL.EscapedPath())
		mu.Unlock()
		_, _ = io.WriteString(w, `{}`)
	}))
	defer up.Close()
	b := newBench(t, gateway.Options{Upstreams: map[string]string{gateway.Anthropic: up.URL + "/base"}})
	for _, p := range []string{"/anthropic/v1/../admin", "/anthropic/..", "/anthropic/./v1", "/anthropic/v1/%2e%2E/x", "/anthropic/v1/%2E", "/anthropic/a%2F..%2Fb"} {
		resp, body := b.do(t, t.Context(), http.MethodGet, p, "", nil)
		if resp.StatusCode != 400 || !strings.Contains(body, `"message"`) {
			t.Errorf("%s: %d %s; want 400 with a JSON error", p, resp.StatusCode, body)
		}
	}
	if resp, _ := b.do(t, t.Context(), http.MethodGet, "/anthropic/v1/.../x..y", "", nil); resp.StatusCode != 200 {
		t.Errorf("/v1/.../x..y: %d; want it sent", resp.StatusCode)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(paths) != 1 {
		t.Errorf("upstream saw %v; want only /base/v1/.../x..y", paths)
	}
}
