// Command wakeup measures how late the durable host wakes deferred jobs, and
// its memory while it holds them.
//
// It makes a SQLite store in a temporary folder and, in a child process (so
// that the host's process starts clean, as `layover serve` would), records N
// deferred jobs through host.SubmitDeferred: each with its receipt and its
// wake-up, retained ownership, due at a time drawn uniformly over the window
// that starts at T0. Then it starts a real host on that store, with no
// jitter, no resume rate to speak of and a Go function runner that does
// nothing but note, on a job's first call, how late it started: lateness =
// time.Now() - due, due being the job's stored RunAt (whole milliseconds).
// The host wakes the jobs itself: the sweep moves each due job from deferred
// to resumable and the loop claims and resumes it (receipt, preflight,
// running, complete).
//
// Once every job has completed (or the window plus -grace has passed) it
// prints the count, the lateness percentiles, the host process's peak RSS
// (VmHWM of /proc/self/status) and its RSS at T0, holding every job, and
// the store's size on disk (the file and its WAL) at T0 and at the end.
// The process keeps 5 bytes a job of its own (the lateness in µs, a seen
// flag; 9 with -worst), counted in its RSS.
//
//	go run ./bench/wakeup                          # 100,000 jobs over 10 minutes
//	go run ./bench/wakeup -jobs 10000 -window 1m   # a quick run
//	go run ./bench/wakeup -jobs 1000000 -window 1h # issue 9's scale
package main

import (
	"cmp"
	"context"
	"flag"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
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
	"github.com/layoverhq/layover/store/sqlite"
)

