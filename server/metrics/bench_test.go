package metrics_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/layoverhq/layover/clock"
	"github.com/layoverhq/layover/quota"
	"github.com/layoverhq/layover/server/metrics"
	"github.com/layoverhq/layover/store/storetest"
)

// BenchmarkScrape is one GET /metrics on a SQLite store of 300 quota keys
// (100 principals, 3 resources each) and 1,000 jobs: the store reads, the
// Go and process collectors, and the text encoding.
func BenchmarkScrape(b *testing.B) {
	st := openStore(b)
	ctx := b.Context()
	var states []quota.State
	for i := range 100 {
		for _, res := range []string{"core", "graphql", "search"} {
			states = append(states, quota.State{Key: key(fmt.Sprintf("user%03d", i), res), Limit: 5000,
				Remaining: 4000, ResetAt: t0.Add(time.Hour), ResetKnown: true, ObservedAt: t0, ObservedBy: "bench"})
		}
	}
	if err := st.RecordStates(ctx, states); err != nil {
		b.Fatal(err)
	}
	for i := range 1000 {
		if _, _, err := st.SubmitJob(ctx, storetest.BenchJob(fmt.Sprintf("j%d", i), t0), nil, t0); err != nil {
			b.Fatal(err)
		}
	}
	h := metrics.New(metrics.Config{Store: st, Clock: clock.NewFake(t0)}).Handler()
	b.ResetTimer()
	for range b.N {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
		if rec.Code != http.StatusOK {
			b.Fatal(rec.Code)
		}
	}
}
