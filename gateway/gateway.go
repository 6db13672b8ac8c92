package gateway

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/layoverhq/layover/clock"
	"github.com/layoverhq/layover/quota"
	"github.com/layoverhq/layover/redact"
	"github.com/layoverhq/layover/store"
	"github.com/layoverhq/layover/textsafe"
	"github.com/layoverhq/layover/transport"
)

// Defaults of Options (docs/gateway.md).
const (
	DefaultMaxHold = 30 * time.Second
	DefaultMaxBody = 32 << 20 // 32 MiB
	// DefaultMaxHeldBytes bounds the request bodies held in memory at
	// once, across every held request (Options.MaxHeldBytes).
	DefaultMaxHeldBytes = 256 << 20 // 256 MiB
	DefaultResumeRate   = 10.0      // requests per second per key after a hold (docs/design.md, Defaults)
	// MaxMaxHold bounds Options.MaxHold.
	MaxMaxHold = time.Hour
)

// Options configures a Gateway. Every zero field means the default stated
// on it.
type Options struct {
	// Upstreams maps a route name (Anthropic, OpenAI, Gemini) to its
	// upstream base URL (see ParseUpstream); a route missing from it
	// goes to DefaultUpstreams()[name]. Another name is an error.
	Upstreams map[string]string
	// Store is the shared ledger; nil keeps it in memory only. The
	// Gateway never closes it.
	Store store.Store
	// Policy is the quota policy (reserve, reset margin and jitter,
	// unknown reset, throttle wait); nil means quota.DefaultPolicy().
	// Its MaxTotalWait is not used: MaxHold is the gateway's cap.
	Policy *quota.Policy
	// MaxHold is the longest a request is held before it is sent; a
	// request whose key resumes later is answered at once (429). 0 means
	// DefaultMaxHold; negative or over MaxMaxHold is an error.
	MaxHold time.Duration
	// NoHold answers every held-back request at once, whatever MaxHold.
	NoHold bool
	// MaxBody is the largest request body, in bytes; a larger one is
	// answered 413. 0 means DefaultMaxBody; negative is an error.
	MaxBody int64
	// MaxHeldBytes is the most request-body bytes the gateway keeps in
	// memory at once for held requests, all of them together: a request
	// whose body would pass it is answered at once (429) rather than
	// held. 0 means DefaultMaxHeldBytes; negative is an error.
	MaxHeldBytes int64
	// ResumeRate is how many held requests of one key (host, principal)
	// go out per second once their hold ends. 0 means DefaultResumeRate;
	// negative, NaN or infinite is an error.
	ResumeRate float64
	// Pace paces low-priority requests as transport.Options.Pace does
	// (docs/pacing.md).
	Pace bool
	// Clock and Rand: the time and the jitter source; nil means the
	// system clock and a runtime-seeded source.
	Clock clock.Clock
	Rand  quota.Rand
	// Logger receives the gateway's failures (an upstream unreachable, a
	// recovered panic) and the transports' warnings (a store that fails);
	// holds and local answers are counted in the metrics, not logged. nil
	// discards. No line holds a key or a URL.
	Logger *slog.Logger
	// Hostname is recorded as the observer of every state; "" means
	// os.Hostname().
	Hostname string
	// Next sends requests upstream; nil means a clone of
	// http.DefaultTransport tuned for one gateway (more idle connections
	// per host, compression negotiated and undone by it).
	Next http.RoundTripper
	// Registerer receives the gateway's metrics (docs/metrics.md); nil
	// means none are registered.
	Registerer prometheus.Registerer
}

// Gateway is the proxy: an http.Handler. Make it with New; safe for
// concurrent use.
type Gateway struct {
	routes  map[string]*route
	clock   clock.Clock
	log     *slog.Logger
	maxHold time.Duration
	noHold  bool
	maxBody int64
	held    *heldBytes
	flying  inflight
	pacer   *pacer
	m       *metrics
	next    http.RoundTripper
}

// route is one provider's forwarding.
type route struct {
	name  string
	base  *url.URL
	tr    *transport.Transport
	proxy *httputil.ReverseProxy
}

