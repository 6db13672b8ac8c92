package gateway_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/layoverhq/layover/gateway"
	"github.com/layoverhq/layover/store"
)

// Close waits for a request still under way (a drain that timed out, its
// server closed), so the rejection that request meets is in the store when
// Close returns and the caller closes the store. SQLite and PostgreSQL.
func TestCloseWaitsForRequestsUnderWay(t *testing.T) {
	t.Parallel()
	stores(t, func(t *testing.T, st store.Store, _ string) {
		b := &bench{}
		arrived, release := make(chan struct{}), make(chan struct{})
		up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			_, _ = io.ReadAll(r.Body)
			close(arrived)
			<-release
			h := w.Header()
			h.Set("Anthropic-Ratelimit-Requests-Limit", "100")
			h.Set("Anthropic-Ratelimit-Requests-Remaining", "0")
			h.Set("Anthropic-Ratelimit-Requests-Reset", b.clock.Now().Add(time.Hour).UTC().Format(time.RFC3339))
			h.Set("Retry-After", "3600")
			w.WriteHeader(http.StatusTooManyRequests)
			_, _ = io.WriteString(w, `{"type":"error","error":{"type":"rate_limit_error","message":"Number of request tokens has exceeded your per-minute rate limit"}}`)
		}))
		defer up.Close()
		*b = *newBench(t, gateway.Options{Store: st, Upstreams: map[string]string{gateway.Anthropic: up.URL}})
		key := keyHeader(gateway.Anthropic, "sk-ant-close-0123456789")
		answered := make(chan int, 1)
		go func() {
			resp, _ := b.do(t, context.Background(), http.MethodPost, llmPaths[gateway.Anthropic], `{}`, key)
			answered <- resp.StatusCode
		}()
		<-arrived
		timers := b.clock.TimerAdded()
		closed := make(chan error, 1)
		go func() { closed <- b.g.Close() }()
		<-timers // Close waits, bounded by its timer
		select {
		case err := <-closed:
			t.Fatalf("Close returned (%v) while a request was under way", err)
		default:
		}
		close(release)
		if err := <-closed; err != nil {
			t.Fatalf("Close: %v", err)
		}
		all, err := st.AllStates(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		host := strings.TrimPrefix(up.URL, "http://")
		found := false
		for _, s := range all {
			found = found || (s.Host == host && s.Exhausted(b.clock.Now()))
		}
		if !found {
			t.Errorf("after Close, the store lacks the rejection the last request met: %+v", all)
		}
		if code := <-answered; code != http.StatusTooManyRequests {
			t.Errorf("the request under way: %d; want the upstream's 429", code)
		}
	})
}
