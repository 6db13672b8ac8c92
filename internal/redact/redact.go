// Package redact removes secrets from text before it is stored, logged or
// shown: tokens of the shapes providers issue, Authorization values, URL
// passwords, and any exact secret the caller knows.
package redact

import (
	"regexp"
	"strings"
	"sync"
)

// Mask replaces a secret.
const Mask = "[redacted]"

// rule masks what re matches; repl keeps the non-secret groups around it.
type rule struct {
	re   *regexp.Regexp
	repl string
}

// rules are compiled on first use, so programs that never redact pay nothing
// at start.
var rules = sync.OnceValue(func() []rule {
	return []rule{
		// GitHub: classic and fine-grained personal, OAuth, user-to-server,
		// server-to-server and refresh tokens.
		{regexp.MustCompile(`\b(?:gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,})`), Mask},
		// Anthropic and OpenAI API keys; Google API keys.
		{regexp.MustCompile(`\bsk-[A-Za-z0-9_\-]{16,}`), Mask},
		{regexp.MustCompile(`\bAIza[0-9A-Za-z_\-]{30,}`), Mask},
		// Authorization header values, and long values after "bearer"/"token".
		{regexp.MustCompile(`(?i)\b(authorization:\s*(?:bearer|token|basic)\s+)[^\s'"\[][^\s'"]*`), "${1}" + Mask},
		{regexp.MustCompile(`(?i)\b((?:bearer|token)\s+)[A-Za-z0-9_\-\.=]{16,}`), "${1}" + Mask},
		// Passwords in URLs.
		{regexp.MustCompile(`(://[^/\s:@]+:)[^@\s/\[][^@\s/]*@`), "${1}" + Mask + "@"},
	}
})

// String returns s with each known secret (of 8 bytes or more) and every
// recognisable secret masked.
func String(s string, known ...string) string {
	for _, k := range known {
		if len(k) >= 8 {
			s = strings.ReplaceAll(s, k, Mask)
		}
	}
	for _, r := range rules() {
		s = r.re.ReplaceAllString(s, r.repl)
	}
	return s
}

// Contains reports whether s holds a recognisable secret.
func Contains(s string) bool {
	for _, r := range rules() {
		if r.re.MatchString(s) {
			return true
		}
	}
	return false
}
