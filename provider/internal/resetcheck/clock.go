package resetcheck

import (
	"regexp"
	"strconv"
	"strings"
	"time"
)

var (
	reClockTime  = regexp.MustCompile(`(?i)([0-9]{1,2})(?::([0-9]{2}))?[ \t]*([ap])\.?m`)
	reIANA       = regexp.MustCompile(`[A-Za-z][A-Za-z0-9_+\-]*(?:/[A-Za-z0-9_+\-]+)+|\bUTC\b|\bGMT\b`)
	reParens     = regexp.MustCompile(`\(([^()\r\n]{1,64})\)`)
	reAbbrev     = regexp.MustCompile(`\b[A-Z]{2,5}\b`)
	reGMTOffset  = regexp.MustCompile(`\b(?:GMT|UTC)([+-])([0-9]{1,2})(?::([0-9]{2}))?`)
	reYear       = regexp.MustCompile(`\b[0-9]{4}\b`)
	reDayOfMonth = regexp.MustCompile(`\b[0-9]{1,2}`)
)

// usZones are the offsets (hours east of UTC) of the zone abbreviations
// en-US formatting prints, and the zones of the US generic names.
var (
	usZones   = map[string]int{"EST": -5, "EDT": -4, "CST": -6, "CDT": -5, "MST": -7, "MDT": -6, "PST": -8, "PDT": -7, "AKST": -9, "AKDT": -8, "HST": -10}
	usGeneric = map[string]string{"ET": "America/New_York", "CT": "America/Chicago", "MT": "America/Denver", "PT": "America/Los_Angeles"}
)

// Clock bounds: a reset read from a time of day lies within this window
// around now, unless the input writes its year.
const (
	ClockPast   = time.Hour
	ClockFuture = 367 * 24 * time.Hour
)

// ClockExplained reports whether reset, observed at now, can be traced to
// a time of day the input writes on a 12-hour clock ("4:50am", "3:28 PM",
// "7pm"): in some zone — loc (for times printed without one), UTC, an IANA
// name the input writes (bare or in parentheses, "CET" too), a US
// abbreviation or generic name it writes ("PDT", "ET"), or "GMT+9" — the
// reset shows that
// hour and minute with
// zero seconds. It must lie between now − ClockPast and now + ClockFuture
// unless the input writes its year; more than 36 hours ahead, the input
// must also write its day of the month and its month's name.
func ClockExplained(reset time.Time, input string, now time.Time, loc *time.Location) bool {
	if reset.Second() != 0 || reset.Nanosecond() != 0 {
		return false
	}
	type hm struct{ h, m int }
	var clocks []hm
	for _, m := range reClockTime.FindAllStringSubmatch(input, 200) {
		h, _ := strconv.Atoi(m[1])
		mi := 0
		if m[2] != "" {
			mi, _ = strconv.Atoi(m[2])
		}
		if h < 1 || h > 12 || mi > 59 {
			continue
		}
		h %= 12
		if strings.EqualFold(m[3], "p") {
			h += 12
		}
		clocks = append(clocks, hm{h, mi})
	}
	if len(clocks) == 0 {
		return false
	}
	zones := []*time.Location{time.UTC}
	if loc != nil {
		zones = append(zones, loc)
	}
	for _, name := range reIANA.FindAllString(input, 50) {
		if name == "Local" {
			continue
		}
		if z, err := time.LoadLocation(name); err == nil {
			zones = append(zones, z)
		}
	}
	for _, m := range reParens.FindAllStringSubmatch(input, 50) {
		if name := strings.TrimSpace(m[1]); name != "Local" && name != "" {
			if z, err := time.LoadLocation(name); err == nil {
				zones = append(zones, z)
			}
		}
	}
	for _, a := range reAbbrev.FindAllString(input, 200) {
		if h, ok := usZones[a]; ok {
			zones = append(zones, time.FixedZone(a, h*3600))
		}
		if name, ok := usGeneric[a]; ok {
			if z, err := time.LoadLocation(name); err == nil {
				zones = append(zones, z)
			}
		}
		if z, err := time.LoadLocation(a); err == nil && a != "Local" { // "CET", "EST5EDT"
			zones = append(zones, z)
		}
	}
	for _, m := range reGMTOffset.FindAllStringSubmatch(input, 50) {
		h, _ := strconv.Atoi(m[2])
		mi, _ := strconv.Atoi(m[3])
		off := h*3600 + mi*60
		if m[1] == "-" {
			off = -off
		}
		zones = append(zones, time.FixedZone("offset", off))
	}
	for _, z := range zones {
		local := reset.In(z)
		match := false
		for _, c := range clocks {
			if local.Hour() == c.h && local.Minute() == c.m {
				match = true
				break
			}
		}
		if !match {
			continue
		}
		if !inWindow(local, input, now) {
			continue
		}
		return true
	}
	return false
}

// inWindow checks a clock reset's date against the input and now.
func inWindow(local time.Time, input string, now time.Time) bool {
	yearWritten := false
	for _, y := range reYear.FindAllString(input, 100) {
		if y == strconv.Itoa(local.Year()) {
			yearWritten = true
			break
		}
	}
	d := local.Sub(now)
	if !yearWritten && (d < -ClockPast || d > ClockFuture) {
		return false
	}
	if d <= 36*time.Hour && d >= -ClockPast {
		return true
	}
	if !strings.Contains(strings.ToLower(input), strings.ToLower(local.Month().String()[:3])) {
		return false
	}
	for _, n := range reDayOfMonth.FindAllString(input, 400) {
		if v, _ := strconv.Atoi(n); v == local.Day() {
			return true
		}
	}
	return false
}
