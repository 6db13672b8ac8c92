package notify

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/layoverhq/layover/clock"
	"github.com/layoverhq/layover/quota"
	"github.com/layoverhq/layover/textsafe"
)

// Defaults of Config.
const (
	// DefaultQueueSize is each target's queue, in events.
	DefaultQueueSize = 1000
	// DefaultMaxAttempts is how many times one event is POSTed to a
	// target before it is given up.
	DefaultMaxAttempts = 8
	// DefaultTimeout bounds one POST, answer included, with the default
	// Client.
	DefaultTimeout = 10 * time.Second
	// DefaultDrainTimeout is how long Close waits for queued events.
	DefaultDrainTimeout = 5 * time.Second
)

// The retry schedule: the wait before retry n (0 for the first) is
// RetryBase × 2ⁿ, doubled up to RetryCap, plus a jitter drawn uniformly
// from [0, a quarter of it]; never more than RetryCap in all. A 429's
// Retry-After, when longer, is waited instead, up to RetryCap.
const (
	RetryBase = time.Second
	RetryCap  = 5 * time.Minute
)

// maxAnswer bounds, in bytes, what is read of a receiver's answer (to
// reuse the connection); the answer is never kept.
const maxAnswer = 64 << 10

// Config configures a Notifier.
type Config struct {
	// Targets are "URL" (the JSON body) or "slack:URL" (Slack's form),
	// http or https (ParseTarget). None: Send does nothing.
	Targets []string
	// Client makes the POSTs; its Timeout bounds each one. Default: a
	// client with DefaultTimeout that follows no redirect.
	Client *http.Client
	// Clock times the retries (default the system's); Rand draws their
	// jitter and the events' ids (default quota.NewRand()). Rand need not
	// be safe for concurrent use.
	Clock clock.Clock
	Rand  quota.Rand
	// QueueSize bounds each target's queue, in events (default
	// DefaultQueueSize); MaxAttempts the POSTs of one event to one target
	// (default DefaultMaxAttempts); DrainTimeout how long Close waits for
	// the queues to empty (default DefaultDrainTimeout).
	QueueSize    int
	MaxAttempts  int
	DrainTimeout time.Duration
	// Logger is told of each delivery that failed (default: discard). It
	// names a target by scheme and host only.
	Logger *slog.Logger
}

// Notifier delivers events to its targets. Send never blocks; each target
// has its own queue and worker, so a slow target delays only its own
// events, which it receives in the order they were sent. Safe for
// concurrent use.
type Notifier struct {
	cfg     Config
	workers []*worker

	randMu sync.Mutex // cfg.Rand need not be safe for concurrent use

	mu      sync.Mutex
	started bool
	closed  bool
	closing chan struct{} // closed by Close: the workers drain and end
	stop    context.CancelFunc
	done    sync.WaitGroup

	dropped atomic.Int64
	failed  atomic.Int64
}

// worker delivers one target's events, oldest first.
type worker struct {
	n      *Notifier
	target Target
	mu     sync.Mutex
	queue  []queued
	signal chan struct{} // a send happened (buffered 1)
}

// queued is an event waiting for its target, with its id.
type queued struct {
	id string
	ev Event
}

