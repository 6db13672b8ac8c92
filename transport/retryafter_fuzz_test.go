package transport

import (
	"net/http"
	"testing"
	"time"

	"github.com/layoverhq/layover/internal/fuzzbound"
	"github.com/layoverhq/layover/provider/resetparse"
)

// FuzzRetryAfter fuzzes the Retry-After a transient failure's retry honours:
// never a negative wait, and always the wait the providers' classifiers read
// from the same value and Date (resetparse.RetryAfter): one rule for
// seconds and HTTP-dates alike.
func FuzzRetryAfter(f *testing.F) {
	now := time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)
	for _, v := range []string{"30", " 120 ", "0", "-1", "86400", "86401", "1.5", "9223372036854775807", "+5",
		"Mon, 30 Nov 2026 10:01:00 GMT", "Monday, 30-Nov-26 09:00:00 GMT", "Mon Nov 30 10:00:30 2026", "soon", ""} {
		f.Add(v, "", now.Unix())
		f.Add(v, "Mon, 30 Nov 2026 09:00:00 GMT", now.Unix())
	}
	f.Fuzz(func(t *testing.T, v, dateHeader string, nowUnix int64) {
		fuzzbound.Run(t, func() {
			now := time.Unix(nowUnix%(1<<34), 0).UTC()
			d, ok := retryAfter(http.Header{"Retry-After": {v}, "Date": {dateHeader}}, now)
			if !ok && d != 0 {
				t.Fatalf("retryAfter(%q) = %v without ok", v, d)
			}
			if d < 0 {
				t.Fatalf("retryAfter(%q) = %v: a negative wait", v, d)
			}
			date, _ := resetparse.HTTPDate(dateHeader)
			if pd, pok := resetparse.RetryAfter(v, date, now); pok != ok || pd != d {
				t.Fatalf("Retry-After %q (Date %q): the transport reads %v, %v; the classifiers %v, %v", v, dateHeader, d, ok, pd, pok)
			}
		})
	})
}
