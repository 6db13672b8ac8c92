package redact

import (
	"slices"
	"strings"
	"testing"

	"github.com/layoverhq/layover/internal/fuzzbound"
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
		// Issue 8: the older 40-hex tokens. A bare one is a commit SHA; in a
		// token context or known, it is a secret.
		{"commit sha", "git checkout " + hex40, nil, "git checkout " + hex40},
		{"40-hex after token", "curl -H 'Authorization: token " + hex40 + "'", nil, "curl -H 'Authorization: token " + Mask + "'"},
		{"40-hex as GH_TOKEN", "env GH_TOKEN=" + hex40 + " gh api /user", nil, "env GH_TOKEN=" + Mask + " gh api /user"},
		{"40-hex as --token", "tool --token=" + hex40, nil, "tool --token=" + Mask},
		{"40-hex as access token", "git clone https://x-access-token:" + hex40 + "@github.com/o/r", nil, "git clone https://x-access-token:" + Mask + "@github.com/o/r"},
		{"40-hex as URL user", "git clone https://" + hex40 + "@github.com/o/r", nil, "git clone https://" + Mask + "@github.com/o/r"},
		{"40-hex in JSON", `{"token": "` + hex40 + `"}`, nil, `{"token": "` + Mask + `"}`},
		{"known 40-hex", "deploy " + hex40, []string{hex40}, "deploy " + Mask},
		{"password param", "postgres://u@db/x?password=s3cretpw99&sslmode=disable", nil, "postgres://u@db/x?password=" + Mask + "&sslmode=disable"},
		{"password word", "login --password hunter2hunter2hunter2", nil, "login --password " + Mask},
		{"variable reference", `curl -H "Authorization: token $GH_TOKEN" -d token=$TOKEN`, nil, `curl -H "Authorization: token $GH_TOKEN" -d token=$TOKEN`},
		{"token subcommand", "gh auth token --hostname=github.example.com", nil, "gh auth token --hostname=github.example.com"},
		{"token file", "--token-file=/etc/layover/serve-token-file", nil, "--token-file=/etc/layover/serve-token-file"},
		{"longest known first", "k=abcdefgh12345678", []string{"abcdefgh", "abcdefgh12345678"}, "k=" + Mask},
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

// hex40 is a classic GitHub token, or a commit SHA.
const hex40 = "0123456789abcdef0123456789abcdef01234567"

func TestContainsKnown(t *testing.T) {
	t.Parallel()
	if Contains("git checkout " + hex40) {
		t.Error("a bare commit SHA counts as a secret")
	}
	if !Contains("git checkout "+hex40, hex40) {
		t.Error("a known 40-hex value is not found")
	}
	if Contains("echo abc", "abc") {
		t.Error("a known value shorter than MinKnown is looked for")
	}
}

func TestKnownSecrets(t *testing.T) {
	t.Parallel()
	env := map[string]string{
		"GH_TOKEN":          " " + hex40 + "\n",
		"OPENAI_API_KEY":    "sk-proj-abc",
		"GITHUB_TOKEN":      hex40,
		"LAYOVER_STORE":     "postgres://layover:pg-pass-word@db/layover",
		"ANTHROPIC_API_KEY": "",
		"HOME":              "/home/me",
	}
	got := KnownSecrets(func(k string) string { return env[k] }, "extra-value", "", "postgres://ignored")
	want := []string{hex40, "sk-proj-abc", "pg-pass-word", "extra-value", "postgres://ignored"}
	if !slices.Equal(got, want) {
		t.Errorf("KnownSecrets = %q, want %q", got, want)
	}
	for loc, want := range map[string]string{
		"postgres://u:p%40ss@h/db":               "p@ss",
		"postgres://u@h/db?password=qwerty12345": "qwerty12345",
		"postgres://u@h/db":                      "",
		"/var/lib/layover.db":                    "",
		"sqlite:/x.db":                           "",
	} {
		if got := URLPassword(loc); got != want {
			t.Errorf("URLPassword(%q) = %q, want %q", loc, got, want)
		}
	}
}

func TestWriter(t *testing.T) {
	t.Parallel()
	var b strings.Builder
	w := &Writer{W: &b, Known: []string{"plain-secret-value"}}
	line := "[job-1] plain-secret-value ghp_abcdefghijklmnopqrstuvwxyz0123456789\n"
	if n, err := w.Write([]byte(line)); err != nil || n != len(line) {
		t.Fatalf("Write = %d, %v", n, err)
	}
	if want := "[job-1] " + Mask + " " + Mask + "\n"; b.String() != want {
		t.Errorf("wrote %q, want %q", b.String(), want)
	}
}

func FuzzString(f *testing.F) {
	f.Add("gh api ghp_abcdefghijklmnopqrstuvwxyz0123456789", "secretsecret")
	f.Add("Authorization: token abc", "")
	f.Add("GH_TOKEN=0123456789abcdef0123456789abcdef01234567 https://x-access-token:abc@h", "")
	f.Fuzz(func(t *testing.T, in, known string) {
		var out string
		fuzzbound.Run(t, func() { out = String(in, known) })
		// The hints only skip rules that cannot match: every rule run on
		// every text masks the same.
		if all := stringAllRules(in, known); out != all {
			t.Fatalf("String(%q) = %q, but every rule applied gives %q: a rule's hints miss a match", in, out, all)
		}
		// Masking only inserts Mask, so a known secret that shares no byte
		// with Mask can never be glued together again.
		if len(known) >= 8 && !strings.ContainsAny(known, Mask) && strings.Contains(out, known) {
			t.Fatalf("known secret %q survives in %q", known, out)
		}
		// Masked text holds nothing the rules would find again.
		if Contains(out) {
			t.Fatalf("String(%q) = %q still holds a recognisable secret", in, out)
		}
	})
}

// BenchmarkString measures masking a classifier's reason (about 150 bytes)
// with no secret in it, the common case, and with one.
//
//	go test -run '^$' -bench BenchmarkString -benchmem ./redact/
func BenchmarkString(b *testing.B) {
	for name, in := range map[string]string{
		"clean":  `HTTP 403 with "API rate limit exceeded for user ID 1." (resource core, reset 2026-12-01T12:00:00Z); x-ratelimit-remaining 0 of 5000`,
		"secret": `HTTP 401 with "Bad credentials" for Authorization: token ghp_abcdefghijklmnopqrstuvwxyz0123456789 (resource core)`,
	} {
		b.Run(name, func(b *testing.B) {
			for b.Loop() {
				_ = String(in, "known-secret-value")
			}
		})
	}
}

// stringAllRules is String without the hints: every rule runs.
func stringAllRules(s string, known ...string) string {
	s = Known(s, known...)
	for _, r := range rules() {
		s = r.re.ReplaceAllString(s, r.repl)
	}
	return s
}

// Every rule's sample secret is masked by String as it is by every rule
// applied, so no hint skips a rule that would have matched.
func TestHintsMissNoSecret(t *testing.T) {
	t.Parallel()
	for _, in := range []string{
		"ghp_abcdefghijklmnopqrstuvwxyz0123456789", "github_pat_11ABCDEFG0abcdefxyzjkl_mnopqrstuv",
		"sk-ant-api03-AbCdEfGhIjKlMnOp", "AIzaSyD-1234567890abcdefghijklmnopqrstu",
		"Authorization: Bearer abc.def", "AUTHORIZATION: token x1", "Bearer eyJhbGciOiJIUzI1NiJ9.abcdefghijklmnop",
		"PASSWORD hunter2hunter2hunter2x", "OPENAI_API_KEY=abcdefgh12", "x-access-token: abcdefghijklmnop1234",
		`"client_Secret": "abcdefghijklmnop1234"`, "https://user:pw@host/x", "https://abcdefghijklmnopqrstuvwxyz@github.com/o/r",
	} {
		if got, want := String(in), stringAllRules(in); got != want || got == in {
			t.Errorf("String(%q) = %q, want %q (masked)", in, got, want)
		}
	}
}
