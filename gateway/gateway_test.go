package gateway_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/layoverhq/layover/gateway"
	"github.com/layoverhq/layover/internal/fake"
	"github.com/layoverhq/layover/quota"
	"github.com/layoverhq/layover/store"
)

// A request passes through as the client sent it, with its route's prefix
// cut and x-layover-priority and the hop-by-hop headers removed; the
// answer comes back as the upstream sent it, without its hop-by-hop
// headers.
func TestPassThrough(t *testing.T) {
	t.Parallel()
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		bad := []string{}
		check := func(ok bool, what string) {
			if !ok {
				bad = append(bad, what)
			}
		}
		check(r.Method == http.MethodPost, "method "+r.Method)
		check(r.URL.Path == "/proxy/v1/messages", "path "+r.URL.Path)
		check(r.URL.RawQuery == "beta=true&x=a%2Fb", "query "+r.URL.RawQuery)
		check(string(body) == `{"model":"m","stream":false}`, "body "+string(body))
		check(r.Header.Get("X-Api-Key") == "sk-ant-api03-secretsecretsecret", "key")
		check(r.Header.Get("Anthropic-Version") == "2023-06-01", "version header")
		check(r.Header.Get("X-Layover-Priority") == "", "priority header forwarded")
		check(r.Header.Get("X-Hop") == "", "hop-by-hop X-Hop forwarded")
		check(r.Header.Get("X-Forwarded-For") == "", "X-Forwarded-For added")
		if len(bad) > 0 {
			http.Error(w, strings.Join(bad, "; "), http.StatusTeapot)
			return
		}
		w.Header().Set("Connection", "X-Resp-Hop")
		w.Header().Set("X-Resp-Hop", "1")
		w.Header().Set("Request-Id", "req_1")
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		_, _ = io.WriteString(w, `{"id":"msg_1"}`)
	}))
	defer up.Close()
	b := newBench(t, gateway.Options{Upstreams: map[string]string{gateway.Anthropic: up.URL + "/proxy"}})
	resp, body := b.do(t, t.Context(), http.MethodPost, "/anthropic/v1/messages?beta=true&x=a%2Fb", `{"model":"m","stream":false}`, http.Header{
		"X-Api-Key": {"sk-ant-api03-secretsecretsecret"}, "Anthropic-Version": {"2023-06-01"},
		"X-Layover-Priority": {"normal"}, "Connection": {"X-Hop"}, "X-Hop": {"1"},
	})
	if resp.StatusCode != http.StatusCreated || body != `{"id":"msg_1"}` {
		t.Fatalf("got %d %q; want 201 and the upstream's body", resp.StatusCode, body)
	}
	if resp.Header.Get("Request-Id") != "req_1" || resp.Header.Get("X-Resp-Hop") != "" {
		t.Errorf("headers %v: want Request-Id and no X-Resp-Hop", resp.Header)
	}
	if got := b.count(gateway.Anthropic, gateway.OutcomeOK); got != 1 {
		t.Errorf("ok count %v; want 1", got)
	}
}

// A streamed answer reaches the client event by event: the client reads
// the first event before the upstream writes the second.
func TestStreamFlushedPerEvent(t *testing.T) {
	t.Parallel()
	read := make(chan struct{})
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = io.WriteString(w, "event: message_start\ndata: {\"n\":1}\n\n")
		w.(http.Flusher).Flush()
		select {
		case <-read:
		case <-r.Context().Done():
			return
		}
		_, _ = io.WriteString(w, "event: message_stop\ndata: {\"n\":2}\n\n")
	}))
	defer up.Close()
	b := newBench(t, gateway.Options{Upstreams: map[string]string{gateway.OpenAI: up.URL}})
	resp, err := b.srv.Client().Post(b.srv.URL+"/openai/v1/chat/completions", "application/json", strings.NewReader(`{"stream":true}`))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	br := bufio.NewReader(resp.Body)
	var first []string
	for len(first) < 3 {
		line, err := br.ReadString('\n')
		if err != nil {
			t.Fatalf("reading event 1: %v (got %q)", err, first)
		}
		first = append(first, line)
	}
	if first[1] != "data: {\"n\":1}\n" {
		t.Fatalf("event 1 = %q", first)
	}
	close(read)
	rest, err := io.ReadAll(br)
	if err != nil || string(rest) != "event: message_stop\ndata: {\"n\":2}\n\n" {
		t.Fatalf("rest %q, %v", rest, err)
	}
}

