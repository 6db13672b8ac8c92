package gateway_test

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/layoverhq/layover/clock"
	"github.com/layoverhq/layover/gateway"
	"github.com/layoverhq/layover/quota"
	"github.com/layoverhq/layover/store"
	"github.com/layoverhq/layover/store/postgres"
	"github.com/layoverhq/layover/store/postgres/pgtest"
	"github.com/layoverhq/layover/store/sqlite"
)

var t0 = time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)

// zeroRand gives no jitter.
type zeroRand struct{}

func (zeroRand) Int64N(int64) int64 { return 0 }

// bench is a gateway under test in front of its upstreams.
type bench struct {
	g     *gateway.Gateway
	srv   *httptest.Server
	clock *clock.Fake
	reg   *prometheus.Registry
	logs  *syncBuffer
	// served receives once each time the gateway's ServeHTTP returns.
	served chan struct{}
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// noMargin is the default policy without reset margin or jitter, so a
// hold ends at the reset.
func noMargin() *quota.Policy {
	p := quota.DefaultPolicy()
	p.ResetMargin, p.Jitter = 0, 0
	return &p
}

// newBench starts a gateway with opts (Clock, Rand, Logger and Registerer
// filled in when unset) on an httptest server.
func newBench(t *testing.T, opts gateway.Options) *bench {
	t.Helper()
	b := &bench{clock: clock.NewFake(t0), reg: prometheus.NewRegistry(), logs: &syncBuffer{}}
	if opts.Clock == nil {
		opts.Clock = b.clock
	}
	if opts.Rand == nil {
		opts.Rand = zeroRand{}
	}
	opts.Logger = slog.New(slog.NewTextHandler(b.logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	opts.Registerer = b.reg
	opts.Hostname = "test-host"
	g, err := gateway.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	b.g = g
	b.served = make(chan struct{}, 1024)
	b.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer func() {
			select {
			case b.served <- struct{}{}:
			default:
			}
		}()
		g.ServeHTTP(w, r)
	}))
	t.Cleanup(func() {
		b.srv.Close()
		if err := g.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return b
}

// do sends a request through the gateway and reads the whole answer.
func (b *bench) do(t *testing.T, ctx context.Context, method, path string, body string, hdr http.Header) (*http.Response, string) {
	t.Helper()
	var r io.Reader
	if body != "" {
		r = strings.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, b.srv.URL+path, r)
	if err != nil {
		t.Fatal(err)
	}
	for k, vs := range hdr {
		req.Header[k] = vs
	}
	resp, err := b.srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	got, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, string(got)
}

// count is layover_gateway_requests_total of (provider, outcome).
func (b *bench) count(provider, outcome string) float64 {
	mfs, _ := b.reg.Gather()
	for _, mf := range mfs {
		if mf.GetName() != "layover_gateway_requests_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if labels["provider"] == provider && labels["outcome"] == outcome {
				return m.GetCounter().GetValue()
			}
		}
	}
	return 0
}

// stores runs body with a SQLite store and a PostgreSQL one; path is the
// SQLite file ("" for PostgreSQL).
func stores(t *testing.T, body func(t *testing.T, st store.Store, path string)) {
	for _, kind := range []string{"sqlite", "postgres"} {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			var st store.Store
			var err error
			path := ""
			if kind == "sqlite" {
				path = filepath.Join(t.TempDir(), "layover.db")
				st, err = sqlite.Open(t.Context(), path)
			} else {
				st, err = postgres.Open(t.Context(), pgtest.Schema(t))
			}
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = st.Close() })
			body(t, st, path)
		})
	}
}
