package transport_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/layoverhq/layover/store/sqlite"
	"github.com/layoverhq/layover/transport"
)

// benchServer answers every request 200 with GitHub's rate-limit headers
// and a small JSON body, as api.github.com answers GET /repos/o/r.
func benchServer(b *testing.B) *httptest.Server {
	b.Helper()
	reset := strconv.FormatInt(time.Now().Add(time.Hour).Unix(), 10)
	body := []byte(`{"id":1,"name":"r","full_name":"o/r","private":false}`)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Type", "application/json; charset=utf-8")
		h.Set("X-Ratelimit-Limit", "5000")
		h.Set("X-Ratelimit-Remaining", "4999")
		h.Set("X-Ratelimit-Reset", reset)
		h.Set("X-Ratelimit-Used", "1")
		h.Set("X-Ratelimit-Resource", "core")
		_, _ = w.Write(body)
	}))
	b.Cleanup(srv.Close)
	return srv
}

// benchGet sends one GET through rt and reads the body.
func benchGet(b *testing.B, rt http.RoundTripper, url string) {
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	req.Header.Set("Authorization", "Bearer ghp_benchmarktoken")
	resp, err := rt.RoundTrip(req)
	if err != nil {
		b.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b.Fatalf("status %d", resp.StatusCode)
	}
}

// newBare is a keep-alive transport to srv alone.
func newBare(srv *httptest.Server) *http.Transport {
	tr := srv.Client().Transport.(*http.Transport).Clone()
	tr.MaxIdleConnsPerHost = 64
	return tr
}

// loop runs the GETs and reports, besides wall time, the process's CPU
// time per request ("cpu-ns/op": client and loopback server together),
// which a busy machine disturbs less than wall time.
func loop(b *testing.B, rt http.RoundTripper, url string) {
	b.ReportAllocs()
	cpu := processCPU()
	for b.Loop() {
		benchGet(b, rt, url)
	}
	if n := b.N; n > 0 {
		b.ReportMetric(float64(processCPU()-cpu)/float64(n), "cpu-ns/op")
	}
}

func BenchmarkBare(b *testing.B) {
	srv := benchServer(b)
	rt := newBare(srv)
	b.Cleanup(rt.CloseIdleConnections)
	loop(b, rt, srv.URL+"/repos/o/r")
}

func BenchmarkTransport(b *testing.B) {
	srv := benchServer(b)
	bare := newBare(srv)
	b.Cleanup(bare.CloseIdleConnections)
	rt, err := transport.New(bare, &transport.Options{Provider: transport.GitHub()})
	if err != nil {
		b.Fatal(err)
	}
	loop(b, rt, srv.URL+"/repos/o/r")
}

// BenchmarkTransportSQLite adds a SQLite store: observations are written
// by the background writer, coalesced.
func BenchmarkTransportSQLite(b *testing.B) {
	srv := benchServer(b)
	bare := newBare(srv)
	b.Cleanup(bare.CloseIdleConnections)
	st, err := sqlite.Open(context.Background(), filepath.Join(b.TempDir(), "layover.db"))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { st.Close() })
	rt, err := transport.New(bare, &transport.Options{Provider: transport.GitHub(), Store: st})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = rt.Close() })
	loop(b, rt, srv.URL+"/repos/o/r")
	b.StopTimer()
	if err := rt.Close(); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkRatio sends the same GET bare and through the Transport, in
// turn (the order alternating), over one connection pool to one loopback
// server, and reports each side's median request time and the
// Transport's overhead in percent of the bare median. Interleaving in one
// process and taking medians keeps the comparison fair on a shared
// machine, where separate runs drift with the load.
func BenchmarkRatio(b *testing.B) {
	srv := benchServer(b)
	bare := newBare(srv)
	b.Cleanup(bare.CloseIdleConnections)
	rt, err := transport.New(bare, &transport.Options{Provider: transport.GitHub()})
	if err != nil {
		b.Fatal(err)
	}
	url := srv.URL + "/repos/o/r"
	var tb, tt []time.Duration
	timed := func(r http.RoundTripper, into *[]time.Duration) {
		start := time.Now()
		benchGet(b, r, url)
		*into = append(*into, time.Since(start))
	}
	i := 0
	for b.Loop() {
		if i%2 == 0 {
			timed(bare, &tb)
			timed(rt, &tt)
		} else {
			timed(rt, &tt)
			timed(bare, &tb)
		}
		i++
	}
	mb, mt := median(tb), median(tt)
	b.ReportMetric(float64(mb), "bare-p50-ns")
	b.ReportMetric(float64(mt), "transport-p50-ns")
	b.ReportMetric(100*(float64(mt)/float64(mb)-1), "overhead-%")
}

func median(d []time.Duration) time.Duration {
	if len(d) == 0 {
		return 0
	}
	s := slices.Clone(d)
	slices.Sort(s)
	return s[len(s)/2]
}

func BenchmarkBareParallel(b *testing.B) {
	srv := benchServer(b)
	rt := newBare(srv)
	b.Cleanup(rt.CloseIdleConnections)
	url := srv.URL + "/repos/o/r"
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			benchGet(b, rt, url)
		}
	})
}

func BenchmarkTransportParallel(b *testing.B) {
	srv := benchServer(b)
	bare := newBare(srv)
	b.Cleanup(bare.CloseIdleConnections)
	rt, err := transport.New(bare, &transport.Options{Provider: transport.GitHub()})
	if err != nil {
		b.Fatal(err)
	}
	url := srv.URL + "/repos/o/r"
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			benchGet(b, rt, url)
		}
	})
}

