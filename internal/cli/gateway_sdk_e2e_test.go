package cli_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/url"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/anthropics/anthropic-sdk-go/v2"
	anthropicopt "github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/openai/openai-go/v3"
	openaiopt "github.com/openai/openai-go/v3/option"

	"github.com/layoverhq/layover/internal/fake"
	"github.com/layoverhq/layover/internal/view"
	"github.com/layoverhq/layover/store/postgres/pgtest"
)

// gatewayStores are the stores the gateway's end-to-end tests run on.
var gatewayStores = map[string]func(t *testing.T) string{
	"sqlite":   func(t *testing.T) string { return filepath.Join(t.TempDir(), "layover.db") },
	"postgres": func(t *testing.T) string { return pgtest.Schema(t) },
}

// gwWorld is a real `layover gateway` in front of fake Anthropic and
// OpenAI APIs, on one store.
type gwWorld struct {
	b         *bundle
	base      string // the gateway's base URL
	anth, oai *fake.LLM
	anthHost  string // the fake Anthropic API's host:port, the ledger's host
	oaiHost   string
}

// startGateway starts the fakes (cfg's Kind is set for each) and the
// gateway on store, holding at most a second.
func startGateway(t *testing.T, store string, cfg fake.LLMConfig) *gwWorld {
	t.Helper()
	b := setup(t, fake.GitHubConfig{})
	b.env["LAYOVER_STORE"] = store
	w := &gwWorld{b: b}
	var urls [2]string
	for i, kind := range []fake.LLMKind{fake.Anthropic, fake.OpenAI} {
		c := cfg
		c.Kind = kind
		l := fake.NewLLM(c)
		u, err := l.Start("127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { l.Close() })
		urls[i] = u
		if i == 0 {
			w.anth, w.anthHost = l, strings.TrimPrefix(u, "http://")
		} else {
			w.oai, w.oaiHost = l, strings.TrimPrefix(u, "http://")
		}
	}
	p := b.start("gateway", "--listen", "127.0.0.1:0", "--store", store, "--max-hold", "1s",
		"--upstream", "anthropic="+urls[0], "--upstream", "openai="+urls[1])
	w.base = gatewayBase(t, p)
	return w
}

func (w *gwWorld) anthropic() anthropic.Client {
	return anthropic.NewClient(anthropicopt.WithBaseURL(w.base+"/anthropic"), anthropicopt.WithAPIKey("sk-ant-e2e"),
		anthropicopt.WithMaxRetries(0))
}

func (w *gwWorld) openai() openai.Client {
	return openai.NewClient(openaiopt.WithBaseURL(w.base+"/openai/v1"), openaiopt.WithAPIKey("sk-e2e"),
		openaiopt.WithMaxRetries(0))
}

var anthParams = anthropic.MessageNewParams{Model: "claude-sonnet-4-5", MaxTokens: 64,
	Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("hi"))}}

var oaiParams = openai.ChatCompletionNewParams{Model: "gpt-4o",
	Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")}}

// exhausted reports whether `layover status --json` shows host's key with
// none left.
func (w *gwWorld) exhausted(t *testing.T, host string) bool {
	t.Helper()
	r := w.b.layover("status", "--json")
	var st view.Status
	if err := json.Unmarshal([]byte(r.stdout), &st); err != nil {
		t.Fatalf("status --json: %v\n%s%s", err, r.stdout, r.stderr)
	}
	for _, q := range st.Quota {
		if q.Host == host && (q.Remaining == float64(0) || q.Cause != nil) {
			return true
		}
	}
	t.Logf("status --json:\n%s", r.stdout)
	return false
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// Through the gateway, the official SDKs get the provider's answers; a
// quota hit reaches the upstream once and is recorded in the store, and
// every later request is answered by the gateway itself, 429 in the
// provider's own error format, with no further upstream call.
func TestGatewaySDKsQuotaHitAnsweredLocally(t *testing.T) {
	t.Parallel()
	for name, store := range gatewayStores {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			// A window of an hour: the reset is far beyond --max-hold.
			w := startGateway(t, store(t), fake.LLMConfig{Window: time.Hour})
			ctx := ctxT(t)

			ac := w.anthropic()
			msg, err := ac.Messages.New(ctx, anthParams)
			if err != nil || len(msg.Content) != 1 || msg.Content[0].Text != "ok" {
				t.Fatalf("anthropic: %v %+v", err, msg)
			}
			w.anth.Exhaust()
			var ae *anthropic.Error
			if _, err := ac.Messages.New(ctx, anthParams); !errors.As(err, &ae) || ae.StatusCode != 429 {
				t.Fatalf("anthropic over the limit: %v", err)
			}
			for range 3 {
				_, err := ac.Messages.New(ctx, anthParams)
				if !errors.As(err, &ae) || ae.StatusCode != 429 || ae.Type() != "rate_limit_error" {
					t.Fatalf("anthropic held back: %v", err)
				}
				if ae.Response.Header.Get("x-layover-deferred") != "1" || ae.Response.Header.Get("retry-after") == "" {
					t.Fatalf("anthropic held back: headers %v", ae.Response.Header)
				}
			}
			if n := w.anth.Calls(); n != 2 {
				t.Fatalf("the Anthropic upstream had %d calls, want 2 (the success, the one rejection)", n)
			}
			if !w.exhausted(t, w.anthHost) {
				t.Fatalf("the store does not show the Anthropic key exhausted")
			}

			oc := w.openai()
			cc, err := oc.Chat.Completions.New(ctx, oaiParams)
			if err != nil || len(cc.Choices) != 1 || cc.Choices[0].Message.Content != "ok" {
				t.Fatalf("openai: %v %+v", err, cc)
			}
			w.oai.Exhaust()
			var oe *openai.Error
			if _, err := oc.Chat.Completions.New(ctx, oaiParams); !errors.As(err, &oe) || oe.StatusCode != 429 {
				t.Fatalf("openai over the limit: %v", err)
			}
			for range 3 {
				_, err := oc.Chat.Completions.New(ctx, oaiParams)
				if !errors.As(err, &oe) || oe.StatusCode != 429 || oe.Code != "rate_limit_exceeded" {
					t.Fatalf("openai held back: %v", err)
				}
				if oe.Response.Header.Get("x-layover-deferred") != "1" {
					t.Fatalf("openai held back: headers %v", oe.Response.Header)
				}
			}
			if n := w.oai.Calls(); n != 2 {
				t.Fatalf("the OpenAI upstream had %d calls, want 2", n)
			}
			if !w.exhausted(t, w.oaiHost) {
				t.Fatalf("the store does not show the OpenAI key exhausted")
			}
		})
	}
}

