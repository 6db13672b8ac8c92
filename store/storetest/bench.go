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
	"github.com/layoverhq/layover/quota"
	"github.com/layoverhq/layover/store"
	"github.com/layoverhq/layover/workflow/record"
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

// benchRun creates a run of n pending tasks at now, t0000 to t<n-1>, and
// returns them.
func benchRun(b *testing.B, s store.Store, id string, n int, now time.Time) []record.Task {
	tasks := make([]record.Task, n)
	for i := range tasks {
		tasks[i] = record.Task{Name: "t" + strconv.Itoa(i), Workdir: "/srv/repo"}
	}
	r := record.Run{ID: id, Name: "bench", Definition: []byte(`{"name":"bench"}`)}
	if _, _, err := s.CreateRun(b.Context(), r, tasks, now); err != nil {
		b.Fatal(err)
	}
	stored, err := s.RunTasks(b.Context(), id)
	if err != nil {
		b.Fatal(err)
	}
	return stored
}

// BenchCreateRun is a workflow run of 1,000 tasks created in one
// transaction. It reports tasks/s.
func BenchCreateRun(b *testing.B, s store.Store, now time.Time) {
	const n = 1000
	i := 0
	for b.Loop() {
		benchRun(b, s, "run-"+strconv.Itoa(i), n, now)
		i++
	}
	b.ReportMetric(float64(i*n)/b.Elapsed().Seconds(), "tasks/s")
}

// BenchUpdateTask is the write an engine makes at each move of a task:
// UpdateTask with its event, one after another on distinct tasks, every
// call durable before it returns. It reports updates/s.
func BenchUpdateTask(b *testing.B, s store.Store, now time.Time) {
	tasks := benchRun(b, s, "run", 1000, now)
	i := 0
	for b.Loop() {
		k := &tasks[i%len(tasks)]
		from := k.State
		k.State = record.TaskRunning
		if i%2 == 1 {
			k.State = record.TaskPending
		}
		var err error
		*k, err = s.UpdateTask(b.Context(), *k, &record.TaskEvent{From: from, To: k.State, Reason: "released"}, now)
		if err != nil {
			b.Fatal(err)
		}
		i++
	}
	b.ReportMetric(float64(i)/b.Elapsed().Seconds(), "updates/s")
}

// BenchRecordStates is the ledger write a response makes: one state of
// one key per call, observed 100 ms after the one before, so every call
// upserts the state and its history's bucket and every hundredth starts a
// new bucket, with the history pruned once it is full.
func BenchRecordStates(b *testing.B, s store.Store, now time.Time) {
	ctx := b.Context()
	k := quota.Key{Host: "api.github.com", Principal: "octocat", Resource: "core"}
	b.ResetTimer()
	for i := range b.N {
		at := now.Add(time.Duration(i) * 100 * time.Millisecond)
		st := quota.State{Key: k, Limit: 5000, Remaining: int64(4999 - i%5000), ResetAt: now.Add(time.Hour),
			ResetKnown: true, RawReset: now.Add(time.Hour).Unix(), ObservedAt: at, ObservedBy: "bench",
			Source: quota.SourceHeaders}
		if err := s.RecordStates(ctx, []quota.State{st}); err != nil {
			b.Fatal(err)
		}
	}
}