func main() {
	benchkit.Name = "wakeup"
	jobs := flag.Int("jobs", 100000, "deferred jobs")
	window := flag.Duration("window", 10*time.Minute, "the jobs are due uniformly over this window")
	lead := flag.Duration("lead", 0, "from the start of seeding to the window's start (default 20s + 1s per 2,000 jobs)")
	grace := flag.Duration("grace", 2*time.Minute, "how long after the window to wait for the last jobs")
	conc := flag.Int("concurrency", 0, "the host's Concurrency (0: host.DefaultConcurrency)")
	dir := flag.String("dir", "", "folder for the store (default a new temporary one, removed at the end)")
	cpuprofile := flag.String("cpuprofile", "", "write a CPU profile of the host phase to this file")
	worst := flag.Int("worst", 0, "also list the N latest jobs: due (from T0) and lateness")
	seed := flag.String("seed-child", "", "internal: seed the store at this path (T0 ms, jobs, window given as arguments)")
	flag.Parse()
	if *seed != "" {
		seedChild(*seed, flag.Args())
		return
	}
	if *jobs < 1 || *window <= 0 {
		benchkit.Fail("want -jobs >= 1 and -window > 0")
	}
	if *lead == 0 {
		*lead = 20*time.Second + time.Duration(*jobs/2000)*time.Second
	}

	if *dir == "" {
		d, err := os.MkdirTemp("", "wakeup-")
		if err != nil {
			benchkit.Fail("%v", err)
		}
		defer os.RemoveAll(d)
		*dir = d
	}
	path := filepath.Join(*dir, "layover.db")
	exe, err := os.Executable()
	if err != nil {
		benchkit.Fail("%v", err)
	}

	seedStart := time.Now()
	t0 := seedStart.Add(*lead).Truncate(time.Second)
	cmd := exec.Command(exe, "-seed-child", path, strconv.FormatInt(t0.UnixMilli(), 10),
		strconv.Itoa(*jobs), window.String())
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		benchkit.Fail("seeding: %v", err)
	}
	seeded := time.Since(seedStart)
	if time.Until(t0) < time.Second {
		benchkit.Fail("seeding took %s, past the window's start: raise -lead", seeded.Round(time.Millisecond))
	}

	ctx := context.Background()
	st, err := sqlite.Open(ctx, path)
	if err != nil {
		benchkit.Fail("%v", err)
	}
	defer st.Close()
	counts, err := st.CountJobs(ctx)
	if err != nil {
		benchkit.Fail("%v", err)
	}
	if counts[job.Deferred] != *jobs {
		benchkit.Fail("the store holds %v, want %d deferred jobs", counts, *jobs)
	}

	// Lateness in µs (saturating at about 35 minutes), and with -worst
	// each job's due time in ms from T0: a few bytes a job, so that what
	// the bench keeps does not hide the host's memory.
	late := make([]int32, *jobs)
	var dues []int32
	if *worst > 0 {
		dues = make([]int32, *jobs)
	}
	seen := make([]atomic.Bool, *jobs)
	var started, calls atomic.Int64
	runner := host.FuncRunner(func(_ context.Context, r host.Run) error {
		now := time.Now()
		calls.Add(1)
		i, due, ok := parseID(r.Job.ID)
		if !ok || i >= len(late) {
			return host.Permanent("not a bench job: " + r.Job.ID)
		}
		if seen[i].CompareAndSwap(false, true) {
			late[i] = int32(min(max(now.Sub(due).Microseconds(), math.MinInt32), math.MaxInt32))
			if dues != nil {
				dues[i] = int32(due.Sub(t0).Milliseconds())
			}
			started.Add(1)
		}
		return nil
	})
	p := quota.DefaultPolicy()
	p.Jitter = 0
	h, err := host.New(host.Config{Store: st, Runner: runner, Policy: p, ResumeRate: host.MaxResumeRate,
		Concurrency: *conc, Env: []string{"PATH=/usr/bin:/bin"}, Hostname: "wakeup-bench"})
	if err != nil {
		benchkit.Fail("%v", err)
	}
	if *cpuprofile != "" {
		f, err := os.Create(*cpuprofile)
		if err != nil {
			benchkit.Fail("%v", err)
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			benchkit.Fail("%v", err)
		}
		defer pprof.StopCPUProfile()
	}
	cpu0 := benchkit.ReadCPU()
	if err := h.Start(ctx); err != nil {
		benchkit.Fail("%v", err)
	}

	// The RSS at T0: the host holds every job, none woken yet.
	time.Sleep(time.Until(t0.Add(-100 * time.Millisecond)))
	rssAtT0 := benchkit.ProcStatusKB("VmRSS")
	sizeAtT0 := storeSize(path)
	fmt.Fprintf(os.Stderr, "wakeup: %d jobs seeded in %s; host started; window %s from %s; RSS %s\n",
		*jobs, seeded.Round(time.Millisecond), *window, t0.Format(time.TimeOnly), kb(rssAtT0))

	end := t0.Add(*window)
	deadline := end.Add(*grace)
	tick := time.NewTicker(time.Second)
	lastReport := time.Now()
	var done int
	for now := range tick.C {
		if now.After(end) && int(started.Load()) == *jobs {
			c, err := st.CountJobs(ctx)
			if err == nil && c[job.Complete] == *jobs {
				done = *jobs
				break
			}
		}
		if now.After(deadline) {
			break
		}
		if now.Sub(lastReport) >= 30*time.Second {
			lastReport = now
			fmt.Fprintf(os.Stderr, "wakeup: %s: %d of %d started; RSS %s\n",
				now.Sub(t0).Round(time.Second), started.Load(), *jobs, kb(benchkit.ProcStatusKB("VmRSS")))
		}
	}
	tick.Stop()
	h.Stop()
	cpu := benchkit.ReadCPU().Sub(cpu0)
	hwm := benchkit.ProcStatusKB("VmHWM")
	sizeAtEnd := storeSize(path)
	final, err := st.CountJobs(ctx)
	if err != nil {
		benchkit.Fail("%v", err)
	}
	if done == 0 {
		done = final[job.Complete]
	}

	if *worst > 0 {
		listWorst(*worst, late, dues, seen)
	}
	var got []time.Duration
	for i := range late {
		if seen[i].Load() {
			got = append(got, time.Duration(late[i])*time.Microsecond)
		}
	}
	slices.Sort(got)
	fmt.Printf("wakeup: %d jobs due uniformly over %s, %s, GOMAXPROCS %d, host concurrency %d\n",
		*jobs, *window, runtime.Version(), runtime.GOMAXPROCS(0), cmp.Or(max(*conc, 0), host.DefaultConcurrency))
	fmt.Printf("seeded through host.SubmitDeferred (64 goroutines) in %s (%.0f/s)\n",
		seeded.Round(time.Millisecond), float64(*jobs)/seeded.Seconds())
	fmt.Printf("started %d, complete %d, runner calls %d, states at the end %v\n", len(got), done, calls.Load(), final)
	if len(got) > 0 {
		fmt.Printf("lateness  p50 %s  p90 %s  p99 %s  p99.9 %s  max %s\n",
			msd(benchkit.Pct(got, 50)), msd(benchkit.Pct(got, 90)), msd(benchkit.Pct(got, 99)), msd(benchkit.Pct(got, 99.9)), msd(got[len(got)-1]))
	}
	fmt.Printf("CPU over the host phase (%s): this process %.0f%% of one core; other processes %.0f%% of one core (of %d)\n",
		cpu.Wall.Round(time.Second), 100*cpu.Self.Seconds()/cpu.Wall.Seconds(),
		100*max(cpu.Machine-cpu.Self, 0).Seconds()/cpu.Wall.Seconds(), runtime.NumCPU())
	fmt.Printf("host process RSS at T0 (holding %d deferred jobs) %s; peak (VmHWM) %s\n", *jobs, kb(rssAtT0), kb(hwm))
	fmt.Printf("store on disk (file + WAL): %s at T0, %s at the end\n", mb(sizeAtT0), mb(sizeAtEnd))
}

