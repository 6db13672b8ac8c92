package quota_test

import (
	"crypto/sha256"
	"encoding/hex"
	"regexp"
	"strings"
	"testing"

	"github.com/layoverhq/layover/quota"
)

func TestKeyString(t *testing.T) {
	t.Parallel()

	k := quota.Key{Host: "api.github.com", Principal: "octocat", Resource: "core"}
	if got, want := k.String(), "api.github.com/octocat/core"; got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
}

func TestTokenFingerprint(t *testing.T) {
	t.Parallel()

	hex12 := regexp.MustCompile(`^[0-9a-f]{12}$`)
	tests := []struct {
		name  string
		token string
		want  string
	}{
		// First 12 hex digits of the well-known SHA-256 test vectors.
		{name: "empty", token: "", want: "e3b0c44298fc"},
		{name: "abc", token: "abc", want: "ba7816bf8f01"},
		{name: "github token", token: "ghp_" + strings.Repeat("A", 36), want: sha12("ghp_" + strings.Repeat("A", 36))},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()

			fp := quota.TokenFingerprint(tt.token)
			if fp != tt.want {
				t.Errorf("TokenFingerprint(%q) = %q, want %q", tt.token, fp, tt.want)
			}
			if !hex12.MatchString(fp) {
				t.Errorf("TokenFingerprint(%q) = %q, want 12 lowercase hex digits", tt.token, fp)
			}
			if got, want := quota.TokenPrincipal(tt.token), "tok:"+tt.want; got != want {
				t.Errorf("TokenPrincipal(%q) = %q, want %q", tt.token, got, want)
			}
			if tt.token != "" && strings.Contains(quota.TokenPrincipal(tt.token), tt.token) {
				t.Errorf("TokenPrincipal(%q) contains the token", tt.token)
			}
		})
	}
}

func TestTokenFingerprintDistinguishesTokens(t *testing.T) {
	t.Parallel()

	a, b := quota.TokenFingerprint("ghp_one"), quota.TokenFingerprint("ghp_two")
	if a == b {
		t.Errorf("two tokens share fingerprint %q", a)
	}
	if again := quota.TokenFingerprint("ghp_one"); again != a {
		t.Errorf("fingerprint not stable: %q then %q", a, again)
	}
}

func sha12(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])[:12]
}
