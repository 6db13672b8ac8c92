// Package redact finds secrets in text before it is stored, logged or shown:
// tokens of the shapes providers issue, values standing in a token context
// (after "token", "Authorization:", "GH_TOKEN=", "password=", …), URL
// credentials, and the exact secret values the caller knows. docs/secrets.md
// states the rules and where layover refuses or masks.
//
// A bare 40-hex value is not a secret by its shape: it is also a git commit
// SHA. It is one when it stands in a token context or is a known value.
package redact

import (
	"io"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"sync"
)

// Mask replaces a secret.
const Mask = "[redacted]"

// MinKnown is the length in bytes under which a known value is not looked
// for: a short value (a 4-letter password) would mask ordinary words
// wherever it occurs. Shapes and contexts still find it where they apply.
const MinKnown = 8

// rule masks what re matches; repl keeps the non-secret groups around it.
// hints are lowercase words of which every match holds at least one: a text
// whose lowercase form holds none cannot match, and the regular expression,
// the costly part, is not run on it.
type rule struct {
	hints []string
	re    *regexp.Regexp
	repl  string
}

// contextHints are what every match of contextNames holds.
var contextHints = []string{"token", "secret", "passw", "key"}

// applies reports whether r can match a text whose lowercase form is lower.
func (r rule) applies(lower string) bool {
	for _, h := range r.hints {
		if strings.Contains(lower, h) {
			return true
		}
	}
	return false
}

// contextNames are the names after which a value is a secret, as the tail of
// a longer name too (GH_TOKEN, x-access-token, client_secret, OPENAI_API_KEY).
const contextNames = `(?:[A-Za-z0-9]+[_-])*(?:token|secret|password|passwd|api[_-]?key|access[_-]?key|private[_-]?key)`

// rules are compiled on first use, so programs that never redact pay nothing
// at start. A value that starts with '$' is a reference to a variable, not a
// secret; none of the rules matches Mask, so masked text holds no secret.
var rules = sync.OnceValue(func() []rule {
	return []rule{
		// GitHub: classic and fine-grained personal, OAuth, user-to-server,
		// server-to-server and refresh tokens.
		{[]string{"gh", "github_pat_"}, regexp.MustCompile(`\b(?:gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,})`), Mask},
		// OpenAI and Anthropic API keys; Google (Gemini) API keys.
		{[]string{"sk-"}, regexp.MustCompile(`\bsk-[A-Za-z0-9_\-]{16,}`), Mask},
		{[]string{"aiza"}, regexp.MustCompile(`\bAIza[0-9A-Za-z_\-]{30,}`), Mask},
		// Authorization header values.
		{[]string{"authorization"}, regexp.MustCompile(`(?i)\b(authorization:\s*(?:bearer|token|basic)\s+)[^\s'"\[$][^\s'"]*`), "${1}" + Mask},
		// A long value after the word bearer, token, password or secret.
		{[]string{"bearer", "token", "passw", "secret"}, regexp.MustCompile(`(?i)\b((?:bearer|token|password|passwd|secret)\s+)[A-Za-z0-9_\.=][A-Za-z0-9_\-\.=]{15,}`), "${1}" + Mask},
		// NAME=value where the name ends in a context name (GH_TOKEN=,
		// --token=, password=, ?access_token=): 8 bytes or more.
		{contextHints, regexp.MustCompile(`(?i)((?:^|[^A-Za-z0-9_])(?:--?)?` + contextNames + `["']?=["']?)[^\s"'$\[\]&;|<>(){}*]{8,}`), "${1}" + Mask},
		// name: value (x-access-token:, "token": "…", password: …): a
		// token-like value of 16 bytes or more.
		{contextHints, regexp.MustCompile(`(?i)((?:^|[^A-Za-z0-9_])` + contextNames + `["']?\s*:\s*["']?)[A-Za-z0-9_\.+/~][A-Za-z0-9_\-\.=+/~]{15,}`), "${1}" + Mask},
		// Passwords in URLs, and a token as a URL's whole user part
		// (https://TOKEN@github.com/…).
		{[]string{"://"}, regexp.MustCompile(`(://[^/\s:@]+:)[^@\s/\[$][^@\s/]*@`), "${1}" + Mask + "@"},
		{[]string{"://"}, regexp.MustCompile(`(://)[A-Za-z0-9_\-]{20,}@`), "${1}" + Mask + "@"},
	}
})

