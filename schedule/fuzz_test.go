package schedule_test

import (
	"testing"
	"time"

	"github.com/layoverhq/layover/internal/fuzzbound"
	"github.com/layoverhq/layover/schedule"
)

// FuzzParse: any expression and zone parse or fail without panicking, in
// bounded time, and a parsed one's slots move forward.
func FuzzParse(f *testing.F) {
	for _, s := range [][2]string{{"0 3 * * *", "Europe/Berlin"}, {"@every 2s", ""}, {"@hourly", "UTC"},
		{"*/5 1-3 * JAN-MAR MON,FRI", "America/New_York"}, {"CRON_TZ=UTC * * * * *", ""}, {"@every 0s", ""},
		{"0 0 29 2 *", "Asia/Tokyo"}, {"* * * * *", "../../etc/passwd"}} {
		f.Add(s[0], s[1])
	}
	from := time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, expr, tz string) {
		fuzzbound.Run(t, func() {
			e, err := schedule.Parse(expr, tz)
			if err != nil {
				return
			}
			n := e.Next(from)
			if !n.IsZero() && !n.After(from) {
				t.Fatalf("Parse(%q, %q).Next(%v) = %v, not after", expr, tz, from, n)
			}
			if l, ok := e.Latest(from, n); !n.IsZero() && (!ok || !l.Equal(n)) {
				t.Fatalf("Parse(%q, %q).Latest(%v, %v) = %v, %v; want the slot itself", expr, tz, from, n, l, ok)
			}
		})
	})
}
