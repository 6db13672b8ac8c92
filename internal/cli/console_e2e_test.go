package cli_test

import (
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/layoverhq/layover/internal/fake"
	"github.com/layoverhq/layover/quota"
	"github.com/layoverhq/layover/store/sqlite"
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
	// Bound to loopback, it answers no other site's name (DNS rebinding).
	req, _ := http.NewRequest("GET", base+"api/v1/jobs", nil)
	req.Host = "rebind.example"
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != http.StatusMisdirectedRequest {
		t.Errorf("Host rebind.example: %v %v; want 421", resp, err)
	} else {
		resp.Body.Close()
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

// consoleBase waits for serve's "console listening" line and returns the
// console's base URL, http://127.0.0.1:PORT/.
func consoleBase(t *testing.T, p *proc) string {
	t.Helper()
	line := p.waitLine(t, "console listening")
	m := regexp.MustCompile(`url=(http://127\.0\.0\.1:\d+/)`).FindStringSubmatch(line)
	if m == nil {
		t.Fatalf("no address in %q", line)
	}
	return m[1]
}

// The console judges quotas by serve's own policy: with --reserve 50 a
// key with 100 left is not held below its reserve (the default reserve of
// 500 would hold it until the reset), on the quota page and in
// /api/v1/quotas.
func TestServeConsoleUsesServesReserve(t *testing.T) {
	t.Parallel()
	b := setup(t, fake.GitHubConfig{})
	st, err := sqlite.Open(t.Context(), b.store)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	key := quota.Key{Host: "api.github.com", Principal: "octo", Resource: "core"}
	if err := errors.Join(st.RecordStates(t.Context(), []quota.State{{Key: key, Limit: 5000, Remaining: 100,
		ResetAt: now.Add(time.Hour), ResetKnown: true, ObservedAt: now, ObservedBy: "test"}}), st.Close()); err != nil {
		t.Fatal(err)
	}
	p := b.start("serve", "--listen", "127.0.0.1:0", "--reserve", "50")
	base := consoleBase(t, p)
	get := func(path string) string {
		t.Helper()
		resp, err := http.Get(base + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != 200 {
			t.Fatalf("GET /%s: %s", path, resp.Status)
		}
		return string(body)
	}
	var quotas []struct {
		Resource  string `json:"resource"`
		Cause     any    `json:"cause"`
		WaitUntil any    `json:"wait_until"`
	}
	if err := json.Unmarshal([]byte(get("api/v1/quotas")), &quotas); err != nil {
		t.Fatal(err)
	}
	found := false
	for _, q := range quotas {
		if q.Resource != "core" {
			continue
		}
		found = true
		if q.Cause != nil || q.WaitUntil != nil {
			t.Errorf("core with 100 left under --reserve 50: cause %v, wait_until %v; want neither", q.Cause, q.WaitUntil)
		}
	}
	if !found {
		t.Fatalf("/api/v1/quotas has no core key: %+v", quotas)
	}
	if page := get(""); !strings.Contains(page, `<td class="num">50</td>`) {
		t.Errorf("the quota page does not show the reserve of 50:\n%s", page)
	}
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if code := p.wait(t); code != 0 {
		t.Errorf("serve after SIGTERM: exit %d\n%s", code, p.stderr())
	}
}

// An address in use ends serve at once, exit 1 with one line naming it,
// before it registers as a host or claims the job that is due.
func TestServeListenInUseTouchesNoJob(t *testing.T) {
	t.Parallel()
	b := setup(t, fake.GitHubConfig{})
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	if r := b.layover("submit", "--id", "due-1", "--", "true"); r.code != 0 {
		t.Fatalf("submit: %d %s", r.code, r.stderr)
	}
	r := b.layover("serve", "--listen", busy.Addr().String())
	if r.code != 1 || !strings.Contains(r.stderr, "--listen "+busy.Addr().String()) || strings.Count(strings.TrimSpace(r.stderr), "\n") != 0 {
		t.Errorf("serve on a busy port: exit %d, stderr %q; want 1 and one line naming the address", r.code, r.stderr)
	}
	if j := b.show("due-1"); j.State != "ready" || len(j.Attempts) != 0 {
		t.Errorf("after serve failed to listen the job is %s with %d attempts; want ready with none", j.State, len(j.Attempts))
	}
	st, err := sqlite.Open(t.Context(), b.store)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if hosts, err := st.Hosts(t.Context()); err != nil || len(hosts) != 0 {
		t.Errorf("hosts after serve failed to listen: %v %v; want none", hosts, err)
	}
}
