package sim

import (
	"context"
	"testing"
)

// BenchmarkFleet runs examples/sim/thirdshift.yaml's full simulated day
// under its three strategies, on each ledger (docs/benchmarks.md):
//
//	go test ./sim -run '^$' -bench Fleet -benchtime 1x
func BenchmarkFleet(b *testing.B) {
	s, err := ParseScenarioFile("../examples/sim/thirdshift.yaml")
	if err != nil {
		b.Fatal(err)
	}
	for _, ledger := range []string{LedgerMemory, LedgerSQLite} {
		b.Run(ledger, func(b *testing.B) {
			for b.Loop() {
				rep, err := Fleet(context.Background(), FleetConfig{Scenario: s, Seed: 1, Ledger: ledger})
				if err != nil {
					b.Fatal(err)
				}
				for _, r := range rep.Strategies {
					b.ReportMetric(r.RejectedPerHostPerReset, r.Strategy+"-rejected/host/reset")
				}
			}
		})
	}
}