// String returns s with each known value (of MinKnown bytes or more) and
// every recognisable secret masked. Known values are masked longest first,
// so one that holds another is masked whole.
func String(s string, known ...string) string {
	s = Known(s, known...)
	lower := strings.ToLower(s)
	for _, r := range rules() {
		if r.applies(lower) {
			s = r.re.ReplaceAllString(s, r.repl)
			lower = strings.ToLower(s)
		}
	}
	return s
}

// Known returns s with each known value (of MinKnown bytes or more) masked,
// longest first, and nothing else changed: for a large input that is read
// further, where String's rules would cost more than the input is worth.
func Known(s string, known ...string) string {
	for _, k := range byLength(known) {
		s = strings.ReplaceAll(s, k, Mask)
	}
	return s
}

// Contains reports whether s holds a recognisable secret or one of the known
// values (of MinKnown bytes or more).
func Contains(s string, known ...string) bool {
	for _, k := range known {
		if len(k) >= MinKnown && strings.Contains(s, k) {
			return true
		}
	}
	lower := strings.ToLower(s)
	for _, r := range rules() {
		if r.applies(lower) && r.re.MatchString(s) {
			return true
		}
	}
	return false
}

// byLength returns the known values worth looking for, longest first.
func byLength(known []string) []string {
	out := make([]string, 0, len(known))
	for _, k := range known {
		if len(k) >= MinKnown {
			out = append(out, k)
		}
	}
	slices.SortStableFunc(out, func(a, b string) int { return len(b) - len(a) })
	return out
}

// SecretVars are the environment variables whose values are secrets wherever
// they appear: GitHub tokens, the LLM providers' keys and PostgreSQL's
// password.
var SecretVars = []string{
	"GH_TOKEN", "GITHUB_TOKEN", "GH_ENTERPRISE_TOKEN", "GITHUB_ENTERPRISE_TOKEN",
	"ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "OPENAI_API_KEY", "GEMINI_API_KEY", "GOOGLE_API_KEY",
	"PGPASSWORD",
}

// KnownSecrets returns the secret values an environment holds: the values
// of SecretVars, the password of the store URL in LAYOVER_STORE, and each
// of more (a token resolved elsewhere, the values of a job's variables, a
// --store URL's password). Values are trimmed of surrounding space; empty
// and repeated ones are left out.
func KnownSecrets(getenv func(string) string, more ...string) []string {
	var out []string
	add := func(v string) {
		if v = strings.TrimSpace(v); v != "" && !slices.Contains(out, v) {
			out = append(out, v)
		}
	}
	for _, name := range SecretVars {
		add(getenv(name))
	}
	add(URLPassword(getenv("LAYOVER_STORE")))
	for _, v := range more {
		add(v)
	}
	return out
}

// URLPassword returns the password a URL carries, in its user part or as a
// password parameter (PostgreSQL's form), or "".
func URLPassword(loc string) string {
	if !strings.Contains(loc, "://") {
		return ""
	}
	u, err := url.Parse(loc)
	if err != nil {
		return ""
	}
	if p, ok := u.User.Password(); ok && p != "" {
		return p
	}
	return u.Query().Get("password")
}

// Writer masks secrets in what it writes to W: the rules, and Known. Each
// Write is masked on its own, so a caller writes whole lines (log/slog's
// handlers and the host's output copier do). It is safe for concurrent use
// when W is.
type Writer struct {
	W     io.Writer
	Known []string
}

// Write implements io.Writer; it reports len(p) written when W took the
// masked text.
func (w *Writer) Write(p []byte) (int, error) {
	if _, err := io.WriteString(w.W, String(string(p), w.Known...)); err != nil {
		return 0, err
	}
	return len(p), nil
}
