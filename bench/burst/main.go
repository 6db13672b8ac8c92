// Command burst measures how fast the durable host drains a burst: N jobs
// all due at the same instant, already past when the host starts.
//
// Each round makes a fresh store (a SQLite file in a temporary folder, or,
// with -postgres, a schema of its own on that server, dropped at the end),
// records N jobs due at one instant T in the past from 64 goroutines, then
// starts a host on it (a Go function runner, host.FuncRunner, that does
// nothing but note its call; no jitter, no resume rate to speak of) and
// measures from Start to the N-th job's function call ("start" is the
// function called), and on to the N-th completion written.
//
// -kind ready records ready jobs with RunAt = T (a submitted job, due);
// -kind deferred records deferred jobs (host.SubmitDeferred, retained, the
// receipt's wake-up at T): the host's sweep wakes them, and each runs the
// resume preflight (its receipt read and checked) before its call.
//
//	go run ./bench/burst                                   # SQLite, 10,000 ready jobs, 3 rounds
//	go run ./bench/burst -postgres "$LAYOVER_TEST_POSTGRES" # the same on PostgreSQL
//	go run ./bench/burst -kind deferred -concurrency 64
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/layoverhq/layover/bench/internal/benchkit"
	"github.com/layoverhq/layover/host"
	"github.com/layoverhq/layover/job"
	"github.com/layoverhq/layover/quota"
	"github.com/layoverhq/layover/store"
	"github.com/layoverhq/layover/store/postgres"
	"github.com/layoverhq/layover/store/sqlite"
)

type options struct {
	jobs, conc, rounds int
	kind, pg, dir      string
	cpuprofile         string
}

// result of one round.
type result struct {
	seed        time.Duration // recording the N jobs
	first, last time.Duration // Start to the first and the N-th call
	done        time.Duration // Start to the N-th completion
	calls       int64
	cpu         benchkit.CPU
	// the loop's store calls during the drain
	sweeps, claims, claimed, nextDue int64
	sweepTime, claimTime             time.Duration
}

func main() {
	benchkit.Name = "burst"
	var o options
	flag.IntVar(&o.jobs, "jobs", 10000, "jobs due at the same instant")
	flag.IntVar(&o.conc, "concurrency", 0, "the host's Concurrency (0: host.DefaultConcurrency)")
	flag.IntVar(&o.rounds, "rounds", 3, "rounds, each on a fresh store (the median is reported)")
	flag.StringVar(&o.kind, "kind", "ready", "ready (submitted, due) or deferred (retained deferrals whose wake-up is due)")
	flag.StringVar(&o.pg, "postgres", "", "run on the PostgreSQL server this DSN names (a fresh schema each round) instead of SQLite")
	flag.StringVar(&o.dir, "dir", "", "folder for the SQLite store (default a new temporary one each round)")
	flag.StringVar(&o.cpuprofile, "cpuprofile", "", "write a CPU profile of the first round's drain to this file")
	flag.Parse()
	if o.jobs < 1 || o.rounds < 1 || (o.kind != "ready" && o.kind != "deferred") {
		benchkit.Fail("want -jobs >= 1, -rounds >= 1 and -kind ready or deferred")
	}
	if o.cpuprofile != "" {
		f, err := os.Create(o.cpuprofile)
		if err != nil {
			benchkit.Fail("%v", err)
		}
		defer f.Close()
		profile = f // started and stopped around the first drain (round)
	}
	conc := o.conc
	if conc <= 0 {
		conc = host.DefaultConcurrency
	}
	storeName := "SQLite"
	if o.pg != "" {
		storeName = "PostgreSQL"
	}
	fmt.Printf("burst: %d %s jobs due at one past instant, %s, host concurrency %d, %s, GOMAXPROCS %d, load %s\n",
		o.jobs, o.kind, storeName, conc, runtime.Version(), runtime.GOMAXPROCS(0), benchkit.Uptime())
	var rs []result
	for i := range o.rounds {
		r := round(o, i == 0)
		rs = append(rs, r)
		fmt.Printf("round %d: seeded in %s; Start to first call %s, to call %d %s (%.0f/s), to completion %d %s; calls %d; CPU %.0f%% of a core, others %.0f%%; loop: %d sweeps (%s), %d claims (%s) taking %d jobs, %d next-due reads\n",
			i+1, r.seed.Round(time.Millisecond), benchkit.MS(r.first), o.jobs, benchkit.MS(r.last),
			float64(o.jobs)/r.last.Seconds(), o.jobs, benchkit.MS(r.done), r.calls, 100*r.cpu.Mine(), 100*r.cpu.Other(),
			r.sweeps, r.sweepTime.Round(time.Millisecond), r.claims, r.claimTime.Round(time.Millisecond), r.claimed, r.nextDue)
	}
	med := func(get func(r result) time.Duration) time.Duration {
		v := make([]time.Duration, len(rs))
		for i, r := range rs {
			v[i] = get(r)
		}
		slices.Sort(v)
		return v[(len(v)-1)/2]
	}
	last := med(func(r result) time.Duration { return r.last })
	fmt.Printf("median of %d: Start to call %d %s (%.0f/s), to completion %s; load %s\n", len(rs), o.jobs,
		benchkit.MS(last), float64(o.jobs)/last.Seconds(), benchkit.MS(med(func(r result) time.Duration { return r.done })),
		benchkit.Uptime())
}