// The SDKs' streaming APIs get every event, whole and in order, and each
// arrives before the fake writes the next (the fake's gate holds every
// delta until the client has the one before): the gateway flushes event
// by event.
func TestGatewayStreamsEventByEvent(t *testing.T) {
	t.Parallel()
	gate := make(chan struct{})
	w := startGateway(t, filepath.Join(t.TempDir(), "layover.db"), fake.LLMConfig{StreamGate: gate, StreamEvents: 3})
	want := fake.StreamDelta(0) + fake.StreamDelta(1) + fake.StreamDelta(2)

	ctx := ctxT(t)
	ac := w.anthropic()
	s := ac.Messages.NewStreaming(ctx, anthParams)
	var types []string
	var text strings.Builder
	sent := 0
	for s.Next() {
		ev := s.Current()
		types = append(types, string(ev.Type))
		if d, ok := ev.AsAny().(anthropic.ContentBlockDeltaEvent); ok {
			text.WriteString(d.Delta.Text)
		}
		// The SDK skips the ping that follows content_block_start.
		if (ev.Type == "content_block_start" || ev.Type == "content_block_delta") && sent < 3 {
			gate <- struct{}{}
			sent++
		}
	}
	if err := s.Err(); err != nil {
		t.Fatalf("anthropic stream: %v (events %v)", err, types)
	}
	wantTypes := "message_start,content_block_start,content_block_delta,content_block_delta,content_block_delta,content_block_stop,message_delta,message_stop"
	if strings.Join(types, ",") != wantTypes || text.String() != want {
		t.Fatalf("anthropic stream: events %v, text %q", types, text.String())
	}

	oc := w.openai()
	ostr := oc.Chat.Completions.NewStreaming(ctx, oaiParams)
	text.Reset()
	chunks, sent := 0, 0
	for ostr.Next() {
		c := ostr.Current()
		chunks++
		if len(c.Choices) > 0 {
			text.WriteString(c.Choices[0].Delta.Content)
		}
		if sent < 3 {
			gate <- struct{}{}
			sent++
		}
	}
	if err := ostr.Err(); err != nil {
		t.Fatalf("openai stream: %v", err)
	}
	if chunks != 5 || text.String() != want {
		t.Fatalf("openai stream: %d chunks, text %q", chunks, text.String())
	}
}

// A client that goes away mid-stream cancels the gateway's upstream call.
func TestGatewayDisconnectCancelsUpstream(t *testing.T) {
	t.Parallel()
	gate := make(chan struct{})
	w := startGateway(t, filepath.Join(t.TempDir(), "layover.db"), fake.LLMConfig{StreamGate: gate})
	ctx, cancel := context.WithCancel(ctxT(t))
	ac := w.anthropic()
	s := ac.Messages.NewStreaming(ctx, anthParams)
	if !s.Next() || s.Current().Type != "message_start" {
		t.Fatalf("first event: %v", s.Err())
	}
	cancel()
	s.Close()
	select {
	case <-w.anth.Cancelled():
	case <-time.After(10 * time.Second):
		t.Fatalf("the upstream's stream was not cancelled: %+v", w.anth.Requests())
	}
}

