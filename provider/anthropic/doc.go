// Package anthropic turns the Anthropic API's rate-limit signals into
// layover's outcomes and quota observations (docs/provider-signals.md §2).
//
// # Signals
//
// [ClassifyHTTP] classifies one Messages API response, including an error
// event inside a 200 event stream. A rate_limit_error is a short throttle
// (secondary) unless its stated wait is over quota.ThrottleQuotaCutoff (a
// drained subscription window's Retry-After: 7999): then it is quota. The
// monthly spend cap (error_code enforced_spend_limit_reached), the 400
// "specified API usage limits" and "credit balance is too low" texts and
// 402 billing_error are quota; 529 overloaded_error is transient; 413
// request_too_large is permanent.
//
// [Observations] reads the anthropic-ratelimit-* headers: the requests,
// tokens, input-tokens and output-tokens families, and the undocumented
// subscription windows unified-5h and unified-7d. [Principal] returns the
// organisation id of anthropic-organization-id.
//
// # Units and unknowns
//
// Family resets are RFC 3339; subscription resets are read as epoch
// seconds, RFC 3339 or an HTTP-date. Absolute resets are moved onto this
// machine's clock with the response's Date. Retry-After is seconds or an
// HTTP-date; retry-after-ms is read first. The only reset not stated by
// the response is the spend cap's, 00:00 UTC on the 1st of next month,
// which Anthropic documents; nothing else is invented.
package anthropic
