package gateway_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/layoverhq/layover/gateway"
	"github.com/layoverhq/layover/internal/fake"
)

// Held bodies are bounded all together (MaxHeldBytes): a request whose body
// would pass the bound is answered at once, without calling upstream, while
// a smaller one is held and sent after the reset.
func TestHeldBodiesBounded(t *testing.T) {
	t.Parallel()
	b := &bench{}
	llm := fake.NewLLM(fake.LLMConfig{Kind: fake.Anthropic, Window: 20 * time.Second, RequestsPerWindow: 1,
		Now: func() time.Time { return b.clock.Now() }})
	*b = *newBench(t, gateway.Options{Policy: noMargin(), MaxHeldBytes: 8,
		Upstreams: map[string]string{gateway.Anthropic: startLLM(t, llm)}})
	key := keyHeader(gateway.Anthropic, "sk-ant-heldbytes-0123456789")
	if resp, _ := b.do(t, t.Context(), http.MethodPost, llmPaths[gateway.Anthropic], `{}`, key); resp.StatusCode != 200 {
		t.Fatalf("first request: %d", resp.StatusCode)
	}
	calls := llm.Calls()

	// 16 bytes: past the bound of 8, answered locally at once.
	resp, body := b.do(t, t.Context(), http.MethodPost, llmPaths[gateway.Anthropic], `{"big":"012345"}`, key)
	if resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("X-Layover-Deferred") == "" {
		t.Fatalf("a body past MaxHeldBytes: %d %s; want a local 429", resp.StatusCode, body)
	}
	if llm.Calls() != calls {
		t.Fatalf("a body past MaxHeldBytes reached the upstream")
	}

	// 2 bytes: held, then sent once the key resets.
	done := make(chan int, 1)
	timers := b.clock.TimerAdded()
	go func() {
		resp, _ := b.do(t, context.Background(), http.MethodPost, llmPaths[gateway.Anthropic], `{}`, key)
		done <- resp.StatusCode
	}()
	<-timers
	b.clock.Advance(20 * time.Second)
	if code := <-done; code != 200 {
		t.Fatalf("a small held request: %d; want 200", code)
	}
	if llm.Calls() != calls+1 {
		t.Errorf("%d upstream calls; want 1 (the held one)", llm.Calls()-calls)
	}
}
