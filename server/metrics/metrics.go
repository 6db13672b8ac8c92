// Package metrics is the Prometheus side of layover serve: the handler
// behind /metrics and the counters it keeps from the host's events.
// docs/metrics.md lists every metric, its labels and units, and what to
// alert on.
//
// Two kinds of metric come out. Gauges of what the store holds (quota
// states, jobs per state, workflow runs per status) are read from the
// store at each scrape, so they show every host's observations and every
// process's jobs. Counters and the wake-up lateness histogram are counted
// from the events of the host this process runs (Observe), so they count
// this process's moves only, as Prometheus counters do.
//
// A store read that fails or passes Config.ScrapeTimeout leaves its metrics out
// of that scrape and sets layover_store_up to 0 (and counts
// layover_store_read_errors_total); the page is still served, with the Go
// runtime and process metrics, so a scrape never fails whole.
package metrics

import (
	"cmp"
	"context"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/layoverhq/layover/clock"
	"github.com/layoverhq/layover/host"
	"github.com/layoverhq/layover/job"
	"github.com/layoverhq/layover/receipt"
	"github.com/layoverhq/layover/store"
)

// DefaultScrapeTimeout is Config.ScrapeTimeout's default.
const DefaultScrapeTimeout = 5 * time.Second

// LatenessBuckets are the upper bounds, in seconds, of
// layover_wakeup_lateness_seconds' buckets: from a scheduler tick to an
// hour late.
var LatenessBuckets = []float64{0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1800, 3600}

// Config configures New.
type Config struct {
	// Store is read at each scrape and for each resume's lateness.
	Store store.Store
	// Clock tells whether a quota's reset has passed (default the system
	// clock).
	Clock clock.Clock
	// NotifyDropped returns how many notifications the notifier dropped
	// from its full queue since it started; nil leaves
	// layover_notify_dropped_total out.
	NotifyDropped func() float64
	// Logger gets a line for each failed store read (default discards).
	Logger *slog.Logger
	// ScrapeTimeout bounds the store reads of one scrape, and the store
	// read of one resume's lateness (default DefaultScrapeTimeout).
	ScrapeTimeout time.Duration
}

// Metrics holds the registry behind Handler and the counters Observe
// keeps. Safe for concurrent use.
type Metrics struct {
	cfg         Config
	registry    *prometheus.Registry
	transitions *prometheus.CounterVec
	swept       *prometheus.CounterVec
	lateness    prometheus.Histogram
	readErrors  *prometheus.CounterVec
	dropped     *droppedEvents

	// wakes holds the wake-up of each job this process deferred (the
	// deferral event's WakeAt) until the job moves on, at most maxWakes.
	mu    sync.Mutex
	wakes map[string]time.Time
}

// maxWakes bounds Metrics.wakes, in jobs. A job deferred past it, or by
// another process, has its lateness read from its receipt in the store.
const maxWakes = 100_000

// New returns the metrics of a store. It panics when cfg.Store is nil (a
// programmer's error).
func New(cfg Config) *Metrics {
	if cfg.Store == nil {
		panic("metrics: New without a store")
	}
	cfg.Clock = cmp.Or[clock.Clock](cfg.Clock, clock.Real{})
	if cfg.ScrapeTimeout <= 0 {
		cfg.ScrapeTimeout = DefaultScrapeTimeout
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	m := &Metrics{
		cfg:      cfg,
		registry: prometheus.NewRegistry(),
		transitions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "layover_job_transitions_total",
			Help: "Job state changes this process made, by state before (from; \"none\" for a submission) and after (to).",
		}, []string{"from", "to"}),
		swept: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "layover_sweep_moves_total",
			Help: "Jobs this process's sweeps moved, by kind: woken (deferred to resumable), expired (receipt's resume_by passed), past_due (job deadline passed), reclaimed (lease or progress deadline lost).",
		}, []string{"kind"}),
		lateness: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "layover_wakeup_lateness_seconds",
			Help:    "How long after its wake-up (its receipt's resume_after, or the probe time of an unknown reset) a deferred job started running again, in seconds.",
			Buckets: LatenessBuckets,
		}),
		readErrors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "layover_store_read_errors_total",
			Help: "Store reads that failed or timed out, by what was read (quotas, waiters, jobs, runs, job_history).",
		}, []string{"read"}),
		dropped: &droppedEvents{},
		wakes:   map[string]time.Time{},
	}
	m.registry.MustRegister(
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		m.transitions, m.swept, m.lateness,
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "layover_events_dropped_total",
			Help: "Host events the metrics missed because their subscription's buffer was full; layover_job_transitions_total and layover_sweep_moves_total undercount by as much.",
		}, m.dropped.count),
	)
	if cfg.NotifyDropped != nil {
		m.registry.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "layover_notify_dropped_total",
			Help: "Notifications dropped, the oldest first, because the notifier's queue was full.",
		}, cfg.NotifyDropped))
	}
	for _, read := range []string{readQuotas, readWaiters, readJobs, readRuns, readHistory} {
		m.readErrors.WithLabelValues(read) // present at 0 from the start
	}
	return m
}

