package host_test

import (
	"context"
	"math/rand/v2"
	"path/filepath"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/layoverhq/layover/host"
	"github.com/layoverhq/layover/job"
	"github.com/layoverhq/layover/quota"
	"github.com/layoverhq/layover/store/sqlite"
)

// BenchmarkSubmitDeferred measures deferrals recorded through the host's Go
// API: (*host.Host).SubmitDeferred on a started host (so ownership is
// retained) over a SQLite file store, each call returning once the job, its
// receipt and its wake-up are durable (group-committed). It reports
// deferrals per second of wall time. Sub-benchmarks run 64 goroutines at
// once (the target: >= 4,000/s) and one, for comparison.
//
//	go test -run '^$' -bench SubmitDeferred -benchtime 20000x -count 5 ./host
func BenchmarkSubmitDeferred(b *testing.B) {
	for _, goroutines := range []int{64, 1} {
		b.Run("goroutines="+strconv.Itoa(goroutines), func(b *testing.B) {
			benchSubmitDeferred(b, goroutines)
		})
	}
}

func benchSubmitDeferred(b *testing.B, goroutines int) {
	ctx := context.Background()
	st, err := sqlite.Open(ctx, filepath.Join(b.TempDir(), "layover.db"))
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	h, err := host.New(host.Config{Store: st, Runner: host.FuncRunner(func(context.Context, host.Run) error { return nil }),
		Rand: &lockedRand{r: rand.New(rand.NewPCG(1, 2))}, Env: []string{"PATH=/usr/bin:/bin"},
		CheckpointDir: b.TempDir(), Hostname: "bench"})
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
	keys := []quota.Key{key}

	var n atomic.Int64
	var retained atomic.Int64
	if goroutines > 1 {
		// RunParallel starts SetParallelism(p) * GOMAXPROCS goroutines.
		b.SetParallelism((goroutines + runtime.GOMAXPROCS(0) - 1) / runtime.GOMAXPROCS(0))
	}
	b.ResetTimer()
	submit := func() bool {
		id := "bench-" + strconv.FormatInt(n.Add(1), 10)
		j, rc, err := h.SubmitDeferred(ctx, id, spec, d, keys)
		if err != nil {
			b.Error(err)
			return false
		}
		if rc.IsRetained() && j.Ownership == job.Retained {
			retained.Add(1)
		}
		return true
	}
	if goroutines > 1 {
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if !submit() {
					return
				}
			}
		})
	} else {
		for b.Loop() {
			if !submit() {
				break
			}
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "deferrals/s")

	if r := retained.Load(); r != int64(b.N) {
		b.Fatalf("%d of %d deferrals retained", r, b.N)
	}
	counts, err := st.CountJobs(ctx)
	if err != nil {
		b.Fatal(err)
	}
	if counts[job.Deferred] != b.N {
		b.Fatalf("the store holds %v, want %d deferred jobs", counts, b.N)
	}
}

// lockedRand is a quota.Rand safe for concurrent use: calls to
// Host.SubmitDeferred share the host's Rand.
type lockedRand struct {
	mu sync.Mutex
	r  *rand.Rand
}

func (l *lockedRand) Int64N(n int64) int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.r.Int64N(n)
}
