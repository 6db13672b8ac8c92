package transport

import (
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/layoverhq/layover/internal/fuzzbound"
	"github.com/layoverhq/layover/provider/resetparse"
)

// FuzzRetryAfter fuzzes the Retry-After a transient failure's retry honours:
// whole seconds up to a day, or an HTTP-date from now, never a negative
// wait, and the same wait the providers' classifiers read from the same
// value whenever both read it.
func FuzzRetryAfter(f *testing.F) {
	now := time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)
	for _, v := range []string{"30", " 120 ", "0", "-1", "86400", "86401", "1.5", "9223372036854775807", "+5",
		"Mon, 30 Nov 2026 10:01:00 GMT", "Monday, 30-Nov-26 09:00:00 GMT", "Mon Nov 30 10:00:30 2026", "soon", ""} {
		f.Add(v, now.Unix())
	}
	f.Fuzz(func(t *testing.T, v string, nowUnix int64) {
		fuzzbound.Run(t, func() {
			now := time.Unix(nowUnix%(1<<34), 0).UTC()
			d, ok := retryAfter(http.Header{"Retry-After": {v}}, now)
			if !ok {
				if d != 0 {
					t.Fatalf("retryAfter(%q) = %v without ok", v, d)
				}
			} else if d < 0 {
				t.Fatalf("retryAfter(%q) = %v: a negative wait", v, d)
			}
			s := strings.TrimSpace(v)
			if n, err := strconv.ParseInt(s, 10, 64); err == nil {
				if want := n >= 0 && n <= 86400; ok != want || ok && d != time.Duration(n)*time.Second {
					t.Fatalf("retryAfter(%q) = %v, %v; want %d s within a day", v, d, ok, n)
				}
			} else if at, err := http.ParseTime(s); err == nil && (!ok || d != max(at.Sub(now), 0)) {
				t.Fatalf("retryAfter(%q) = %v, %v; want the wait until %v", v, d, ok, at)
			}
			if pd, pok := resetparse.RetryAfter(v, time.Time{}, now); ok && pok && pd != d {
				t.Fatalf("Retry-After %q: the transport waits %v, the classifiers %v", v, d, pd)
			}
		})
	})
}
