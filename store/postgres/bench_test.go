package postgres_test

import (
	"fmt"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/layoverhq/layover/job"
	"github.com/layoverhq/layover/quota"
	"github.com/layoverhq/layover/store/storetest"
)

// The benchmarks match store/sqlite's of the same names, so the two
// backends compare directly:
//
//	LAYOVER_TEST_POSTGRES=postgres://… go test -run '^$' -bench . ./store/postgres/
//	go test -run '^$' -bench 'ApplyJob|SubmitJob|AdmitFromLedger' ./store/sqlite/

// The job benchmarks of store/storetest, on a fresh schema.
func BenchmarkApplyJobParallel(b *testing.B) { storetest.BenchApplyJobParallel(b, openFresh(b), base) }

func BenchmarkApplyJob(b *testing.B) { storetest.BenchApplyJob(b, openFresh(b), base) }

func BenchmarkSubmitJob(b *testing.B) { storetest.BenchSubmitJob(b, openFresh(b), base) }

// BenchmarkAdmitFromLedger is a pass's admission read: the States of the
// three keys it draws on, in a ledger of 300 keys. "serial" is one reader's
// latency, "parallel" 64 readers' throughput.
func BenchmarkAdmitFromLedger(b *testing.B) {
	ctx := b.Context()
	s := openFresh(b)
	var states []quota.State
	for i := range 100 {
		for _, res := range []string{"core", "graphql", "search"} {
			states = append(states, quota.State{
				Key:   quota.Key{Host: "api.github.com", Principal: fmt.Sprintf("user%03d", i), Resource: res},
				Limit: 5000, Remaining: 4000, ResetAt: base.Add(time.Hour), ResetKnown: true,
				ObservedAt: base, ObservedBy: "bench", Source: quota.SourceHeaders,
			})
		}
	}
	if err := s.RecordStates(ctx, states); err != nil {
		b.Fatal(err)
	}
	keys := []quota.Key{states[150].Key, states[151].Key, states[152].Key}
	read := func(b *testing.B) {
		got, err := s.States(ctx, keys)
		if err != nil || len(got) != 3 {
			b.Fatalf("States = %d states, %v", len(got), err)
		}
	}
	b.Run("serial", func(b *testing.B) {
		for b.Loop() {
			read(b)
		}
		b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "reads/s")
	})
	b.Run("parallel", func(b *testing.B) {
		b.SetParallelism(max(1, 64/runtime.GOMAXPROCS(0)))
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				read(b)
			}
		})
		b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "reads/s")
	})
}

// BenchmarkClaimJobs claims ready jobs 16 at a time, as a host with 16
// free slots does, from 8 goroutines over a queue of b.N jobs.
func BenchmarkClaimJobs(b *testing.B) {
	ctx := b.Context()
	s := openFresh(b)
	submitAll(b, s, b.N, func(i int) job.Job { return storetest.BenchJob("j"+strconv.Itoa(i), base) })
	var claimed atomic.Int64
	b.ResetTimer()
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Go(func() {
			for claimed.Load() < int64(b.N) {
				js, err := s.ClaimJobs(ctx, "host-"+strconv.Itoa(w), base, time.Hour, 16)
				if err != nil {
					b.Error(err)
					return
				}
				if len(js) == 0 {
					return
				}
				claimed.Add(int64(len(js)))
			}
		})
	}
	wg.Wait()
	if n := claimed.Load(); n != int64(b.N) {
		b.Fatalf("claimed %d of %d jobs", n, b.N)
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "claims/s")
}
