package cli

import (
	"net/http"
	"net/http/httptest"
	"testing"
)

// The gateway command's handler serves /metrics and /healthz by their exact
// paths and sends every other path, unclean ones included, to the gateway
// as it came: no redirect.
func TestGatewayHandlerRoutes(t *testing.T) {
	t.Parallel()
	metrics := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("metrics")) })
	gw := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write([]byte("gateway " + r.URL.EscapedPath())) })
	h := gatewayHandler(metrics, gw)
	for path, want := range map[string]string{
		"/metrics":                  "metrics",
		"/healthz":                  "ok\n",
		"/anthropic//v1/messages":   "gateway /anthropic//v1/messages",
		"/openai/v1/../v1/models":   "gateway /openai/v1/../v1/models",
		"/metrics/x":                "gateway /metrics/x",
		"/gemini/v1beta/models/m:x": "gateway /gemini/v1beta/models/m:x",
	} {
		rec := httptest.NewRecorder()
		req := httptest.NewRequest(http.MethodGet, "http://127.0.0.1:8089/", nil)
		req.URL.Path, req.URL.RawPath = path, ""
		req.RequestURI = path
		h.ServeHTTP(rec, req)
		if rec.Code != 200 || rec.Body.String() != want {
			t.Errorf("%s: %d %q; want 200 %q", path, rec.Code, rec.Body.String(), want)
		}
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/anthropic/v1/messages", nil))
	if rec.Body.String() != "gateway /anthropic/v1/messages" {
		t.Errorf("POST: %q", rec.Body.String())
	}
}
