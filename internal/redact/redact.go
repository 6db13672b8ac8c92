// Package redact removes secrets from text before it is stored, logged or
// shown: tokens of the shapes providers issue, Authorization values, and any
// exact secret the caller knows.
package redact

import (
	"regexp"
	"strings"
)

// Mask replaces a secret.
const Mask = "[redacted]"

var patterns = []*regexp.Regexp{
	// GitHub: classic and fine-grained personal, OAuth, user-to-server,
	// server-to-server and refresh tokens.
	regexp.MustCompile(`\b(?:gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,})`),
	// Anthropic and OpenAI API keys, Google API keys.
	regexp.MustCompile(`\bsk-[A-Za-z0-9_\-]{16,}`),
	regexp.MustCompile(`\bAIza[0-9A-Za-z_\-]{30,}`),
	// Authorization header values and URL credentials.
	regexp.MustCompile(`(?i)\b(authorization:\s*(?:bearer|token|basic)\s+)\S+`),
	regexp.MustCompile(`(?i)\b((?:bearer|token)\s+)[A-Za-z0-9_\-\.=]{16,}`),
	regexp.MustCompile(`(://[^/\s:@]+:)[^@\s/]+@`),
}

// String returns s with every recognisable secret and each of known masked.
func String(s string, known ...string) string {
	for _, k := range known {
		if len(k) >= 8 {
			s = strings.ReplaceAll(s, k, Mask)
		}
	}
	for i, re := range patterns {
		switch {
		case i >= 3 && i <= 4:
			s = re.ReplaceAllString(s, "${1}"+Mask)
		case i == 5:
			s = re.ReplaceAllString(s, "${1}"+Mask+"@")
		default:
			s = re.ReplaceAllString(s, Mask)
		}
	}
	return s
}

// Contains reports whether s holds a recognisable secret.
func Contains(s string) bool {
	for _, re := range patterns {
		if re.MatchString(s) {
			return true
		}
	}
	return false
}
