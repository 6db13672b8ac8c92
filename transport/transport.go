package transport

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/layoverhq/layover/clock"
	"github.com/layoverhq/layover/quota"
	"github.com/layoverhq/layover/store"
)

// Transport is an http.RoundTripper that knows the quotas its responses
// report. Before a request it waits out (or defers on) an exhausted quota;
// after a response it updates its in-memory ledger at once and the store
// soon after; it retries only as the Safety rules of docs/design.md allow. See the
// package documentation for the rules.
//
// A Transport is safe for concurrent use by many goroutines. Make it with
// New; the zero value is not usable. Call Close (or Flush) before exit so
// that the last observations reach the store.
type Transport struct {
	next             http.RoundTripper
	provider         *Provider
	hosts            *byHost
	principal        string
	policy           quota.Policy
	store            store.Store
	clock            clock.Clock
	rand             *lockedRand
	mode             Mode
	onWait           func(WaitEvent)
	log              *slog.Logger
	hostname         string
	transientRetries int
	backoff          clock.Backoff

	view     *view
	pacer    *pacer // nil unless Options.Pace
	gates    *gates
	command  string // what status shows for this process's waits
	wmu      sync.Mutex
	waiting  map[quota.Key]*waitReg // listed waits, by key
	writer   *writer                // nil without a store
	lastFP   atomic.Pointer[tokenFP]
	lastHost atomic.Pointer[hostMemo]
}

var _ http.RoundTripper = (*Transport)(nil)

// New returns a Transport that sends requests through next
// (http.DefaultTransport when nil), configured by opts (nil for the
// defaults). It fails on a policy that cannot be used, a Provider without
// Classify, or an unknown Mode.
func New(next http.RoundTripper, opts *Options) (*Transport, error) {
	if opts == nil {
		opts = &Options{}
	}
	if next == nil {
		next = http.DefaultTransport
	}
	pol := quota.DefaultPolicy()
	if opts.Policy != nil {
		pol = *opts.Policy
	}
	if err := pol.Validate(); err != nil {
		return nil, fmt.Errorf("transport: policy: %w", err)
	}
	if opts.Provider != nil && opts.Provider.Classify == nil {
		return nil, errors.New("transport: Provider.Classify is nil")
	}
	if opts.Mode != ModeWait && opts.Mode != ModeDefer {
		return nil, fmt.Errorf("transport: unknown mode %d", int(opts.Mode))
	}
	t := &Transport{
		next:      next,
		provider:  opts.Provider,
		principal: opts.Principal,
		policy:    pol,
		store:     opts.Store,
		clock:     opts.Clock,
		mode:      opts.Mode,
		onWait:    opts.OnWait,
		log:       opts.Logger,
		hostname:  opts.Hostname,
		backoff:   opts.Backoff,
		command:   opts.Command,
		waiting:   map[quota.Key]*waitReg{},
	}
	if t.store != nil && t.command == "" {
		t.command = defaultCommand()
	}
	if t.provider == nil {
		t.hosts = newByHost(os.Getenv)
	}
	if t.clock == nil {
		t.clock = clock.Real{}
	}
	r := opts.Rand
	if r == nil {
		r = quota.NewRand()
	}
	t.rand = &lockedRand{r: r}
	if t.log == nil {
		t.log = slog.New(slog.DiscardHandler)
	}
	if t.hostname == "" {
		t.hostname, _ = os.Hostname()
	}
	switch {
	case opts.TransientRetries == 0:
		t.transientRetries = DefaultTransientRetries
	case opts.TransientRetries > 0:
		t.transientRetries = opts.TransientRetries
	}
	if t.backoff == nil {
		t.backoff = DefaultBackoff
	}
	warn := func(msg string, args ...any) { t.log.Warn(msg, args...) }
	t.view = newView(t.store, warn)
	t.gates = newGates(t.clock)
	if opts.Pace {
		t.pacer = newPacer(t.store, warn)
	}
	if t.store != nil {
		t.writer = newWriter(t.store, warn)
	}
	return t, nil
}

// RoundTrip sends req, waiting first when its quota is exhausted, and
// returns the provider's response as it is (a status code is never turned
// into an error). It returns a *quota.DeferralError, without sending, when
// the request may not wait (ModeDefer, a low-priority request) or the wait
// would pass the policy's cap, and ctx.Err() when the request's context
// ends a wait.
func (t *Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	host := t.keyHost(req.URL)
	p := t.provider
	if p == nil {
		p = t.hosts.choose(host)
		if p == nil {
			return t.next.RoundTrip(req)
		}
	}
	ctx := req.Context()
	c := &call{
		t: t, p: p, req: req, ctx: ctx, host: host,
		charged:    p.resource(req),
		low:        IsLowPriority(ctx),
		replayable: Replayable(req),
		idempotent: Idempotent(req),
		budget:     quota.Budget{Max: t.policy.MaxTotalWait},
	}
	if c.tok = credential(req); c.tok != "" && t.principal == "" {
		c.fp = t.fingerprint(c.tok)
	}
	return c.do()
}

