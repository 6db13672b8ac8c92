package transport

import (
	"context"
	"log/slog"
	"time"

	"github.com/layoverhq/layover/clock"
	"github.com/layoverhq/layover/quota"
	"github.com/layoverhq/layover/store"
)

// Defaults of the options that are not policy numbers of docs/design.md.
const (
	// DefaultTransientRetries is how many times a GET, HEAD or OPTIONS
	// request (or one with an Idempotency-Key) is sent again after a
	// transient failure: a 5xx other than 501, an overload, a connection
	// error.
	DefaultTransientRetries = 3
	// MaxTransientRetryAfter is the longest Retry-After a transient
	// failure may state and still be retried; a longer one returns the
	// response as it is.
	MaxTransientRetryAfter = quota.ThrottleQuotaCutoff
	// storeTimeout bounds one store call made by the transport.
	storeTimeout = 10 * time.Second
	// minRejectionWait is the shortest wait before a request rejected for
	// quota is sent again, so that a provider whose stated reset has
	// already passed is not called in a tight loop.
	minRejectionWait = time.Second
	// maxInspectBody is how much of a non-2xx response body is read for
	// classification; the caller still gets the whole body.
	maxInspectBody = 1 << 20
)

// Mode says what a request does when its quota is exhausted.
type Mode int

const (
	// ModeWait (the zero value) waits until the reset plus margin and
	// jitter, within the policy's total-wait cap, and then sends the
	// request. A wait that would pass the cap returns a
	// *quota.DeferralError at once.
	ModeWait Mode = iota
	// ModeDefer never waits for a quota: a request whose key is exhausted
	// (or throttled) returns a *quota.DeferralError without being sent,
	// and a rejected request is returned as the provider answered it.
	// Transient failures are still retried with backoff.
	ModeDefer
)

// String returns "wait" or "defer".
func (m Mode) String() string {
	if m == ModeDefer {
		return "defer"
	}
	return "wait"
}

// Options configures a Transport. A nil *Options, and every zero field,
// means the default stated on the field.
type Options struct {
	// Provider says how responses are classified and how requests map to
	// quota keys. nil chooses by the request's host, as provider/registry
	// knows the APIs' hosts: api.github.com and *.ghe.com are GitHub;
	// api.anthropic.com Anthropic; api.openai.com OpenAI;
	// generativelanguage.googleapis.com Gemini; so is the host each API's
	// base-URL variable names (GITHUB_API_URL, ANTHROPIC_BASE_URL,
	// OPENAI_BASE_URL, GOOGLE_GEMINI_BASE_URL; read once, by New), unless
	// two of them name it. Requests to any other host pass through
	// untouched: no waits, no retries, no observations.
	Provider *Provider

	// Principal, when not empty, is the principal of every key. Else it is
	// derived per request: the login the Store learned for the request's
	// token, else the organisation id the provider returned in a response
	// to that token (Provider.Principal; recorded in the Store as the
	// token's learned login), else quota.TokenPrincipal of the
	// token (from Authorization, x-api-key, x-goog-api-key, api-key, or a
	// "key" query parameter), else quota.AnonymousPrincipal. Only the
	// token's fingerprint is kept, never the token.
	Principal string

	// Policy holds the reserve, the reset margin and jitter, the total
	// wait cap per request, and the secondary-limit wait and retries. nil
	// means quota.DefaultPolicy().
	Policy *quota.Policy

	// Store persists observations and is read once per (host, principal)
	// on first use; while requests wait for a quota or a throttle, the
	// process is listed in its waiter table (`layover status`), once per
	// key. nil keeps the ledger in memory only. The Transport never closes
	// it.
	Store store.Store

	// Command is what `layover status` shows for this process's waits. ""
	// means the program's command line (os.Args), secrets masked.
	Command string

	// Clock tells the time and makes the wait timers. nil means the
	// system clock.
	Clock clock.Clock

	// Rand is the source of wait jitter. nil means a source seeded from
	// the runtime. The Transport serializes its calls, so it need not be
	// safe for concurrent use.
	Rand quota.Rand

	// Mode is ModeWait (the zero value) or ModeDefer.
	Mode Mode

	// Pace paces low-priority requests (WithLowPriority) as `layover pass
	// --pace` paces a pass (docs/pacing.md): such a request whose key's
	// recent burn would take it to its reserve before its reset returns a
	// *quota.DeferralError of cause quota.CausePacing without being sent.
	// The burn is read from the key's history: this Transport's own
	// observations and, with a Store, every host's (read again at most
	// once per 10 s per key). Requests of normal priority are never paced.
	Pace bool

	// OnWait, when not nil, is called once for every wait a request starts
	// (a quota wait, a throttle's wait, a transient failure's backoff),
	// before it starts, on the request's goroutine. It must not block for
	// long: the wait has not begun.
	OnWait func(WaitEvent)

	// Logger receives one Info line per wait and per deferral, and a Warn
	// line when the store fails. nil discards. No line ever holds a token
	// or a URL.
	Logger *slog.Logger

	// Hostname is recorded as the observer of every state. "" means
	// os.Hostname().
	Hostname string

	// TransientRetries is how many times an idempotent request is sent
	// again after transient failures. 0 means DefaultTransientRetries; a
	// negative value disables these retries.
	TransientRetries int

	// Backoff gives the wait before the n-th transient retry (n from 0).
	// nil means DefaultBackoff.
	Backoff clock.Backoff
}

// WaitKind says what a wait is for.
type WaitKind string

const (
	// WaitQuota: the key is exhausted; the wait ends at the reset plus
	// margin and jitter.
	WaitQuota WaitKind = "quota"
	// WaitSecondary: a short throttle (a secondary limit, a per-minute
	// LLM limit); the wait ends when the provider's retry-after does.
	WaitSecondary WaitKind = "secondary"
	// WaitTransient: the backoff before an idempotent request is sent
	// again after a transient failure.
	WaitTransient WaitKind = "transient"
)

// WaitEvent describes one wait a request is about to start. It holds no
// token and no URL.
type WaitEvent struct {
	Kind WaitKind
	// Key is the quota waited for (for a transient wait, the key the
	// request is charged to).
	Key quota.Key
	// Start is when the wait begins and Until when it ends, on the
	// Transport's clock; Wait is Until − Start.
	Start, Until time.Time
	Wait         time.Duration
	// Attempt is how many times the request has been sent so far.
	Attempt int
	// Method is the request's method.
	Method string
	// Reason says why, in a few words.
	Reason string
}

// lowPriorityKey is the context key of WithLowPriority.
type lowPriorityKey struct{}

// WithLowPriority returns a context whose requests are low priority: they
// never wait for a quota, and they also stop at the reserve. A request
// made with it, whose key is exhausted, throttled, or below its reserve,
// returns a *quota.DeferralError without being sent; a request without it
// goes on below the reserve and waits out an exhaustion.
func WithLowPriority(ctx context.Context) context.Context {
	return context.WithValue(ctx, lowPriorityKey{}, true)
}

// IsLowPriority reports whether ctx was marked by WithLowPriority.
func IsLowPriority(ctx context.Context) bool {
	v, _ := ctx.Value(lowPriorityKey{}).(bool)
	return v
}
