package gateway_test

import (
	"compress/gzip"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

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
