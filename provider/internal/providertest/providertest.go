// Package providertest holds what the tests of the HTTP classifiers
// (anthropic, openai, gemini, github) share: the test clock, builders of
// responses and header values, the check of an expected outcome, and the
// ClassifyHTTP fuzz and benchmark harnesses.
package providertest

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/layoverhq/layover/internal/fuzzbound"
	"github.com/layoverhq/layover/provider"
	"github.com/layoverhq/layover/provider/internal/resetcheck"
	"github.com/layoverhq/layover/quota"
)

// Now is the test clock: 2026-08-05 12:00:00 UTC.
var Now = time.Date(2026, 8, 5, 12, 0, 0, 0, time.UTC)

// HTTPDate renders t as an HTTP-date, as a Date or Retry-After header
// writes it.
func HTTPDate(t time.Time) string { return t.UTC().Format(http.TimeFormat) }

// RFC3339 renders t as an RFC 3339 timestamp in UTC, to the second.
func RFC3339(t time.Time) string { return t.UTC().Format(time.RFC3339) }

// Epoch renders t as decimal epoch seconds.
func Epoch(t time.Time) string { return strconv.FormatInt(t.Unix(), 10) }

// Response builds a response with status code and header name/value pairs.
func Response(code int, kv ...string) *http.Response {
	h := http.Header{}
	for i := 0; i+1 < len(kv); i += 2 {
		h.Add(kv[i], kv[i+1])
	}
	return &http.Response{StatusCode: code, Status: strconv.Itoa(code) + " " + http.StatusText(code), Header: h}
}

// JSONQuote renders s as a JSON string, escaping backslashes, quotes and
// newlines (enough for the texts the tests quote).
func JSONQuote(s string) string {
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`).Replace(s) + `"`
}

// Want is the expected outcome of a classification.
type Want struct {
	Class      provider.Class
	Resource   string
	ResetAt    time.Time // zero: no reset
	RetryAfter time.Duration
	Remaining  int64
	Limit      int64
	Reason     string // a substring of Reason
	Obs        int    // number of observations
}

// Check compares got with w, and checks that got is provider p's and that
// its Reason is one line. The observations are only counted: what each
// must hold is the caller's to check ([CheckObservations], or the
// package's own rules).
func Check(t testing.TB, got provider.Outcome, p string, w Want) {
	t.Helper()
	if got.Provider != p {
		t.Errorf("Provider = %q", got.Provider)
	}
	if got.Class != w.Class {
		t.Errorf("Class = %q, want %q (reason %q)", got.Class, w.Class, got.Reason)
	}
	if got.Resource != w.Resource {
		t.Errorf("Resource = %q, want %q", got.Resource, w.Resource)
	}
	if !got.ResetAt.Equal(w.ResetAt) {
		t.Errorf("ResetAt = %v, want %v", got.ResetAt, w.ResetAt)
	}
	if got.RetryAfter != w.RetryAfter {
		t.Errorf("RetryAfter = %v, want %v", got.RetryAfter, w.RetryAfter)
	}
	if got.Remaining != w.Remaining || got.Limit != w.Limit {
		t.Errorf("Remaining, Limit = %d, %d; want %d, %d", got.Remaining, got.Limit, w.Remaining, w.Limit)
	}
	if !strings.Contains(got.Reason, w.Reason) {
		t.Errorf("Reason = %q, want it to contain %q", got.Reason, w.Reason)
	}
	if strings.ContainsAny(got.Reason, "\r\n") {
		t.Errorf("Reason is not one line: %q", got.Reason)
	}
	if len(got.Observations) != w.Obs {
		t.Errorf("%d observations, want %d: %+v", len(got.Observations), w.Obs, got.Observations)
	}
}

// CheckObservations checks the observations of a classifier that reads
// rate-limit headers (anthropic, openai): each was observed at Now, has a
// known reset and a resource, and has Cause exhausted exactly when nothing
// remains.
func CheckObservations(t testing.TB, got provider.Outcome) {
	t.Helper()
	for _, o := range got.Observations {
		if !o.ObservedAt.Equal(Now) || !o.ResetKnown || o.Resource == "" || (o.Remaining == 0) != (o.Cause == quota.CauseExhausted) {
			t.Errorf("bad observation %+v", o)
		}
	}
}

// ClassifyHTTP is the signature of a provider's ClassifyHTTP.
type ClassifyHTTP func(resp *http.Response, body []byte, now time.Time) provider.Outcome

// Seed is one seed of a ClassifyHTTP fuzzer: a status, header lines
// ("Name: value\n") and a body.
type Seed struct {
	Code int
	Hdr  string
	Body string
}

// FuzzHTTP fuzzes classify, the ClassifyHTTP of provider name, from seeds.
// Each input is a status (folded into 100 to 599), header lines and a body;
// its outcome at Now must pass resetcheck.CheckOutcome, and so must the
// outcome of the same response as curl -i prints it (when
// provider.ParseRawHTTP reads it). observe (nil: none) is the provider's
// Observations, whose every state must pass resetcheck.CheckState. derive
// (nil: none) returns, for an input, the resets a documented derivation
// may give besides those written in it (the extra of CheckOutcome).
func FuzzHTTP(f *testing.F, name string, seeds []Seed, classify ClassifyHTTP,
	observe func(h http.Header, now time.Time) []quota.State, derive func(input string) []time.Time) {
	for _, s := range seeds {
		f.Add(s.Code, s.Hdr, []byte(s.Body))
	}
	now := Now
	f.Fuzz(func(t *testing.T, code int, hdr string, body []byte) {
		fuzzbound.Run(t, func() {
			if code < 0 {
				code = -code
			}
			code = 100 + code%500
			input := hdr + "\n" + string(body)
			var extra []time.Time
			if derive != nil {
				extra = derive(input)
			}
			resp := &http.Response{StatusCode: code, Header: resetcheck.ParseHeaderText(hdr)}
			out := classify(resp, body, now)
			if err := resetcheck.CheckOutcome(out, name, input, now, extra...); err != nil {
				t.Fatalf("ClassifyHTTP(%d, %q, %q): %v", code, hdr, body, err)
			}
			if observe != nil {
				for _, s := range observe(resp.Header, now) {
					if err := resetcheck.CheckState(s, input, now); err != nil {
						t.Fatalf("Observations(%q): %v", hdr, err)
					}
				}
			}
			// The same response as curl -i prints it.
			raw := fmt.Sprintf("HTTP/1.1 %d\r\n%s\r\n\r\n", code, strings.ReplaceAll(hdr, "\n", "\r\n"))
			if r, b, err := provider.ParseRawHTTP(append([]byte(raw), body...)); err == nil {
				out := classify(r, b, now)
				if err := resetcheck.CheckOutcome(out, name, raw+string(body), now, extra...); err != nil {
					t.Fatalf("ClassifyHTTP(raw %q): %v", raw, err)
				}
			}
		})
	})
}

// Case is one response of a ClassifyHTTP benchmark.
type Case struct {
	Name string
	Resp *http.Response
	Body string
}

// BenchmarkHTTP measures classify on each case, as a sub-benchmark named
// after it, at Now.
func BenchmarkHTTP(b *testing.B, cases []Case, classify ClassifyHTTP) {
	for _, c := range cases {
		body := []byte(c.Body)
		b.Run(c.Name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(body)))
			for b.Loop() {
				classify(c.Resp, body, Now)
			}
		})
	}
}
