package cli_test

import (
	"io"
	"net/http"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/layoverhq/layover/internal/fake"
)

// gatewayBase waits for the gateway's listening line and returns its URL.
func gatewayBase(t *testing.T, p *proc) string {
	t.Helper()
	line := p.waitLine(t, "layover gateway listening")
	m := regexp.MustCompile(`url=(http://127\.0\.0\.1:\d+)`).FindStringSubmatch(line)
	if m == nil {
		t.Fatalf("no address in %q", line)
	}
	return m[1]
}

func gatewayPost(t *testing.T, url string) (*http.Response, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(`{"model":"claude-sonnet-4-5","max_tokens":1}`))
	req.Header.Set("X-Api-Key", "sk-ant-api03-e2e-gateway-key-0123456789")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

// The real binary: layover gateway forwards to the fake Anthropic API,
// records its exhaustion in the store (layover status shows it, keyed by
// the organisation), then answers locally without calling the upstream;
// /metrics counts both, /healthz answers, SIGTERM stops it with exit 0.
func TestGatewayCommand(t *testing.T) {
	t.Parallel()
	b := setup(t, fake.GitHubConfig{})
	llm := fake.NewLLM(fake.LLMConfig{Kind: fake.Anthropic, RequestsPerWindow: 1, Window: 10 * time.Minute})
	up, err := llm.Start("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = llm.Close() })
	p := b.start("gateway", "--listen", "127.0.0.1:0", "--upstream", "anthropic="+up)
	base := gatewayBase(t, p)
	if resp, body := gatewayPost(t, base+"/anthropic/v1/messages"); resp.StatusCode != 200 {
		t.Fatalf("first request: %d %s", resp.StatusCode, body)
	}
	resp, body := gatewayPost(t, base+"/anthropic/v1/messages")
	if resp.StatusCode != 429 || resp.Header.Get("X-Layover-Deferred") != "1" || !strings.Contains(body, `"rate_limit_error"`) {
		t.Fatalf("second request: %d %v %s; want the gateway's own 429", resp.StatusCode, resp.Header, body)
	}
	if llm.Calls() != 1 {
		t.Errorf("%d upstream calls; want 1", llm.Calls())
	}
	host := strings.TrimPrefix(up, "http://")
	st := b.layover("status", "--json")
	if st.code != 0 || !regexp.MustCompile(`"host": "`+regexp.QuoteMeta(host)+`",\s*"principal": "org-fake"`).MatchString(st.stdout) {
		t.Errorf("status: %d\n%s\nwant the key of %s/org-fake", st.code, st.stdout, host)
	}
	if strings.Contains(st.stdout, "e2e-gateway-key") {
		t.Errorf("the key is in status")
	}
	mresp, err := http.Get(base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	metrics, _ := io.ReadAll(mresp.Body)
	mresp.Body.Close()
	for _, want := range []string{`layover_gateway_requests_total{outcome="ok",provider="anthropic"} 1`,
		`layover_gateway_requests_total{outcome="answered_locally",provider="anthropic"} 1`} {
		if !strings.Contains(string(metrics), want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	if h, err := http.Get(base + "/healthz"); err != nil || h.StatusCode != 200 {
		t.Errorf("/healthz: %v %v", h, err)
	} else {
		h.Body.Close()
	}
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if code := p.wait(t); code != 0 {
		t.Errorf("exit %d after SIGTERM; stderr:\n%s", code, p.stderr())
	}
	if strings.Contains(p.stderr(), "e2e-gateway-key") {
		t.Errorf("the key is in the log")
	}
}

// --max-held bounds the bodies held at once: with it at 1 KiB, a 2 KiB
// request on a key whose reset is within --max-hold is answered locally at
// once rather than held until the reset (about two minutes here, which is
// what the request would wait without the flag).
func TestGatewayMaxHeld(t *testing.T) {
	t.Parallel()
	b := setup(t, fake.GitHubConfig{})
	llm := fake.NewLLM(fake.LLMConfig{Kind: fake.Anthropic, RequestsPerWindow: 1, Window: 2 * time.Minute})
	up, err := llm.Start("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = llm.Close() })
	p := b.start("gateway", "--listen", "127.0.0.1:0", "--upstream", "anthropic="+up,
		"--max-hold", "10m", "--reset-margin", "0s", "--jitter", "0s", "--max-held", "1KiB")
	base := gatewayBase(t, p)
	if resp, body := gatewayPost(t, base+"/anthropic/v1/messages"); resp.StatusCode != 200 {
		t.Fatalf("first request: %d %s", resp.StatusCode, body)
	}
	pad := strings.Repeat("x", 2048)
	req, _ := http.NewRequest(http.MethodPost, base+"/anthropic/v1/messages",
		strings.NewReader(`{"model":"claude-sonnet-4-5","max_tokens":1,"metadata":{"user_id":"`+pad+`"}}`))
	req.Header.Set("X-Api-Key", "sk-ant-api03-e2e-gateway-key-0123456789")
	client := &http.Client{Timeout: 30 * time.Second}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatalf("the 2 KiB request: %v (held rather than answered at once?)", err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 429 || resp.Header.Get("X-Layover-Deferred") != "1" {
		t.Fatalf("the 2 KiB request: %d %v %s; want the gateway's own 429", resp.StatusCode, resp.Header, body)
	}
	if llm.Calls() != 1 {
		t.Errorf("%d upstream calls; want 1", llm.Calls())
	}
}

// Bad flags are one line and exit 2; a listen address other than
// loopback needs --allow-remote.
func TestGatewayBadFlags(t *testing.T) {
	t.Parallel()
	b := setup(t, fake.GitHubConfig{})
	for _, args := range [][]string{
		{"gateway", "--listen", "0.0.0.0:8089"},
		{"gateway", "--max-body", "lots"},
		{"gateway", "--max-held", "1"},
		{"gateway", "--upstream", "azure=https://x.example.com"},
		{"gateway", "--upstream", "openai=https://user:pw-secret@x.example.com"},
		{"gateway", "--max-hold", "-1s"},
		{"gateway", "extra"},
	} {
		r := b.layover(args...)
		if r.code != 2 || strings.Count(strings.TrimSpace(r.stderr), "\n") != 0 || strings.Contains(r.stderr, "pw-secret") {
			t.Errorf("%v: exit %d, stderr %q; want 2 and one line", args, r.code, r.stderr)
		}
	}
}
