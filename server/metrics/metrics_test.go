package metrics_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"sort"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/layoverhq/layover/clock"
	"github.com/layoverhq/layover/host"
	"github.com/layoverhq/layover/job"
	"github.com/layoverhq/layover/quota"
	"github.com/layoverhq/layover/receipt"
	"github.com/layoverhq/layover/server/metrics"
	"github.com/layoverhq/layover/store"
	"github.com/layoverhq/layover/store/postgres"
	"github.com/layoverhq/layover/store/postgres/pgtest"
	"github.com/layoverhq/layover/store/sqlite"
	"github.com/layoverhq/layover/workflow/record"
)

var t0 = time.Date(2026, 12, 2, 6, 0, 0, 0, time.UTC)

const gh = "api.github.com"

func key(principal, resource string) quota.Key {
	return quota.Key{Host: gh, Principal: principal, Resource: resource}
}

func openStore(t testing.TB) *sqlite.Store {
	t.Helper()
	st, err := sqlite.Open(t.Context(), filepath.Join(t.TempDir(), "layover.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// eachStore runs f on a new SQLite store and a new PostgreSQL schema (the
// server of LAYOVER_TEST_POSTGRES; skipped without it, failed under CI).
func eachStore(t *testing.T, f func(t *testing.T, st store.Store)) {
	t.Run("sqlite", func(t *testing.T) {
		t.Parallel()
		f(t, openStore(t))
	})
	t.Run("postgres", func(t *testing.T) {
		t.Parallel()
		st, err := postgres.Open(t.Context(), pgtest.Schema(t))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		f(t, st)
	})
}

// families is one scrape, parsed by the Prometheus text parser.
type families map[string]*dto.MetricFamily

// scrape GETs the handler's page and parses it.
func scrape(t *testing.T, h http.Handler) families {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	if rec.Code != http.StatusOK {
		t.Fatalf("GET /metrics: %d %s", rec.Code, rec.Body)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(rec.Body)
	if err != nil {
		t.Fatalf("the page does not parse: %v", err)
	}
	return fams
}

// sample returns the value of name's sample whose labels are exactly
// labels ("k=v" pairs); false when there is none.
func (f families) sample(name string, labels ...string) (float64, bool) {
	fam, ok := f[name]
	if !ok {
		return 0, false
	}
	want := strings.Join(labels, ",")
	for _, m := range fam.Metric {
		var got []string
		for _, l := range m.Label {
			got = append(got, l.GetName()+"="+l.GetValue())
		}
		sort.Strings(got)
		w := strings.Split(want, ",")
		sort.Strings(w)
		if want == "" && len(got) == 0 || strings.Join(got, ",") == strings.Join(w, ",") {
			switch {
			case m.Gauge != nil:
				return m.Gauge.GetValue(), true
			case m.Counter != nil:
				return m.Counter.GetValue(), true
			case m.Untyped != nil:
				return m.Untyped.GetValue(), true
			}
		}
	}
	return 0, false
}

// want fails t unless name{labels} is v.
func (f families) want(t *testing.T, v float64, name string, labels ...string) {
	t.Helper()
	got, ok := f.sample(name, labels...)
	if !ok {
		t.Errorf("%s{%s} is missing", name, strings.Join(labels, ","))
		return
	}
	if got != v {
		t.Errorf("%s{%s} = %v, want %v", name, strings.Join(labels, ","), got, v)
	}
}

// absent fails t if name{labels} is there.
func (f families) absent(t *testing.T, name string, labels ...string) {
	t.Helper()
	if got, ok := f.sample(name, labels...); ok {
		t.Errorf("%s{%s} = %v, want it absent", name, strings.Join(labels, ","), got)
	}
}

func keyLabels(k quota.Key) []string {
	return []string{"api_host=" + k.Host, "principal=" + k.Principal, "resource=" + k.Resource}
}

func TestQuotaGauges(t *testing.T) {
	t.Parallel()
	eachStore(t, testQuotaGauges)
}

func testQuotaGauges(t *testing.T, st store.Store) {
	ctx := t.Context()
	clk := clock.NewFake(t0)
	m := metrics.New(metrics.Config{Store: st, Clock: clk})

	core, graphql, search, other := key("octocat", "core"), key("octocat", "graphql"), key("octocat", "search"), key("hubot", "core")
	if err := st.RecordStates(ctx, []quota.State{
		{Key: core, Limit: 5000, Remaining: 0, ResetAt: t0.Add(30 * time.Minute), ResetKnown: true,
			ObservedAt: t0.Add(-time.Minute), ObservedBy: "host-b", Source: quota.SourceHeaders, Cause: quota.CauseExhausted},
		{Key: graphql, Limit: 5000, Remaining: 4321, ResetAt: t0.Add(10*time.Minute + 500*time.Millisecond), ResetKnown: true,
			ObservedAt: t0, ObservedBy: "host-a", Source: quota.SourceHeaders},
		{Key: search, Limit: quota.Unknown, Remaining: quota.Unknown, ResetAt: t0.Add(time.Minute),
			ObservedAt: t0, ObservedBy: "host-a", Source: quota.SourceRejected},
	}); err != nil {
		t.Fatal(err)
	}
	// Commands waiting: one on search until t0+5m, one on a key with no
	// state, one whose wait ended already.
	for _, w := range []store.Waiter{
		{Hostname: "h", PID: 1, Command: "gh api", Key: search, Stage: "Quota wait", WaitUntil: t0.Add(5 * time.Minute), StartedAt: t0},
		{Hostname: "h", PID: 2, Command: "gh api", Key: other, Stage: "Quota wait", WaitUntil: t0.Add(2 * time.Minute), StartedAt: t0},
		{Hostname: "h", PID: 3, Command: "gh api", Key: graphql, Stage: "Quota wait", WaitUntil: t0.Add(-time.Second), StartedAt: t0},
	} {
		if _, err := st.RegisterWaiter(ctx, w); err != nil {
			t.Fatal(err)
		}
	}

	f := scrape(t, m.Handler())
	f.want(t, 0, "layover_quota_remaining", keyLabels(core)...)
	f.want(t, 4321, "layover_quota_remaining", keyLabels(graphql)...)
	f.absent(t, "layover_quota_remaining", keyLabels(search)...) // not observed
	f.want(t, 5000, "layover_quota_limit", keyLabels(core)...)
	f.absent(t, "layover_quota_limit", keyLabels(search)...)
	f.want(t, float64(t0.Add(30*time.Minute).Unix()), "layover_quota_reset_timestamp_seconds", keyLabels(core)...)
	f.want(t, float64(t0.Add(10*time.Minute).Unix())+0.5, "layover_quota_reset_timestamp_seconds", keyLabels(graphql)...)
	f.want(t, float64(t0.Add(-time.Minute).Unix()), "layover_quota_observed_timestamp_seconds", keyLabels(core)...)
	f.want(t, 1, "layover_quota_waiting", keyLabels(core)...)    // exhausted
	f.want(t, 0, "layover_quota_waiting", keyLabels(graphql)...) // room, and its waiter's wait ended
	f.want(t, 1, "layover_quota_waiting", keyLabels(search)...)  // a command waits on it
	f.want(t, 1, "layover_quota_waiting", keyLabels(other)...)   // a command waits on it; no state
	f.want(t, 1, "layover_quota_waiting_commands", keyLabels(search)...)
	f.want(t, 0, "layover_quota_waiting_commands", keyLabels(graphql)...)
	f.want(t, 1, "layover_store_up")

	// Past core's reset and every wait: no key is in a Quota wait.
	clk.Advance(31 * time.Minute)
	f = scrape(t, m.Handler())
	for _, k := range []quota.Key{core, graphql, search} {
		f.want(t, 0, "layover_quota_waiting", keyLabels(k)...)
	}
	f.absent(t, "layover_quota_waiting", keyLabels(other)...)
	// The last observation still shows until the next.
	f.want(t, 0, "layover_quota_remaining", keyLabels(core)...)

	// A new observation shows at the next scrape.
	if err := st.RecordStates(ctx, []quota.State{{Key: core, Limit: 5000, Remaining: 4999,
		ResetAt: t0.Add(91 * time.Minute), ResetKnown: true, ObservedAt: clk.Now(), ObservedBy: "host-a", Source: quota.SourceHeaders}}); err != nil {
		t.Fatal(err)
	}
	f = scrape(t, m.Handler())
	f.want(t, 4999, "layover_quota_remaining", keyLabels(core)...)
	f.want(t, float64(t0.Add(91*time.Minute).Unix()), "layover_quota_reset_timestamp_seconds", keyLabels(core)...)
}

// drain feeds m the n events waiting on sub; they are there already,
// since a Jobs publishes as it writes.
func drain(t *testing.T, m *metrics.Metrics, sub *host.Subscription, n int) []host.Event {
	t.Helper()
	var evs []host.Event
	for range n {
		select {
		case ev := <-sub.C():
			m.Observe(ev)
			evs = append(evs, ev)
		default:
			t.Fatalf("got %d events %+v, want %d", len(evs), evs, n)
		}
	}
	return evs
}

func TestJobsRunsAndTransitions(t *testing.T) {
	t.Parallel()
	eachStore(t, testJobsRunsAndTransitions)
}

func testJobsRunsAndTransitions(t *testing.T, st store.Store) {
	ctx := t.Context()
	clk := clock.NewFake(t0)
	m := metrics.New(metrics.Config{Store: st, Clock: clk})
	jobs, err := host.NewJobs(host.Config{Store: st, Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	sub := jobs.Subscribe(16)
	defer sub.Close()

	f := scrape(t, m.Handler())
	for _, s := range job.States {
		f.want(t, 0, "layover_jobs", "state="+string(s))
	}
	f.absent(t, "layover_job_transitions_total", "from=none", "to=ready")

	for _, id := range []string{"a", "b", "c"} {
		if _, _, err := jobs.Submit(ctx, id, job.Spec{Argv: []string{"true"}}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := jobs.Cancel(ctx, "b"); err != nil {
		t.Fatal(err)
	}
	drain(t, m, sub, 4)

	for i, status := range []record.RunStatus{record.RunRunning, record.RunComplete, record.RunComplete} {
		r := record.Run{ID: fmt.Sprintf("run-%d", i), Name: "nightly", Definition: json.RawMessage(`{"name":"nightly"}`), Status: status}
		if _, _, err := st.CreateRun(ctx, r, nil, t0); err != nil {
			t.Fatal(err)
		}
	}

	f = scrape(t, m.Handler())
	f.want(t, 2, "layover_jobs", "state=ready")
	f.want(t, 1, "layover_jobs", "state=cancelled")
	f.want(t, 0, "layover_jobs", "state=running")
	f.want(t, 3, "layover_job_transitions_total", "from=none", "to=ready")
	f.want(t, 1, "layover_job_transitions_total", "from=ready", "to=cancelled")
	f.want(t, 1, "layover_flow_runs", "status=running")
	f.want(t, 2, "layover_flow_runs", "status=complete")
	f.want(t, 0, "layover_flow_runs", "status=paused")
	f.want(t, 0, "layover_events_dropped_total")
	f.absent(t, "layover_notify_dropped_total")
	f.want(t, 1, "layover_store_up")
	if _, ok := f.sample("go_goroutines"); !ok {
		t.Error("the Go runtime's metrics are missing")
	}
}

func TestWakeupLateness(t *testing.T) {
	t.Parallel()
	eachStore(t, testWakeupLateness)
}

// lateHost is a host on st whose runner meets an exhausted quota (reset,
// zero when undeclared) on its first quotaRuns runs and then succeeds,
// with m fed its events by until.
type lateHost struct {
	t   *testing.T
	st  store.Store
	clk *clock.Fake
	m   *metrics.Metrics
	h   *host.Host
	sub *host.Subscription
}

func newLateHost(t *testing.T, st store.Store, reset time.Time, quotaRuns int32) *lateHost {
	t.Helper()
	clk := clock.NewFake(t0)
	var runs atomic.Int32
	run := func(context.Context, host.Run) error {
		if runs.Add(1) <= quotaRuns {
			return host.Quota("github", "core", reset)
		}
		return nil
	}
	p := quota.DefaultPolicy()
	p.Jitter = 0
	h, err := host.New(host.Config{Store: st, Runner: host.FuncRunner(run), Policy: p, Clock: clk, ID: "host-a",
		Env: []string{"PATH=/usr/bin:/bin"}, CheckpointDir: t.TempDir(), Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	lh := &lateHost{t: t, st: st, clk: clk, m: metrics.New(metrics.Config{Store: st, Clock: clk}), h: h, sub: h.Subscribe(256)}
	if err := h.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(h.Stop)
	return lh
}

// until feeds m the host's events until one moves job id to state, and
// returns that event.
func (lh *lateHost) until(id string, state job.State) host.Event {
	lh.t.Helper()
	timeout := time.After(10 * time.Second)
	for {
		select {
		case ev := <-lh.sub.C():
			lh.m.Observe(ev)
			if ev.JobID == id && ev.To == state {
				return ev
			}
		case <-timeout:
			lh.t.Fatalf("job %s never became %s", id, state)
		}
	}
}

// wantLateness fails t unless m's histogram holds exactly one lateness,
// late, in the buckets it belongs to.
func wantLateness(t *testing.T, f families, late time.Duration) {
	t.Helper()
	fam := f["layover_wakeup_lateness_seconds"]
	if fam == nil || len(fam.Metric) != 1 || fam.Metric[0].Histogram == nil {
		t.Fatalf("layover_wakeup_lateness_seconds = %v", fam)
	}
	hg := fam.Metric[0].Histogram
	if hg.GetSampleCount() != 1 || hg.GetSampleSum() != late.Seconds() {
		t.Errorf("lateness: %d samples summing %v s, want 1 of %v", hg.GetSampleCount(), hg.GetSampleSum(), late.Seconds())
	}
	for _, b := range hg.Bucket {
		want := uint64(0)
		if b.GetUpperBound() >= late.Seconds() {
			want = 1
		}
		if b.GetCumulativeCount() != want {
			t.Errorf("bucket le=%v holds %d, want %d", b.GetUpperBound(), b.GetCumulativeCount(), want)
		}
	}
}

// A job this host deferred with a receipt: its lateness is from the
// wake-up the deferral recorded, which is the receipt's resume_after.
func testWakeupLateness(t *testing.T, st store.Store) {
	lh := newLateHost(t, st, t0.Add(30*time.Minute), 1)
	if _, _, err := lh.h.Submit(t.Context(), "j", job.Spec{Argv: []string{"sync"}}); err != nil {
		t.Fatal(err)
	}
	lh.until("j", job.Deferred)
	hist, err := st.JobHistory(t.Context(), "j")
	if err != nil || len(hist.Receipts) != 1 {
		t.Fatalf("history %+v, %v; want one receipt", hist, err)
	}
	rc, err := receipt.Decode(hist.Receipts[0].JSON)
	if err != nil {
		t.Fatal(err)
	}
	// The host wakes 45 s after the receipt's resume_after.
	const late = 45 * time.Second
	lh.clk.Set(rc.ResumeAfter().Add(late))
	lh.until("j", job.Complete)

	f := scrape(t, lh.m.Handler())
	wantLateness(t, f, late)
	for _, tr := range [][2]string{{"none", "ready"}, {"ready", "running"}, {"running", "deferred"},
		{"deferred", "resumable"}, {"resumable", "running"}, {"running", "complete"}} {
		f.want(t, 1, "layover_job_transitions_total", "from="+tr[0], "to="+tr[1])
	}
	f.want(t, 1, "layover_sweep_moves_total", "kind=woken")
	f.want(t, 1, "layover_jobs", "state=complete")
}

// A deferral without a receipt (no reset declared: a probe on a backoff)
// that this host made: its lateness is from the probe's wake-up.
func TestWakeupLatenessWithoutReceipt(t *testing.T) {
	t.Parallel()
	lh := newLateHost(t, openStore(t), time.Time{}, 1)
	if _, _, err := lh.h.Submit(t.Context(), "j", job.Spec{Argv: []string{"sync"}}); err != nil {
		t.Fatal(err)
	}
	ev := lh.until("j", job.Deferred)
	if hist, err := lh.st.JobHistory(t.Context(), "j"); err != nil || len(hist.Receipts) != 0 || ev.WakeAt.IsZero() {
		t.Fatalf("history %+v, %v, wake-up %v; want no receipt and a wake-up", hist, err, ev.WakeAt)
	}
	const late = 30 * time.Second
	lh.clk.Set(ev.WakeAt.Add(late))
	lh.until("j", job.Complete)
	wantLateness(t, scrape(t, lh.m.Handler()), late)
}

// A job another process deferred (here, submitted deferred through another
// front door to the store): its lateness is read from its receipt.
func TestWakeupLatenessOfAnotherProcessesDeferral(t *testing.T) {
	t.Parallel()
	st := openStore(t)
	lh := newLateHost(t, st, time.Time{}, 0)
	ops, err := host.NewJobs(host.Config{Store: st, Clock: lh.clk})
	if err != nil {
		t.Fatal(err)
	}
	_, rc, err := ops.SubmitDeferred(t.Context(), "other", job.Spec{Argv: []string{"sync"}},
		host.Deferral{Key: key("octocat", "core"), Provider: "github", ResetAt: t0.Add(10 * time.Minute)}, nil)
	if err != nil {
		t.Fatal(err)
	}
	const late = 20 * time.Second
	lh.clk.Set(rc.ResumeAfter().Add(late))
	lh.until("other", job.Running)
	lh.until("other", job.Complete)
	wantLateness(t, scrape(t, lh.m.Handler()), late)
}

// failingStore fails the reads the test names; the others go to Store. A
// read named "slow" instead waits for its context to end.
type failingStore struct {
	store.Store
	allStates, countJobs, slowRuns bool
}

var errDown = errors.New("the store is down")

func (s failingStore) AllStates(ctx context.Context) ([]quota.State, error) {
	if s.allStates {
		return nil, errDown
	}
	return s.Store.AllStates(ctx)
}

func (s failingStore) CountJobs(ctx context.Context) (map[job.State]int, error) {
	if s.countJobs {
		return nil, errDown
	}
	return s.Store.CountJobs(ctx)
}

func (s failingStore) CountRuns(ctx context.Context) (map[record.RunStatus]int, error) {
	if s.slowRuns {
		<-ctx.Done()
		return nil, ctx.Err()
	}
	return s.Store.CountRuns(ctx)
}

func TestStoreReadFailuresLeaveThePageUp(t *testing.T) {
	t.Parallel()
	st := openStore(t)
	if err := st.RecordStates(t.Context(), []quota.State{{Key: key("octocat", "core"), Limit: 5000, Remaining: 7,
		ResetAt: t0.Add(time.Hour), ObservedAt: t0}}); err != nil {
		t.Fatal(err)
	}
	var dropped float64 = 3
	// The runs are read last, after the reads that answer, and wait out
	// the scrape's timeout.
	m := metrics.New(metrics.Config{Store: failingStore{Store: st, allStates: true, slowRuns: true},
		Clock: clock.NewFake(t0), ScrapeTimeout: time.Second, NotifyDropped: func() float64 { return dropped }})

	f := scrape(t, m.Handler())
	f.want(t, 0, "layover_store_up")
	f.want(t, 1, "layover_store_read_errors_total", "read=quotas")
	f.want(t, 1, "layover_store_read_errors_total", "read=runs")
	f.want(t, 0, "layover_store_read_errors_total", "read=jobs")
	f.absent(t, "layover_quota_remaining", keyLabels(key("octocat", "core"))...)
	f.absent(t, "layover_flow_runs", "status=running")
	f.want(t, 0, "layover_jobs", "state=ready") // this read answered
	f.want(t, 3, "layover_notify_dropped_total")
	if _, ok := f.sample("process_start_time_seconds"); !ok {
		t.Error("the process metrics are missing")
	}

	// The store answers again: so does the page.
	m2 := metrics.New(metrics.Config{Store: failingStore{Store: st, countJobs: true}, Clock: clock.NewFake(t0)})
	f = scrape(t, m2.Handler())
	f.want(t, 0, "layover_store_up")
	f.want(t, 7, "layover_quota_remaining", keyLabels(key("octocat", "core"))...)
	f.absent(t, "layover_jobs", "state=ready")
	f = scrape(t, metrics.New(metrics.Config{Store: st, Clock: clock.NewFake(t0)}).Handler())
	f.want(t, 1, "layover_store_up")
}

// A scraper that went away ends the scrape's store reads: the read that
// would wait for an hour returns with the request.
func TestScrapeEndsWithItsRequest(t *testing.T) {
	t.Parallel()
	st := openStore(t)
	m := metrics.New(metrics.Config{Store: failingStore{Store: st, slowRuns: true}, Clock: clock.NewFake(t0),
		ScrapeTimeout: time.Hour})
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil).WithContext(ctx))
	if rec.Code != http.StatusOK {
		t.Fatalf("GET /metrics: %d", rec.Code)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(rec.Body)
	if err != nil {
		t.Fatal(err)
	}
	f := families(fams)
	f.want(t, 0, "layover_store_up")
	f.want(t, 1, "layover_store_read_errors_total", "read=runs")
}

func TestFollowCountsDroppedEventsAndEndsWithItsSubscription(t *testing.T) {
	t.Parallel()
	st := openStore(t)
	clk := clock.NewFake(t0)
	m := metrics.New(metrics.Config{Store: st, Clock: clk})
	jobs, err := host.NewJobs(host.Config{Store: st, Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	sub := jobs.Subscribe(1)
	for _, id := range []string{"a", "b", "c"} { // the buffer holds the first
		if _, _, err := jobs.Submit(t.Context(), id, job.Spec{Argv: []string{"true"}}); err != nil {
			t.Fatal(err)
		}
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		m.Follow(t.Context(), sub)
	}()
	sub.Close() // Follow reads what is buffered, then ends
	<-done

	f := scrape(t, m.Handler())
	f.want(t, 1, "layover_job_transitions_total", "from=none", "to=ready")
	f.want(t, 2, "layover_events_dropped_total")
	f.want(t, 3, "layover_jobs", "state=ready") // the store has all three
}

// A sweep that fails jobs waiting for credentials counts their
// auth-wait -> failed transitions, every one of them (not only those the
// sweep names), besides its past_due moves.
func TestSweptFailuresAreTransitions(t *testing.T) {
	t.Parallel()
	m := metrics.New(metrics.Config{Store: openStore(t), Clock: clock.NewFake(t0)})
	m.Observe(host.Event{At: t0, Swept: store.SweepResult{PastDue: 30, AuthFailed: 20, Failed: []string{"a", "b"}}})
	f := scrape(t, m.Handler())
	f.want(t, 20, "layover_job_transitions_total", "from=auth-wait", "to=failed")
	f.want(t, 30, "layover_sweep_moves_total", "kind=past_due")
}