// New makes a Gateway from opts.
func New(opts Options) (*Gateway, error) {
	g := &Gateway{clock: opts.Clock, log: opts.Logger, maxHold: opts.MaxHold, noHold: opts.NoHold, maxBody: opts.MaxBody, next: opts.Next}
	switch {
	case opts.MaxHold < 0 || opts.MaxHold > MaxMaxHold:
		return nil, fmt.Errorf("gateway: MaxHold %s: want 0 to %s", opts.MaxHold, MaxMaxHold)
	case opts.MaxBody < 0:
		return nil, fmt.Errorf("gateway: MaxBody %d is negative", opts.MaxBody)
	case opts.MaxHeldBytes < 0:
		return nil, fmt.Errorf("gateway: MaxHeldBytes %d is negative", opts.MaxHeldBytes)
	case opts.ResumeRate < 0 || math.IsNaN(opts.ResumeRate) || math.IsInf(opts.ResumeRate, 0):
		return nil, fmt.Errorf("gateway: ResumeRate %v: want a positive number", opts.ResumeRate)
	}
	if g.maxHold == 0 {
		g.maxHold = DefaultMaxHold
	}
	g.held = &heldBytes{limit: opts.MaxHeldBytes}
	if g.held.limit == 0 {
		g.held.limit = DefaultMaxHeldBytes
	}
	if g.maxBody == 0 {
		g.maxBody = DefaultMaxBody
	}
	rate := opts.ResumeRate
	if rate == 0 {
		rate = DefaultResumeRate
	}
	if g.clock == nil {
		g.clock = clock.Real{}
	}
	if g.log == nil {
		g.log = slog.New(slog.DiscardHandler)
	}
	if g.next == nil {
		g.next = defaultNext()
	}
	if opts.Hostname == "" {
		opts.Hostname, _ = os.Hostname()
	}
	for name := range opts.Upstreams {
		if !knownRoute(name) {
			return nil, fmt.Errorf("gateway: unknown route %q: want %s, %s or %s", name, Anthropic, OpenAI, Gemini)
		}
	}
	m, err := newMetrics(opts.Registerer)
	if err != nil {
		return nil, fmt.Errorf("gateway: metrics: %w", err)
	}
	g.m = m
	g.pacer = newPacer(g.clock, rate)
	pol := quota.DefaultPolicy()
	if opts.Policy != nil {
		pol = *opts.Policy
	}
	// The transport never waits (ModeDefer): the gateway holds, so the
	// cap is MaxHold; the policy's own cap only has to validate.
	rand := opts.Rand
	if rand == nil {
		rand = quota.NewRand()
	}
	lr := &lockedRand{r: rand}
	defaults := DefaultUpstreams()
	g.routes = map[string]*route{}
	buffers := newBufferPool() // one pool for every route's proxy
	for _, name := range Routes() {
		raw, ok := opts.Upstreams[name]
		if !ok {
			raw = defaults[name]
		}
		base, err := ParseUpstream(raw)
		if err != nil {
			return nil, fmt.Errorf("gateway: upstream of %s: %w", name, err)
		}
		rt := &route{name: name, base: base}
		rt.tr, err = transport.New(&timed{next: g.next, h: m.upstream.WithLabelValues(name), clock: g.clock}, &transport.Options{
			Provider:         providerOf(name),
			Policy:           &pol,
			Store:            opts.Store,
			Command:          "layover gateway",
			Clock:            g.clock,
			Rand:             lr,
			Mode:             transport.ModeDefer,
			Pace:             opts.Pace,
			Logger:           slog.New(minLevel{min: slog.LevelWarn, h: g.log.Handler()}),
			Hostname:         opts.Hostname,
			TransientRetries: -1,
		})
		if err != nil {
			return nil, fmt.Errorf("gateway: %w", err)
		}
		rt.proxy = &httputil.ReverseProxy{
			Rewrite:       func(*httputil.ProxyRequest) {}, // the handler sets the outgoing URL (see forward)
			Transport:     &holder{g: g, rt: rt},
			FlushInterval: -1,
			BufferPool:    buffers,
			ErrorHandler:  g.proxyError(rt),
			ErrorLog:      slog.NewLogLogger(g.log.Handler(), slog.LevelWarn),
		}
		g.routes[name] = rt
	}
	return g, nil
}