// llmPaths are a request path of each route, as its SDK sends it.
var llmPaths = map[string]string{
	gateway.Anthropic: "/anthropic/v1/messages",
	gateway.OpenAI:    "/openai/v1/chat/completions",
	gateway.Gemini:    "/gemini/v1beta/models/gemini-2.5-pro:generateContent",
}

var llmKinds = map[string]fake.LLMKind{gateway.Anthropic: fake.Anthropic, gateway.OpenAI: fake.OpenAI, gateway.Gemini: fake.Gemini}

// keyHeader is the credential each route's SDK sends.
func keyHeader(route, key string) http.Header {
	switch route {
	case gateway.Anthropic:
		return http.Header{"X-Api-Key": {key}}
	case gateway.OpenAI:
		return http.Header{"Authorization": {"Bearer " + key}}
	}
	return http.Header{"X-Goog-Api-Key": {key}}
}

// A quota hit is recorded in the store once; while the key is exhausted
// past MaxHold, later requests are answered by the gateway in the
// provider's own format, with retry-after, and never reach the upstream;
// the key is nowhere in the store. SQLite and PostgreSQL, every provider.
func TestQuotaHitAnsweredLocally(t *testing.T) {
	t.Parallel()
	stores(t, func(t *testing.T, st store.Store, path string) {
		for _, route := range gateway.Routes() {
			t.Run(route, func(t *testing.T) {
				key := "sk-test-" + route + "-0123456789abcdefSECRET"
				b := &bench{}
				llm := fake.NewLLM(fake.LLMConfig{Kind: llmKinds[route], Window: 10 * time.Minute, RequestsPerWindow: 5,
					Now: func() time.Time { return b.clock.Now() }})
				b2 := newBench(t, gateway.Options{Store: st, Upstreams: map[string]string{route: startLLM(t, llm)}})
				*b = *b2
				if resp, _ := b.do(t, t.Context(), http.MethodPost, llmPaths[route], `{"x":1}`, keyHeader(route, key)); resp.StatusCode != 200 {
					t.Fatalf("first request: %d", resp.StatusCode)
				}
				b.clock.Advance(time.Second) // the rejection is the later observation
				llm.Exhaust()
				resp, _ := b.do(t, t.Context(), http.MethodPost, llmPaths[route], `{"x":1}`, keyHeader(route, key))
				if resp.StatusCode != 429 || resp.Header.Get(gateway.DeferredHeader) != "" {
					t.Fatalf("upstream's rejection: %d %v; want its 429 passed through", resp.StatusCode, resp.Header)
				}
				if err := b.g.Close(); err != nil {
					t.Fatal(err)
				}
				calls := llm.Calls()
				for i := range 3 {
					resp, body := b.do(t, t.Context(), http.MethodPost, llmPaths[route], `{"x":1}`, keyHeader(route, key))
					if resp.StatusCode != 429 || resp.Header.Get(gateway.DeferredHeader) != "1" {
						t.Fatalf("request %d: %d %v; want the gateway's 429", i, resp.StatusCode, resp.Header)
					}
					ra := resp.Header.Get("Retry-After")
					if ra == "" || ra == "0" || strings.HasPrefix(ra, "-") {
						t.Errorf("retry-after %q", ra)
					}
					checkShape(t, route, body)
					if strings.Contains(body, key) {
						t.Errorf("the key is in the answer: %s", body)
					}
				}
				if llm.Calls() != calls {
					t.Errorf("%d requests reached the upstream while the key was exhausted", llm.Calls()-calls)
				}
				if got := b.count(route, gateway.OutcomeAnsweredLocally); got != 3 {
					t.Errorf("answered_locally %v; want 3", got)
				}
				// One exhausted state of the key, observed once.
				all, err := st.AllStates(t.Context())
				if err != nil {
					t.Fatal(err)
				}
				host := strings.TrimPrefix(b.g.Upstream(route), "http://")
				var exhausted []quota.State
				for _, s := range all {
					if s.Host == host && s.Exhausted(b.clock.Now()) {
						exhausted = append(exhausted, s)
					}
					if strings.Contains(s.Principal, key) || strings.Contains(s.ObservedBy, key) {
						t.Errorf("the key is in a state: %+v", s)
					}
				}
				if len(exhausted) == 0 {
					t.Fatalf("no exhausted state of %s in %+v", host, all)
				}
				obs, err := st.Observations(t.Context(), exhausted[0].Key, time.Time{}, 0)
				if err != nil {
					t.Fatal(err)
				}
				rejections := 0
				for _, o := range obs {
					if o.Remaining == 0 && o.ResetAt.After(b.clock.Now()) {
						rejections++
					}
				}
				if rejections != 1 {
					t.Errorf("%d exhausted observations of %s; want 1 (the one rejection)", rejections, exhausted[0].Key)
				}
				if strings.Contains(b.logs.String(), key) {
					t.Errorf("the key is in the log")
				}
				if path != "" {
					raw, err := os.ReadFile(path)
					if err != nil {
						t.Fatal(err)
					}
					for _, suffix := range []string{"", "-wal"} {
						raw2, _ := os.ReadFile(path + suffix)
						if strings.Contains(string(raw), key) || strings.Contains(string(raw2), key) {
							t.Errorf("the key is in the SQLite file%s", suffix)
						}
					}
				}
			})
		}
	})
}

