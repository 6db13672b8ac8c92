package command_test

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/layoverhq/layover/clock"
	"github.com/layoverhq/layover/command"
	"github.com/layoverhq/layover/internal/fake"
	"github.com/layoverhq/layover/quota"
	"github.com/layoverhq/layover/transport"
)

// llmKey is the OpenAI key of the LLM tests.
const llmKey = "sk-proj-world-0123456789"

// exhaustOpenAI has a transport, on the world's store, spend the one
// request of a fake OpenAI's 4-minute window, as a Go program using
// layover's transport would: the ledger then holds the key's requests
// exhausted until start + 4m, under the organisation the response named.
// It returns the environment a command of that program runs in.
func exhaustOpenAI(t *testing.T, w *world) func(string) string {
	t.Helper()
	// The transport's own clock, so that its timers never reach the
	// world's.
	clk := clock.NewFake(start)
	llm := fake.NewLLM(fake.LLMConfig{Kind: fake.OpenAI, Now: clk.Now, RequestsPerWindow: 1, Window: 4 * time.Minute})
	base, err := llm.Start("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = llm.Close() })
	tr, err := transport.New(nil, &transport.Options{Provider: transport.OpenAI(), Store: w.st, Clock: clk, Hostname: "h0"})
	if err != nil {
		t.Fatal(err)
	}
	req, err := http.NewRequest(http.MethodPost, base+"/v1/chat/completions", strings.NewReader(`{"model":"gpt-4o"}`))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+llmKey)
	resp, err := tr.RoundTrip(req)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("the transport's request: %v, %v", resp, err)
	}
	resp.Body.Close()
	if err := tr.Close(); err != nil {
		t.Fatal(err)
	}
	vars := map[string]string{"GITHUB_API_URL": w.api.URL, "GH_TOKEN": testToken,
		"OPENAI_BASE_URL": base + "/v1", "OPENAI_API_KEY": llmKey}
	return func(k string) string { return vars[k] }
}

// --quota openai:requests: the key is the one the transport recorded (the
// host of OPENAI_BASE_URL, the organisation its response named, learned for
// OPENAI_API_KEY's fingerprint), and its exhaustion is waited out before
// the first run from the ledger alone: OpenAI has no free endpoint, and
// GitHub's /rate_limit is not asked. Plain `openai` means every OpenAI
// resource, requests among them; a resource or provider not exhausted does
// not hold the command back.
func TestRunQuotaWaitsForAnLLMKeyFromTheLedger(t *testing.T) {
	t.Parallel()
	for name, c := range map[string]struct {
		names    command.QuotaNames
		wantWait bool
	}{
		"openai:requests": {command.QuotaNames{{Provider: "openai", Resource: "requests"}}, true},
		"openai":          {command.QuotaNames{{Provider: "openai"}}, true},
		"openai:tokens":   {command.QuotaNames{{Provider: "openai", Resource: "tokens"}}, false},
		"anthropic":       {command.QuotaNames{{Provider: "anthropic"}}, false},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			w := newWorld(t)
			getenv := exhaustOpenAI(t, w)
			argv, runs := script(t, "ok")
			cfg := w.config(argv)
			cfg.Getenv, cfg.Quota = getenv, c.names
			e := w.drive(cfg, runs, nil)
			if e.err != nil || e.res.ExitCode != 0 || runs() != 1 {
				t.Fatalf("ended %+v, %v after %d runs\n%s", e.res, e.err, runs(), w.stderr.String())
			}
			w.mu.Lock()
			rateCalls := w.rateCalls
			w.mu.Unlock()
			if rateCalls != 0 {
				t.Errorf("GitHub's /rate_limit asked %d times for an OpenAI quota", rateCalls)
			}
			if !c.wantWait {
				if len(e.waits) != 0 {
					t.Fatalf("waited %v for a quota that has room", e.waits)
				}
				return
			}
			if len(e.waits) != 1 || e.waits[0].runs != 0 || e.waits[0].d != 5*time.Minute {
				t.Fatalf("waits %+v; want one of 5m (the 4m reset and the margin) before the first run", e.waits)
			}
			if !strings.Contains(w.stderr.String(), "(OpenAI requests)") || !strings.Contains(w.stderr.String(), "Waited 5m0s for the OpenAI quota (requests)") {
				t.Errorf("stderr does not name OpenAI's quota:\n%s", w.stderr.String())
			}
		})
	}
}

