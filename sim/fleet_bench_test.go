package sim

import (
	"context"
	"testing"
)

// BenchmarkFleet runs examples/sim/thirdshift.yaml's full simulated day
// under its three strategies (docs/benchmarks.md):
//
//	go test ./sim -run '^$' -bench Fleet -benchtime 1x
func BenchmarkFleet(b *testing.B) {
	s, err := ParseScenarioFile("../examples/sim/thirdshift.yaml")
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		rep, err := Fleet(context.Background(), FleetConfig{Scenario: s, Seed: 1})
		if err != nil {
			b.Fatal(err)
		}
		for _, r := range rep.Strategies {
			b.ReportMetric(r.RejectedPerHostPerReset, r.Strategy+"-rejected/host/reset")
		}
	}
}