func startLLM(t *testing.T, llm *fake.LLM) string {
	t.Helper()
	u, err := llm.Start("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = llm.Close() })
	return u
}

// checkShape checks a local answer's body is the provider's rate-limit error.
func checkShape(t *testing.T, route, body string) {
	t.Helper()
	var v map[string]any
	if err := json.Unmarshal([]byte(body), &v); err != nil {
		t.Fatalf("body %q: %v", body, err)
	}
	e, _ := v["error"].(map[string]any)
	if e == nil || e["message"] == nil || e["message"] == "" {
		t.Fatalf("body %s: no error.message", body)
	}
	switch route {
	case gateway.Anthropic:
		if v["type"] != "error" || e["type"] != "rate_limit_error" {
			t.Errorf("anthropic body %s", body)
		}
	case gateway.OpenAI:
		if e["type"] != "requests" || e["code"] != "rate_limit_exceeded" {
			t.Errorf("openai body %s", body)
		}
		if _, ok := e["param"]; !ok {
			t.Errorf("openai body %s: no param", body)
		}
	case gateway.Gemini:
		if e["code"] != float64(429) || e["status"] != "RESOURCE_EXHAUSTED" {
			t.Errorf("gemini body %s", body)
		}
	}
}

// A request on an exhausted key whose reset is within MaxHold is held,
// then sent once the reset has passed (fake clock); nothing reaches the
// upstream before.
func TestHeldThenSent(t *testing.T) {
	t.Parallel()
	b := &bench{}
	llm := fake.NewLLM(fake.LLMConfig{Kind: fake.Anthropic, Window: 20 * time.Second, RequestsPerWindow: 1,
		Now: func() time.Time { return b.clock.Now() }})
	*b = *newBench(t, gateway.Options{Policy: noMargin(), Upstreams: map[string]string{gateway.Anthropic: startLLM(t, llm)}})
	key := keyHeader(gateway.Anthropic, "sk-ant-held-0123456789")
	// The one request of the window leaves the key exhausted until it ends.
	if resp, _ := b.do(t, t.Context(), http.MethodPost, llmPaths[gateway.Anthropic], `{}`, key); resp.StatusCode != 200 {
		t.Fatalf("first request: %d", resp.StatusCode)
	}
	calls := llm.Calls()
	type result struct {
		status int
		body   string
	}
	done := make(chan result, 1)
	timers := b.clock.TimerAdded()
	go func() {
		resp, body := b.do(t, context.Background(), http.MethodPost, llmPaths[gateway.Anthropic], `{"held":true}`, key)
		done <- result{resp.StatusCode, body}
	}()
	<-timers // the hold's timer
	if llm.Calls() != calls {
		t.Fatalf("sent before the reset")
	}
	b.clock.Advance(20 * time.Second)
	r := <-done
	if r.status != 200 {
		t.Fatalf("held request: %d %s; want 200", r.status, r.body)
	}
	if llm.Calls() != calls+1 {
		t.Errorf("%d upstream calls after the hold; want 1", llm.Calls()-calls)
	}
	if got := b.count(gateway.Anthropic, gateway.OutcomeHeldThenSent); got != 1 {
		t.Errorf("held_then_sent %v; want 1", got)
	}
}

// A low-priority request stops at the reserve: answered locally while a
// normal one is still sent; the priority header is not forwarded.
func TestLowPriorityStopsAtReserve(t *testing.T) {
	t.Parallel()
	calls := 0
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls++
		if r.Header.Get("X-Layover-Priority") != "" {
			w.WriteHeader(http.StatusTeapot)
			return
		}
		w.Header().Set("Date", t0.Format(http.TimeFormat)) // the fake clock's time
		w.Header().Set("Anthropic-Ratelimit-Requests-Limit", "100")
		w.Header().Set("Anthropic-Ratelimit-Requests-Remaining", "5")
		w.Header().Set("Anthropic-Ratelimit-Requests-Reset", t0.Add(time.Minute).Format(time.RFC3339))
		_, _ = io.WriteString(w, `{}`)
	}))
	defer up.Close()
	b := newBench(t, gateway.Options{Upstreams: map[string]string{gateway.Anthropic: up.URL}})
	key := keyHeader(gateway.Anthropic, "sk-ant-low-0123456789")
	if resp, _ := b.do(t, t.Context(), http.MethodPost, llmPaths[gateway.Anthropic], `{}`, key); resp.StatusCode != 200 {
		t.Fatalf("first: %d", resp.StatusCode)
	}
	low := key.Clone()
	low.Set("X-Layover-Priority", "low")
	resp, body := b.do(t, t.Context(), http.MethodPost, llmPaths[gateway.Anthropic], `{}`, low)
	if resp.StatusCode != 429 || resp.Header.Get(gateway.DeferredHeader) != "1" || calls != 1 {
		t.Fatalf("low priority below the reserve: %d %s, %d calls; want the gateway's 429", resp.StatusCode, body, calls)
	}
	checkShape(t, gateway.Anthropic, body)
	if !strings.Contains(body, "reserve") {
		t.Errorf("body %s does not say why", body)
	}
	if resp, _ := b.do(t, t.Context(), http.MethodPost, llmPaths[gateway.Anthropic], `{}`, key); resp.StatusCode != 200 || calls != 2 {
		t.Errorf("normal priority below the reserve: %d; want it sent", resp.StatusCode)
	}
}