// providerOf is the transport's Provider of a route.
func providerOf(name string) *transport.Provider {
	switch name {
	case Anthropic:
		return transport.Anthropic()
	case OpenAI:
		return transport.OpenAI()
	default:
		return transport.Gemini()
	}
}

// defaultNext is http.DefaultTransport tuned for a gateway: every agent of
// a host goes through it to a few hosts, so it keeps more idle connections
// per host. It negotiates compression itself (the client's Accept-Encoding
// is not forwarded, see ServeHTTP) and decompresses transparently, so the
// transport classifies a rejection's plain body and the client, on
// loopback, gets it plain, without the compressed Content-Encoding and
// Content-Length.
func defaultNext() http.RoundTripper {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.MaxIdleConns = 1000
	t.MaxIdleConnsPerHost = 256
	return t
}

// Close waits for the requests under way to end (at most closeWait, 10 s
// on the Gateway's clock), then flushes the ledger writes of every route
// to the store and closes idle upstream connections. The Gateway stays
// usable.
func (g *Gateway) Close() error {
	// A request still under way may yet record a rejection: wait for it,
	// up to closeWait, before the transports flush and close.
	g.flying.wait(g.clock.After(closeWait))
	var first error
	for _, name := range Routes() {
		rt := g.routes[name]
		if err := rt.tr.Close(); err != nil && first == nil {
			first = err
		}
		rt.tr.CloseIdleConnections()
	}
	return first
}

// States returns every route's in-memory view of the quotas (as
// transport.Transport.States), by route.
func (g *Gateway) States() map[string][]quota.State {
	out := map[string][]quota.State{}
	for name, rt := range g.routes {
		out[name] = rt.tr.States()
	}
	return out
}

// layoverHeaderPrefix starts the names of the request headers the gateway
// reads and never forwards.
const layoverHeaderPrefix = "X-Layover-"

// maxCause bounds the cause of a 502, in its body and the log.
const maxCause = 500

// reqInfo is what the handler and the holder share about one request.
type reqInfo struct {
	route   string
	low     bool
	held    time.Duration // time spent held, 0 when never
	wasHeld bool
	sent    bool              // the upstream answered
	local   bool              // answered by the gateway (429)
	tok     []string          // the request's credentials, to mask them in errors
	cred    [sha256.Size]byte // their digest: the pacer's key
}

type infoKey struct{}

