package cli

import (
	"context"
	"log/slog"
	"net/http"

	"github.com/layoverhq/layover/host"
	"github.com/layoverhq/layover/server/metrics"
	"github.com/layoverhq/layover/store"
)

// metricsEventBuffer is the buffer of serve's metrics subscription, in
// events: a resume's lateness reads the store, so a burst of resumes
// waits here rather than being dropped.
const metricsEventBuffer = 4096

// startMetrics returns what serve serves at /metrics (docs/metrics.md):
// gauges read from st at each scrape, and counters fed the events of sub
// (subscribed before the host started, so none is missed) until ctx ends
// or sub closes. notifyDropped, when not nil, counts the notifications
// dropped. stop ends the feeding and waits for it.
func startMetrics(ctx context.Context, env *Env, st store.Store, sub *host.Subscription,
	notifyDropped func() float64, logger *slog.Logger) (handler http.Handler, stop func()) {
	m := metrics.New(metrics.Config{Store: st, Clock: env.Clock, NotifyDropped: notifyDropped, Logger: logger})
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		m.Follow(ctx, sub)
	}()
	return m.Handler(), func() { cancel(); <-done }
}