// New checks cfg and returns a Notifier; Start sets its workers going. A
// target that does not parse is an error naming it by its position and
// its scheme and host at most.
func New(cfg Config) (*Notifier, error) {
	n := &Notifier{closing: make(chan struct{})}
	for i, s := range cfg.Targets {
		t, err := ParseTarget(s)
		if err != nil {
			return nil, fmt.Errorf("notify target %d: %w", i+1, err)
		}
		n.workers = append(n.workers, &worker{n: n, target: t, signal: make(chan struct{}, 1)})
	}
	if cfg.Client == nil {
		cfg.Client = &http.Client{Timeout: DefaultTimeout, CheckRedirect: func(*http.Request, []*http.Request) error {
			return http.ErrUseLastResponse
		}}
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.Real{}
	}
	if cfg.Rand == nil {
		cfg.Rand = quota.NewRand()
	}
	if cfg.QueueSize <= 0 {
		cfg.QueueSize = DefaultQueueSize
	}
	if cfg.MaxAttempts <= 0 {
		cfg.MaxAttempts = DefaultMaxAttempts
	}
	if cfg.DrainTimeout <= 0 {
		cfg.DrainTimeout = DefaultDrainTimeout
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	n.cfg = cfg
	return n, nil
}

// Targets names the targets by scheme and host (Target.String), in order.
func (n *Notifier) Targets() []string {
	out := make([]string, len(n.workers))
	for i, w := range n.workers {
		out[i] = w.target.String()
	}
	return out
}

// Start sets the workers going until ctx ends or Close. Calling it again
// does nothing.
func (n *Notifier) Start(ctx context.Context) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.started || n.closed {
		return
	}
	n.started = true
	ctx, n.stop = context.WithCancel(ctx)
	for _, w := range n.workers {
		n.done.Add(1)
		go func() {
			defer n.done.Done()
			w.run(ctx)
		}()
	}
}

// Send queues e for every target and returns at once. A target whose queue
// is full drops its oldest event to make room (Dropped counts it); after
// Close, e is dropped.
func (n *Notifier) Send(e Event) {
	if len(n.workers) == 0 {
		return
	}
	// Holding mu orders each Send before or after Close: one after it
	// queues nothing that Close would miss.
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.closed {
		n.dropped.Add(int64(len(n.workers)))
		return
	}
	q := queued{id: n.eventID(), ev: e}
	for _, w := range n.workers {
		w.mu.Lock()
		if len(w.queue) >= n.cfg.QueueSize {
			w.queue[0] = queued{}
			w.queue = w.queue[1:]
			n.dropped.Add(1)
		}
		w.queue = append(w.queue, q)
		w.mu.Unlock()
		select {
		case w.signal <- struct{}{}:
		default:
		}
	}
}

// Close stops taking events and waits up to DrainTimeout (on the Clock)
// for the queued ones to be delivered; what is left then is dropped, an
// attempt under way cancelled. Closing twice is a no-op.
func (n *Notifier) Close() {
	n.mu.Lock()
	if n.closed {
		n.mu.Unlock()
		return
	}
	n.closed = true
	close(n.closing)
	started := n.started
	n.mu.Unlock()
	if started {
		ended := make(chan struct{})
		go func() { n.done.Wait(); close(ended) }()
		select {
		case <-ended:
		case <-n.cfg.Clock.After(n.cfg.DrainTimeout):
		}
		n.stop()
		<-ended
	}
	for _, w := range n.workers {
		w.mu.Lock()
		n.dropped.Add(int64(len(w.queue)))
		w.queue = nil
		w.mu.Unlock()
	}
}

// Dropped counts the events a target never received because its queue was
// full, or because they were still queued (or being retried) when Close
// gave up; an event is counted once per target that lost it.
func (n *Notifier) Dropped() int64 { return n.dropped.Load() }

// Failed counts the events a target refused (an answer other than 2xx,
// 429 or 5xx) or that ran out of attempts, once per target.
func (n *Notifier) Failed() int64 { return n.failed.Load() }

// eventID is a new event's id: 16 hex digits from Rand.
func (n *Notifier) eventID() string {
	n.randMu.Lock()
	defer n.randMu.Unlock()
	return fmt.Sprintf("%08x%08x", n.cfg.Rand.Int64N(1<<32), n.cfg.Rand.Int64N(1<<32))
}

// jitter draws a duration uniformly from [0, d/4].
func (n *Notifier) jitter(d time.Duration) time.Duration {
	n.randMu.Lock()
	defer n.randMu.Unlock()
	return time.Duration(n.cfg.Rand.Int64N(int64(d/4) + 1))
}