// Handler serves the metrics in Prometheus' exposition formats. Each
// request reads the store under its own context, ended by the request's
// or after Config.ScrapeTimeout. A failing store read never fails the page
// (see the package doc).
func (m *Metrics) Handler() http.Handler {
	opts := promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError, ErrorLog: slogPrinter{m.cfg.Logger}}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), m.cfg.ScrapeTimeout)
		defer cancel()
		// The store's gauges, and readErrors after its reads, so a scrape
		// counts its own failures.
		reads := prometheus.NewRegistry()
		reads.MustRegister(&storeCollector{m: m, ctx: ctx})
		promhttp.HandlerFor(prometheus.Gatherers{m.registry, reads}, opts).ServeHTTP(w, r)
	})
}

// noneState labels the from of a submission, which has no state before.
const noneState = "none"

// Observe counts one host event: a state change in
// layover_job_transitions_total, a sweep's moves in
// layover_sweep_moves_total, and for a deferred job that starts running
// again its lateness, which it reads from the store (at most
// Config.ScrapeTimeout). An event that changes no state counts nothing.
func (m *Metrics) Observe(ev host.Event) {
	if ev.JobID == "" {
		for kind, n := range map[string]int{"woken": ev.Swept.Woken, "expired": ev.Swept.Expired,
			"past_due": ev.Swept.PastDue, "reclaimed": ev.Swept.Reclaimed} {
			if n > 0 {
				m.swept.WithLabelValues(kind).Add(float64(n))
			}
		}
		// The sweep moves whose states are known.
		if ev.Swept.Woken > 0 {
			m.transitions.WithLabelValues(string(job.Deferred), string(job.Resumable)).Add(float64(ev.Swept.Woken))
		}
		if ev.Swept.AuthFailed > 0 {
			m.transitions.WithLabelValues(string(job.AuthWait), string(job.Failed)).Add(float64(ev.Swept.AuthFailed))
		}
		return
	}
	wake, known := m.trackWake(ev)
	if ev.From == ev.To {
		return
	}
	m.transitions.WithLabelValues(cmp.Or(string(ev.From), noneState), string(ev.To)).Inc()
	if ev.To == job.Running && (ev.From == job.Resumable || ev.From == job.Deferred) {
		if known {
			m.lateness.Observe(max(0, ev.At.Sub(wake).Seconds()))
			return
		}
		m.observeLateness(ev)
	}
}

// trackWake keeps the wake-up of a job ev defers, and forgets it once ev
// moves the job on, returning it then: its wake-up, and whether this
// process knew it.
func (m *Metrics) trackWake(ev host.Event) (time.Time, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	wake, known := m.wakes[ev.JobID]
	switch ev.To {
	case job.Deferred:
		switch {
		case ev.WakeAt.IsZero():
			delete(m.wakes, ev.JobID)
		case known || len(m.wakes) < maxWakes:
			m.wakes[ev.JobID] = ev.WakeAt
		}
	case job.Resumable:
	default:
		delete(m.wakes, ev.JobID)
	}
	return wake, known
}

// observeLateness observes how late the job of ev, a resume that started
// running at ev.At, started after its wake-up, when this process did not
// see the deferral: the resume_after of the receipt its last deferral
// recorded. A deferral without a receipt (an unknown reset, probed on a
// backoff) that another process made is not observed.
func (m *Metrics) observeLateness(ev host.Event) {
	ctx, cancel := context.WithTimeout(context.Background(), m.cfg.ScrapeTimeout)
	defer cancel()
	hist, err := m.cfg.Store.JobHistory(ctx, ev.JobID)
	if err != nil {
		m.readFailed(readHistory, err)
		return
	}
	after, ok := wakeUp(hist, ev.At)
	if !ok {
		return
	}
	m.lateness.Observe(max(0, ev.At.Sub(after).Seconds()))
}

// wakeUp is the resume_after of the receipt recorded with the job's last
// deferral before at; false when that deferral recorded none.
func wakeUp(hist job.History, at time.Time) (time.Time, bool) {
	var deferredAt time.Time
	for _, tr := range hist.Transitions {
		if tr.To == job.Deferred && !tr.At.After(at) {
			deferredAt = tr.At
		}
	}
	if deferredAt.IsZero() {
		return time.Time{}, false
	}
	for i := len(hist.Receipts) - 1; i >= 0; i-- {
		rc := hist.Receipts[i]
		if rc.IssuedAt.Before(deferredAt) {
			break // an earlier deferral's
		}
		if rc.IssuedAt.After(at) {
			continue
		}
		r, err := receipt.Decode(rc.JSON)
		if err != nil {
			return time.Time{}, false
		}
		return r.ResumeAfter(), true
	}
	return time.Time{}, false
}

// Follow feeds Observe the events of sub until ctx is done or sub is
// closed, and reports sub's dropped events in
// layover_events_dropped_total. It returns when it stops; run it in its
// own goroutine.
func (m *Metrics) Follow(ctx context.Context, sub *host.Subscription) {
	m.dropped.add(sub)
	for {
		select {
		case <-ctx.Done():
			return
		case ev, ok := <-sub.C():
			if !ok {
				return
			}
			m.Observe(ev)
		}
	}
}

// slogPrinter logs promhttp's errors.
type slogPrinter struct{ l *slog.Logger }

func (p slogPrinter) Println(v ...any) { p.l.Warn("metrics", "err", v) }
