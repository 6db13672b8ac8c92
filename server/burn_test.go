package server

import (
	"strings"
	"testing"
	"time"

	"github.com/layoverhq/layover/internal/view"
	"github.com/layoverhq/layover/quota"
)

// A key burning 100 calls a minute over the last 2 minutes: the API's
// quota object and the quotas page carry its burn and its projected
// exhaustion, 28 minutes off with 2,800 left, before the reset at 42; the
// world's core key, observed twice in the last 15 minutes, has no rate.
func TestQuotasCarryTheBurnRate(t *testing.T) {
	eachWorld(t, testToken, func(t *testing.T, w *world) {
		gql := quota.Key{Host: "api.github.com", Principal: "octocat", Resource: "graphql"}
		for i, left := range []int64{3000, 2900, 2800} {
			w.must(t, w.st.RecordStates(w.ctx, []quota.State{{Key: gql, Limit: 5000, Remaining: left, ResetAt: reset,
				ResetKnown: true, ObservedAt: t0.Add(time.Duration(i-2) * time.Minute), ObservedBy: "buildbox", Source: quota.SourceHeaders}}))
		}
		quotas := decode[[]view.Quota](t, w.get(t, "/api/v1/quotas"))
		byRes := map[string]view.Quota{}
		for _, q := range quotas {
			byRes[q.Resource] = q
		}
		if q := byRes["graphql"]; q.BurnPerMin != float64(100) || q.ExhaustsAt != "2026-12-02T05:28:00Z" {
			t.Errorf("graphql: burn %v exhausts %v; want 100 and 2026-12-02T05:28:00Z", q.BurnPerMin, q.ExhaustsAt)
		}
		if q := byRes["core"]; q.BurnPerMin != nil || q.ExhaustsAt != nil {
			t.Errorf("core: burn %v exhausts %v; want none from two observations", q.BurnPerMin, q.ExhaustsAt)
		}
		page := w.get(t, "/")
		if !strings.Contains(page.body, "100/min, exhausts 2026-12-02T05:28:00Z") {
			t.Errorf("the quotas page does not show graphql's burn:\n%s", page.body)
		}
	})
}
