package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/layoverhq/layover/provider"
	"github.com/layoverhq/layover/provider/registry"
)

// classifyIn runs layover classify with args and stdin in this process and
// returns its exit code, stdout and stderr.
func classifyIn(t *testing.T, stdin string, args ...string) (int, string, string) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	env := &Env{Stdin: strings.NewReader(stdin), Stdout: &stdout, Stderr: &stderr}
	code := Main(context.Background(), env, append([]string{"classify"}, args...))
	return code, stdout.String(), stderr.String()
}

// secretTokens are one secret of each shape a provider's text may echo
// back: GitHub classic and fine-grained tokens, an Anthropic key, a Google
// API key and a bearer value.
var secretTokens = []string{
	"ghp_A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8",
	"github_pat_11ABCDEFG0abcdefghijkl_mnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789abcd",
	"sk-ant-api03-AbCdEfGhIjKlMnOpQrStUvWxYz0123456789",
	"AIzaSyD-1234567890abcdefghijklmnopqrstu",
	"Bearer eyJhbGciOiJIUzI1NiJ9.abcdefghijklmnop",
}

// leaks reports whether out shows any of secret's first 10 bytes: the
// part that tells one secret from another (for a bearer value, the first
// bytes of the value itself).
func leaks(out, secret string) bool { return strings.Contains(out, secret[:10]) }

// checkShown fails when text holds a control character or more than
// limit runes.
func checkShown(t *testing.T, what, text string, limit int) {
	t.Helper()
	if n := utf8.RuneCountInString(text); n > limit {
		t.Errorf("%s is %d runes, want at most %d: %q", what, n, limit, text)
	}
	if i := strings.IndexFunc(text, unicode.IsControl); i >= 0 {
		t.Errorf("%s holds a control character at %d: %q", what, i, text)
	}
}

// errorBodies wrap a message as each HTTP provider's 401 body does.
var errorBodies = map[string]func(msg string) string{
	"github": func(m string) string {
		return `{"message":` + jsonString(m) + `,"documentation_url":"https://docs.github.com/rest"}`
	},
	"anthropic": func(m string) string {
		return `{"type":"error","error":{"type":"authentication_error","message":` + jsonString(m) + `}}`
	},
	"openai": func(m string) string {
		return `{"error":{"message":` + jsonString(m) + `,"type":"invalid_request_error","param":null,"code":"invalid_api_key"}}`
	},
	"gemini": func(m string) string {
		return `{"error":{"code":401,"message":` + jsonString(m) + `,"status":"UNAUTHENTICATED"}}`
	},
}

func jsonString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// classify's reason names a provider's message without the secrets the
// message echoes back (issue 8 finding 5), bounded and without control
// characters.
func TestClassifyReasonHidesSecrets(t *testing.T) {
	t.Parallel()
	for _, name := range registry.HTTPNames() {
		if errorBodies[name] == nil {
			t.Fatalf("no error body for %s: every registered HTTP provider is classified here", name)
		}
	}
	for name, wrap := range errorBodies {
		for _, status := range []string{"401 Unauthorized", "403 Forbidden"} {
			for _, tok := range secretTokens {
				// The secret early, and across the point where a message
				// excerpt is cut.
				for _, msg := range []string{
					"Bad credentials: " + tok + " was refused",
					tok + " Bad credentials",
					"Bad credentials " + strings.Repeat("x", 60) + " " + tok,
				} {
					raw := "HTTP/1.1 " + status + "\r\ncontent-type: application/json\r\n\r\n" + wrap(msg)
					code, stdout, stderr := classifyIn(t, raw, "--provider", name, "--http", "-")
					if code != 0 {
						t.Fatalf("%s %s: exit %d: %s", name, status, code, stderr)
					}
					if leaks(stdout, tok) || leaks(stderr, tok) {
						t.Errorf("%s %s: the output shows %.10s…: %s", name, status, tok, stdout)
					}
					var out struct{ Reason string }
					if err := json.Unmarshal([]byte(stdout), &out); err != nil {
						t.Fatalf("%s: %v: %s", name, err, stdout)
					}
					if !strings.Contains(out.Reason, "Bad credentials") {
						t.Errorf("%s %s: reason %q does not quote the message", name, status, out.Reason)
					}
					checkShown(t, name+" reason", out.Reason, provider.MaxReason)
				}
			}
		}
	}
}

