package storetest

import (
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/layoverhq/layover/job"
	"github.com/layoverhq/layover/store"
)

// The benchmarks every backend runs under the same names, so that their
// figures compare directly.

// Receipt is a stored receipt of the usual size and shape.
var Receipt = []byte(`{"bindings":{"plan_digest":null,` +
	`"request_digest":"` + strings.Repeat("a", 64) + `","scope_digest":"` + strings.Repeat("b", 64) + `"},` +
	`"fresh_approval_required":false,"issued_at_ms":1794319445123,"ownership":{"cancellation_digest":"` +
	strings.Repeat("c", 64) + `","disposition":"retained","mode":"durable-host","wakeup_digest":"` +
	strings.Repeat("d", 64) + `"},"reason":"rest-reserve","resume_after_ms":1794321905000,` +
	`"resume_by_ms":1794343505000,"schema":1,"status":"deferred","version":"deferred-receipt-v1"}`)

// BenchJob is a ready job with a spec of a realistic size, due a day
// after now.
func BenchJob(id string, now time.Time) job.Job {
	return job.Job{ID: id, State: job.Ready, Spec: job.Spec{
		Name: "bench " + id, Argv: []string{"gh", "pr", "create", "--fill"}, Workdir: "/srv/repo",
		Quota: []string{"github"}, Provider: "github", Deadline: now.Add(24 * time.Hour),
	}}
}

// Deferral is what a host writes when a running or ready job meets an
// exhausted quota: the new state, its wake-up and its receipt, in one
// transaction.
func Deferral(now time.Time) job.Change {
	return job.Change{
		To: job.Deferred, Reason: "quota: core exhausted", Now: now, From: []job.State{job.Ready, job.Running},
		Mutate: func(j *job.Job) {
			j.Ownership, j.RunAt, j.ResumeBy = job.Retained, now.Add(41*time.Minute), now.Add(6*time.Hour)
			j.Stage = "Quota wait until " + j.RunAt.Format(time.RFC3339)
		},
		Receipt: &job.Receipt{JSON: Receipt, IssuedAt: now},
	}
}

func benchID(i int64) string { return "j" + strconv.FormatInt(i, 10) }

// BenchApplyJobParallel is durable deferral throughput: 64 goroutines each
// deferring distinct ready jobs with a receipt through ApplyJob, every call
// durable before it returns. It reports deferrals/s.
func BenchApplyJobParallel(b *testing.B, s store.Store, now time.Time) {
	ctx := b.Context()
	// Submit the jobs before the clock starts, 64 at a time.
	var next atomic.Int64
	var wg sync.WaitGroup
	for range 64 {
		wg.Go(func() {
			for i := next.Add(1) - 1; i < int64(b.N); i = next.Add(1) - 1 {
				if _, _, err := s.SubmitJob(ctx, BenchJob(benchID(i), now), nil, now); err != nil {
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
			if _, err := s.ApplyJob(ctx, benchID(next.Add(1)-1), 0, Deferral(now)); err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "deferrals/s")
}

// BenchApplyJob is one deferral at a time: the latency of one durable
// deferral.
func BenchApplyJob(b *testing.B, s store.Store, now time.Time) {
	ctx := b.Context()
	var i int64
	for b.Loop() {
		b.StopTimer()
		id := benchID(i)
		i++
		if _, _, err := s.SubmitJob(ctx, BenchJob(id, now), nil, now); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		if _, err := s.ApplyJob(ctx, id, 0, Deferral(now)); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "deferrals/s")
}

// BenchSubmitJob submits distinct jobs from 64 goroutines, each durable
// before the call returns. It reports submits/s.
func BenchSubmitJob(b *testing.B, s store.Store, now time.Time) {
	ctx := b.Context()
	var next atomic.Int64
	b.SetParallelism(max(1, 64/runtime.GOMAXPROCS(0)))
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, _, err := s.SubmitJob(ctx, BenchJob(benchID(next.Add(1)-1), now), nil, now); err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "submits/s")
}