// ServeHTTP forwards r by its route (see the package documentation).
func (g *Gateway) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	g.flying.add()
	defer g.flying.done()
	rec := &recorder{ResponseWriter: w}
	info := &reqInfo{route: "none"}
	defer func() {
		if v := recover(); v != nil {
			if v == http.ErrAbortHandler { //nolint:errorlint // the sentinel panic value itself
				g.m.requests.WithLabelValues(info.route, OutcomeCanceled).Inc()
				panic(v)
			}
			g.log.Error("layover gateway: recovered from a failure", "route", info.route, "panic", redact.String(fmt.Sprint(v), info.tok...))
			if !rec.wrote {
				writeError(rec, http.StatusInternalServerError, "layover gateway: internal error")
			}
			g.m.requests.WithLabelValues(info.route, OutcomeInternal).Inc()
		}
	}()
	name, rest, ok := splitRoute(r.URL.EscapedPath())
	if !ok {
		writeError(rec, http.StatusNotFound, "layover gateway: no route for this path: want /anthropic/…, /openai/… or /gemini/…")
		g.m.requests.WithLabelValues(info.route, OutcomeBadRequest).Inc()
		return
	}
	rt := g.routes[name]
	info.route = name
	info.tok = credentials(r)
	info.cred = sha256.Sum256([]byte(strings.Join(info.tok, "\x00")))
	if r.ContentLength > g.maxBody {
		writeError(rec, http.StatusRequestEntityTooLarge, fmt.Sprintf("layover gateway: the request body is larger than %d bytes", g.maxBody))
		g.m.requests.WithLabelValues(name, OutcomeBadRequest).Inc()
		return
	}
	u, err := target(rt.base, rest, r.URL.RawQuery)
	if err != nil {
		msg := "layover gateway: the path is not a valid escaped path"
		if errors.Is(err, errDotSegment) {
			msg = `layover gateway: the path has a "." or ".." segment`
		}
		writeError(rec, http.StatusBadRequest, msg)
		g.m.requests.WithLabelValues(name, OutcomeBadRequest).Inc()
		return
	}
	if r.Body != nil && r.Body != http.NoBody {
		r.Body = http.MaxBytesReader(rec, r.Body, g.maxBody)
	}
	info.low = lowPriority(r.Header)
	ctx := context.WithValue(r.Context(), infoKey{}, info)
	if info.low {
		ctx = transport.WithLowPriority(ctx)
	}
	out := r.WithContext(ctx)
	out.URL = u
	out.Host = ""
	out.RequestURI = ""
	out.Header = r.Header.Clone()
	for k := range out.Header {
		// The x-layover-* headers are the gateway's own (PriorityHeader).
		if len(k) >= len(layoverHeaderPrefix) && strings.EqualFold(k[:len(layoverHeaderPrefix)], layoverHeaderPrefix) {
			delete(out.Header, k)
		}
	}
	// The gateway's own transport negotiates compression and undoes it:
	// a compressed rejection could not be classified.
	out.Header.Del("Accept-Encoding")
	rt.proxy.ServeHTTP(rec, out)
	g.m.requests.WithLabelValues(name, outcomeOf(info, rec.status, r.Context().Err() != nil)).Inc()
}

// outcomeOf is the outcome label of a finished request.
func outcomeOf(info *reqInfo, status int, canceled bool) string {
	switch {
	case info.local:
		return OutcomeAnsweredLocally
	case info.sent && info.wasHeld:
		return OutcomeHeldThenSent
	case info.sent && status == http.StatusTooManyRequests:
		return OutcomeRejected
	case info.sent && status >= 400:
		return OutcomeUpstreamStatus
	case info.sent:
		return OutcomeOK
	case canceled:
		return OutcomeCanceled
	case status == http.StatusRequestEntityTooLarge:
		return OutcomeBadRequest
	}
	return OutcomeUpstreamError
}

// proxyError answers a request the proxy could not forward: a local 429
// for a deferral, 413 for a body past MaxBody, nothing for a client that
// went away, else 502 with the cause (its credentials masked).
func (g *Gateway) proxyError(rt *route) func(http.ResponseWriter, *http.Request, error) {
	return func(w http.ResponseWriter, r *http.Request, err error) {
		info, _ := r.Context().Value(infoKey{}).(*reqInfo)
		if info == nil {
			info = &reqInfo{}
		}
		var de *quota.DeferralError
		var tooBig *http.MaxBytesError
		switch {
		case errors.As(err, &de):
			info.local = true
			writeDeferred(w, rt.name, de, g.clock.Now())
		case errors.As(err, &tooBig):
			writeError(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("layover gateway: the request body is larger than %d bytes", tooBig.Limit))
		case r.Context().Err() != nil:
			// The client went away: there is no one to answer.
			w.WriteHeader(http.StatusBadGateway)
		default:
			// Masked, then bounded and stripped of control characters:
			// the text may quote what the upstream sent.
			msg := textsafe.Line(redact.String(err.Error(), info.tok...), maxCause)
			g.log.Warn("layover gateway: upstream unreachable", "route", rt.name, "err", msg)
			writeError(w, http.StatusBadGateway, "layover gateway: the "+rt.name+" upstream "+rt.base.Host+" could not be reached: "+msg)
		}
	}
}

// credentials returns the credential values a request carries, to mask
// them in any text the gateway writes.
func credentials(r *http.Request) []string {
	var out []string
	for _, h := range []string{"Authorization", "X-Api-Key", "X-Goog-Api-Key", "Api-Key"} {
		for _, v := range r.Header.Values(h) {
			out = append(out, v)
			if _, tok, ok := cutScheme(v); ok {
				out = append(out, tok)
			}
		}
	}
	if k := r.URL.Query().Get("key"); k != "" {
		out = append(out, k)
	}
	return out
}

