package metrics

// The gauges read from the store at each scrape.

import (
	"cmp"
	"context"
	"slices"
	"strings"
	"sync"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/layoverhq/layover/host"
	"github.com/layoverhq/layover/job"
	"github.com/layoverhq/layover/quota"
	"github.com/layoverhq/layover/workflow/record"
)

// What a store read reads, as layover_store_read_errors_total labels it.
const (
	readQuotas  = "quotas"
	readWaiters = "waiters"
	readJobs    = "jobs"
	readRuns    = "runs"
	readHistory = "job_history"
)

// keyLabels label every per-key metric: the quota key.
var keyLabels = []string{"api_host", "principal", "resource"}

var (
	descRemaining = prometheus.NewDesc("layover_quota_remaining",
		"Units left of a quota at its last observation, in the provider's units; absent when not observed.", keyLabels, nil)
	descLimit = prometheus.NewDesc("layover_quota_limit",
		"A quota's limit per window at its last observation, in the provider's units; absent when not observed.", keyLabels, nil)
	descReset = prometheus.NewDesc("layover_quota_reset_timestamp_seconds",
		"When a quota refills, as the last observation said (or assumed), in Unix seconds.", keyLabels, nil)
	descObserved = prometheus.NewDesc("layover_quota_observed_timestamp_seconds",
		"When a quota was last observed, by any host of the store, in Unix seconds.", keyLabels, nil)
	descWaiting = prometheus.NewDesc("layover_quota_waiting",
		"1 while a quota is in a Quota wait (exhausted and its reset not passed, or a command registered waiting on it), else 0.", keyLabels, nil)
	descWaitingCommands = prometheus.NewDesc("layover_quota_waiting_commands",
		"Commands registered waiting on a quota whose wait has not ended.", keyLabels, nil)
	descJobs = prometheus.NewDesc("layover_jobs",
		"Jobs in the store, by state.", []string{"state"}, nil)
	descRuns = prometheus.NewDesc("layover_flow_runs",
		"Workflow runs in the store, by status.", []string{"status"}, nil)
	descStoreUp = prometheus.NewDesc("layover_store_up",
		"1 when every store read of this scrape answered within the scrape timeout, else 0 (and the metrics of the failed reads are left out).", nil, nil)
)

// runStatuses lists every run status, so each has a series from the start.
var runStatuses = []record.RunStatus{record.RunRunning, record.RunPaused, record.RunComplete,
	record.RunFailed, record.RunCancelled}

// storeCollector reads the store for one scrape, under ctx.
type storeCollector struct {
	m   *Metrics
	ctx context.Context
}

func (c *storeCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descRemaining, descLimit, descReset, descObserved, descWaiting,
		descWaitingCommands, descJobs, descRuns, descStoreUp} {
		ch <- d
	}
	c.m.readErrors.Describe(ch)
}

func (c *storeCollector) Collect(ch chan<- prometheus.Metric) {
	ctx := c.ctx
	up := c.collectQuotas(ctx, ch)
	up = c.collectJobs(ctx, ch) && up
	up = c.collectRuns(ctx, ch) && up
	ch <- prometheus.MustNewConstMetric(descStoreUp, prometheus.GaugeValue, boolValue(up))
	c.m.readErrors.Collect(ch)
}

