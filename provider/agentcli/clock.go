package agentcli

import (
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/layoverhq/layover/provider/resetparse"
)

// PastGrace is how long ago a printed time of day may be and still be
// read as today's: output is classified moments after the command printed
// it, so a reset written as "resets 4:50am" and read at 4:50:20 has just
// passed (the wait is over: probe) rather than being tomorrow's. A time
// further in the past means its next occurrence, and a date without a year
// the next such date.
const PastGrace = 5 * time.Minute

// reClock reads a reset written as a local time, at the start of a text:
// an optional date ("Apr 23 at", "Jan 12,", "Aug 8th, 2026"), a time of day
// on a 12-hour clock ("4:50am", "5pm", "3:28 PM") and an optional zone:
// an IANA name in parentheses ("(Europe/Rome)") or an abbreviation after
// a space ("PDT", "GMT+9").
var reClock = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`(?i)^(?:(jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)[a-z]{0,6}\.?[ \t]+(\d{1,2})(?:st|nd|rd|th)?(?:,?[ \t]+(\d{4}))?(?:[ \t]+at|,)?[ \t]+)?` +
		`(\d{1,2})(?::(\d{2}))?[ \t]*([ap])\.?m\b\.?` +
		`(?:[ \t]*\(([^()\r\n]{1,64})\)|(?-i:[ \t]+([A-Z]{2,5}(?:[+-]\d{1,2}(?::\d{2})?)?)\b))?`)
})

var months = map[string]time.Month{
	"jan": time.January, "feb": time.February, "mar": time.March, "apr": time.April,
	"may": time.May, "jun": time.June, "jul": time.July, "aug": time.August,
	"sep": time.September, "oct": time.October, "nov": time.November, "dec": time.December,
}

// zoneAbbrevs are the short zone names en-US formatting prints (Gemini
// CLI's "3:45 PM PDT"), as offsets east of UTC in hours. Ambiguous or
// unknown abbreviations are not guessed.
var zoneAbbrevs = map[string]int{
	"UTC": 0, "GMT": 0,
	"EST": -5, "EDT": -4, "CST": -6, "CDT": -5, "MST": -7, "MDT": -6,
	"PST": -8, "PDT": -7, "AKST": -9, "AKDT": -8, "HST": -10,
}

// zoneGeneric are the US generic zone names, which follow daylight time.
var zoneGeneric = map[string]string{
	"ET": "America/New_York", "CT": "America/Chicago", "MT": "America/Denver", "PT": "America/Los_Angeles",
}

var (
	reZoneName = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_+\-]{0,30}(?:/[A-Za-z0-9_+\-]{1,30}){0,3}$`)
	})
	reZoneOffset = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^(?:GMT|UTC)([+-])(\d{1,2})(?::(\d{2}))?$`) })
)

// zoneCache keeps the zones time.LoadLocation found (it reads a file on
// every call). It holds at most maxZones names.
var (
	zoneMu    sync.Mutex
	zoneCache = map[string]*time.Location{}
)

const maxZones = 256

// loadZone returns the zone an IANA name names, reading the system's zone
// database or, without one, the copy embedded by tzdata.go.
func loadZone(name string) (*time.Location, bool) {
	if name == "Local" || !reZoneName().MatchString(name) {
		return nil, false
	}
	zoneMu.Lock()
	z, ok := zoneCache[name]
	zoneMu.Unlock()
	if ok {
		return z, true
	}
	z, err := time.LoadLocation(name)
	if err != nil {
		return nil, false
	}
	zoneMu.Lock()
	if len(zoneCache) < maxZones {
		zoneCache[name] = z
	}
	zoneMu.Unlock()
	return z, true
}

// zoneOf reads a printed zone: an abbreviation of zoneAbbrevs, a US
// generic name, "GMT+9" / "UTC-3:30", or an IANA name.
func zoneOf(s string) (*time.Location, bool) {
	s = strings.TrimSpace(s)
	if h, ok := zoneAbbrevs[s]; ok {
		if h == 0 {
			return time.UTC, true
		}
		return time.FixedZone(s, h*3600), true
	}
	if name, ok := zoneGeneric[s]; ok {
		return loadZone(name)
	}
	if m := reZoneOffset().FindStringSubmatch(s); m != nil {
		h, _ := strconv.Atoi(m[2])
		mins := 0
		if m[3] != "" {
			mins, _ = strconv.Atoi(m[3])
		}
		if h > 14 || mins > 59 {
			return nil, false
		}
		off := h*3600 + mins*60
		if m[1] == "-" {
			off = -off
		}
		return time.FixedZone(s, off), true
	}
	return loadZone(s)
}

