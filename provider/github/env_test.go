package github

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// env returns a getenv over m.
func env(m map[string]string) func(string) string {
	return func(k string) string { return m[k] }
}

func TestAPIBase(t *testing.T) {
	t.Parallel()
	tests := []struct {
		value, base, host string
		errText           string
	}{
		{"", "https://api.github.com", "api.github.com", ""},
		{"   ", "https://api.github.com", "api.github.com", ""},
		{"https://api.github.com/", "https://api.github.com", "api.github.com", ""},
		{"https://GHES.Example.com/api/v3//", "https://GHES.Example.com/api/v3", "ghes.example.com", ""},
		{"https://ghes.example.com:443/api/v3", "https://ghes.example.com:443/api/v3", "ghes.example.com", ""},
		{"https://ghes.example.com:8443/api/v3", "https://ghes.example.com:8443/api/v3", "ghes.example.com:8443", ""},
		{"http://localhost:80/api", "http://localhost:80/api", "localhost", ""},
		{"http://127.0.0.1:8080", "http://127.0.0.1:8080", "127.0.0.1:8080", ""},
		{"http://[::1]:8080/", "http://[::1]:8080", "[::1]:8080", ""},
		{"https://api.acme.ghe.com", "https://api.acme.ghe.com", "api.acme.ghe.com", ""},
		{"api.github.com", "", "", "scheme must be http or https"},
		{"ftp://api.github.com", "", "", "scheme must be http or https"},
		{"https://", "", "", "no host"},
		{"https://user:hunter2@api.github.com", "", "", "must not contain credentials"},
		{"https://api.github.com/?x=1", "", "", "query or fragment"},
		{"https://api.github.com/#frag", "", "", "query or fragment"},
		{"https://api.github.com:99999", "", "", "bad port"},
		{"https://api.github.com:x", "", "", "does not parse"},
		{"http://%zz", "", "", "does not parse"},
	}
	for _, tt := range tests {
		t.Run(tt.value, func(t *testing.T) {
			t.Parallel()
			base, host, err := APIBase(env(map[string]string{"GITHUB_API_URL": tt.value}))
			if tt.errText != "" {
				if err == nil {
					t.Fatalf("APIBase(%q) = %q, %q; want an error", tt.value, base, host)
				}
				if !strings.Contains(err.Error(), "GITHUB_API_URL") || !strings.Contains(err.Error(), tt.errText) {
					t.Errorf("error %q should name GITHUB_API_URL and say %q", err, tt.errText)
				}
				if strings.Contains(err.Error(), "hunter2") {
					t.Errorf("error leaks the value: %q", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if base != tt.base || host != tt.host {
				t.Errorf("APIBase(%q) = %q, %q; want %q, %q", tt.value, base, host, tt.base, tt.host)
			}
		})
	}
}

func TestWebHost(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"api.github.com":      "github.com",
		"API.GitHub.com":      "github.com",
		"api.acme.ghe.com":    "acme.ghe.com",
		"ghes.example.com":    "ghes.example.com",
		"ghes.example.com:81": "ghes.example.com:81",
		"api.example.com":     "api.example.com",
	} {
		if got := WebHost(in); got != want {
			t.Errorf("WebHost(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestResolveToken(t *testing.T) {
	t.Parallel()
	errBoom := errors.New("boom")
	tests := []struct {
		name    string
		env     map[string]string
		gh      func(context.Context) (string, error)
		token   string
		source  TokenSource
		wantErr error
	}{
		{
			name:  "GH_TOKEN first",
			env:   map[string]string{"GH_TOKEN": " gh-env\n", "GITHUB_TOKEN": "github-env"},
			gh:    func(context.Context) (string, error) { t.Error("gh called"); return "gh-cli", nil },
			token: "gh-env", source: TokenFromGHToken,
		},
		{
			name:  "GITHUB_TOKEN second",
			env:   map[string]string{"GH_TOKEN": "  ", "GITHUB_TOKEN": "github-env"},
			gh:    func(context.Context) (string, error) { t.Error("gh called"); return "gh-cli", nil },
			token: "github-env", source: TokenFromGitHubToken,
		},
		{
			name:  "gh auth token third, trimmed",
			env:   map[string]string{},
			gh:    func(context.Context) (string, error) { return "gho_abc\n", nil },
			token: "gho_abc", source: TokenFromGH,
		},
		{
			name:   "nothing is not an error",
			env:    map[string]string{},
			gh:     func(context.Context) (string, error) { return "", nil },
			source: TokenNone,
		},
		{
			name:   "nil callback",
			env:    map[string]string{},
			source: TokenNone,
		},
		{
			name:    "callback failure",
			env:     map[string]string{},
			gh:      func(context.Context) (string, error) { return "", errBoom },
			source:  TokenNone,
			wantErr: errBoom,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			tok, src, err := ResolveToken(context.Background(), env(tt.env), tt.gh)
			if !errors.Is(err, tt.wantErr) || (tt.wantErr == nil && err != nil) {
				t.Fatalf("err = %v, want %v", err, tt.wantErr)
			}
			if tok != tt.token || src != tt.source {
				t.Errorf("got %q from %q, want %q from %q", tok, src, tt.token, tt.source)
			}
		})
	}
}

// fakeGH writes an executable gh script into a temp dir.
func fakeGH(t *testing.T, script string) string {
	t.Helper()
	if runtime.GOOS == "windows" {
		t.Skip("shell script fake gh")
	}
	p := filepath.Join(t.TempDir(), "gh")
	if err := os.WriteFile(p, []byte("#!/bin/sh\n"+script), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestGHAuthToken(t *testing.T) {
	t.Parallel()
	t.Run("prints the token for the web host", func(t *testing.T) {
		t.Parallel()
		gh := fakeGH(t, `[ "$1 $2 $3" = "auth token --hostname" ] || exit 9
echo "gho_for_$4"
`)
		tok, err := ghAuthToken(context.Background(), gh, "api.github.com")
		if err != nil || tok != "gho_for_github.com" {
			t.Fatalf("got %q, %v", tok, err)
		}
		tok, err = ghAuthToken(context.Background(), gh, "ghes.example.com")
		if err != nil || tok != "gho_for_ghes.example.com" {
			t.Fatalf("got %q, %v", tok, err)
		}
	})
	t.Run("not logged in is no token", func(t *testing.T) {
		t.Parallel()
		gh := fakeGH(t, "echo 'no oauth token found for github.com' >&2\nexit 1\n")
		tok, err := ghAuthToken(context.Background(), gh, "api.github.com")
		if err != nil || tok != "" {
			t.Fatalf("got %q, %v", tok, err)
		}
	})
	t.Run("gh not installed is no token", func(t *testing.T) {
		t.Parallel()
		tok, err := ghAuthToken(context.Background(), filepath.Join(t.TempDir(), "no-such-gh"), "api.github.com")
		if err != nil || tok != "" {
			t.Fatalf("got %q, %v", tok, err)
		}
	})
	t.Run("odd output is an error without the output", func(t *testing.T) {
		t.Parallel()
		gh := fakeGH(t, "echo 'secret-one secret-two'\n")
		_, err := ghAuthToken(context.Background(), gh, "api.github.com")
		if err == nil || strings.Contains(err.Error(), "secret") {
			t.Fatalf("err = %v", err)
		}
	})
	t.Run("cancelled context", func(t *testing.T) {
		t.Parallel()
		gh := fakeGH(t, "sleep 30\n")
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		if _, err := ghAuthToken(ctx, gh, "api.github.com"); !errors.Is(err, context.Canceled) {
			t.Fatalf("err = %v, want context.Canceled", err)
		}
	})
}