// BenchmarkClassify is the Transport's per-response reading cost for each
// provider: headers only for a 2xx (Provider.Observations), the classifier
// with the body for a rejection (Provider.Classify).
func BenchmarkClassify(b *testing.B) {
	now := time.Date(2026, 5, 1, 10, 0, 0, 0, time.UTC)
	date := now.Format(http.TimeFormat)
	hdr := func(kv ...string) http.Header {
		h := http.Header{"Date": {date}, "Content-Type": {"application/json"}}
		for i := 0; i+1 < len(kv); i += 2 {
			h.Set(kv[i], kv[i+1])
		}
		return h
	}
	resetGH := strconv.FormatInt(now.Add(time.Hour).Unix(), 10)
	resetAnt := now.Add(time.Minute).Format(time.RFC3339)
	cases := []struct {
		name   string
		p      *transport.Provider
		status int
		h      http.Header
		body   string
	}{
		{"github/200", transport.GitHub(), 200, hdr("X-Ratelimit-Limit", "5000", "X-Ratelimit-Remaining", "4999",
			"X-Ratelimit-Reset", resetGH, "X-Ratelimit-Used", "1", "X-Ratelimit-Resource", "core"), ""},
		{"github/403-exhausted", transport.GitHub(), 403, hdr("X-Ratelimit-Limit", "5000", "X-Ratelimit-Remaining", "0",
			"X-Ratelimit-Reset", resetGH, "X-Ratelimit-Used", "5000", "X-Ratelimit-Resource", "core"),
			`{"message":"API rate limit exceeded for user ID 1.","documentation_url":"https://docs.github.com/rest/overview/rate-limits-for-the-rest-api"}`},
		{"anthropic/200", transport.Anthropic(), 200, hdr("Anthropic-Organization-Id", "org-1",
			"Anthropic-Ratelimit-Requests-Limit", "50", "Anthropic-Ratelimit-Requests-Remaining", "49", "Anthropic-Ratelimit-Requests-Reset", resetAnt,
			"Anthropic-Ratelimit-Tokens-Limit", "80000", "Anthropic-Ratelimit-Tokens-Remaining", "79000", "Anthropic-Ratelimit-Tokens-Reset", resetAnt), ""},
		{"anthropic/429", transport.Anthropic(), 429, hdr("Retry-After", "20", "Anthropic-Organization-Id", "org-1"),
			`{"type":"error","error":{"type":"rate_limit_error","message":"This request would exceed the rate limit for your organization of 50 requests per minute."}}`},
		{"openai/200", transport.OpenAI(), 200, hdr("Openai-Organization", "org-1",
			"X-Ratelimit-Limit-Requests", "500", "X-Ratelimit-Remaining-Requests", "499", "X-Ratelimit-Reset-Requests", "120ms",
			"X-Ratelimit-Limit-Tokens", "200000", "X-Ratelimit-Remaining-Tokens", "199000", "X-Ratelimit-Reset-Tokens", "6m0s"), ""},
		{"openai/429", transport.OpenAI(), 429, hdr("Retry-After", "12"),
			`{"error":{"message":"Rate limit reached for gpt-4o-mini in organization org-1 on requests per min (RPM): Limit 500, Used 500, Requested 1. Please try again in 120ms.","type":"requests","param":null,"code":"rate_limit_exceeded"}}`},
		{"gemini/200", transport.Gemini(), 200, hdr(), ""},
		{"gemini/429", transport.Gemini(), 429, hdr(),
			`{"error":{"code":429,"message":"You exceeded your current quota.","status":"RESOURCE_EXHAUSTED","details":[{"@type":"type.googleapis.com/google.rpc.QuotaFailure","violations":[{"quotaMetric":"generativelanguage.googleapis.com/generate_content_free_tier_requests","quotaId":"GenerateRequestsPerMinutePerProjectPerModel-FreeTier","quotaDimensions":{"location":"global","model":"gemini-2.5-pro"},"quotaValue":"5"}]},{"@type":"type.googleapis.com/google.rpc.RetryInfo","retryDelay":"26s"}]}}`},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			resp := &http.Response{StatusCode: c.status, Header: c.h, Body: io.NopCloser(strings.NewReader(c.body))}
			body := []byte(c.body)
			b.ReportAllocs()
			for b.Loop() {
				if c.status == 200 {
					_ = c.p.Observations(resp.Header, now)
				} else {
					_ = c.p.Classify(resp, body, now)
				}
			}
		})
	}
}

// stubNext answers every request at once with a GitHub 200, with no
// network: it isolates the Transport's own cost per request.
func stubNext() http.RoundTripper {
	reset := strconv.FormatInt(time.Now().Add(time.Hour).Unix(), 10)
	h := http.Header{
		"Content-Type":          {"application/json; charset=utf-8"},
		"X-Ratelimit-Limit":     {"5000"},
		"X-Ratelimit-Remaining": {"4999"},
		"X-Ratelimit-Reset":     {reset},
		"X-Ratelimit-Used":      {"1"},
		"X-Ratelimit-Resource":  {"core"},
	}
	return roundTripFunc(func(r *http.Request) (*http.Response, error) {
		return &http.Response{StatusCode: 200, Header: h, Body: http.NoBody, Request: r}, nil
	})
}

// BenchmarkOverhead is the Transport's own cost per request: the same
// GET through a stub next RoundTripper (no network), bare and wrapped.
// Its difference is what BenchmarkTransport adds to BenchmarkBare.
func BenchmarkOverhead(b *testing.B) {
	wrapped, err := transport.New(stubNext(), &transport.Options{Provider: transport.GitHub()})
	if err != nil {
		b.Fatal(err)
	}
	for _, c := range []struct {
		name string
		rt   http.RoundTripper
	}{{"bare", stubNext()}, {"transport", wrapped}} {
		b.Run(c.name, func(b *testing.B) {
			loop(b, c.rt, "https://api.github.com/repos/o/r")
		})
	}
}
