package textsafe_test

import (
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/layoverhq/layover/internal/fuzzbound"
	"github.com/layoverhq/layover/textsafe"
)

func TestLine(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, in string
		max      int
		want     string
	}{
		{"plain", "octocat", 39, "octocat"},
		{"unicode kept", "Zoë 日本 ✓", 100, "Zoë 日本 ✓"},
		{"colour", "\x1b[31mred\x1b[0m", 100, "red"},
		{"clear screen and home", "\x1b[2J\x1b[Hgone", 100, "gone"},
		{"private CSI", "\x1b[?25lhidden cursor", 100, "hidden cursor"},
		{"OSC title, BEL", "a\x1b]0;pwned\x07b", 100, "ab"},
		{"OSC 8 link, ST", "\x1b]8;;https://evil.example\x1b\\click\x1b]8;;\x1b\\", 100, "click"},
		{"unterminated OSC", "ok\x1b]0;rest of it", 100, "ok"},
		{"DCS", "a\x1bPq#0;2;0;0;0\x1b\\b", 100, "ab"},
		{"charset", "a\x1b(Bb", 100, "ab"},
		{"two-byte escape", "a\x1bcb", 100, "ab"},
		{"lone ESC", "a\x1b", 100, "a"},
		{"C1 CSI", "a\u009b31mb", 100, "ab"},
		{"C1 OSC to ST", "a\u009d0;x\u009cb", 100, "ab"},
		{"other C1", "a\u0085b", 100, "ab"},
		{"raw C1 byte is not UTF-8", "a\x9b31mb", 100, "a\uFFFD31mb"},
		{"C0 and DEL", "a\x00\x07\x08\x7fb", 100, "ab"},
		{"line breaks and tabs", "a\nb\r\nc\td", 100, "a b  c d"},
		{"bidi override", "user\u202Egnp.exe", 100, "usergnp.exe"},
		{"bidi isolates and marks", "\u2066a\u2069\u200fb\u061c", 100, "ab"},
		{"zero width and BOM", "a\u200bb\ufeff", 100, "ab"},
		{"line separator", "a\u2028b\u2029c", 100, "abc"},
		{"invalid UTF-8", "a\xffb", 100, "a\uFFFDb"},
		{"cut", "abcdefghij", 6, "abc…"},
		{"cut on a rune boundary", "ééééé", 7, "éé…"},
		{"bound too small for the ellipsis", "abcdef", 2, "ab"},
		{"zero bound", "abc", 0, ""},
		{"exactly the bound", "abcdef", 6, "abcdef"},
		{"bound counts what is left", "\x1b[31m" + strings.Repeat("x", 5), 5, "xxxxx"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := textsafe.Line(tt.in, tt.max); got != tt.want {
				t.Errorf("Line(%q, %d) = %q, want %q", tt.in, tt.max, got, tt.want)
			}
		})
	}
}

// A megabyte of input is cut, not copied whole: the work past the bound is
// a walk, the result max bytes.
func TestLineLong(t *testing.T) {
	t.Parallel()
	in := strings.Repeat("\x1b[1ma", 1<<20)
	got := textsafe.Line(in, 64)
	if len(got) > 64 || !strings.HasSuffix(got, textsafe.Ellipsis) || strings.ContainsRune(got, 0x1b) {
		t.Errorf("Line of a long hostile string = %q", got)
	}
}

// FuzzLine checks Line's invariants on any input: valid UTF-8, nothing a
// terminal acts on, at most max bytes, idempotent, safe text of at most max
// bytes left as it is, and within internal/fuzzbound's time bound.
func FuzzLine(f *testing.F) {
	for _, s := range []string{"octocat", "\x1b[31mred", "a\x1b]0;t\x07b", "\u202e", "é\xff\u009b1m", "a\nb"} {
		f.Add(s, 16)
	}
	f.Fuzz(func(t *testing.T, s string, max int) {
		max %= 512
		var out string
		fuzzbound.Run(t, func() { out = textsafe.Line(s, max) })
		if max < 1 && out != "" {
			t.Fatalf("Line(%q, %d) = %q, want \"\"", s, max, out)
		}
		if len(out) > max && max >= 0 {
			t.Fatalf("Line(%q, %d) = %q: %d bytes", s, max, out, len(out))
		}
		if !utf8.ValidString(out) {
			t.Fatalf("Line(%q, %d) = %q: not UTF-8", s, max, out)
		}
		for _, r := range out {
			if unicode.IsControl(r) || unicode.In(r, unicode.Cf, unicode.Zl, unicode.Zp) {
				t.Fatalf("Line(%q, %d) = %q holds %U", s, max, out, r)
			}
		}
		if again := textsafe.Line(out, max); again != out {
			t.Fatalf("Line is not idempotent: %q -> %q -> %q", s, out, again)
		}
		if len(s) <= max && utf8.ValidString(s) && !strings.ContainsFunc(s, func(r rune) bool {
			return unicode.IsControl(r) || unicode.In(r, unicode.Cf, unicode.Zl, unicode.Zp)
		}) && out != s {
			t.Fatalf("Line(%q, %d) = %q, want safe text left as it is", s, max, out)
		}
	})
}
