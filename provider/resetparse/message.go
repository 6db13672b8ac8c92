package resetparse

import (
	"strings"
	"time"
)

// Human-duration unit words, longest first where one is a prefix of another.
var humanUnits = []struct {
	name string
	ns   int64
}{
	{"milliseconds", int64(time.Millisecond)},
	{"millisecond", int64(time.Millisecond)},
	{"msecs", int64(time.Millisecond)},
	{"msec", int64(time.Millisecond)},
	{"ms", int64(time.Millisecond)},
	{"seconds", int64(time.Second)},
	{"second", int64(time.Second)},
	{"secs", int64(time.Second)},
	{"sec", int64(time.Second)},
	{"minutes", int64(time.Minute)},
	{"minute", int64(time.Minute)},
	{"mins", int64(time.Minute)},
	{"min", int64(time.Minute)},
	{"hours", int64(time.Hour)},
	{"hour", int64(time.Hour)},
	{"hrs", int64(time.Hour)},
	{"hr", int64(time.Hour)},
	{"days", int64(24 * time.Hour)},
	{"day", int64(24 * time.Hour)},
}

// HumanDuration parses a wait written in words, as Copilot, Kimi and Codex
// print it: one or more "<number> <unit>" parts ("2 hours", "58 hours",
// "1 seconds", "3 days 6 hours 57 minutes", "1 minute and 30 seconds"),
// separated by spaces, commas or "and". Units are milliseconds, seconds,
// minutes, hours and days, singular or plural, with the abbreviations ms,
// sec(s), min(s), hr(s). The whole of s must be the duration.
func HumanDuration(s string) (time.Duration, bool) {
	s = strings.TrimSpace(s)
	if len(s) > maxInput {
		return 0, false
	}
	d, n, ok := scanHuman(s)
	if !ok || n != len(s) {
		return 0, false
	}
	return d, true
}

// scanHuman reads a worded duration at the start of s and returns it, the
// bytes used, and whether at least one part was read and the total is at
// most MaxDelay.
func scanHuman(s string) (time.Duration, int, bool) {
	var total time.Duration
	i, parts, end := 0, 0, 0
	for {
		j := i
		if parts > 0 {
			// A separator: spaces, a comma, or "and".
			j = skipSpaces(s, j)
			if j < len(s) && s[j] == ',' {
				j = skipSpaces(s, j+1)
			}
			if rest := s[j:]; len(rest) > 4 && strings.EqualFold(rest[:3], "and") && (rest[3] == ' ' || rest[3] == '\t') {
				j = skipSpaces(s, j+3)
			}
		}
		_, n, _ := scanDecimal(s[j:], 1)
		if n == 0 {
			break
		}
		k := skipSpaces(s, j+n)
		var unit int64
		unitLen := 0
		for _, u := range humanUnits {
			if len(s)-k >= len(u.name) && strings.EqualFold(s[k:k+len(u.name)], u.name) {
				unit, unitLen = u.ns, len(u.name)
				break
			}
		}
		if unitLen == 0 || (k+unitLen < len(s) && isWordByte(s[k+unitLen])) {
			break
		}
		d, _, ok := scanDecimal(s[j:j+n], unit)
		if !ok {
			return 0, 0, false
		}
		total += d
		if total > MaxDelay {
			return 0, 0, false
		}
		parts++
		i = k + unitLen
		end = i
	}
	if parts == 0 {
		return 0, 0, false
	}
	return total, end, true
}

// skipSpaces returns the index of the first byte at or after i that is not
// a space or tab.
func skipSpaces(s string, i int) int {
	for i < len(s) && (s[i] == ' ' || s[i] == '\t') {
		i++
	}
	return i
}

// maxMessage bounds how much of a message MessageDelay scans.
const maxMessage = 64 << 10

// MessageDelay finds the first wait written in an error message after one of
// the phrases "retry in", "retry after", "try again in", "try again after"
// or "wait", case-insensitively, and parses it as a Go-style duration
// ("Please retry in 10h17m5.723541104s.", "Please retry in 644ms", "Please
// try again in 9.816s.") or in words ("please try again after 1 seconds",
// "Please try again in 2 hours.", "wait 6 seconds for your limit to
// reset"). Phrases without a number ("try again later", "wait a few
// minutes", "try again at 3:28 PM") say nothing and are skipped. Only the
// first 64 KiB of text is scanned.
func MessageDelay(text string) (time.Duration, bool) {
	if len(text) > maxMessage {
		text = text[:maxMessage]
	}
	for i := 0; i < len(text); i++ {
		c := text[i] | 0x20 // ASCII lower case; other bytes never match below
		if c != 'r' && c != 't' && c != 'w' || i > 0 && isWordByte(text[i-1]) {
			continue
		}
		end, ok := afterLead(text, i)
		if !ok {
			continue
		}
		rest := text[end:]
		if d, _, ok := scanCompact(rest); ok {
			return d, true
		}
		if d, _, ok := scanHuman(rest); ok {
			return d, true
		}
	}
	return 0, false
}

// afterLead reports whether a lead phrase starts at text[i] ("retry in",
// "retry after", "try again in", "try again after", "wait", each followed
// by white space) and returns where the text after it starts.
func afterLead(text string, i int) (int, bool) {
	if j, ok := word(text, i, "wait"); ok {
		return spaces(text, j)
	}
	j, ok := word(text, i, "retry")
	if !ok {
		if j, ok = word(text, i, "try"); !ok {
			return 0, false
		}
		if j, ok = spaces(text, j); !ok {
			return 0, false
		}
		if j, ok = word(text, j, "again"); !ok {
			return 0, false
		}
	}
	if j, ok = spaces(text, j); !ok {
		return 0, false
	}
	if k, ok := word(text, j, "in"); ok {
		return spaces(text, k)
	}
	if k, ok := word(text, j, "after"); ok {
		return spaces(text, k)
	}
	return 0, false
}

// word reports whether text has w (lower case) at i, case-insensitively,
// and returns the index after it.
func word(text string, i int, w string) (int, bool) {
	if len(text)-i < len(w) {
		return 0, false
	}
	for k := 0; k < len(w); k++ {
		c := text[i+k]
		if c >= 'A' && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != w[k] {
			return 0, false
		}
	}
	return i + len(w), true
}

// spaces skips at least one white-space byte (space, tab, CR, LF, FF, VT)
// at i and returns the index after the run.
func spaces(text string, i int) (int, bool) {
	j := i
	for j < len(text) && (text[j] == ' ' || text[j] >= '\t' && text[j] <= '\r') {
		j++
	}
	return j, j > i
}
