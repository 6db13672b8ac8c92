package transport_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/layoverhq/layover/clock"
	"github.com/layoverhq/layover/transport"
)

// openai-go through its HTTP-client option: a per-minute throttle is
// waited out for its Retry-After and the request (whose body the SDK can
// read again) is sent once more. The quota is keyed by the organisation
// the API names, never by the key.
func Example_openAI() {
	clk := clock.NewFake(time.Date(2026, 5, 1, 10, 0, 0, 0, time.UTC))
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		h := w.Header()
		h.Set("Content-Type", "application/json")
		h.Set("Date", clk.Now().Format(http.TimeFormat))
		h.Set("Openai-Organization", "org-example")
		h.Set("X-Ratelimit-Limit-Requests", "500")
		h.Set("X-Ratelimit-Reset-Requests", "12s")
		if calls.Add(1) == 1 {
			h.Set("X-Ratelimit-Remaining-Requests", "0")
			h.Set("Retry-After", "12")
			w.WriteHeader(http.StatusTooManyRequests)
			_, _ = io.WriteString(w, `{"error":{"message":"Rate limit reached for gpt-6-luna in organization org-example on requests per min (RPM): Limit 500, Used 500, Requested 1.","type":"requests","param":null,"code":"rate_limit_exceeded"}}`)
			return
		}
		h.Set("X-Ratelimit-Remaining-Requests", "499")
		_, _ = io.WriteString(w, `{"id":"chatcmpl-1","object":"chat.completion","created":1777629600,"model":"gpt-6-luna",`+
			`"choices":[{"index":0,"message":{"role":"assistant","content":"Hello from the fake."},"finish_reason":"stop"}]}`)
	}))
	defer srv.Close()

	tr, err := transport.New(nil, &transport.Options{
		Provider: transport.OpenAI(), // by default, chosen for api.openai.com
		Clock:    clk,
		OnWait: func(ev transport.WaitEvent) {
			fmt.Printf("%s wait on %s/%s: %s\n", ev.Kind, ev.Key.Principal, ev.Key.Resource, ev.Wait)
			clk.Set(ev.Until)
		},
	})
	if err != nil {
		panic(err)
	}
	defer tr.Close()

	client := openai.NewClient(
		option.WithBaseURL(srv.URL+"/v1/"),
		option.WithAPIKey("sk-example"),
		option.WithHTTPClient(&http.Client{Transport: tr}),
		option.WithMaxRetries(0), // the Transport retries, within the Safety rules of docs/design.md
	)
	resp, err := client.Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{
		Model:    openai.ChatModelGPT6Luna,
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Say hello")},
	})
	if err != nil {
		fmt.Println("error:", err)
		return
	}
	fmt.Println(resp.Choices[0].Message.Content)
	fmt.Println("requests sent:", calls.Load())
	// Output:
	// secondary wait on org-example/requests: 12s
	// Hello from the fake.
	// requests sent: 2
}
