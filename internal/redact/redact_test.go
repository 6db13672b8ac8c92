package redact

import (
	"strings"
	"testing"
)

func TestString(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, in string
		known    []string
		want     string
	}{
		{"classic PAT", "gh api -H x ghp_abcdefghijklmnopqrstuvwxyz0123456789", nil, "gh api -H x " + Mask},
		{"fine-grained PAT", "token=github_pat_11AAAAAAA0aaaaaaaaaaaa_bbbbbbbbbbbbbbbbbbbbb", nil, "token=" + Mask},
		{"installation token", "ghs_16C7e42F292c6912E7710c838347Ae178B4a", nil, Mask},
		{"anthropic key", "ANTHROPIC_API_KEY=sk-ant-api03-abcdefghijklmnopqrstuv", nil, "ANTHROPIC_API_KEY=" + Mask},
		{"google key", "key=AIzaSyA1234567890abcdefghijklmnopqrstu", nil, "key=" + Mask},
		{"authorization header", "curl -H 'Authorization: Bearer abc.def'", nil, "curl -H 'Authorization: Bearer " + Mask + "'"},
		{"token word", "use token 0123456789abcdef0123 now", nil, "use token " + Mask + " now"},
		{"url credentials", "git clone https://user:s3cret@github.com/o/r", nil, "git clone https://user:" + Mask + "@github.com/o/r"},
		{"known secret", "deploy --key hunter2hunter2", []string{"hunter2hunter2"}, "deploy --key " + Mask},
		{"short known ignored", "echo abc", []string{"abc"}, "echo abc"},
		{"nothing", "gh pr create --title 'Nightly sync'", nil, "gh pr create --title 'Nightly sync'"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := String(tt.in, tt.known...); got != tt.want {
				t.Errorf("String(%q) = %q, want %q", tt.in, got, tt.want)
			}
			if Contains(String(tt.in, tt.known...)) {
				t.Errorf("redacted text still holds a recognisable secret")
			}
		})
	}
}

func FuzzString(f *testing.F) {
	f.Add("gh api ghp_abcdefghijklmnopqrstuvwxyz0123456789", "secretsecret")
	f.Add("Authorization: token abc", "")
	f.Fuzz(func(t *testing.T, in, known string) {
		out := String(in, known)
		// Masking only inserts Mask, so a known secret that shares no byte
		// with Mask can never be glued together again.
		if len(known) >= 8 && !strings.ContainsAny(known, Mask) && strings.Contains(out, known) {
			t.Fatalf("known secret %q survives in %q", known, out)
		}
	})
}