// listWorst prints the n latest jobs, in order of due time.
func listWorst(n int, late, dues []int32, seen []atomic.Bool) {
	type lj struct {
		i int
		l int32
	}
	var all []lj
	for i := range late {
		if seen[i].Load() {
			all = append(all, lj{i, late[i]})
		}
	}
	slices.SortFunc(all, func(a, b lj) int { return cmp.Compare(b.l, a.l) })
	all = all[:min(n, len(all))]
	for _, x := range all {
		fmt.Printf("  job %d due T0+%s late %s\n", x.i, time.Duration(dues[x.i])*time.Millisecond, msd(time.Duration(x.l)*time.Microsecond))
	}
}

// seedChild records the deferred jobs: args are T0 (Unix ms), the job count
// and the window. Job i's id carries its index and its due time.
func seedChild(path string, args []string) {
	if len(args) != 3 {
		benchkit.Fail("seed: want T0-ms jobs window")
	}
	t0ms, err1 := strconv.ParseInt(args[0], 10, 64)
	n, err2 := strconv.Atoi(args[1])
	window, err3 := time.ParseDuration(args[2])
	if err1 != nil || err2 != nil || err3 != nil {
		benchkit.Fail("seed: bad arguments %q", args)
	}
	ctx := context.Background()
	st, err := sqlite.Open(ctx, path)
	if err != nil {
		benchkit.Fail("%v", err)
	}
	defer st.Close()

	rnd := rand.New(rand.NewPCG(1, 2))
	due := make([]int64, n)
	for i := range due {
		due[i] = t0ms + rnd.Int64N(window.Milliseconds())
	}
	p := quota.DefaultPolicy()
	p.ResetMargin, p.Jitter = 0, 0 // resume_after is the due time itself
	key := quota.Key{Host: "api.github.com", Principal: "bench", Resource: "core"}
	spec := job.Spec{Name: "wakeup", Argv: []string{"noop"}, Workdir: "/", Provider: "github"}

	// The seeding host is live while it seeds, so every deferral is
	// retained; it runs nothing (every job is due later) and stops before
	// the measured host starts.
	h, err := host.New(host.Config{Store: st, Policy: p, Env: []string{"PATH=/usr/bin:/bin"}, Hostname: "wakeup-seed",
		Runner: host.FuncRunner(func(context.Context, host.Run) error { return host.Permanent("the seeding host runs nothing") })})
	if err != nil {
		benchkit.Fail("%v", err)
	}
	if err := h.Start(ctx); err != nil {
		benchkit.Fail("%v", err)
	}
	defer h.Stop()
	const workers = 64
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for range workers {
		wg.Go(func() {
			for {
				i := int(next.Add(1) - 1)
				if i >= n {
					return
				}
				d := host.Deferral{Key: key, Provider: "github", ResetAt: time.UnixMilli(due[i])}
				_, _, err := h.SubmitDeferred(ctx, fmt.Sprintf("w%d-%d", i, due[i]), spec, d, nil)
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

// parseID reads job i's index and due time back from its id.
func parseID(id string) (int, time.Time, bool) {
	a, b, ok := strings.Cut(strings.TrimPrefix(id, "w"), "-")
	i, err1 := strconv.Atoi(a)
	d, err2 := strconv.ParseInt(b, 10, 64)
	if !ok || err1 != nil || err2 != nil || i < 0 {
		return 0, time.Time{}, false
	}
	return i, time.UnixMilli(d), true
}

// storeSize is the size of the SQLite file at path and its WAL, in bytes.
func storeSize(path string) int64 {
	var n int64
	for _, p := range []string{path, path + "-wal"} {
		if fi, err := os.Stat(p); err == nil {
			n += fi.Size()
		}
	}
	return n
}

func mb(n int64) string { return fmt.Sprintf("%.1f MB", float64(n)/(1<<20)) }

func kb(n int64) string { return fmt.Sprintf("%.1f MB", float64(n)/1024) }

func msd(d time.Duration) string { return fmt.Sprintf("%.1f ms", float64(d.Microseconds())/1000) }
