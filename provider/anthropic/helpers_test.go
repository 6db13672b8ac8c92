package anthropic

import (
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/layoverhq/layover/provider"
	"github.com/layoverhq/layover/quota"
)

// now is the test clock: 2026-08-05 12:00:00 UTC.
var now = time.Date(2026, 8, 5, 12, 0, 0, 0, time.UTC)

const unknown = quota.Unknown

func httpDate(t time.Time) string { return t.UTC().Format(http.TimeFormat) }

func rfc(t time.Time) string { return t.UTC().Format(time.RFC3339) }

func epoch(t time.Time) string { return strconv.FormatInt(t.Unix(), 10) }

// response builds a response with status code and header name/value pairs.
func response(code int, kv ...string) *http.Response {
	h := http.Header{}
	for i := 0; i+1 < len(kv); i += 2 {
		h.Add(kv[i], kv[i+1])
	}
	return &http.Response{StatusCode: code, Status: strconv.Itoa(code) + " " + http.StatusText(code), Header: h}
}

func jsonQuote(s string) string {
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`).Replace(s) + `"`
}

// errBody is Anthropic's error body.
func errBody(typ, msg string) string {
	return `{"type":"error","error":{"type":"` + typ + `","message":` + jsonQuote(msg) + `},"request_id":"req_011CXx3wfgjahuFJxKWYVv48"}`
}

// want is the expected outcome.
type want struct {
	class      provider.Class
	resource   string
	resetAt    time.Time
	retryAfter time.Duration
	remaining  int64
	limit      int64
	reason     string // substring
	obs        int    // number of observations
}

func check(t *testing.T, got provider.Outcome, w want) {
	t.Helper()
	if got.Provider != Provider {
		t.Errorf("Provider = %q", got.Provider)
	}
	if got.Class != w.class {
		t.Errorf("Class = %q, want %q (reason %q)", got.Class, w.class, got.Reason)
	}
	if got.Resource != w.resource {
		t.Errorf("Resource = %q, want %q", got.Resource, w.resource)
	}
	if !got.ResetAt.Equal(w.resetAt) {
		t.Errorf("ResetAt = %v, want %v", got.ResetAt, w.resetAt)
	}
	if got.RetryAfter != w.retryAfter {
		t.Errorf("RetryAfter = %v, want %v", got.RetryAfter, w.retryAfter)
	}
	if got.Remaining != w.remaining || got.Limit != w.limit {
		t.Errorf("Remaining, Limit = %d, %d; want %d, %d", got.Remaining, got.Limit, w.remaining, w.limit)
	}
	if !strings.Contains(got.Reason, w.reason) {
		t.Errorf("Reason = %q, want it to contain %q", got.Reason, w.reason)
	}
	if strings.ContainsAny(got.Reason, "\r\n") {
		t.Errorf("Reason is not one line: %q", got.Reason)
	}
	if len(got.Observations) != w.obs {
		t.Errorf("%d observations, want %d: %+v", len(got.Observations), w.obs, got.Observations)
	}
	for _, o := range got.Observations {
		if !o.ObservedAt.Equal(now) || !o.ResetKnown || o.Resource == "" || (o.Remaining == 0) != (o.Cause == quota.CauseExhausted) {
			t.Errorf("bad observation %+v", o)
		}
	}
}
