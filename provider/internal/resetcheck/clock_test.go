package resetcheck

import (
	"testing"
	"time"
)

func TestClockExplained(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 8, 5, 12, 0, 0, 0, time.UTC)
	ny, err := time.LoadLocation("America/New_York")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		reset time.Time
		input string
		loc   *time.Location
		want  bool
	}{
		{time.Date(2026, 8, 6, 2, 50, 0, 0, time.UTC), "resets 4:50am (Europe/Rome)", nil, true},
		{time.Date(2026, 8, 6, 5, 0, 0, 0, time.UTC), "resets 1am", ny, true},
		{time.Date(2026, 8, 6, 5, 0, 0, 0, time.UTC), "resets 1am", nil, false}, // 1am UTC is not 05:00
		{time.Date(2026, 8, 5, 22, 45, 0, 0, time.UTC), "Access resets at 3:45 PM PDT.", nil, true},
		{time.Date(2026, 8, 5, 14, 30, 0, 0, time.UTC), "at 11:30 PM GMT+9", nil, true},
		{time.Date(2026, 8, 5, 22, 46, 0, 0, time.UTC), "Access resets at 3:45 PM PDT.", nil, false}, // a minute off
		{time.Date(2026, 8, 5, 22, 45, 30, 0, time.UTC), "3:45 PM PDT", nil, false},                  // seconds
		{time.Date(2027, 4, 23, 19, 0, 0, 0, time.UTC), "resets Apr 23 at 4pm (America/Recife)", nil, true},
		{time.Date(2027, 4, 24, 19, 0, 0, 0, time.UTC), "resets Apr 23 at 4pm (America/Recife)", nil, false}, // not the day written
		{time.Date(2029, 8, 5, 16, 0, 0, 0, time.UTC), "resets 4pm (UTC)", nil, false},                       // years away, no year written
		{time.Date(2020, 8, 8, 16, 30, 0, 0, time.UTC), "try again at Aug 8th, 2020 12:30 PM", ny, true},     // the year is written
		{time.Date(2026, 8, 5, 16, 0, 0, 0, time.UTC), "no time here", nil, false},
	} {
		if got := ClockExplained(tc.reset, tc.input, now, tc.loc); got != tc.want {
			t.Errorf("ClockExplained(%v, %q) = %v, want %v", tc.reset, tc.input, got, tc.want)
		}
	}
}
