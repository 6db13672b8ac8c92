package postgres_test

import (
	"fmt"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/layoverhq/layover/job"
	"github.com/layoverhq/layover/quota"
)

// The benchmarks match store/sqlite's of the same names, so the two
// backends compare directly:
//
//	LAYOVER_TEST_POSTGRES=postgres://… go test -run '^$' -bench . ./store/postgres/
//	go test -run '^$' -bench 'ApplyJob|SubmitJob|AdmitFromLedger' ./store/sqlite/

// testReceipt is the size and shape of a stored receipt.
var testReceipt = []byte(`{"bindings":{"plan_digest":null,` +
	`"request_digest":"` + strings.Repeat("a", 64) + `","scope_digest":"` + strings.Repeat("b", 64) + `"},` +
	`"fresh_approval_required":false,"issued_at_ms":1794319445123,"ownership":{"cancellation_digest":"` +
	strings.Repeat("c", 64) + `","disposition":"retained","mode":"durable-host","wakeup_digest":"` +
	strings.Repeat("d", 64) + `"},"reason":"rest-reserve","resume_after_ms":1794321905000,` +
	`"resume_by_ms":1794343505000,"schema":1,"status":"deferred","version":"deferred-receipt-v1"}`)

// deferral is what a host writes when a running or ready job meets an
// exhausted quota: the new state, its wake-up and its receipt, in one
// transaction.
func deferral(now time.Time) job.Change {
	return job.Change{
		To: job.Deferred, Reason: "quota: core exhausted", Now: now, From: []job.State{job.Ready, job.Running},
		Mutate: func(j *job.Job) {
			j.Ownership, j.RunAt, j.ResumeBy = job.Retained, now.Add(41*time.Minute), now.Add(6*time.Hour)
			j.Stage = "Quota wait until " + j.RunAt.Format(time.RFC3339)
		},
		Receipt: &job.Receipt{JSON: testReceipt, IssuedAt: now},
	}
}

// BenchmarkApplyJobParallel is durable deferral throughput: 64 goroutines
// each deferring distinct ready jobs with a receipt through ApplyJob, every
// call committed (synchronous_commit as the server has it) before it
// returns.
func BenchmarkApplyJobParallel(b *testing.B) {
	ctx := b.Context()
	s := openFresh(b)
	// Submit the jobs before the clock starts.
	var next atomic.Int64
	var wg sync.WaitGroup
	for range 64 {
		wg.Go(func() {
			for i := next.Add(1) - 1; i < int64(b.N); i = next.Add(1) - 1 {
				if _, _, err := s.SubmitJob(ctx, benchJob("j"+strconv.FormatInt(i, 10)), nil, base); err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	next.Store(0)
	b.SetParallelism(max(1, 64/runtime.GOMAXPROCS(0)))
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			i := next.Add(1) - 1
			if _, err := s.ApplyJob(ctx, "j"+strconv.FormatInt(i, 10), 0, deferral(base)); err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "deferrals/s")
}

// BenchmarkApplyJob is one deferral at a time: the latency of one durable
// deferral.
func BenchmarkApplyJob(b *testing.B) {
	ctx := b.Context()
	s := openFresh(b)
	var i int
	for b.Loop() {
		b.StopTimer()
		id := "j" + strconv.Itoa(i)
		i++
		if _, _, err := s.SubmitJob(ctx, benchJob(id), nil, base); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		if _, err := s.ApplyJob(ctx, id, 0, deferral(base)); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "deferrals/s")
}

// BenchmarkSubmitJob submits distinct jobs from 64 goroutines, each
// committed before the call returns.
func BenchmarkSubmitJob(b *testing.B) {
	ctx := b.Context()
	s := openFresh(b)
	var next atomic.Int64
	b.SetParallelism(max(1, 64/runtime.GOMAXPROCS(0)))
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			i := next.Add(1) - 1
			if _, _, err := s.SubmitJob(ctx, benchJob("j"+strconv.FormatInt(i, 10)), nil, base); err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "submits/s")
}

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
	submitAll(b, s, b.N, func(i int) job.Job { return benchJob("j" + strconv.Itoa(i)) })
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
