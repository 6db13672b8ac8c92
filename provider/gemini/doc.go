// Package gemini turns the Gemini API's (and Vertex AI's and Code
// Assist's) rate-limit signals into layover's outcomes and quota
// observations (docs/provider-signals.md §4).
//
// # Signals
//
// [ClassifyHTTP] classifies one response, including an error inside a 200
// stream (alt=sse events, JSON array streams). RESOURCE_EXHAUSTED is read
// from its details: RetryInfo.retryDelay (a proto Duration) is the wait,
// QuotaFailure violations name the quota ("requests-per-minute:gemini-2.5-pro",
// model-scoped as Gemini scopes them), ErrorInfo gives the reason. A daily
// quota, "limit: 0", QUOTA_EXHAUSTED and a wait over
// quota.ThrottleQuotaCutoff are quota; a per-minute limit is a short
// throttle; 503 and MODEL_CAPACITY_EXHAUSTED are transient; 403
// VALIDATION_REQUIRED is auth (an account action, never waited out).
//
// Gemini sends no rate-limit headers and no principal: [Observations]
// returns none and [Principal] reports false, so the caller keys Gemini
// quotas by the API key's fingerprint.
//
// # Units and unknowns
//
// The daily reset (midnight Pacific per a forum answer, 00:00 UTC per one
// test) is not documented, so none is derived: a daily quota without a
// stated wait has ResetAt zero.
package gemini
