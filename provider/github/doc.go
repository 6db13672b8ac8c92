// Package github turns GitHub's rate-limit signals into layover's outcomes
// and quota observations.
//
// # Signals
//
// [ClassifyHTTP] classifies one REST or GraphQL response, [ClassifyCLI] one
// failed `gh` invocation, and [Observations] reads the x-ratelimit-* headers
// every response carries. The rules are those of docs/provider-signals.md §1:
// primary exhaustion is a 403 or 429 with x-ratelimit-remaining: 0 (or a
// GraphQL error of type RATE_LIMITED inside a 200); a secondary limit is
// named by its message or documentation URL, whatever budget is left; any
// other 403 is permanent.
//
// # Units and unknowns
//
// x-ratelimit-reset is in UTC epoch seconds. Resets are moved onto this
// machine's clock with the response's Date header: ResetAt = now + (reset −
// Date). Retry-After is whole seconds or an HTTP-date. Counts are
// quota.Unknown (-1) when not given, a retry-after is -1 when not stated and
// a reset is the zero time when not given: nothing here invents a reset. A
// value that cannot be right (a reset in epoch milliseconds, a negative
// count) drops the observation it was part of.
//
// # API client
//
// [Client] reads the free GET /rate_limit and GET /user. [APIBase],
// [ResolveToken], [GHAuthToken] and [GHConfigUser] find the API, the token
// and the login the way gh does.
package github