// cutScheme splits "Bearer TOKEN".
func cutScheme(v string) (scheme, tok string, ok bool) {
	for i := 0; i < len(v); i++ {
		if v[i] == ' ' {
			return v[:i], v[i+1:], true
		}
	}
	return "", "", false
}

// holder is a route's RoundTripper under the proxy: it sends through the
// route's transport, and when the transport defers the request (its key
// held back), holds it until the resume time, within MaxHold, and tries
// again; a deferral it does not hold is returned for proxyError to answer.
type holder struct {
	g  *Gateway
	rt *route
}

func (h *holder) RoundTrip(req *http.Request) (*http.Response, error) {
	g := h.g
	info, _ := req.Context().Value(infoKey{}).(*reqInfo)
	if info == nil {
		info = &reqInfo{}
	}
	ctx := req.Context()
	var body io.Reader = req.Body
	if req.Body == nil || req.Body == http.NoBody {
		body = nil
	}
	buffered := false
	start := g.clock.Now()
	// Every wait of this request, for a resume time or a pacer slot,
	// comes out of one budget: it is sent by start+MaxHold or answered.
	deadline := start.Add(g.maxHold)
	if g.noHold || info.low {
		deadline = start
	}
	pk := pacerKey{h.rt.name, info.cred}
	held := false // whether a deferral of this request is being waited out
	for {
		if info.low {
			// A low-priority request never waits: it is answered at
			// once below (a deferral) or sent.
		} else if slot, ok := g.pacer.take(pk, deadline, held); !ok {
			return nil, &quota.DeferralError{ResumeAt: slot, Cause: quota.CauseExhausted,
				Reason: "this key's requests are paced after a reset, at most " + rateText(g.pacer.interval)}
		} else if wait := slot.Sub(g.clock.Now()); wait > 0 {
			if err := h.wait(ctx, info, wait); err != nil {
				return nil, err
			}
		}
		out := req
		if body != nil {
			// The transport closes the body of a request it does not
			// send; a held request must keep it for the try after.
			out = req.Clone(ctx)
			out.Body = noClose{body}
			out.GetBody = nil
		}
		resp, err := h.rt.tr.RoundTrip(out)
		var de *quota.DeferralError
		if !errors.As(err, &de) {
			if err == nil {
				info.sent = true
			}
			return resp, err
		}
		if !de.ResumeAt.IsZero() {
			// Whoever comes back at the resume time is paced too.
			g.pacer.mark(pk, de.ResumeAt)
		}
		now := g.clock.Now()
		if info.low || g.noHold || de.ResumeAt.IsZero() || de.ResumeAt.After(deadline) {
			return nil, err
		}
		if !buffered && body != nil {
			// Read the body before holding: the server notices a client
			// that goes away only once the body has been read, and a
			// held request must end when its client does. It is sent
			// once, from this copy, after the hold (never replayed).
			data, rerr := io.ReadAll(body)
			if rerr != nil {
				return nil, rerr
			}
			if !g.held.take(int64(len(data))) {
				// Nothing was sent: answered locally, as past the hold.
				return nil, &quota.DeferralError{Key: de.Key, ResumeAt: de.ResumeAt, Cause: de.Cause,
					Reason: "the gateway holds no more request bodies in memory (MaxHeldBytes)"}
			}
			defer g.held.give(int64(len(data)))
			body, buffered = bytes.NewReader(data), true
		}
		// Listed as a wait, as layover run's and the transport's are, so
		// that status shows the gateway holding the key.
		unlist := func() {}
		if de.Key != (quota.Key{}) {
			unlist = h.rt.tr.ListWait(ctx, de.Key, transport.WaitQuota, de.ResumeAt)
		}
		err = h.wait(ctx, info, de.ResumeAt.Sub(now))
		unlist()
		if err != nil {
			return nil, err
		}
		held = true
	}
}