// Bad input: an unknown route is 404, a body past MaxBody is 413 (by
// Content-Length and by a chunked body), an upstream that cannot be
// reached is 502 naming the cause; all JSON errors.
func TestBadInput(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := "http://" + ln.Addr().String()
	ln.Close()
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, err := io.Copy(io.Discard, r.Body)
		if err != nil {
			return
		}
		_, _ = io.WriteString(w, "{}")
	}))
	defer up.Close()
	b := newBench(t, gateway.Options{MaxBody: 1024, Upstreams: map[string]string{gateway.OpenAI: dead, gateway.Anthropic: up.URL}})
	for _, p := range []string{"/", "/v1/messages", "/anthropicx/v1", "/azure/openai"} {
		resp, body := b.do(t, t.Context(), http.MethodGet, p, "", nil)
		if resp.StatusCode != 404 || !strings.Contains(body, `"message"`) {
			t.Errorf("%s: %d %s; want 404 with a JSON error", p, resp.StatusCode, body)
		}
	}
	resp, body := b.do(t, t.Context(), http.MethodPost, "/anthropic/v1/messages", strings.Repeat("x", 2000), nil)
	if resp.StatusCode != 413 || !strings.Contains(body, "1024") {
		t.Errorf("large body: %d %s; want 413", resp.StatusCode, body)
	}
	req, _ := http.NewRequest(http.MethodPost, b.srv.URL+"/anthropic/v1/messages", io.MultiReader(strings.NewReader(strings.Repeat("y", 3000))))
	req.ContentLength = -1
	r2, err := b.srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	r2.Body.Close()
	if r2.StatusCode != 413 {
		t.Errorf("large chunked body: %d; want 413", r2.StatusCode)
	}
	resp, body = b.do(t, t.Context(), http.MethodPost, "/openai/v1/chat/completions", "{}", http.Header{"Authorization": {"Bearer sk-dead-0123456789abcdef"}})
	if resp.StatusCode != 502 || !strings.Contains(body, "refused") || strings.Contains(body, "sk-dead") {
		t.Errorf("dead upstream: %d %s; want 502 naming the cause", resp.StatusCode, body)
	}
	if got := b.count(gateway.OpenAI, gateway.OutcomeUpstreamError); got != 1 {
		t.Errorf("upstream_error %v", got)
	}
}