// clockAt reads a local time at the start of s (see reClock) as a reset
// seen at now, a time printed without a zone being in loc. found reports
// that s starts with a time of day; ok that it named a reset that exists:
// a known zone, a real date, a time the zone's clocks show (not one
// skipped by daylight saving), within resetparse's range. A time of day
// more than PastGrace ago means its next occurrence; a date without a
// year, the next such date.
func clockAt(s string, now time.Time, loc *time.Location) (reset time.Time, found, ok bool) {
	m := reClock().FindStringSubmatch(s)
	if m == nil {
		return time.Time{}, false, false
	}
	hour, _ := strconv.Atoi(m[4])
	minute := 0
	if m[5] != "" {
		minute, _ = strconv.Atoi(m[5])
	}
	if hour < 1 || hour > 12 || minute > 59 {
		return time.Time{}, true, false
	}
	hour %= 12
	if m[6] == "p" || m[6] == "P" {
		hour += 12
	}
	zone := loc
	switch {
	case m[7] != "":
		z, zok := zoneOf(m[7])
		if !zok {
			return time.Time{}, true, false
		}
		zone = z
	case m[8] != "":
		// "GMT+010", "PDT-x": not a zone this reader knows.
		if end := len(m[0]); end < len(s) && strings.IndexByte("+-:0123456789", s[end]) >= 0 {
			return time.Time{}, true, false
		}
		z, zok := zoneOf(m[8])
		if !zok {
			return time.Time{}, true, false
		}
		zone = z
	}
	local := now.In(zone)
	earliest := now.Add(-PastGrace)
	var t time.Time
	if m[1] != "" {
		month := months[strings.ToLower(m[1])]
		day, _ := strconv.Atoi(m[2])
		if m[3] != "" {
			year, _ := strconv.Atoi(m[3])
			t, ok = wallClock(year, month, day, hour, minute, zone)
		} else {
			t, ok = wallClock(local.Year(), month, day, hour, minute, zone)
			if !ok || t.Before(earliest) {
				t, ok = wallClock(local.Year()+1, month, day, hour, minute, zone)
			}
		}
	} else {
		t, ok = wallClock(local.Year(), local.Month(), local.Day(), hour, minute, zone)
		if ok && t.Before(earliest) {
			next := local.AddDate(0, 0, 1)
			t, ok = wallClock(next.Year(), next.Month(), next.Day(), hour, minute, zone)
		}
	}
	if !ok {
		return time.Time{}, true, false
	}
	if u := t.Unix(); u < resetparse.MinEpoch || u >= resetparse.MaxEpoch {
		return time.Time{}, true, false
	}
	return t, true, true
}

// wallClock is the instant zone's clocks show as the given date and time,
// false when there is none (February 30th, a time skipped by daylight
// saving).
func wallClock(year int, month time.Month, day, hour, minute int, zone *time.Location) (time.Time, bool) {
	if year < 1970 || year > 2200 || day < 1 || day > 31 {
		return time.Time{}, false
	}
	t := time.Date(year, month, day, hour, minute, 0, 0, zone)
	if t.Year() != year || t.Month() != month || t.Day() != day || t.Hour() != hour || t.Minute() != minute {
		return time.Time{}, false
	}
	return t, true
}

// findClock looks for lead (a regular expression ending where the time
// starts) in text and reads the time after it. found reports that some
// lead was followed by a time of day; ok, that the first such time is a
// reset (see clockAt); clock is the text read, for a Reason.
func findClock(text string, lead *regexp.Regexp, now time.Time, loc *time.Location) (reset time.Time, clock string, found, ok bool) {
	for _, ix := range lead.FindAllStringIndex(text, 16) {
		rest := text[ix[1]:]
		t, f, k := clockAt(rest, now, loc)
		if !f {
			continue
		}
		m := reClock().FindString(rest)
		return t, m, true, k
	}
	return time.Time{}, "", false, false
}