// collectQuotas sends the per-key metrics; false when a read failed.
func (c *storeCollector) collectQuotas(ctx context.Context, ch chan<- prometheus.Metric) bool {
	s := c.m.cfg.Store
	states, err := s.AllStates(ctx)
	if err != nil {
		c.m.readFailed(readQuotas, err)
		return false
	}
	waiters, err := s.Waiters(ctx)
	if err != nil {
		c.m.readFailed(readWaiters, err)
		return false
	}
	now := c.m.cfg.Clock.Now()
	waiting := map[quota.Key]int{}
	for _, w := range waiters {
		if w.WaitUntil.After(now) {
			waiting[w.Key]++
		}
	}
	seen := map[quota.Key]bool{}
	for _, st := range states {
		seen[st.Key] = true
		lv := labelsOf(st.Key)
		if st.Remaining != quota.Unknown {
			ch <- prometheus.MustNewConstMetric(descRemaining, prometheus.GaugeValue, float64(st.Remaining), lv...)
		}
		if st.Limit != quota.Unknown {
			ch <- prometheus.MustNewConstMetric(descLimit, prometheus.GaugeValue, float64(st.Limit), lv...)
		}
		if !st.ResetAt.IsZero() {
			ch <- prometheus.MustNewConstMetric(descReset, prometheus.GaugeValue, unixSeconds(st), lv...)
		}
		if !st.ObservedAt.IsZero() {
			ch <- prometheus.MustNewConstMetric(descObserved, prometheus.GaugeValue,
				float64(st.ObservedAt.UnixMilli())/1000, lv...)
		}
		inWait := st.Exhausted(now) || waiting[st.Key] > 0
		ch <- prometheus.MustNewConstMetric(descWaiting, prometheus.GaugeValue, boolValue(inWait), lv...)
		ch <- prometheus.MustNewConstMetric(descWaitingCommands, prometheus.GaugeValue, float64(waiting[st.Key]), lv...)
	}
	// A command can wait on a key with no state stored (yet).
	var rest []quota.Key
	for k := range waiting {
		if !seen[k] {
			rest = append(rest, k)
		}
	}
	slices.SortFunc(rest, compareKeys)
	for _, k := range rest {
		lv := labelsOf(k)
		ch <- prometheus.MustNewConstMetric(descWaiting, prometheus.GaugeValue, 1, lv...)
		ch <- prometheus.MustNewConstMetric(descWaitingCommands, prometheus.GaugeValue, float64(waiting[k]), lv...)
	}
	return true
}

// collectJobs sends layover_jobs, every state present; false when the
// read failed.
func (c *storeCollector) collectJobs(ctx context.Context, ch chan<- prometheus.Metric) bool {
	counts, err := c.m.cfg.Store.CountJobs(ctx)
	if err != nil {
		c.m.readFailed(readJobs, err)
		return false
	}
	for _, st := range job.States {
		ch <- prometheus.MustNewConstMetric(descJobs, prometheus.GaugeValue, float64(counts[st]), string(st))
	}
	return true
}

// collectRuns sends layover_flow_runs, every status present; false when
// the read failed.
func (c *storeCollector) collectRuns(ctx context.Context, ch chan<- prometheus.Metric) bool {
	counts, err := c.m.cfg.Store.CountRuns(ctx)
	if err != nil {
		c.m.readFailed(readRuns, err)
		return false
	}
	for _, st := range runStatuses {
		ch <- prometheus.MustNewConstMetric(descRuns, prometheus.GaugeValue, float64(counts[st]), string(st))
	}
	return true
}

// readFailed counts and logs a failed store read.
func (m *Metrics) readFailed(read string, err error) {
	m.readErrors.WithLabelValues(read).Inc()
	m.cfg.Logger.Warn("metrics: store read failed", "read", read, "err", err)
}

func labelsOf(k quota.Key) []string { return []string{k.Host, k.Principal, k.Resource} }

func unixSeconds(st quota.State) float64 { return float64(st.ResetAt.UnixMilli()) / 1000 }

func boolValue(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

func compareKeys(a, b quota.Key) int {
	return cmp.Or(strings.Compare(a.Host, b.Host), strings.Compare(a.Principal, b.Principal),
		strings.Compare(a.Resource, b.Resource))
}

// droppedEvents sums the dropped events of the subscriptions Follow reads.
type droppedEvents struct {
	mu   sync.Mutex
	subs []*host.Subscription
}

func (d *droppedEvents) add(s *host.Subscription) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.subs = append(d.subs, s)
}

func (d *droppedEvents) count() float64 {
	d.mu.Lock()
	defer d.mu.Unlock()
	var n int64
	for _, s := range d.subs {
		n += s.Dropped()
	}
	return float64(n)
}
