package gateway

import (
	"github.com/prometheus/client_golang/prometheus"
)

// Outcomes of a request, the outcome label of
// layover_gateway_requests_total (docs/metrics.md).
const (
	OutcomeOK              = "ok"               // sent; the upstream answered below 400
	OutcomeRejected        = "rejected"         // sent; the upstream answered 429
	OutcomeUpstreamStatus  = "upstream_status"  // sent; the upstream answered another 4xx or 5xx
	OutcomeHeldThenSent    = "held_then_sent"   // held, then sent; the upstream answered
	OutcomeAnsweredLocally = "answered_locally" // not sent: 429 from the gateway
	OutcomeUpstreamError   = "upstream_error"   // the upstream could not be reached: 502
	OutcomeBadRequest      = "bad_request"      // unknown route (404), body too large (413)
	OutcomeCanceled        = "canceled"         // the client went away before an answer
	OutcomeInternal        = "internal_error"   // the gateway failed (a recovered panic): 500
)

// metrics are the gateway's collectors; the zero value (no registerer)
// records nothing.
type metrics struct {
	requests *prometheus.CounterVec
	held     prometheus.Gauge
	hold     prometheus.Histogram
	upstream *prometheus.HistogramVec
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "layover_gateway_requests_total",
			Help: "Requests the gateway answered, by route (provider) and outcome.",
		}, []string{"provider", "outcome"}),
		held: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "layover_gateway_held",
			Help: "Requests the gateway holds now, waiting for their quota key's resume time.",
		}),
		hold: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "layover_gateway_hold_seconds",
			Help:    "Time a held request spent held (and paced) before it was sent or answered.",
			Buckets: []float64{0.01, 0.1, 0.5, 1, 2, 5, 10, 20, 30, 60, 120, 300},
		}),
		upstream: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "layover_gateway_upstream_seconds",
			Help:    "Time from sending a request upstream to its response headers, by route (provider).",
			Buckets: []float64{0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60},
		}, []string{"provider"}),
	}
	if reg == nil {
		return m, nil
	}
	for _, c := range []prometheus.Collector{m.requests, m.held, m.hold, m.upstream} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return m, nil
}
