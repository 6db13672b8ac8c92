// Package openai turns the OpenAI API's rate-limit signals (and those of
// OpenAI-compatible APIs such as Kimi's) into layover's outcomes and quota
// observations (docs/provider-signals.md §3).
//
// # Signals
//
// [ClassifyHTTP] classifies one response, including an error inside a 200
// event stream (Chat Completions data {"error":…}, Responses API error and
// response.failed events). rate_limit_exceeded is a short throttle whose
// wait is the retry-after headers or the message's "Please try again in
// 644ms"; a per-day limit, a wait over quota.ThrottleQuotaCutoff,
// insufficient_quota and the spend-limit codes are quota; "Request too
// large" is permanent; Kimi's engine_overloaded_error is transient.
//
// [Observations] reads x-ratelimit-{limit,remaining,reset}-{requests,tokens}
// (and the _usage_based variants). [Principal] returns the organisation of
// openai-organization.
//
// # Units and unknowns
//
// x-ratelimit-reset-* is a relative Go-style duration ("6m0s", "12ms"),
// measured from receipt. Nothing here invents a reset: a quota whose reset
// the response does not state (insufficient_quota, spend limits, a daily
// limit without a wait) has ResetAt zero.
package openai