// retryWait is the wait before retry attempt (0 for the first), at least
// retryAfter (a 429's Retry-After), never more than RetryCap.
func (n *Notifier) retryWait(attempt int, retryAfter time.Duration) time.Duration {
	d := clock.Exponential(RetryBase, RetryCap).Next(attempt)
	d += n.jitter(d)
	return min(max(d, retryAfter), RetryCap)
}

// run delivers the target's events until its queue is empty after Close,
// or ctx ends.
func (w *worker) run(ctx context.Context) {
	for {
		q, ok := w.next(ctx)
		if !ok {
			return
		}
		w.deliver(ctx, q)
	}
}

// next waits for the oldest queued event; false when the worker is to end.
func (w *worker) next(ctx context.Context) (queued, bool) {
	for {
		w.mu.Lock()
		if len(w.queue) > 0 {
			q := w.queue[0]
			w.queue[0] = queued{}
			w.queue = w.queue[1:]
			w.mu.Unlock()
			return q, true
		}
		w.mu.Unlock()
		select {
		case <-w.signal:
		case <-w.n.closing:
			w.mu.Lock()
			empty := len(w.queue) == 0
			w.mu.Unlock()
			if empty {
				return queued{}, false
			}
		case <-ctx.Done():
			return queued{}, false
		}
	}
}

// deliver POSTs one event until the target takes it, refuses it, or the
// attempts run out. An event abandoned because ctx ended is dropped.
func (w *worker) deliver(ctx context.Context, q queued) {
	n := w.n
	data, err := encode(w.target.Form, q.id, q.ev)
	if err != nil { // an Event always encodes; kept for safety
		n.failed.Add(1)
		n.cfg.Logger.Error("notification not encoded", "target", w.target.String(), "kind", string(q.ev.Kind), "err", err)
		return
	}
	for attempt := 0; ; attempt++ {
		retry, retryAfter, why := w.post(ctx, data)
		if why == "" {
			return
		}
		if ctx.Err() != nil {
			n.dropped.Add(1)
			return
		}
		if !retry || attempt+1 >= n.cfg.MaxAttempts {
			n.failed.Add(1)
			n.cfg.Logger.Warn("notification not delivered", "target", w.target.String(), "kind", string(q.ev.Kind),
				"id", q.id, "attempts", attempt+1, "why", why)
			return
		}
		wait := n.retryWait(attempt, retryAfter)
		n.cfg.Logger.Info("notification to retry", "target", w.target.String(), "kind", string(q.ev.Kind),
			"id", q.id, "attempt", attempt+1, "why", why, "retry_in", wait)
		select {
		case <-n.cfg.Clock.After(wait):
		case <-ctx.Done():
			n.dropped.Add(1)
			return
		}
	}
}

// post makes one POST of data. why is "" when the target took it (2xx);
// else it says what went wrong, naming no URL, and retry reports whether
// another attempt may succeed (no answer in time, 429 or 5xx), after at
// least retryAfter (a 429's or 503's Retry-After in seconds).
func (w *worker) post(ctx context.Context, data []byte) (retry bool, retryAfter time.Duration, why string) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, w.target.URL(), bytes.NewReader(data))
	if err != nil {
		return false, 0, "the request could not be made"
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "layover-notify/1")
	resp, err := w.n.cfg.Client.Do(req)
	if err != nil {
		return true, 0, describe(err)
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxAnswer))
	_ = resp.Body.Close()
	switch code := resp.StatusCode; {
	case code >= 200 && code < 300:
		return false, 0, ""
	case code == http.StatusTooManyRequests || code >= 500:
		if s, err := strconv.Atoi(resp.Header.Get("Retry-After")); err == nil && s > 0 {
			retryAfter = min(time.Duration(s)*time.Second, RetryCap)
		}
		return true, retryAfter, "answered " + strconv.Itoa(code)
	default:
		return false, 0, "answered " + strconv.Itoa(code)
	}
}

// describe is a failed request's error without the URL, which
// url.Error quotes in full, as one bounded line.
func describe(err error) string {
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return "no answer in time"
	}
	return textsafe.Line(err.Error(), 200)
}