// ResolveQuotas keys every provider as its records are keyed: GitHub by
// the target, an LLM API by its base URL's host and the key's principal
// (the learned organisation, else the key's fingerprint, else anonymous),
// an agent CLI by its name and "local"; --principal names every key's.
func TestResolveQuotas(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	ctx := context.Background()
	gh := &command.GitHub{Host: "api.github.com", Principal: "octocat"}
	if err := w.st.LearnLogin(ctx, "api.anthropic.com", quota.TokenFingerprint("sk-ant-learned"), "org-7", start); err != nil {
		t.Fatal(err)
	}
	var names command.QuotaNames
	for _, n := range []string{"anthropic:tokens", "github", "openai:requests", "claude-code:five_hour", "gemini:billing"} {
		if err := names.Set(n); err != nil {
			t.Fatal(err)
		}
	}
	resolve := func(principal string, vars ...string) []quota.Key {
		t.Helper()
		m := map[string]string{}
		for i := 0; i+1 < len(vars); i += 2 {
			m[vars[i]] = vars[i+1]
		}
		quotas, err := command.ResolveQuotas(ctx, &command.QuotaConfig{Store: w.st, GitHub: gh, Principal: principal,
			Getenv: func(k string) string { return m[k] }}, names)
		if err != nil {
			t.Fatal(err)
		}
		return command.KeysOf(quotas)
	}
	got := resolve("", "ANTHROPIC_API_KEY", "sk-ant-learned", "OPENAI_API_KEY", "sk-new", "OPENAI_BASE_URL", "https://Gateway.example:8443/v1")
	want := []quota.Key{
		{Host: "api.anthropic.com", Principal: "org-7", Resource: "tokens"},
		{Host: "api.github.com", Principal: "octocat", Resource: "core"},
		{Host: "api.github.com", Principal: "octocat", Resource: "graphql"},
		{Host: "gateway.example:8443", Principal: quota.TokenPrincipal("sk-new"), Resource: "requests"},
		{Host: "claude-code", Principal: "local", Resource: "five_hour"},
		{Host: "generativelanguage.googleapis.com", Principal: quota.AnonymousPrincipal, Resource: "billing"},
	}
	if !slices.Equal(got, want) {
		t.Errorf("keys\n%v\nwant\n%v", got, want)
	}
	for _, k := range resolve("team-a") {
		if k.Host != "api.github.com" && k.Principal != "team-a" {
			t.Errorf("--principal team-a: %v", k)
		}
	}
	_, err := command.ResolveQuotas(ctx, &command.QuotaConfig{Store: w.st, GitHub: gh,
		Getenv: func(k string) string { return map[string]string{"ANTHROPIC_BASE_URL": "ftp://x"}[k] }}, names)
	if ie := (*command.InputError)(nil); !errors.As(err, &ie) || !strings.Contains(err.Error(), "ANTHROPIC_BASE_URL") {
		t.Errorf("a bad ANTHROPIC_BASE_URL: %v, want an input error naming it", err)
	}
}

// The host's fresh read: GitHub's keys from its free /rate_limit, another
// provider's from the ledger alone, without a call.
func TestHostQuotasFreshReadsTheLedgerForOtherProviders(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	ctx := context.Background()
	gh, err := command.ResolveGitHub(ctx, &command.GitHubConfig{Store: w.st, Getenv: w.getenv, Clock: w.clk})
	if err != nil {
		t.Fatal(err)
	}
	hq := &command.HostQuotas{GitHub: gh, Store: w.st,
		Getenv: func(k string) string { return map[string]string{"ANTHROPIC_API_KEY": "sk-ant-host"}[k] }}
	keys, err := hq.Keys(ctx, []string{"anthropic:tokens", "github:core"})
	if err != nil || len(keys) != 2 {
		t.Fatalf("Keys = %v, %v", keys, err)
	}
	exhausted := quota.State{Key: keys[0], Limit: 100, Remaining: 0, ResetAt: start.Add(time.Hour), ResetKnown: true,
		ObservedAt: start, Source: quota.SourceHeaders, Cause: quota.CauseExhausted}
	if err := w.st.RecordStates(ctx, []quota.State{exhausted}); err != nil {
		t.Fatal(err)
	}
	calls := func() int {
		w.mu.Lock()
		defer w.mu.Unlock()
		return w.rateCalls
	}
	states, err := hq.Fresh(ctx, keys[:1])
	if err != nil || len(states) != 1 || states[0].Key != keys[0] || states[0].Remaining != 0 || calls() != 0 {
		t.Fatalf("Fresh(anthropic) = %+v, %v after %d /rate_limit calls; want the ledger's state and no call", states, err, calls())
	}
	states, err = hq.Fresh(ctx, keys)
	if err != nil || len(states) != 2 || calls() != 1 {
		t.Fatalf("Fresh(both) = %+v, %v after %d /rate_limit calls; want both states, one call", states, err, calls())
	}
}