// keyHost returns keyHost(u), remembering the last host's, since a client
// mostly calls one host.
func (t *Transport) keyHost(u *url.URL) string {
	if last := t.lastHost.Load(); last != nil && last.raw == u.Host && last.scheme == u.Scheme {
		return last.key
	}
	k := keyHost(u)
	t.lastHost.Store(&hostMemo{raw: u.Host, scheme: u.Scheme, key: k})
	return k
}

// hostMemo is a URL's host and scheme and the key host they give.
type hostMemo struct{ raw, scheme, key string }

// fingerprint returns quota.TokenFingerprint(tok), remembering the last
// token's so that a client with one token hashes it once.
func (t *Transport) fingerprint(tok string) string {
	if last := t.lastFP.Load(); last != nil && last.tok == tok {
		return last.fp
	}
	fp := quota.TokenFingerprint(tok)
	t.lastFP.Store(&tokenFP{tok: tok, fp: fp})
	return fp
}

// tokenFP is a token and its fingerprint, kept in memory only.
type tokenFP struct{ tok, fp string }

// Flush waits until every observation made so far is in the store, or ctx
// ends. It returns the first store failure since the last Flush or Close.
// Without a store it returns nil at once.
func (t *Transport) Flush(ctx context.Context) error {
	if t.writer == nil {
		return nil
	}
	return t.writer.flush(ctx)
}

// Close flushes pending observations to the store (see Flush). It closes
// neither the store nor next, and the Transport stays usable: Close is
// what a program calls before it exits. Calling it twice is harmless.
func (t *Transport) Close() error {
	return t.Flush(context.Background())
}

// CloseIdleConnections closes the idle connections of next, when it can.
func (t *Transport) CloseIdleConnections() {
	if c, ok := t.next.(interface{ CloseIdleConnections() }); ok {
		c.CloseIdleConnections()
	}
}

// States returns the Transport's in-memory view: the latest state of every
// key it has observed or loaded, sorted by key.
func (t *Transport) States() []quota.State {
	return t.view.snapshot()
}

// notify makes a wait visible: the OnWait hook and one log line.
func (t *Transport) notify(ev WaitEvent) {
	if t.onWait != nil {
		t.onWait(ev)
	}
	t.log.Info("layover: wait", "kind", string(ev.Kind), "key", ev.Key.String(),
		"until", ev.Until.UTC().Format(time.RFC3339), "wait", ev.Wait.String(),
		"attempt", ev.Attempt, "reason", ev.Reason)
}

// persist writes states to the store through the writer: before it returns
// when urgent (an exhaustion or a rejection, which must be known before
// RoundTrip returns), else in the background. Both go through the one
// writer so that an earlier state's background write never lands after a
// later state's urgent one (a tie in observed time, on a coarse or fake
// clock, goes to the later write).
func (t *Transport) persist(states []quota.State, urgent bool) {
	if t.store == nil || len(states) == 0 {
		return
	}
	if !urgent {
		for _, s := range states {
			if s.Depleted() {
				urgent = true
				break
			}
		}
	}
	if !urgent {
		t.writer.enqueue(states)
		return
	}
	t.writer.writeNow(states)
}

// rememberOrg records in the store that the token fp is org's, the
// principal its response named, as a learned login (which merges the
// states kept under "tok:"+fp into org's): a Transport started later, and
// `layover pass --quota`, then key the token's quotas by org before any
// response names it (docs/design.md, Glossary: Principal). A store that
// fails is logged; the principal holds in memory either way.
func (t *Transport) rememberOrg(ctx context.Context, host, fp, org string, now time.Time) {
	if t.store == nil {
		return
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), storeTimeout)
	defer cancel()
	if err := t.store.LearnLogin(sctx, host, fp, org, now); err != nil {
		t.log.Warn("layover: record the organisation of a token", "host", host, "err", err)
	}
}

// lockedRand serializes a quota.Rand.
type lockedRand struct {
	mu sync.Mutex
	r  quota.Rand
}

func (l *lockedRand) Int64N(n int64) int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.r.Int64N(n)
}
