package provider

import (
	"strings"
	"unicode/utf8"

	"github.com/layoverhq/layover/redact"
	"github.com/layoverhq/layover/textsafe"
)

// MaxReason bounds an Outcome's Reason, in runes.
const MaxReason = 200

// cleanLookahead is how far past the 4n bytes that can hold n runes
// CleanText reads, so that a secret which starts inside the kept text and
// runs past that point is still whole enough to be recognised and masked.
const cleanLookahead = 128

// CleanText returns text a provider or a command printed in a form fit to
// store and show a person: one line without escape sequences or control,
// format or separator characters (textsafe.Line), runs of white
// space made one space and trimmed, every recognisable secret masked
// (redact), and at most n runes long, the last of them "…" when
// it was cut. Only the first 4n+128 bytes of s are read, so the cost is
// bounded whatever the length of s.
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
	// Line grows s only by turning a byte that is not UTF-8 into U+FFFD,
	// three bytes: this bound never cuts.
	s = strings.Join(strings.Fields(textsafe.Line(s, 3*len(s)+len(textsafe.Ellipsis))), " ")
	s = redact.String(s)
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	runes := 0
	for i := range s {
		if runes == n-1 {
			return strings.TrimRight(s[:i], " ") + "…"
		}
		runes++
	}
	return s
}

// CleanReason returns out with its Reason passed through CleanText at
// MaxReason runes. Every classifier returns its outcome through it, so no
// Reason carries a secret, a control character or more than MaxReason
// runes, whatever the provider printed.
func CleanReason(out Outcome) Outcome {
	out.Reason = CleanText(out.Reason, MaxReason)
	return out
}
