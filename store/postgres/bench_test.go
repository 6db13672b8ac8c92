package postgres_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/layoverhq/layover/host"
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
// BenchmarkApplyJobParallel is issue 9's durable deferrals on PostgreSQL
// (docs/benchmarks.md): 64 goroutines each deferring ready jobs with a
// receipt through ApplyJob, as a host does when a job meets an exhausted
// quota; BenchmarkApplyJob is one at a time.
func BenchmarkApplyJobParallel(b *testing.B) { storetest.BenchApplyJobParallel(b, openFresh(b), base) }

func BenchmarkApplyJob(b *testing.B) { storetest.BenchApplyJob(b, openFresh(b), base) }

func BenchmarkSubmitJob(b *testing.B) { storetest.BenchSubmitJob(b, openFresh(b), base) }

func BenchmarkRecordStates(b *testing.B) { storetest.BenchRecordStates(b, openFresh(b), base) }

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

// BenchmarkSubmitDeferred is durable deferrals through the host's Go API,
// (*host.Host).SubmitDeferred, on a started host over PostgreSQL: each call
// returns once the new deferred job, its transition, its receipt and its
// wake-up are committed. From 64 goroutines and from one.
func BenchmarkSubmitDeferred(b *testing.B) {
	for _, goroutines := range []int{64, 1} {
		b.Run("goroutines="+strconv.Itoa(goroutines), func(b *testing.B) {
			ctx := b.Context()
			st := openFresh(b)
			h, err := host.New(host.Config{Store: st, Runner: host.FuncRunner(func(context.Context, host.Run) error { return nil }),
				Rand: sharedRand{}, Env: []string{"PATH=/usr/bin:/bin"}, CheckpointDir: b.TempDir(), Hostname: "bench"})
			if err != nil {
				b.Fatal(err)
			}
			if err := h.Start(ctx); err != nil {
				b.Fatal(err)
			}
			defer h.Stop()
			key := quota.Key{Host: "api.github.com", Principal: "octocat", Resource: "core"}
			spec := job.Spec{Name: "triage", Argv: []string{"gh", "issue", "list", "--limit", "100"}, Workdir: "/srv/bot",
				Quota: []string{"github"}, Provider: "github", MaxAttempts: host.DefaultMaxAttempts,
				Deadline: time.Now().Add(24 * time.Hour).UTC().Truncate(time.Millisecond)}
			d := host.Deferral{Key: key, Provider: "github", ResetAt: time.Now().Add(time.Hour).Truncate(time.Second)}
			var next atomic.Int64
			deferOne := func() error {
				id := "bench-" + strconv.FormatInt(next.Add(1), 10)
				_, _, err := h.SubmitDeferred(ctx, id, spec, d, []quota.Key{key})
				return err
			}
			if goroutines == 1 {
				for b.Loop() {
					if err := deferOne(); err != nil {
						b.Fatal(err)
					}
				}
			} else {
				b.SetParallelism(max(1, goroutines/runtime.GOMAXPROCS(0)))
				b.ResetTimer()
				b.RunParallel(func(pb *testing.PB) {
					for pb.Next() {
						if err := deferOne(); err != nil {
							b.Error(err)
							return
						}
					}
				})
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "deferrals/s")
			b.StopTimer()
			if counts, err := st.CountJobs(ctx); err != nil || counts[job.Deferred] != b.N {
				b.Fatalf("the store holds %v (%v), want %d deferred jobs", counts, err, b.N)
			}
		})
	}
}

// sharedRand is a quota.Rand safe for concurrent use: math/rand/v2's
// shared source.
type sharedRand struct{}

func (sharedRand) Int64N(n int64) int64 { return rand.Int64N(n) }

// BenchmarkBareDeferrals is a reference for BenchmarkApplyJobParallel on the
// same server: the rows of b.N deferrals of ready jobs (the job's row
// updated, a transition and a receipt inserted), written with no read, no
// check and no group-commit machinery, as plain statements, 32 deferrals
// to a transaction sent in one round trip, from 64 goroutines.
func BenchmarkBareDeferrals(b *testing.B) {
	ctx := b.Context()
	s := openFresh(b)
	submitAll(b, s, b.N, func(i int) job.Job { return storetest.BenchJob("j"+strconv.Itoa(i), base) })
	const perTx = 32
	at := base.Add(time.Minute).UnixMilli()
	var next atomic.Int64
	b.ResetTimer()
	var wg sync.WaitGroup
	for range 64 {
		wg.Go(func() {
			for {
				lo := int(next.Add(perTx)) - perTx
				if lo >= b.N {
					return
				}
				batch := &pgx.Batch{}
				batch.Queue("BEGIN")
				for i := lo; i < min(lo+perTx, b.N); i++ {
					id := "j" + strconv.Itoa(i)
					batch.Queue(`UPDATE jobs SET state = 'deferred', stage = 'Quota wait until 2026-11-10T14:41:00Z',
						ownership = 'retained', updated_at_ms = $2, run_at_ms = $3, resume_by_ms = $4,
						transition_seq = 2, receipt_seq = 1 WHERE id = $1`, id, at, at+41*60_000, at+6*3600_000)
					batch.Queue(`INSERT INTO job_transition (job_id, seq, from_state, to_state, at_ms, reason)
						VALUES ($1, 2, 'ready', 'deferred', $2, 'quota: core exhausted')`, id, at)
					batch.Queue(`INSERT INTO job_receipt (job_id, seq, json, issued_at_ms) VALUES ($1, 1, $2, $3)`,
						id, storetest.Receipt, at)
				}
				batch.Queue("COMMIT")
				if err := s.Pool().SendBatch(ctx, batch).Close(); err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "deferrals/s")
}