// A reason quoting a long message full of terminal escapes is bounded and
// has none of them.
func TestClassifyReasonBoundedAndPlain(t *testing.T) {
	t.Parallel()
	msg := "\x1b[31mBad credentials\x1b[0m\x07 \x1b]0;title\x07" + strings.Repeat("é\x1b[1m\r\n\t", 400)
	for name, wrap := range errorBodies {
		code, stdout, stderr := classifyIn(t, "HTTP/2 401\r\n\r\n"+wrap(msg), "--provider", name, "--http", "-")
		if code != 0 {
			t.Fatalf("%s: exit %d: %s", name, code, stderr)
		}
		var out struct{ Reason string }
		if err := json.Unmarshal([]byte(stdout), &out); err != nil {
			t.Fatalf("%s: %v: %s", name, err, stdout)
		}
		checkShown(t, name+" reason", out.Reason, provider.MaxReason)
		if strings.Contains(out.Reason, "[31m") || strings.Contains(out.Reason, "title") {
			t.Errorf("%s: reason %q keeps an escape sequence's text", name, out.Reason)
		}
		if !strings.Contains(out.Reason, "Bad credentials é é") {
			t.Errorf("%s: reason %q lost the message", name, out.Reason)
		}
	}
}

// A failed command's output is cleaned alike: gh echoing a token, an agent
// CLI printing one in its error.
func TestClassifyCommandReasonHidesSecrets(t *testing.T) {
	t.Parallel()
	for _, tok := range secretTokens {
		for _, p := range registry.CLINames() {
			stderr := "error: " + tok + " is not valid\x1b[0m\n"
			code, stdout, errOut := classifyIn(t, stderr, "--provider", p, "--exit", "1", "--stderr", "-")
			if code != 0 {
				t.Fatalf("%s: exit %d: %s", p, code, errOut)
			}
			if leaks(stdout, tok) {
				t.Errorf("%s: the output shows %.10s…: %s", p, tok, stdout)
			}
		}
	}
}

// An input that is not a well-formed response is refused with one line
// that does not quote the secret in it.
func TestClassifyErrorHidesSecrets(t *testing.T) {
	t.Parallel()
	for _, tok := range secretTokens {
		for _, raw := range []string{
			"HTTP/1.1 401 Unauthorized\r\nAuthorization " + tok + "\r\n\r\n{}",
			"HTTP/1.1 401 Unauthorized\r\n" + tok + " x: y\r\n\r\n{}",
			"HTTP/1.1 401 Unauthorized\r\n " + tok + "\r\n\r\n{}",
			tok + "\r\n\r\n{}",
			"HTTP/9 " + tok + "\r\n\r\n",
		} {
			code, stdout, stderr := classifyIn(t, raw, "--provider", "github", "--http", "-")
			if code != ExitUsage || stdout != "" {
				t.Fatalf("%q: exit %d, stdout %q; want exit %d and nothing", raw, code, stdout, ExitUsage)
			}
			if leaks(stderr, tok) {
				t.Errorf("%q: the error shows %.10s…: %s", raw, tok, stderr)
			}
			line := strings.TrimSuffix(stderr, "\n")
			if line == "" || strings.Contains(line, "\n") {
				t.Errorf("%q: want one error line, got %q", raw, stderr)
			}
			checkShown(t, "error line", line, maxErrorLine+len("layover: "))
		}
	}
}

// A classic 40-hex token has no shape to find it by; classify still never
// prints it when its environment holds it (GH_TOKEN), in a reason or in an
// error line.
func TestClassifyMasksKnownTokens(t *testing.T) {
	t.Parallel()
	const token = "0123456789abcdef0123456789abcdef01234567"
	run := func(stdin string, args ...string) (int, string, string) {
		var stdout, stderr bytes.Buffer
		env := &Env{Stdin: strings.NewReader(stdin), Stdout: &stdout, Stderr: &stderr,
			Getenv: func(k string) string {
				if k == "GH_TOKEN" {
					return token
				}
				return ""
			}}
		code := Main(context.Background(), env, append([]string{"classify"}, args...))
		return code, stdout.String(), stderr.String()
	}
	body := `{"message":"Bad credentials: ` + token + `","documentation_url":"https://docs.github.com/rest"}`
	code, out, errs := run("HTTP/2 401\r\ncontent-type: application/json\r\n\r\n"+body, "--provider", "github", "--http", "-")
	if code != 0 || !strings.Contains(out, `"class":"auth"`) || strings.Contains(out+errs, token[:16]) {
		t.Errorf("401 quoting the token: exit %d, stdout %q, stderr %q", code, out, errs)
	}
	code, out, errs = run("HTTP/2 401\r\nx-bad "+token+"\r\n\r\n", "--provider", "github", "--http", "-")
	if code != 2 || strings.Contains(out+errs, token[:16]) {
		t.Errorf("malformed line holding the token: exit %d, stdout %q, stderr %q", code, out, errs)
	}
	code, out, errs = run("gh: Bad credentials "+token+" (HTTP 401)\n", "--provider", "github", "--exit", "1", "--stderr", "-")
	if code != 0 || strings.Contains(out+errs, token[:16]) {
		t.Errorf("gh stderr quoting the token: exit %d, stdout %q, stderr %q", code, out, errs)
	}
}
