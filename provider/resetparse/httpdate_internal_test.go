package resetparse

import (
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/layoverhq/layover/internal/fuzzbound"
)

func TestHTTPTime(t *testing.T) {
	t.Parallel()
	for _, v := range []string{
		"Sun, 30 Nov 2025 10:00:00 GMT", "Thu, 29 Feb 2024 23:59:59 GMT", "Mon, 01 Jan 0001 00:00:00 GMT",
		"Sunday, 30-Nov-25 10:00:00 GMT", "Sun Nov 30 10:00:00 2025", // other HTTP forms go to http.ParseTime
		"Sun, 29 Feb 2025 10:00:00 GMT", "Sun, 30 Nov 2025 24:00:00 GMT", "Sun, 30 Nov 2025 10:00:00 UTC",
		"Xyz, 30 Nov 2025 10:00:00 GMT", "Sun, 3O Nov 2025 10:00:00 GMT", "Sun, 30 nov 2025 10:00:00 GMT", "",
	} {
		got, gotErr := httpTime(v)
		want, wantErr := http.ParseTime(v)
		if (gotErr == nil) != (wantErr == nil) || !got.Equal(want) {
			t.Errorf("%q: got %v, %v; http.ParseTime %v, %v", v, got, gotErr, want, wantErr)
		}
	}
}

// The fast path never disagrees with http.ParseTime.
func FuzzIMFFixdate(f *testing.F) {
	for _, s := range []string{"Sun, 30 Nov 2025 10:00:00 GMT", "Thu, 29 Feb 2024 23:59:59 GMT", "Sun, 31 Apr 2025 10:00:00 GMT"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		fuzzbound.Run(t, func() {
			got, gotErr := httpTime(v)
			want, wantErr := http.ParseTime(v)
			// The same instant in a zone of the same name and offset: each
			// parse of an unknown zone name makes a new Location.
			gotZone, gotOff := got.Zone()
			wantZone, wantOff := want.Zone()
			if (gotErr == nil) != (wantErr == nil) || !got.Equal(want) || gotZone != wantZone || gotOff != wantOff {
				t.Fatalf("%q: got %v (%v), %v; http.ParseTime %v (%v), %v", v, got, got.Location(), gotErr, want, want.Location(), wantErr)
			}
		})
	})
}

func BenchmarkHTTPTime(b *testing.B) {
	for _, bc := range []struct {
		name  string
		parse func(string) (time.Time, error)
	}{{"fast", httpTime}, {"http.ParseTime", http.ParseTime}} {
		b.Run(bc.name, func(b *testing.B) {
			for b.Loop() {
				_, _ = bc.parse("Sun, 30 Nov 2025 10:00:00 GMT")
			}
		})
	}
}

// Well-formed and nearly well-formed IMF-fixdates, field by field, so the
// fuzzer reaches the fast path's checks (days of months, leap years, hours
// past 23) that random strings rarely do.
func FuzzIMFFixdateFields(f *testing.F) {
	f.Add(uint8(6), uint8(30), uint8(10), uint16(2025), uint8(10), uint8(0), uint8(0))
	f.Add(uint8(3), uint8(29), uint8(1), uint16(2024), uint8(23), uint8(59), uint8(59))
	f.Fuzz(func(t *testing.T, wd, day, mon uint8, year uint16, hh, mm, ss uint8) {
		fuzzbound.Run(t, func() {
			days := []string{"Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun", "Mox", "sun"}
			months := []string{"Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec", "Foo", "jan"}
			v := fmt.Sprintf("%s, %02d %s %04d %02d:%02d:%02d GMT", days[int(wd)%len(days)], day%100,
				months[int(mon)%len(months)], year%10000, hh%100, mm%100, ss%100)
			got, gotErr := httpTime(v)
			want, wantErr := http.ParseTime(v)
			// The same instant in a zone of the same name and offset: each
			// parse of an unknown zone name makes a new Location.
			gotZone, gotOff := got.Zone()
			wantZone, wantOff := want.Zone()
			if (gotErr == nil) != (wantErr == nil) || !got.Equal(want) || gotZone != wantZone || gotOff != wantOff {
				t.Fatalf("%q: got %v, %v; http.ParseTime %v, %v", v, got, gotErr, want, wantErr)
			}
		})
	})
}