var profile *os.File

// completions counts the completions the host has written, and the
// loop's store calls: sweeps, claims (and the jobs they took) and
// next-due reads.
type completions struct {
	host.Store
	n    atomic.Int64
	want int64
	all  chan time.Time

	sweeps, claims, claimed, nextDue atomic.Int64
	sweepNS, claimNS                 atomic.Int64
}

func (c *completions) SweepJobs(ctx context.Context, now time.Time) (store.SweepResult, error) {
	t := time.Now()
	res, err := c.Store.SweepJobs(ctx, now)
	c.sweeps.Add(1)
	c.sweepNS.Add(int64(time.Since(t)))
	return res, err
}

func (c *completions) ClaimJobs(ctx context.Context, hostID string, now time.Time, lease time.Duration, limit int) ([]job.Job, error) {
	t := time.Now()
	js, err := c.Store.ClaimJobs(ctx, hostID, now, lease, limit)
	c.claimNS.Add(int64(time.Since(t)))
	c.claims.Add(1)
	c.claimed.Add(int64(len(js)))
	return js, err
}

func (c *completions) NextJobDue(ctx context.Context) (time.Time, bool, error) {
	c.nextDue.Add(1)
	return c.Store.NextJobDue(ctx)
}

func (c *completions) ApplyJob(ctx context.Context, id string, fence int64, ch job.Change) (job.Job, error) {
	j, err := c.Store.ApplyJob(ctx, id, fence, ch)
	if err == nil && ch.To == job.Complete && c.n.Add(1) == c.want {
		c.all <- time.Now()
	}
	return j, err
}

func openStore(ctx context.Context, o options) (host.Store, func()) {
	if o.pg != "" {
		dsn, drop := benchkit.PostgresSchema(ctx, o.pg, "layover_burst")
		st, err := postgres.Open(ctx, dsn)
		if err != nil {
			drop()
			benchkit.Fail("%v", err)
		}
		return st, func() { st.Close(); drop() }
	}
	dir := o.dir
	cleanup := func() {}
	if dir == "" {
		d, err := os.MkdirTemp("", "burst-")
		if err != nil {
			benchkit.Fail("%v", err)
		}
		dir, cleanup = d, func() { os.RemoveAll(d) }
	}
	path := filepath.Join(dir, "layover-"+strconv.FormatInt(time.Now().UnixNano(), 36)+".db")
	st, err := sqlite.Open(ctx, path)
	if err != nil {
		benchkit.Fail("%v", err)
	}
	return st, func() { st.Close(); cleanup() }
}

