// Package textsafe makes text layover did not write itself (a provider's
// answer, a login, a row another host of the fleet put in the shared store)
// safe to print to a terminal: one line, bounded, holding nothing a
// terminal acts on. It is a leaf: it imports nothing of layover's.
package textsafe

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// Ellipsis ends a line that Line cut.
const Ellipsis = "…"

// Line returns s as one line of at most max bytes that a terminal shows as
// text:
//   - an ANSI escape sequence (ESC or its C1 form: CSI, OSC, DCS, SOS, PM,
//     APC with their string, and two-byte escapes) is removed whole;
//   - a tab, line feed, carriage return, vertical tab or form feed becomes
//     a space;
//   - any other control character (C0, DEL, C1), format character (the
//     bidirectional overrides, embeddings, isolates and marks, zero-width
//     characters, the byte-order mark) and line or paragraph separator is
//     removed;
//   - a byte that is not UTF-8 becomes U+FFFD;
//   - a result longer than max bytes is cut on a rune boundary and ends
//     with Ellipsis, at most max bytes in all (max < 1: "").
//
// Line is idempotent, and leaves text that is already one safe line of at
// most max bytes as it is. It takes time linear in len(s).
func Line(s string, max int) string {
	if max < 1 {
		return ""
	}
	if safe(s) && len(s) <= max {
		return s
	}
	var b strings.Builder
	// Cutting needs at most max bytes and one rune more; an escape sequence
	// removed whole may be longer, so the input is walked to its end.
	for i := 0; i < len(s) && b.Len() <= max; {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == 0x1b:
			i += escapeLen(s[i:])
			continue
		case r >= 0x80 && r <= 0x9f:
			i += size + c1Len(r, s[i+size:])
			continue
		case r == '\t' || r == '\n' || r == '\r' || r == '\v' || r == '\f':
			b.WriteByte(' ')
		case r == utf8.RuneError && size == 1:
			b.WriteRune(utf8.RuneError)
		case !shown(r):
		default:
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	out := b.String()
	if len(out) <= max {
		return out
	}
	if max < len(Ellipsis) {
		return cut(out, max)
	}
	return cut(out, max-len(Ellipsis)) + Ellipsis
}

// safe reports whether Line leaves s as it is, bound aside.
func safe(s string) bool {
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 || !shown(r) {
			return false
		}
		i += size
	}
	return true
}

// shown reports whether r is printed as itself: not a control, format or
// separator character.
func shown(r rune) bool {
	return !unicode.IsControl(r) && !unicode.In(r, unicode.Cf, unicode.Zl, unicode.Zp)
}

// cut is s cut to at most n bytes on a rune boundary.
func cut(s string, n int) string {
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// escapeLen is the length of the escape sequence at the start of s, which
// begins with ESC: the ESC alone when no sequence follows it.
func escapeLen(s string) int {
	if len(s) < 2 {
		return len(s)
	}
	switch c := s[1]; {
	case c == '[':
		return 2 + csiLen(s[2:])
	case c == ']' || c == 'P' || c == 'X' || c == '^' || c == '_':
		return 2 + stringLen(s[2:])
	case c >= 0x20 && c <= 0x2f: // intermediates, then a final byte
		n := 1
		for n < len(s) && s[n] >= 0x20 && s[n] <= 0x2f {
			n++
		}
		if n < len(s) && s[n] >= 0x30 && s[n] <= 0x7e {
			n++
		}
		return n
	case c >= 0x30 && c <= 0x7e:
		return 2
	}
	return 1
}

// c1Len is the length of what follows the C1 control r in rest and belongs
// to it: a CSI's parameters, or the string of OSC, DCS, SOS, PM and APC.
func c1Len(r rune, rest string) int {
	switch r {
	case 0x9b:
		return csiLen(rest)
	case 0x9d, 0x90, 0x98, 0x9e, 0x9f:
		return stringLen(rest)
	}
	return 0
}

// csiLen is the length of a control sequence's parameter and intermediate
// bytes and its final byte at the start of s; a malformed sequence ends at
// the first byte that cannot belong to it.
func csiLen(s string) int {
	n := 0
	for n < len(s) && s[n] >= 0x30 && s[n] <= 0x3f {
		n++
	}
	for n < len(s) && s[n] >= 0x20 && s[n] <= 0x2f {
		n++
	}
	if n < len(s) && s[n] >= 0x40 && s[n] <= 0x7e {
		n++
	}
	return n
}

// stringLen is the length of a control string at the start of s through its
// terminator (BEL, ESC \ or the C1 ST); without one, all of s.
func stringLen(s string) int {
	for i := 0; i < len(s); i++ {
		switch {
		case s[i] == 0x07:
			return i + 1
		case s[i] == 0x1b && i+1 < len(s) && s[i+1] == '\\':
			return i + 2
		case s[i] == 0xc2 && i+1 < len(s) && s[i+1] == 0x9c:
			return i + 2
		}
	}
	return len(s)
}
