package fake

import (
	"bytes"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/layoverhq/layover/provider"
	"github.com/layoverhq/layover/provider/anthropic"
	"github.com/layoverhq/layover/provider/gemini"
	"github.com/layoverhq/layover/provider/openai"
)

// The fakes' answers are what the real classifiers read as intended: a
// success is ok with observations, a spent window a short throttle with its
// retry hint, and the scripted errors their classes.
func TestLLMFakesSpeakTheRealFormats(t *testing.T) {
	t.Parallel()
	classify := map[LLMKind]func(*http.Response, []byte, time.Time) provider.Outcome{
		Anthropic: anthropic.ClassifyHTTP, OpenAI: openai.ClassifyHTTP, Gemini: gemini.ClassifyHTTP,
	}
	paths := map[LLMKind]string{Anthropic: "/v1/messages", OpenAI: "/v1/chat/completions", Gemini: "/v1beta/models/gemini-2.5-pro:generateContent"}
	for kind, cls := range classify {
		t.Run(string(kind), func(t *testing.T) {
			t.Parallel()
			now := time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)
			l := NewLLM(LLMConfig{Kind: kind, Now: func() time.Time { return now }, RequestsPerWindow: 2})
			base, err := l.Start("127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			defer l.Close()
			call := func() provider.Outcome {
				resp, err := http.Post(base+paths[kind], "application/json", strings.NewReader(`{}`))
				if err != nil {
					t.Fatal(err)
				}
				defer resp.Body.Close()
				body, _ := io.ReadAll(resp.Body)
				return cls(resp, bytes.Clone(body), now)
			}
			if o := call(); o.Class != provider.ClassOK {
				t.Fatalf("success classified %s: %s", o.Class, o.Reason)
			}
			call()
			o := call()
			if o.Class != provider.ClassSecondary || o.RetryAfter != time.Minute {
				t.Fatalf("spent window: class %s retry-after %v (%s); want secondary, 1m", o.Class, o.RetryAfter, o.Reason)
			}
			if kind == Anthropic {
				l.Script(OverloadedError())
				if o := call(); o.Class != provider.ClassTransient {
					t.Fatalf("529 classified %s", o.Class)
				}
			}
			if kind == OpenAI {
				l.Script(InsufficientQuota())
				if o := call(); o.Class != provider.ClassQuota {
					t.Fatalf("insufficient_quota classified %s", o.Class)
				}
			}
		})
	}
}
