package openai

import (
	"testing"
	"time"

	"github.com/layoverhq/layover/provider/internal/providertest"
)

func FuzzClassifyHTTP(f *testing.F) {
	date := "Date: " + httpDate(now) + "\n"
	skewed := "Date: " + httpDate(now.Add(-time.Hour)) + "\n"
	rl := "x-ratelimit-limit-requests: 500\nx-ratelimit-remaining-requests: 0\nx-ratelimit-reset-requests: 6m0s\n" +
		"x-ratelimit-limit-tokens: 30000\nx-ratelimit-remaining-tokens: 63\nx-ratelimit-reset-tokens: 12ms\n"
	seeds := []providertest.Seed{
		{Code: 200, Hdr: date + rl, Body: `{"id":"chatcmpl-1","choices":[]}`},
		{Code: 429, Hdr: date + rl, Body: errBody("tokens", "rate_limit_exceeded", msgTPM)},
		{Code: 429, Hdr: skewed + rl, Body: errBody("requests", "rate_limit_exceeded", "Rate limit reached")},
		{Code: 429, Hdr: "retry-after: " + httpDate(now.Add(-time.Hour+2*time.Hour)) + "\n" + skewed, Body: errBody("requests", "rate_limit_exceeded", msgRPM)},
		{Code: 429, Hdr: "retry-after-ms: 644\n", Body: errBody("tokens", "rate_limit_exceeded", msgTPD)},
		{Code: 429, Hdr: "", Body: errBody("tokens", "rate_limit_exceeded", msgTooLarge)},
		{Code: 429, Hdr: "", Body: errBody("insufficient_quota", "", msgQuota)},
		{Code: 429, Hdr: "", Body: errBody("invalid_request_error", "project_spend_limit_exceeded", "x")},
		{Code: 429, Hdr: "", Body: errBody("rate_limit_reached_error", "", msgKimiRPM)},
		{Code: 429, Hdr: "", Body: errBody("rate_limit_reached_error", "", msgKimiTPD)},
		{Code: 429, Hdr: "", Body: errBody("engine_overloaded_error", "", msgKimiOverload)},
		{Code: 200, Hdr: "content-type: text/event-stream\n", Body: "event: error\ndata: {\"type\":\"error\",\"code\":\"rate_limit_exceeded\",\"message\":\"Please try again in 3 days 6 hours 57 minutes\"}\n\n"},
		{Code: 200, Hdr: "", Body: "data: " + errBody("", "", "try again after 1.5 hours") + "\n\n"},
		{Code: 402, Hdr: "", Body: errBody("", "", msgKimiExpired)},
		{Code: 429, Hdr: "x-ratelimit-remaining-tokens: -1\nx-ratelimit-reset-tokens: 1785931200000\n", Body: "{"},
	}
	providertest.FuzzHTTP(f, Provider, seeds, ClassifyHTTP, Observations, nil)
}
