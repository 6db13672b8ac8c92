package server

import (
	"strings"
	"testing"
	"time"

	"github.com/layoverhq/layover/quota"
	"github.com/layoverhq/layover/store"
)

func TestBurnChart(t *testing.T) {
	key := quota.Key{Host: "api.github.com", Principal: "octocat", Resource: "core"}
	st := quota.State{Key: key, Limit: 100, Remaining: 0, ResetAt: t0.Add(time.Hour), ResetKnown: true, ObservedAt: t0}
	obs := []store.Observation{
		{Key: key, ObservedAt: t0.Add(-time.Hour), Remaining: 100, Limit: 100},
		{Key: key, ObservedAt: t0.Add(-30 * time.Minute), Remaining: -1, Limit: 100}, // unknown: not drawn
		{Key: key, ObservedAt: t0, Remaining: 0, Limit: 100},
	}
	svg := string(burnChart(obs, st, 10, t0))
	// The x axis spans the first observation to the reset, two hours over
	// 236 units: the points sit at the left edge, top, and half way, bottom.
	for _, want := range []string{`<polyline points="2.0,2.0 120.0,58.0"`, `class="reserve" x1="0" y1="52.4"`,
		`class="reset" x1="238.0"`, `class="now" x1="120.0"`, `aria-label="2 observations, remaining from 100 to 0 of 100"`} {
		if !strings.Contains(svg, want) {
			t.Errorf("chart lacks %s:\n%s", want, svg)
		}
	}
	if got := burnChart(nil, quota.State{Key: key, Limit: -1, Remaining: -1, ResetAt: t0}, -1, t0); got != "" {
		t.Errorf("nothing known draws a chart: %s", got)
	}
	if got := string(burnChart(nil, st, 10, t0)); strings.Count(got, `class="obs"`) != 1 {
		t.Errorf("without kept observations the latest state is drawn alone: %s", got)
	}
}
