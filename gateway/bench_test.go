package gateway_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/layoverhq/layover/gateway"
	"github.com/layoverhq/layover/store/sqlite"
	"github.com/prometheus/client_golang/prometheus"
)

// BenchmarkServeHTTP is the gateway's own cost of a non-streaming request:
// ServeHTTP on a recorder, with an upstream RoundTripper that answers at
// once with Anthropic's limit headers, on the in-memory ledger and on a
// SQLite store. No network: bench/gateway measures the loopback figures.
//
//	go test ./gateway -run '^$' -bench ServeHTTP -benchtime 5000x -count 3
func BenchmarkServeHTTP(b *testing.B) {
	for _, withStore := range []bool{false, true} {
		name := "memory"
		if withStore {
			name = "sqlite"
		}
		b.Run(name, func(b *testing.B) {
			next := roundTripFunc(func(r *http.Request) (*http.Response, error) {
				if r.Body != nil {
					_, _ = io.Copy(io.Discard, r.Body)
				}
				h := http.Header{}
				h.Set("content-type", "application/json")
				h.Set("anthropic-organization-id", "org-1")
				h.Set("anthropic-ratelimit-requests-limit", "50000")
				h.Set("anthropic-ratelimit-requests-remaining", "49000")
				h.Set("anthropic-ratelimit-requests-reset", "2030-01-01T00:00:00Z")
				return &http.Response{StatusCode: 200, Header: h, Body: io.NopCloser(strings.NewReader(`{"id":"msg"}`)), Request: r}, nil
			})
			opts := gateway.Options{Next: next, Upstreams: map[string]string{"anthropic": "http://127.0.0.1:1"}, Registerer: prometheus.NewRegistry(), Hostname: "h"}
			if withStore {
				st, err := sqlite.Open(context.Background(), b.TempDir()+"/s.db")
				if err != nil {
					b.Fatal(err)
				}
				defer st.Close()
				opts.Store = st
			}
			g, err := gateway.New(opts)
			if err != nil {
				b.Fatal(err)
			}
			defer g.Close()
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				req := httptest.NewRequest("POST", "/anthropic/v1/messages", strings.NewReader(`{"model":"x"}`))
				req.Header.Set("x-api-key", "sk-ant-test")
				w := httptest.NewRecorder()
				g.ServeHTTP(w, req)
				if w.Code != 200 {
					b.Fatal(w.Code, w.Body.String())
				}
			}
		})
	}
}