func round(o options, first bool) result {
	ctx := context.Background()
	st, closeStore := openStore(ctx, o)
	defer closeStore()

	seedStart := time.Now()
	due := seedStart.Truncate(time.Millisecond)
	seed(ctx, st, o, due)
	var r result
	r.seed = time.Since(seedStart)
	counts, err := st.CountJobs(ctx)
	if err != nil {
		benchkit.Fail("%v", err)
	}
	want := job.Ready
	if o.kind == "deferred" {
		want = job.Deferred
	}
	if counts[want] != o.jobs {
		benchkit.Fail("the store holds %v, want %d %s jobs", counts, o.jobs, want)
	}
	for time.Now().Before(due.Add(time.Millisecond)) { // T is past when the host starts
		time.Sleep(time.Millisecond)
	}

	seen := make([]atomic.Bool, o.jobs)
	var calls, started atomic.Int64
	var firstAt, lastAt atomic.Int64 // Unix ns
	runner := host.FuncRunner(func(_ context.Context, run host.Run) error {
		now := time.Now().UnixNano()
		calls.Add(1)
		i, err := strconv.Atoi(strings.TrimPrefix(run.Job.ID, "b"))
		if err != nil || i < 0 || i >= len(seen) {
			return host.Permanent("not a bench job: " + run.Job.ID)
		}
		if seen[i].CompareAndSwap(false, true) {
			firstAt.CompareAndSwap(0, now)
			if started.Add(1) == int64(o.jobs) {
				lastAt.Store(now)
			}
		}
		return nil
	})
	cs := &completions{Store: st, want: int64(o.jobs), all: make(chan time.Time, 1)}
	p := quota.DefaultPolicy()
	p.Jitter = 0
	h, err := host.New(host.Config{Store: cs, Runner: runner, Policy: p, ResumeRate: host.MaxResumeRate,
		Concurrency: o.conc, Env: []string{"PATH=/usr/bin:/bin"}, Hostname: "burst-bench"})
	if err != nil {
		benchkit.Fail("%v", err)
	}
	if profile != nil && first {
		if err := pprof.StartCPUProfile(profile); err != nil {
			benchkit.Fail("%v", err)
		}
	}
	cpu0 := benchkit.ReadCPU()
	start := time.Now()
	if err := h.Start(ctx); err != nil {
		benchkit.Fail("%v", err)
	}
	var end time.Time
	select {
	case end = <-cs.all:
	case <-time.After(10 * time.Minute):
		benchkit.Fail("not every job completed within 10 minutes: %d calls, %d completions", calls.Load(), cs.n.Load())
	}
	r.cpu = benchkit.ReadCPU().Sub(cpu0)
	if profile != nil && first {
		pprof.StopCPUProfile()
	}
	h.Stop()
	r.first = time.Duration(firstAt.Load() - start.UnixNano())
	r.last = time.Duration(lastAt.Load() - start.UnixNano())
	r.done = end.Sub(start)
	r.calls = calls.Load()
	r.sweeps, r.claims, r.claimed, r.nextDue = cs.sweeps.Load(), cs.claims.Load(), cs.claimed.Load(), cs.nextDue.Load()
	r.sweepTime, r.claimTime = time.Duration(cs.sweepNS.Load()), time.Duration(cs.claimNS.Load())
	return r
}

// seed records the jobs, job i as "b<i>", all due at due, from 64
// goroutines.
func seed(ctx context.Context, st host.Store, o options, due time.Time) {
	spec := job.Spec{Name: "burst", Argv: []string{"noop"}, Workdir: "/", Provider: "github"}
	p := quota.DefaultPolicy()
	p.ResetMargin, p.Jitter = 0, 0 // the wake-up is the due time itself
	key := quota.Key{Host: "api.github.com", Principal: "bench", Resource: "core"}
	// A host is registered while the jobs are seeded, so each deferral is
	// retained (the measured host wakes them); it is gone before that host
	// starts.
	now := time.Now()
	seeder := job.Host{ID: "burst-seed", Hostname: "burst-bench", PID: os.Getpid(), StartedAt: now, LastSeen: now, Lease: time.Hour}
	if err := st.RegisterHost(ctx, seeder); err != nil {
		benchkit.Fail("seed: %v", err)
	}
	defer func() {
		if err := st.UnregisterHost(ctx, seeder.ID); err != nil {
			benchkit.Fail("seed: %v", err)
		}
	}()
	jobs, err := host.NewJobs(host.Config{Store: st, Policy: p})
	if err != nil {
		benchkit.Fail("seed: %v", err)
	}
	const workers = 64
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for range workers {
		wg.Go(func() {
			for {
				i := int(next.Add(1) - 1)
				if i >= o.jobs {
					return
				}
				id := "b" + strconv.Itoa(i)
				now := time.Now()
				var err error
				if o.kind == "deferred" {
					_, _, err = jobs.SubmitDeferred(ctx, id, spec, host.Deferral{Key: key, Provider: "github", ResetAt: due}, nil)
				} else {
					_, _, err = st.SubmitJob(ctx, job.Job{ID: id, Spec: spec, State: job.Ready, Stage: "ready", RunAt: due,
						CreatedAt: now, UpdatedAt: now}, nil, now)
				}
				if err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		benchkit.Fail("seed: %v", err)
	}
}