// The fake Claude Code, run under `layover run` with the exports `layover
// gateway env` prints, calls the API through the gateway: its quota hit
// reaches the upstream once and lands in the shared ledger; the next run
// is answered by the gateway without an upstream call.
func TestGatewayEnvAgentRun(t *testing.T) {
	t.Parallel()
	w := startGateway(t, filepath.Join(t.TempDir(), "layover.db"), fake.LLMConfig{Window: time.Hour})
	u, _ := url.Parse(w.base)
	r := w.b.layover("gateway", "env", "--listen", u.Host)
	if r.code != 0 {
		t.Fatalf("gateway env: exit %d: %s", r.code, r.stderr)
	}
	for _, line := range strings.Split(r.stdout, "\n") {
		if v, ok := strings.CutPrefix(line, "export "); ok {
			k, val, _ := strings.Cut(v, "=")
			w.b.env[k] = strings.Trim(val, "'")
		}
	}
	if w.b.env["ANTHROPIC_BASE_URL"] != w.base+"/anthropic" {
		t.Fatalf("gateway env printed:\n%s", r.stdout)
	}
	w.b.env["FAKE_AGENT_API"] = "1"
	w.b.env["ANTHROPIC_API_KEY"] = "sk-ant-agent"
	run := func() result {
		return w.b.layover("run", "--max-total-wait", "1s", "--", "claude", "-p", "--output-format", "json", "fix it")
	}
	if r := run(); r.code != 0 || w.anth.Calls() != 1 {
		t.Fatalf("ok run: exit %d, %d upstream calls\n%s%s", r.code, w.anth.Calls(), r.stdout, r.stderr)
	}
	w.anth.Exhaust()
	if r := run(); r.code == 0 || !strings.Contains(r.stdout, "rate_limit_error") {
		t.Fatalf("limited run: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if !w.exhausted(t, w.anthHost) {
		t.Fatal("the ledger does not show the agent's quota hit")
	}
	calls := w.anth.Calls()
	if r := run(); r.code == 0 || w.anth.Calls() != calls {
		t.Fatalf("run after the hit: exit %d, upstream calls %d → %d (want none)\n%s%s", r.code, calls, w.anth.Calls(), r.stdout, r.stderr)
	}
}

// gateway env prints each export with the clients it is for, in sh or
// fish, for the address the gateway listens on; sh evaluates it.
func TestGatewayEnvPrintsExports(t *testing.T) {
	t.Parallel()
	b := setup(t, fake.GitHubConfig{})
	r := b.layover("gateway", "env", "--listen", ":9000")
	for _, want := range []string{"# Claude Code, anthropic-sdk-go\nexport ANTHROPIC_BASE_URL=http://127.0.0.1:9000/anthropic\n",
		"# Codex, openai-go\nexport OPENAI_BASE_URL=http://127.0.0.1:9000/openai/v1\n",
		"export GOOGLE_GEMINI_BASE_URL=http://127.0.0.1:9000/gemini\n"} {
		if r.code != 0 || !strings.Contains(r.stdout, want) {
			t.Fatalf("gateway env: exit %d, want %q in:\n%s%s", r.code, want, r.stdout, r.stderr)
		}
	}
	if r := b.layover("gateway", "env", "--shell", "fish"); r.code != 0 || !strings.Contains(r.stdout, "set -gx OPENAI_BASE_URL http://127.0.0.1:8089/openai/v1\n") {
		t.Fatalf("gateway env --shell fish: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if r := b.layover("gateway", "env", "--url", "https://gw.example.com/llm/"); r.code != 0 || !strings.Contains(r.stdout, "export ANTHROPIC_BASE_URL=https://gw.example.com/llm/anthropic\n") {
		t.Fatalf("gateway env --url: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	for _, bad := range [][]string{{"--shell", "csh"}, {"--listen", "127.0.0.1"}, {"--listen", "127.0.0.1:0"}, {"--url", "ftp://x"}, {"extra"}} {
		if r := b.layover(append([]string{"gateway", "env"}, bad...)...); r.code != 2 || r.stdout != "" {
			t.Errorf("gateway env %v: exit %d, stdout %q; want 2 and nothing printed", bad, r.code, r.stdout)
		}
	}
	cmd := exec.Command("/bin/sh", "-c", `eval "$(layover gateway env --listen '[::]:9000')" && printf '%s %s' "$OPENAI_BASE_URL" "$GOOGLE_GEMINI_BASE_URL"`)
	cmd.Env = b.environ()
	out, err := cmd.Output()
	if err != nil || string(out) != "http://[::1]:9000/openai/v1 http://[::1]:9000/gemini" {
		t.Fatalf("sh eval: %v %q", err, out)
	}
}