// A client that goes away cancels the upstream call.
func TestDisconnectCancelsUpstream(t *testing.T) {
	t.Parallel()
	arrived, canceled := make(chan struct{}), make(chan struct{})
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.ReadAll(r.Body) // as an API does; the server sees a closed connection from then on
		close(arrived)
		<-r.Context().Done()
		close(canceled)
	}))
	defer up.Close()
	b := newBench(t, gateway.Options{Upstreams: map[string]string{gateway.Gemini: up.URL}})
	ctx, cancel := context.WithCancel(t.Context())
	errc := make(chan error, 1)
	go func() {
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, b.srv.URL+llmPaths[gateway.Gemini], strings.NewReader("{}"))
		resp, err := b.srv.Client().Do(req)
		if err == nil {
			resp.Body.Close()
		}
		errc <- err
	}()
	<-arrived
	cancel()
	<-canceled
	if err := <-errc; err == nil {
		t.Error("the client's request did not fail")
	}
}

// After a reset, held requests of one key go out at the resume rate, not
// all at once: with three held at 10 per second, one is sent at the reset,
// the next 100 ms later, the last 200 ms later (fake clock).
func TestHeldReleasedAtResumeRate(t *testing.T) {
	t.Parallel()
	b := &bench{}
	calls := make(chan struct{}, 16)
	up := exhaustingUpstream(t, b, calls)
	*b = *newBench(t, gateway.Options{Policy: noMargin(), ResumeRate: 10, Upstreams: map[string]string{gateway.Anthropic: up}})
	key := keyHeader(gateway.Anthropic, "sk-ant-rate-0123456789")
	b.do(t, t.Context(), http.MethodPost, llmPaths[gateway.Anthropic], `{}`, key)
	<-calls
	timers := b.clock.TimerAdded()
	done := make(chan int, 3)
	for range 3 {
		go func() {
			resp, _ := b.do(t, context.Background(), http.MethodPost, llmPaths[gateway.Anthropic], `{}`, key)
			done <- resp.StatusCode
		}()
	}
	for range 3 {
		<-timers // each held request's hold
	}
	b.clock.Advance(20 * time.Second)
	<-calls // the first goes at the reset
	for range 2 {
		<-timers // the other two wait for their slots
	}
	for _, step := range []time.Duration{100 * time.Millisecond, 100 * time.Millisecond} {
		if n := len(calls); n != 0 {
			t.Fatalf("%d more requests sent before their slot", n)
		}
		b.clock.Advance(step)
		<-calls
	}
	for range 3 {
		if code := <-done; code != 200 {
			t.Errorf("held request: %d", code)
		}
	}
	if got := b.count(gateway.Anthropic, gateway.OutcomeHeldThenSent); got != 3 {
		t.Errorf("held_then_sent %v; want 3", got)
	}
}

