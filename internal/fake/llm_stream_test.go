package fake

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// streamReq is a streaming request of each kind.
func streamReq(ctx context.Context, t *testing.T, kind LLMKind, base string) *http.Request {
	t.Helper()
	url := map[LLMKind]string{
		Anthropic: base + "/v1/messages",
		OpenAI:    base + "/v1/chat/completions",
		Gemini:    base + "/v1beta/models/gemini-2.5-pro:streamGenerateContent?alt=sse",
	}[kind]
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(`{"model":"m","stream":true}`))
	if err != nil {
		t.Fatal(err)
	}
	return req
}

// sseEvent reads one server-sent event (its "event:" name and "data:"
// text), failing after a bound so a buffered stream fails rather than hangs.
func sseEvent(t *testing.T, br *bufio.Reader) (name, data string) {
	t.Helper()
	type ev struct{ name, data string }
	got := make(chan ev, 1)
	go func() {
		var e ev
		for {
			line, err := br.ReadString('\n')
			line = strings.TrimRight(line, "\r\n")
			if err != nil || (line == "" && (e.name != "" || e.data != "")) {
				got <- e
				return
			}
			if v, ok := strings.CutPrefix(line, "event: "); ok {
				e.name = v
			}
			if v, ok := strings.CutPrefix(line, "data: "); ok {
				e.data = v
			}
		}
	}()
	select {
	case e := <-got:
		return e.name, e.data
	case <-time.After(10 * time.Second):
		t.Fatal("no event within 10 s")
		return "", ""
	}
}

// deltaText is the text a stream event carries, "" when none.
func deltaText(t *testing.T, kind LLMKind, data string) string {
	t.Helper()
	if data == "[DONE]" {
		return ""
	}
	var v struct {
		Delta struct {
			Text string `json:"text"`
		} `json:"delta"`
		Choices []struct {
			Delta struct {
				Content string `json:"content"`
			} `json:"delta"`
		} `json:"choices"`
		Candidates []struct {
			Content struct {
				Parts []struct {
					Text string `json:"text"`
				} `json:"parts"`
			} `json:"content"`
		} `json:"candidates"`
	}
	if err := json.Unmarshal([]byte(data), &v); err != nil {
		t.Fatalf("event data %q: %v", data, err)
	}
	switch kind {
	case Anthropic:
		return v.Delta.Text
	case OpenAI:
		if len(v.Choices) > 0 {
			return v.Choices[0].Delta.Content
		}
	default:
		if len(v.Candidates) > 0 && len(v.Candidates[0].Content.Parts) > 0 {
			return v.Candidates[0].Content.Parts[0].Text
		}
	}
	return ""
}

// A streamed answer is the provider's event sequence with the limit
// headers, each event flushed before the next is written: with a gate
// holding every delta, the client reads delta i before delta i+1 exists.
func TestLLMStreamsEventByEvent(t *testing.T) {
	t.Parallel()
	want := map[LLMKind][]string{
		Anthropic: {"message_start", "content_block_start", "ping", "content_block_delta", "content_block_delta",
			"content_block_delta", "content_block_stop", "message_delta", "message_stop"},
		OpenAI: {"", "", "", "", "", ""},
		Gemini: {"", "", ""},
	}
	lead := map[LLMKind]int{Anthropic: 3, OpenAI: 1, Gemini: 0}
	for _, kind := range []LLMKind{Anthropic, OpenAI, Gemini} {
		t.Run(string(kind), func(t *testing.T) {
			t.Parallel()
			gate := make(chan struct{})
			l := NewLLM(LLMConfig{Kind: kind, StreamGate: gate})
			base, err := l.Start("127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			defer l.Close()
			resp, err := http.DefaultClient.Do(streamReq(context.Background(), t, kind, base))
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
				t.Fatalf("status %d, content type %q", resp.StatusCode, resp.Header.Get("Content-Type"))
			}
			limitHeader := map[LLMKind]string{Anthropic: "anthropic-ratelimit-requests-remaining", OpenAI: "x-ratelimit-remaining-requests"}[kind]
			if limitHeader != "" && resp.Header.Get(limitHeader) != "49" {
				t.Fatalf("%s = %q, want 49", limitHeader, resp.Header.Get(limitHeader))
			}
			br := bufio.NewReader(resp.Body)
			var names []string
			var text strings.Builder
			for i := range want[kind] {
				if i >= lead[kind] && i < lead[kind]+3 {
					gate <- struct{}{}
				}
				name, data := sseEvent(t, br)
				names = append(names, name)
				text.WriteString(deltaText(t, kind, data))
				if kind == OpenAI && i == len(want[kind])-1 && data != "[DONE]" {
					t.Fatalf("last OpenAI event %q, want [DONE]", data)
				}
			}
			if strings.Join(names, ",") != strings.Join(want[kind], ",") {
				t.Fatalf("events %q, want %q", names, want[kind])
			}
			if got := text.String(); got != StreamDelta(0)+StreamDelta(1)+StreamDelta(2) {
				t.Fatalf("text %q", got)
			}
			if rest, _ := io.ReadAll(br); strings.TrimSpace(string(rest)) != "" {
				t.Fatalf("after the last event: %q", rest)
			}
			if rs := l.Requests(); len(rs) != 1 || !rs[0].Stream || rs[0].Cancelled {
				t.Fatalf("requests %+v", rs)
			}
		})
	}
}

// A client that goes away mid-stream is recorded as cancelled.
func TestLLMStreamRecordsDisconnect(t *testing.T) {
	t.Parallel()
	gate := make(chan struct{})
	l := NewLLM(LLMConfig{Kind: Anthropic, StreamGate: gate})
	base, err := l.Start("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	ctx, cancel := context.WithCancel(context.Background())
	resp, err := http.DefaultClient.Do(streamReq(ctx, t, Anthropic, base))
	if err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(resp.Body)
	if name, _ := sseEvent(t, br); name != "message_start" {
		t.Fatalf("first event %q", name)
	}
	cancel()
	resp.Body.Close()
	select {
	case <-l.Cancelled():
	case <-time.After(10 * time.Second):
		t.Fatal("the fake saw no disconnect")
	}
	if rs := l.Requests(); len(rs) != 1 || !rs[0].Cancelled {
		t.Fatalf("requests %+v", rs)
	}
}

// Gemini's stream without alt=sse is a JSON array written element by
// element; a spent window answers a stream request with the plain limit
// error, as the real APIs do before any event.
func TestLLMStreamArrayAndLimit(t *testing.T) {
	t.Parallel()
	l := NewLLM(LLMConfig{Kind: Gemini, RequestsPerWindow: 1})
	base, err := l.Start("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	post := func() (*http.Response, []byte) {
		resp, err := http.Post(base+"/v1beta/models/gemini-2.5-pro:streamGenerateContent", "application/json", strings.NewReader(`{}`))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp, body
	}
	resp, body := post()
	var arr []json.RawMessage
	if err := json.Unmarshal(body, &arr); err != nil || resp.StatusCode != 200 || len(arr) != 3 {
		t.Fatalf("status %d, %d elements (%v): %s", resp.StatusCode, len(arr), err, body)
	}
	if resp, body := post(); resp.StatusCode != 429 || !strings.Contains(string(body), "RESOURCE_EXHAUSTED") {
		t.Fatalf("spent window: %d %s", resp.StatusCode, body)
	}
}
