package cli_test

import (
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"

	"github.com/layoverhq/layover/internal/fake"
)

// consoleToken is the console token of these tests; no output holds it.
const consoleToken = "console-tok-7c1e55aa"

func TestServeListenRefusals(t *testing.T) {
	b := setup(t, fake.GitHubConfig{})
	write := func(name, body string, mode os.FileMode) string {
		p := filepath.Join(b.dir, name)
		if err := os.WriteFile(p, []byte(body), mode); err != nil {
			t.Fatal(err)
		}
		return p
	}
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"every interface without a token", []string{"--listen", ":9464"}, "not a loopback address"},
		{"a public address without a token", []string{"--listen", "192.0.2.1:9464"}, "not a loopback address"},
		{"no port", []string{"--listen", "127.0.0.1"}, "want HOST:PORT"},
		{"a token file others read", []string{"--listen", "127.0.0.1:0", "--token-file", write("open", consoleToken, 0o644)}, "chmod 600"},
		{"an empty token file", []string{"--listen", "127.0.0.1:0", "--token-file", write("empty", " \n", 0o600)}, "is empty"},
		{"no such token file", []string{"--listen", "127.0.0.1:0", "--token-file", filepath.Join(b.dir, "nope")}, "no such file"},
		{"a token file without --listen", []string{"--token-file", write("ok", consoleToken, 0o600)}, "needs --listen"},
	} {
		r := b.layover(append([]string{"serve"}, tc.args...)...)
		if r.code != 2 || !strings.Contains(r.stderr, tc.want) || strings.Count(strings.TrimSpace(r.stderr), "\n") != 0 {
			t.Errorf("%s: exit %d, stderr %q: want 2 and one line with %q", tc.name, r.code, r.stderr, tc.want)
		}
		if strings.Contains(r.stderr, consoleToken) {
			t.Errorf("%s: stderr holds the token", tc.name)
		}
	}
}

func TestServeConsoleCancelsThroughTheAPI(t *testing.T) {
	b := setup(t, fake.GitHubConfig{})
	tokenFile := filepath.Join(b.dir, "console-token")
	if err := os.WriteFile(tokenFile, []byte(consoleToken+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if r := b.layover("submit", "--id", "long-1", "--", "sleep", "600"); r.code != 0 {
		t.Fatalf("submit: %d %s", r.code, r.stderr)
	}
	p := b.start("serve", "--listen", "127.0.0.1:0", "--token-file", tokenFile)
	line := p.waitLine(t, "console listening")
	m := regexp.MustCompile(`url=(http://127\.0\.0\.1:\d+/)`).FindStringSubmatch(line)
	if m == nil {
		t.Fatalf("no address in %q", line)
	}
	base := m[1]
	call := func(method, path, token string) (int, string) {
		t.Helper()
		req, err := http.NewRequest(method, base+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		if strings.Contains(string(body), consoleToken) {
			t.Errorf("%s %s: the response holds the token", method, path)
		}
		return resp.StatusCode, string(body)
	}
	if code, body := call("GET", "healthz", ""); code != 200 {
		t.Errorf("healthz: %d %s", code, body)
	}
	if code, body := call("GET", "api/v1/jobs/long-1", ""); code != 200 || !strings.Contains(body, `"id": "long-1"`) {
		t.Errorf("job: %d %s", code, body)
	}
	if code, _ := call("POST", "api/v1/jobs/long-1/cancel", "wrong"); code != 403 {
		t.Errorf("cancel with a wrong token: %d", code)
	}
	code, body := call("POST", "api/v1/jobs/long-1/cancel", consoleToken)
	var j struct {
		State string `json:"state"`
	}
	if err := json.Unmarshal([]byte(body), &j); code != 200 || err != nil || j.State != "cancelled" {
		t.Errorf("cancel: %d %s", code, body)
	}
	if code, _ := call("GET", "", ""); code != 200 {
		t.Errorf("console: %d", code)
	}
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if code := p.wait(t); code != 0 {
		t.Errorf("serve after SIGTERM: exit %d\n%s", code, p.stderr())
	}
	if strings.Contains(p.stderr(), consoleToken) {
		t.Errorf("serve's log holds the token")
	}
	if r := b.layover("show", "long-1"); !strings.Contains(r.stdout, "state:     cancelled") {
		t.Errorf("show after the console's cancel:\n%s", r.stdout)
	}
}