// A failure inside the gateway (here a panic of the transport under it)
// answers 500 and leaves the gateway serving.
func TestPanicDoesNotCrash(t *testing.T) {
	t.Parallel()
	boom := true
	var mu sync.Mutex
	next := roundTripFunc(func(r *http.Request) (*http.Response, error) {
		mu.Lock()
		defer mu.Unlock()
		if boom {
			boom = false
			panic("boom")
		}
		return &http.Response{StatusCode: 200, Header: http.Header{}, Body: io.NopCloser(strings.NewReader("fine")), Request: r}, nil
	})
	b := newBench(t, gateway.Options{Next: next})
	resp, body := b.do(t, t.Context(), http.MethodGet, "/openai/v1/models", "", nil)
	if resp.StatusCode != 500 || !strings.Contains(body, "internal error") {
		t.Errorf("panicking request: %d %s; want 500", resp.StatusCode, body)
	}
	resp, body = b.do(t, t.Context(), http.MethodGet, "/openai/v1/models", "", nil)
	if resp.StatusCode != 200 || body != "fine" {
		t.Errorf("next request: %d %s; want 200", resp.StatusCode, body)
	}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// A held request whose client goes away ends its hold: nothing is sent,
// and the held gauge is back to 0.
func TestHeldClientGoesAway(t *testing.T) {
	t.Parallel()
	b := &bench{}
	llm := fake.NewLLM(fake.LLMConfig{Kind: fake.OpenAI, Window: 20 * time.Second, RequestsPerWindow: 1,
		Now: func() time.Time { return b.clock.Now() }})
	*b = *newBench(t, gateway.Options{Policy: noMargin(), Upstreams: map[string]string{gateway.OpenAI: startLLM(t, llm)}})
	key := keyHeader(gateway.OpenAI, "sk-proj-gone-0123456789")
	b.do(t, t.Context(), http.MethodPost, llmPaths[gateway.OpenAI], `{}`, key)
	<-b.served
	timers := b.clock.TimerAdded()
	ctx, cancel := context.WithCancel(t.Context())
	errc := make(chan error, 1)
	go func() {
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, b.srv.URL+llmPaths[gateway.OpenAI], strings.NewReader("{}"))
		req.Header = key.Clone()
		resp, err := b.srv.Client().Do(req)
		if err == nil {
			resp.Body.Close()
		}
		errc <- err
	}()
	<-timers // held
	cancel()
	if err := <-errc; err == nil {
		t.Fatal("the request did not fail")
	}
	<-b.served // the gateway is done with it
	b.clock.Advance(time.Minute)
	if got := b.count(gateway.OpenAI, gateway.OutcomeCanceled); got != 1 {
		t.Errorf("canceled %v; want 1", got)
	}
	if llm.Calls() != 1 {
		t.Errorf("%d upstream calls; want only the first", llm.Calls())
	}
	if g := gaugeValue(b, "layover_gateway_held"); g != 0 {
		t.Errorf("held gauge %v after the client left", g)
	}
}

func gaugeValue(b *bench, name string) float64 {
	mfs, _ := b.reg.Gather()
	for _, mf := range mfs {
		if mf.GetName() == name {
			return mf.GetMetric()[0].GetGauge().GetValue()
		}
	}
	return -1
}

// A held request is a visible wait: while it is held the store lists the
// gateway waiting on the key until its resume time (layover status shows
// it), and once it is sent the entry is gone.
func TestHeldListedAsWaiting(t *testing.T) {
	t.Parallel()
	stores(t, func(t *testing.T, st store.Store, _ string) {
		b := &bench{}
		llm := fake.NewLLM(fake.LLMConfig{Kind: fake.Anthropic, Window: 20 * time.Second, RequestsPerWindow: 1,
			Now: func() time.Time { return b.clock.Now() }})
		*b = *newBench(t, gateway.Options{Policy: noMargin(), Store: st, Upstreams: map[string]string{gateway.Anthropic: startLLM(t, llm)}})
		key := keyHeader(gateway.Anthropic, "sk-ant-listed-0123456789")
		if resp, _ := b.do(t, t.Context(), http.MethodPost, llmPaths[gateway.Anthropic], `{}`, key); resp.StatusCode != 200 {
			t.Fatalf("first request: %d", resp.StatusCode)
		}
		done := make(chan int, 1)
		timers := b.clock.TimerAdded()
		go func() {
			resp, _ := b.do(t, context.Background(), http.MethodPost, llmPaths[gateway.Anthropic], `{"held":true}`, key)
			done <- resp.StatusCode
		}()
		<-timers // the hold's timer, armed once the wait is listed
		ws, err := st.Waiters(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		reset := t0.Add(20 * time.Second)
		if len(ws) != 1 || ws[0].Key.Resource != "requests" || !ws[0].WaitUntil.Equal(reset) ||
			ws[0].Command != "layover gateway" || !strings.HasPrefix(ws[0].Stage, "Quota wait until") {
			t.Errorf("waiters while held: %+v; want the gateway on the key until %s", ws, reset)
		}
		if strings.Contains(fmt.Sprint(ws), "sk-ant-listed") {
			t.Error("the key is in the waiter entry")
		}
		// Errors above, not Fatal: the clock must move for the held request
		// to end, else the test's cleanup waits for it.
		b.clock.Advance(20 * time.Second)
		if code := <-done; code != 200 {
			t.Fatalf("held request: %d; want 200", code)
		}
		if ws, err := st.Waiters(t.Context()); err != nil || len(ws) != 0 {
			t.Fatalf("waiters after the hold: %+v, %v; want none", ws, err)
		}
	})
}
