package resetparse

import (
	"net/http"
	"time"
)

// httpTime parses an HTTP date as http.ParseTime does. The form every
// server sends (IMF-fixdate, "Sun, 30 Nov 2025 10:00:00 GMT") is read
// directly, without time.Parse's layout machinery: it is the Date of every
// response the transport observes. Anything else goes to http.ParseTime.
func httpTime(v string) (time.Time, error) {
	if t, ok := parseIMFFixdate(v); ok {
		return t, nil
	}
	return http.ParseTime(v)
}

// parseIMFFixdate reads exactly "Www, DD Mmm YYYY hh:mm:ss GMT" with a
// valid weekday name, month, day of that month and time of day; ok is false
// for anything else (the caller then tries the general parser, which
// decides). The weekday is not checked against the date, as time.Parse
// does not check it either.
func parseIMFFixdate(v string) (time.Time, bool) {
	const layoutLen = len("Sun, 30 Nov 2025 10:00:00 GMT")
	if len(v) != layoutLen || v[3] != ',' || v[4] != ' ' || v[7] != ' ' || v[11] != ' ' ||
		v[16] != ' ' || v[19] != ':' || v[22] != ':' || v[25:] != " GMT" {
		return time.Time{}, false
	}
	if !validWeekday(v[:3]) {
		return time.Time{}, false
	}
	month := monthOf(v[8:11])
	day, ok1 := digits(v[5:7])
	year, ok2 := digits(v[12:16])
	hour, ok3 := digits(v[17:19])
	minute, ok4 := digits(v[20:22])
	sec, ok5 := digits(v[23:25])
	if month == 0 || !ok1 || !ok2 || !ok3 || !ok4 || !ok5 ||
		day < 1 || day > daysIn(month, year) || hour > 23 || minute > 59 || sec > 59 {
		return time.Time{}, false
	}
	return time.Date(year, month, day, hour, minute, sec, 0, time.UTC), true
}

// digits reads a run of ASCII digits.
func digits(s string) (int, bool) {
	n := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int(c-'0')
	}
	return n, true
}

func validWeekday(s string) bool {
	switch s {
	case "Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun":
		return true
	}
	return false
}

// monthOf returns the month an English abbreviation names, 0 for none.
func monthOf(s string) time.Month {
	switch s {
	case "Jan":
		return time.January
	case "Feb":
		return time.February
	case "Mar":
		return time.March
	case "Apr":
		return time.April
	case "May":
		return time.May
	case "Jun":
		return time.June
	case "Jul":
		return time.July
	case "Aug":
		return time.August
	case "Sep":
		return time.September
	case "Oct":
		return time.October
	case "Nov":
		return time.November
	case "Dec":
		return time.December
	}
	return 0
}

// daysIn is the number of days of month m in year y.
func daysIn(m time.Month, y int) int {
	return time.Date(y, m+1, 0, 0, 0, 0, 0, time.UTC).Day()
}
