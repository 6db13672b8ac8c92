package cli_test

import (
	"math"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/layoverhq/layover/internal/fake"
)

// getMetrics GETs /metrics of the serve at base and parses the page with
// the Prometheus text parser.
func getMetrics(t *testing.T, base string) map[string]*dto.MetricFamily {
	t.Helper()
	resp, err := http.Get(base + "metrics")
	if err != nil {
		t.Fatalf("GET /metrics: %v", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /metrics: %s", resp.Status)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("/metrics does not parse: %v", err)
	}
	return fams
}

// labelled returns the metrics of fam whose labels include every "k=v"
// of labels.
func labelled(fam *dto.MetricFamily, labels ...string) []*dto.Metric {
	var out []*dto.Metric
	for _, m := range fam.GetMetric() {
		have := map[string]bool{}
		for _, l := range m.GetLabel() {
			have[l.GetName()+"="+l.GetValue()] = true
		}
		all := true
		for _, l := range labels {
			all = all && have[l]
		}
		if all {
			out = append(out, m)
		}
	}
	return out
}

// value is the one sample of name with labels, failing t unless there is
// exactly one.
func value(t *testing.T, fams map[string]*dto.MetricFamily, name string, labels ...string) float64 {
	t.Helper()
	fam, ok := fams[name]
	if !ok {
		t.Fatalf("/metrics has no %s", name)
	}
	ms := labelled(fam, labels...)
	if len(ms) != 1 {
		t.Fatalf("%s{%s}: %d samples, want 1", name, strings.Join(labels, ","), len(ms))
	}
	m := ms[0]
	switch {
	case m.Gauge != nil:
		return m.Gauge.GetValue()
	case m.Counter != nil:
		return m.Counter.GetValue()
	}
	t.Fatalf("%s is neither a gauge nor a counter", name)
	return 0
}

// A job deferred on an exhausted quota, woken by serve after the reset and
// run to completion, shows on serve's /metrics: the quota's gauges, the
// jobs per state, the moves serve made, and the deferral's lateness.
func TestServeMetricsAfterADeferredJob(t *testing.T) {
	t.Parallel()
	b := setup(t, fake.GitHubConfig{})
	serve := b.start("serve", "--listen", "127.0.0.1:0", "--lease", "3s", "--heartbeat", "500ms", "--reset-margin", "0s", "--jitter", "0s")
	line := serve.waitLine(t, "console listening")
	_, url, ok := strings.Cut(line, "url=")
	if !ok {
		t.Fatalf("no url in %q", line)
	}
	base := strings.Fields(url)[0] // http://127.0.0.1:PORT/
	serve.waitLine(t, "layover serve started")
	started := time.Now()

	// The reset is far enough ahead that the scrape right after the
	// deferral lands before it even on a loaded machine.
	reset := nextSecond(10 * time.Second)
	b.gh.SetQuota(testToken, "core", 0, reset)
	r := b.layover(runArgs([]string{"--submit"}, "gh", "api", "/repos/octo/demo")...)
	if r.code != 6 || !strings.Contains(r.stderr, "deferred as job ") {
		t.Fatalf("run --submit: exit %d stderr:\n%s", r.code, r.stderr)
	}
	id := strings.Fields(r.stderr[strings.Index(r.stderr, "deferred as job ")+len("deferred as job "):])[0]

	// While the job waits, its key is in a Quota wait with nothing left:
	// scraped as soon as the deferral is seen (run --submit returned).
	fams := getMetrics(t, base)
	if scraped := time.Now(); !scraped.Before(reset) {
		t.Fatalf("the scrape while deferred came %s after the reset; the machine is too slow for this test", scraped.Sub(reset))
	}
	core := labelled(fams["layover_quota_remaining"], "resource=core")
	if len(core) != 1 {
		t.Fatalf("layover_quota_remaining{resource=core}: %d samples, want 1", len(core))
	}
	var key []string
	for _, l := range core[0].GetLabel() {
		key = append(key, l.GetName()+"="+l.GetValue())
	}
	// The reset as GitHub gave it, corrected for the clock skew its Date
	// header shows (whole seconds).
	if got := value(t, fams, "layover_quota_reset_timestamp_seconds", key...); math.Abs(got-float64(reset.Unix())) > 1 {
		t.Errorf("layover_quota_reset_timestamp_seconds = %v, want %d", got, reset.Unix())
	}
	if got := value(t, fams, "layover_quota_remaining", key...); got != 0 {
		t.Errorf("remaining while deferred = %v, want 0", got)
	}
	if got := value(t, fams, "layover_quota_waiting", key...); got != 1 {
		t.Errorf("layover_quota_waiting while deferred = %v, want 1", got)
	}
	if got := value(t, fams, "layover_jobs", "state=deferred"); got != 1 {
		t.Errorf("layover_jobs{state=deferred} = %v, want 1", got)
	}

	b.awaitJob(id, "complete")
	fams = getMetrics(t, base)
	for _, c := range []struct {
		name   string
		labels []string
		want   float64
	}{
		{"layover_jobs", []string{"state=complete"}, 1},
		{"layover_jobs", []string{"state=deferred"}, 0},
		{"layover_job_transitions_total", []string{"from=deferred", "to=resumable"}, 1},
		{"layover_job_transitions_total", []string{"from=resumable", "to=running"}, 1},
		{"layover_job_transitions_total", []string{"from=running", "to=complete"}, 1},
		{"layover_sweep_moves_total", []string{"kind=woken"}, 1},
		{"layover_quota_waiting", key, 0},
		{"layover_flow_runs", []string{"status=running"}, 0},
		{"layover_store_up", nil, 1},
		{"layover_notify_dropped_total", nil, 0},
	} {
		if got := value(t, fams, c.name, c.labels...); got != c.want {
			t.Errorf("%s{%s} = %v, want %v", c.name, strings.Join(c.labels, ","), got, c.want)
		}
	}
	// The fresh run observed the quota again: the fake GitHub refilled it.
	if got := value(t, fams, "layover_quota_remaining", key...); got <= 0 {
		t.Errorf("remaining after the reset = %v, want more than 0", got)
	}
	if got := value(t, fams, "layover_quota_limit", key...); got <= 0 {
		t.Errorf("layover_quota_limit = %v, want more than 0", got)
	}
	lat := fams["layover_wakeup_lateness_seconds"]
	if lat == nil || len(lat.GetMetric()) != 1 {
		t.Fatalf("layover_wakeup_lateness_seconds = %v", lat)
	}
	h := lat.GetMetric()[0].GetHistogram()
	if h.GetSampleCount() != 1 || h.GetSampleSum() < 0 || h.GetSampleSum() > time.Since(started).Seconds() {
		t.Errorf("lateness: %d samples summing %v s; want 1, between 0 and the test's length", h.GetSampleCount(), h.GetSampleSum())
	}
	if _, ok := fams["go_goroutines"]; !ok {
		t.Error("/metrics has no Go runtime metrics")
	}
	if _, ok := fams["process_resident_memory_bytes"]; !ok {
		t.Error("/metrics has no process metrics")
	}

	if err := serve.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if code := serve.wait(t); code != 0 {
		t.Fatalf("serve exit %d after SIGTERM", code)
	}
}