// wait holds the request d, counted in the metrics, or until ctx ends.
func (h *holder) wait(ctx context.Context, info *reqInfo, d time.Duration) error {
	g := h.g
	start := g.clock.Now()
	g.m.held.Inc()
	err := sleep(ctx, g.clock, d)
	g.m.held.Dec()
	spent := g.clock.Now().Sub(start)
	info.held += spent
	info.wasHeld = true
	g.m.hold.Observe(spent.Seconds())
	return err
}

// rateText is a pacer interval as a rate, e.g. "10 requests per second".
func rateText(iv time.Duration) string {
	return strconv.FormatFloat(float64(time.Second)/float64(iv), 'g', 4, 64) + " requests per second"
}

// noClose is a request body the transport may close without closing it.
type noClose struct {
	r interface{ Read([]byte) (int, error) }
}

func (n noClose) Read(p []byte) (int, error) { return n.r.Read(p) }
func (noClose) Close() error                 { return nil }

// sleep waits d on c, or until ctx ends.
func sleep(ctx context.Context, c clock.Clock, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	select {
	case <-c.After(d):
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// timed is the RoundTripper under a route's transport: it times each
// upstream call to its response headers.
type timed struct {
	next  http.RoundTripper
	h     prometheus.Observer
	clock clock.Clock
}

func (t *timed) RoundTrip(req *http.Request) (*http.Response, error) {
	start := t.clock.Now()
	resp, err := t.next.RoundTrip(req)
	t.h.Observe(t.clock.Now().Sub(start).Seconds())
	return resp, err
}

// recorder notes whether, and with what status, a response was begun.
type recorder struct {
	http.ResponseWriter
	wrote  bool
	status int
}

func (r *recorder) WriteHeader(code int) {
	if code >= 200 && !r.wrote {
		r.wrote, r.status = true, code
	}
	r.ResponseWriter.WriteHeader(code)
}

func (r *recorder) Write(p []byte) (int, error) {
	if !r.wrote {
		r.wrote, r.status = true, http.StatusOK
	}
	return r.ResponseWriter.Write(p)
}

// Unwrap lets http.ResponseController (the proxy's flushes) reach the
// connection's writer.
func (r *recorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }

// Flush flushes the underlying writer.
func (r *recorder) Flush() {
	if f, ok := r.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// lockedRand serializes a quota.Rand shared by the routes' transports.
type lockedRand struct {
	mu sync.Mutex
	r  quota.Rand
}

func (l *lockedRand) Int64N(n int64) int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.r.Int64N(n)
}

// pacerKey is the (route, credentials) whose requests are paced: known
// before a request is sent, unlike the quota key's principal.
type pacerKey struct {
	route string
	cred  [sha256.Size]byte
}

// pacer spaces the requests of one key at most rate per second after a
// resume (docs/gateway.md, Resume rate): each takes the next free slot,
// interval apart. A key is paced from its resume time until a second past
// the last slot a held request took; outside that window its requests go
// at once.
type pacer struct {
	clock    clock.Clock
	interval time.Duration
	mu       sync.Mutex
	keys     map[pacerKey]*paced
}

// paced is one key's pacing: the next free slot and the window, from the
// earliest resume time to its end.
type paced struct{ next, from, end time.Time }

func newPacer(c clock.Clock, rate float64) *pacer {
	iv := time.Duration(float64(time.Second) / rate)
	if rate < 1e-9 || iv <= 0 {
		iv = time.Nanosecond
	}
	return &pacer{clock: c, interval: iv, keys: map[pacerKey]*paced{}}
}

// mark notes that k resumes at resumeAt: requests of k from then on are
// paced, for at least a second.
func (p *pacer) mark(k pacerKey, resumeAt time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	e := p.entry(k)
	if !p.clock.Now().Before(e.end) || resumeAt.Before(e.from) {
		e.from = resumeAt
	}
	if e.next.Before(resumeAt) {
		e.next = resumeAt
	}
	if end := resumeAt.Add(time.Second); e.end.Before(end) {
		e.end = end
	}
}

// take gives a request of k its slot: now when k is not being paced (and
// the request was not held), else k's next free slot, so that fresh
// requests and clients coming back at a local answer's retry-after are
// paced with the held ones. A slot after
// deadline is not taken: ok is false and slot says when one would be.
func (p *pacer) take(k pacerKey, deadline time.Time, held bool) (slot time.Time, ok bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	now := p.clock.Now()
	e, found := p.keys[k]
	if !held && (!found || now.Before(e.from) || !now.Before(e.end)) {
		// Not paced; before the resume time the transport holds it.
		return now, true
	}
	if e == nil {
		e = p.entry(k)
	}
	slot = now
	if e.next.After(now) {
		slot = e.next
	}
	if slot.After(deadline) {
		return slot, false
	}
	e.next = slot.Add(p.interval)
	if end := slot.Add(time.Second); held && e.end.Before(end) {
		e.end = end
	}
	return slot, true
}

// entry is k's pacing, made when missing; it drops ended ones when the
// map grows. The caller holds p.mu.
func (p *pacer) entry(k pacerKey) *paced {
	if e, ok := p.keys[k]; ok {
		return e
	}
	if len(p.keys) > 4096 {
		now := p.clock.Now()
		for key, e := range p.keys {
			if !now.Before(e.end) && !now.Before(e.next) {
				delete(p.keys, key)
			}
		}
	}
	e := &paced{}
	p.keys[k] = e
	return e
}

// Upstream returns route's upstream base URL ("" for an unknown route).
func (g *Gateway) Upstream(route string) string {
	rt, ok := g.routes[route]
	if !ok {
		return ""
	}
	return rt.base.String()
}

// minLevel passes on the records of level min and above: the transports
// log one Info line per deferral, which for a gateway is one per request
// answered locally or held; the gateway counts those in its metrics
// instead, and logs its failures.
type minLevel struct {
	min slog.Level
	h   slog.Handler
}

func (m minLevel) Enabled(ctx context.Context, l slog.Level) bool {
	return l >= m.min && m.h.Enabled(ctx, l)
}
func (m minLevel) Handle(ctx context.Context, r slog.Record) error { return m.h.Handle(ctx, r) }
func (m minLevel) WithAttrs(a []slog.Attr) slog.Handler {
	return minLevel{min: m.min, h: m.h.WithAttrs(a)}
}
func (m minLevel) WithGroup(name string) slog.Handler {
	return minLevel{min: m.min, h: m.h.WithGroup(name)}
}

// heldBytes counts the request-body bytes held requests keep in memory,
// against limit (Options.MaxHeldBytes).
type heldBytes struct {
	mu    sync.Mutex
	limit int64
	n     int64
}

// take reserves n bytes; false, reserving nothing, when that would pass
// the limit.
func (h *heldBytes) take(n int64) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if n > h.limit-h.n {
		return false
	}
	h.n += n
	return true
}

// give returns n bytes take reserved.
func (h *heldBytes) give(n int64) {
	h.mu.Lock()
	h.n -= n
	h.mu.Unlock()
}

// closeWait bounds how long Close waits for the requests still under way
// (their clients gone or their server stopped, they end soon).
const closeWait = 10 * time.Second

// inflight counts the requests ServeHTTP is serving.
type inflight struct {
	mu   sync.Mutex
	n    int
	idle chan struct{} // closed when n falls to 0 while someone waits; nil else
}

func (f *inflight) add() {
	f.mu.Lock()
	f.n++
	f.mu.Unlock()
}

func (f *inflight) done() {
	f.mu.Lock()
	f.n--
	if f.n == 0 && f.idle != nil {
		close(f.idle)
		f.idle = nil
	}
	f.mu.Unlock()
}

// wait returns once no request is under way, or when timeout fires.
func (f *inflight) wait(timeout <-chan time.Time) {
	f.mu.Lock()
	if f.n == 0 {
		f.mu.Unlock()
		return
	}
	if f.idle == nil {
		f.idle = make(chan struct{})
	}
	idle := f.idle
	f.mu.Unlock()
	select {
	case <-idle:
	case <-timeout:
	}
}
