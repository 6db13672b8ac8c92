package provider

import (
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/layoverhq/layover/internal/fuzzbound"
	"github.com/layoverhq/layover/redact"
)

func TestCleanText(t *testing.T) {
	t.Parallel()
	const pat = "ghp_abcdefghijklmnopqrstuvwxyz0123456789"
	tests := []struct {
		name, in string
		n        int
		want     string
	}{
		{"short", "short", 5, "short"},
		{"white space collapsed", "  two\n\tlines  ", 20, "two lines"},
		{"cut", "  two\n\tlines  ", 5, "two…"},
		{"cut at n runes", strings.Repeat("a", 10), 5, "aaaa…"},
		{"runes not bytes", "ééééééé", 5, "éééé…"},
		{"control removed", "a\x00b", 5, "ab"},
		{"exactly n", "abcde", 5, "abcde"},
		{"CSI", "\x1b[1;31mred\x1b[0m text", 20, "red text"},
		{"OSC to BEL", "\x1b]0;title\x07after", 20, "after"},
		{"OSC to ST", "\x1b]8;;http://x\x1b\\link\x1b]8;;\x1b\\", 20, "link"},
		{"two-byte escape", "\x1bcreset", 20, "reset"},
		{"broken CSI", "\x1b[12\nnext", 20, "next"},
		{"lone ESC", "end\x1b", 20, "end"},
		{"C1 control", "a\u0085b", 20, "ab"},
		{"C1 CSI", "a\u009b1mb", 20, "ab"},
		{"bidi override dropped", "abc\u202edef", 20, "abcdef"},
		{"invalid UTF-8", "a\xffb", 20, "a\ufffdb"},
		{"token masked", "Bad credentials " + pat, 80, "Bad credentials " + redact.Mask},
		// Masked before the cut: a cut through the token shows none of it.
		{"token across the cut", "0123456789 " + pat, 20, "0123456789 [redacte…"},
		{"token past what is read", strings.Repeat("a", 4*5+cleanLookahead) + pat, 5, "aaaa…"},
		{"token split by escapes", "ghp_abcdefghij\x1b[0mklmnopqrstuvwxyz0123456789", 80, redact.Mask},
		{"zero n", "abc", 0, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := CleanText(tt.in, tt.n); got != tt.want {
				t.Errorf("CleanText(%q, %d) = %q, want %q", tt.in, tt.n, got, tt.want)
			}
		})
	}
}

func TestCleanReason(t *testing.T) {
	t.Parallel()
	out := CleanReason(Unknown("github", ClassAuth, "401: token ghp_abcdefghijklmnopqrstuvwxyz0123456789\x1b[2J"+strings.Repeat(" x", 300)))
	if strings.Contains(out.Reason, "ghp_") || strings.ContainsRune(out.Reason, 0x1b) || utf8.RuneCountInString(out.Reason) > MaxReason {
		t.Errorf("reason %q", out.Reason)
	}
	if !strings.HasPrefix(out.Reason, "401: token [redacted] x x") {
		t.Errorf("reason %q lost its text", out.Reason)
	}
}

func FuzzCleanText(f *testing.F) {
	f.Add("Bad credentials ghp_abcdefghijklmnopqrstuvwxyz0123456789", 80)
	f.Add("\x1b[31mred\x1b]0;t\x07 \u202e sk-ant-api03-abcdefghijklmnopqrstuv", 20)
	f.Add("Authorization: Bearer abc.def\r\nkey=AIzaSyA1234567890abcdefghijklmnopqrstu", 200)
	f.Fuzz(func(t *testing.T, s string, n int) {
		n = 1 + (n&0x7fffffff)%300
		var got string
		fuzzbound.Run(t, func() { got = CleanText(s, n) })
		if !utf8.ValidString(got) {
			t.Fatalf("CleanText(%q, %d) = %q: not UTF-8", s, n, got)
		}
		if c := utf8.RuneCountInString(got); c > n {
			t.Fatalf("CleanText(%q, %d) = %q: %d runes", s, n, got, c)
		}
		if i := strings.IndexFunc(got, func(r rune) bool { return unicode.IsControl(r) || unicode.Is(unicode.Cf, r) }); i >= 0 {
			t.Fatalf("CleanText(%q, %d) = %q: control or format character at %d", s, n, got, i)
		}
		if got != strings.TrimSpace(got) || strings.Contains(got, "  ") {
			t.Fatalf("CleanText(%q, %d) = %q: white space not collapsed", s, n, got)
		}
		if redact.Contains(got) {
			t.Fatalf("CleanText(%q, %d) = %q: a secret is left", s, n, got)
		}
		if again := CleanText(got, n); again != got {
			t.Fatalf("CleanText is not idempotent: %q then %q", got, again)
		}
	})
}
