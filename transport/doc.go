// Package transport is an http.RoundTripper that makes any Go HTTP client
// survive provider quotas: go-github, anthropic-sdk-go and openai-go
// through their HTTP-client options, or plain net/http.
//
//	tr, err := transport.New(nil, &transport.Options{Store: st})
//	client := &http.Client{Transport: tr}
//	defer tr.Close()
//
// # Keys
//
// Every request maps to quota keys (host, principal, resource). The host is
// the request's (lowercase, with a port that is not the scheme's default).
// The principal is Options.Principal, else the login the store learned for
// the request's token, else the organisation id the provider named in a
// response (which the Transport records in the store as the token's learned
// login, so that later processes and `layover pass --quota` key it alike),
// else "tok:" and the token's fingerprint: the token itself is never kept. The resources that hold a request back are chosen by the
// Provider: GitHub charges one resource by path; Anthropic and OpenAI are
// held back by every resource of the principal; Gemini by the resources of
// the request's model and the unscoped ones.
//
// # Before a request
//
// The Transport keeps an in-memory view of the quotas, loaded from the
// store once per (host, principal) on first use and updated from every
// response. When a key that applies is exhausted (or held by a throttle),
// a request in ModeWait waits until Policy.ResumeAt of the reset (the reset
// plus the margin plus its own jitter), charged to a per-request budget
// of Policy.MaxTotalWait; a wait that would pass it returns a
// *quota.DeferralError at once, without sending. In ModeDefer, and for a
// request whose context was marked by WithLowPriority, nothing waits: the
// request returns a *quota.DeferralError. A low-priority request also
// stops at the reserve, and with Options.Pace it is paced: deferred when
// its key's recent burn would run it out before the reset
// (docs/pacing.md). A wait ends early with ctx.Err() when the
// request's context ends.
//
// All requests waiting on one key share one timer: they wait once, then
// resume one by one at their own jittered times.
//
// # After a response
//
// A 2xx or 304 response is read from its headers only (its body is never
// touched, so a stream stays a stream), except where the provider sends
// rejections under a 200 (Provider.RejectsIn2xx: GitHub GraphQL's JSON
// answers); those and every 4xx or 5xx are classified with up to 1 MiB of
// their body, which is put back for the caller; a 1xx or 3xx from its
// headers alone. An LLM error event inside a 200 stream is not seen here:
// the stream is the caller's. The view is updated at once. Observations go to the store in the background, keeping
// only the latest state per key while a write is in flight (Flush and
// Close wait for them); an exhaustion or a quota rejection is written
// before RoundTrip returns, so other processes see it. Writes land in the
// order of the observations, so an earlier state of a key never overwrites
// a later one, even when both carry the same time (a coarse or fake clock).
//
// # Retries (docs/design.md, Safety rules)
//
//   - A quota rejection (class quota) or a throttle (class secondary) is
//     sent again after its wait only when the request's body can be read
//     again (no body, or GetBody set), in ModeWait, not low priority, and
//     within the budget; a throttle at most Policy.SecondaryRetries times.
//   - Other transient failures (5xx except 501, overload, connection
//     errors) are retried, with Options.Backoff between tries, at most
//     Options.TransientRetries times, and only for GET, HEAD and OPTIONS or
//     a request carrying an Idempotency-Key header.
//   - Nothing else is retried: an auth failure is never waited out as a
//     quota, and a permanent one is returned at once.
//
// A response that is not retried is returned as the provider sent it; a
// status code is never turned into an error. A response dropped for a
// retry is drained and closed; a retry sends a clone of the request.
//
// # Visibility
//
// Every wait calls Options.OnWait with a WaitEvent and logs one Info line
// to Options.Logger; so does every deferral. Neither holds a token or a
// URL. With a Store, a quota or throttle wait also lists the process in
// the store's waiter table (once per key, however many requests wait on
// it) until the last of those requests stops waiting, so `layover status`
// shows it beside waiting `layover run` commands.
package transport
