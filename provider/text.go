package provider

import (
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/layoverhq/layover/internal/redact"
)

// MaxReason bounds an Outcome's Reason, in runes.
const MaxReason = 200

// cleanLookahead is how far past the 4n bytes that can hold n runes
// CleanText reads, so that a secret which starts inside the kept text and
// runs past that point is still whole enough to be recognised and masked.
const cleanLookahead = 128

// CleanText returns text a provider or a command printed in a form fit to
// store and show a person: on one line, with ANSI escape sequences removed,
// other control characters, invalid UTF-8 and runs of white space turned
// into one space, format characters (bidirectional overrides, zero-width
// characters) dropped, leading and trailing space trimmed, every
// recognisable secret masked (internal/redact), and at most n runes long,
// the last of them "…" when it was cut. Only the first 4n+128 bytes of s
// are read, so the cost is bounded whatever the length of s.
//
// Secrets are masked before the text is cut, so that a cut cannot leave a
// token too short to be recognised.
func CleanText(s string, n int) string {
	if n <= 0 {
		return ""
	}
	if limit := 4*n + cleanLookahead; len(s) > limit {
		s = s[:limit]
	}
	var b strings.Builder
	space := false
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == 0x1b:
			i += escapeLen(s[i:])
			continue
		case r == utf8.RuneError || unicode.IsControl(r) || unicode.IsSpace(r):
			space = b.Len() > 0
		case unicode.Is(unicode.Cf, r):
		default:
			if space {
				b.WriteByte(' ')
				space = false
			}
			b.WriteRune(r)
		}
		i += size
	}
	out := redact.String(b.String())
	if utf8.RuneCountInString(out) <= n {
		return out
	}
	runes := 0
	for i := range out {
		if runes == n-1 {
			return strings.TrimRight(out[:i], " ") + "…"
		}
		runes++
	}
	return out
}

// escapeLen returns the length of the ANSI escape sequence at the start of
// s, which starts with ESC: a CSI sequence (ESC [, parameter and
// intermediate bytes, a final byte), an OSC or other string sequence (ESC ],
// P, X, ^ or _, up to BEL or ESC \), else ESC and the one byte after it.
// An unterminated sequence runs to the end of s.
func escapeLen(s string) int {
	if len(s) < 2 {
		return len(s)
	}
	switch s[1] {
	case '[':
		for i := 2; i < len(s); i++ {
			if c := s[i]; c >= 0x40 && c <= 0x7e {
				return i + 1
			} else if c < 0x20 || c > 0x3f {
				// Not a parameter or intermediate byte: the sequence
				// is broken; drop what was read of it.
				return i
			}
		}
		return len(s)
	case ']', 'P', 'X', '^', '_':
		for i := 2; i < len(s); i++ {
			switch {
			case s[i] == 0x07:
				return i + 1
			case s[i] == 0x1b && i+1 < len(s) && s[i+1] == '\\':
				return i + 2
			}
		}
		return len(s)
	}
	_, size := utf8.DecodeRuneInString(s[1:])
	return 1 + size
}

// CleanReason returns out with its Reason passed through CleanText at
// MaxReason runes. Every classifier returns its outcome through it, so no
// Reason carries a secret, a control character or more than MaxReason
// runes, whatever the provider printed.
func CleanReason(out Outcome) Outcome {
	out.Reason = CleanText(out.Reason, MaxReason)
	return out
}
