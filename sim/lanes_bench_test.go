package sim

import "testing"

// BenchmarkLanes is the lane harness at issue 13's size, 1,000
// WAIT_RESOURCE + 1,000 WAIT_AUTH lanes, on each store: the figure is the
// wall time of one run (ns/op), store and verification included
// (docs/benchmarks.md, Simulator; target 2,000 lanes in 10 s on SQLite).
//
//	go test -run '^$' -bench Lanes -benchtime 3x ./sim
func BenchmarkLanes(b *testing.B) {
	for _, kind := range []string{StoreSQLite, StoreMemory} {
		b.Run(kind, func(b *testing.B) {
			for i := 0; b.Loop(); i++ {
				rep, err := Lanes(b.Context(), LanesConfig{Resource: 1000, Auth: 1000, Seed: uint64(i + 1), Store: kind})
				if err != nil {
					b.Fatal(err)
				}
				if !rep.OK() || rep.Resumes != 2000 || rep.ProviderCalls != 0 {
					b.Fatalf("%+v", rep)
				}
			}
			b.ReportMetric(float64(2000*b.N)/b.Elapsed().Seconds(), "lanes/s")
		})
	}
}
