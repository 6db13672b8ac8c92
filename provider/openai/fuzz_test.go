package openai

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/layoverhq/layover/provider"
	"github.com/layoverhq/layover/provider/internal/resetcheck"
)

func FuzzClassifyHTTP(f *testing.F) {
	date := "Date: " + httpDate(now) + "\n"
	skewed := "Date: " + httpDate(now.Add(-time.Hour)) + "\n"
	rl := "x-ratelimit-limit-requests: 500\nx-ratelimit-remaining-requests: 0\nx-ratelimit-reset-requests: 6m0s\n" +
		"x-ratelimit-limit-tokens: 30000\nx-ratelimit-remaining-tokens: 63\nx-ratelimit-reset-tokens: 12ms\n"
	seeds := []struct {
		code int
		hdr  string
		body string
	}{
		{200, date + rl, `{"id":"chatcmpl-1","choices":[]}`},
		{429, date + rl, errBody("tokens", "rate_limit_exceeded", msgTPM)},
		{429, skewed + rl, errBody("requests", "rate_limit_exceeded", "Rate limit reached")},
		{429, "retry-after: " + httpDate(now.Add(-time.Hour+2*time.Hour)) + "\n" + skewed, errBody("requests", "rate_limit_exceeded", msgRPM)},
		{429, "retry-after-ms: 644\n", errBody("tokens", "rate_limit_exceeded", msgTPD)},
		{429, "", errBody("tokens", "rate_limit_exceeded", msgTooLarge)},
		{429, "", errBody("insufficient_quota", "", msgQuota)},
		{429, "", errBody("invalid_request_error", "project_spend_limit_exceeded", "x")},
		{429, "", errBody("rate_limit_reached_error", "", msgKimiRPM)},
		{429, "", errBody("rate_limit_reached_error", "", msgKimiTPD)},
		{429, "", errBody("engine_overloaded_error", "", msgKimiOverload)},
		{200, "content-type: text/event-stream\n", "event: error\ndata: {\"type\":\"error\",\"code\":\"rate_limit_exceeded\",\"message\":\"Please try again in 3 days 6 hours 57 minutes\"}\n\n"},
		{200, "", "data: " + errBody("", "", "try again after 1.5 hours") + "\n\n"},
		{402, "", errBody("", "", msgKimiExpired)},
		{429, "x-ratelimit-remaining-tokens: -1\nx-ratelimit-reset-tokens: 1785931200000\n", "{"},
	}
	for _, s := range seeds {
		f.Add(s.code, s.hdr, []byte(s.body))
	}
	f.Fuzz(func(t *testing.T, code int, hdr string, body []byte) {
		if code < 0 {
			code = -code
		}
		code = 100 + code%500
		input := hdr + "\n" + string(body)
		resp := &http.Response{StatusCode: code, Header: resetcheck.ParseHeaderText(hdr)}
		out := ClassifyHTTP(resp, body, now)
		if err := resetcheck.CheckOutcome(out, Provider, input, now); err != nil {
			t.Fatalf("ClassifyHTTP(%d, %q, %q): %v", code, hdr, body, err)
		}
		for _, s := range Observations(resp.Header, now) {
			if err := resetcheck.CheckState(s, input, now); err != nil {
				t.Fatalf("Observations(%q): %v", hdr, err)
			}
		}
		raw := fmt.Sprintf("HTTP/1.1 %d\r\n%s\r\n\r\n", code, strings.ReplaceAll(hdr, "\n", "\r\n"))
		if r, b, err := provider.ParseRawHTTP(append([]byte(raw), body...)); err == nil {
			out := ClassifyHTTP(r, b, now)
			if err := resetcheck.CheckOutcome(out, Provider, raw+string(body), now); err != nil {
				t.Fatalf("ClassifyHTTP(raw %q): %v", raw, err)
			}
		}
	})
}
