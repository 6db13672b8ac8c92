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
// prints the count, the lateness percentiles and the host process's peak
// RSS (VmHWM of /proc/self/status) and its RSS at T0, holding every job.
//
//	go run ./bench/wakeup                          # 100,000 jobs over 10 minutes
//	go run ./bench/wakeup -jobs 10000 -window 1m   # a quick run
package main

import (
	"bufio"
	"cmp"
	"context"
	"flag"
	"fmt"
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

	late := make([]time.Duration, *jobs)
	dues := make([]time.Time, *jobs)
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
			late[i], dues[i] = now.Sub(due), due
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
	cpu0 := readCPU()
	if err := h.Start(ctx); err != nil {
		benchkit.Fail("%v", err)
	}

	// The RSS at T0: the host holds every job, none woken yet.
	time.Sleep(time.Until(t0.Add(-100 * time.Millisecond)))
	rssAtT0 := procStatus("VmRSS")
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
				now.Sub(t0).Round(time.Second), started.Load(), *jobs, kb(procStatus("VmRSS")))
		}
	}
	tick.Stop()
	h.Stop()
	cpu := readCPU().sub(cpu0)
	hwm := procStatus("VmHWM")
	final, err := st.CountJobs(ctx)
	if err != nil {
		benchkit.Fail("%v", err)
	}
	if done == 0 {
		done = final[job.Complete]
	}

	if *worst > 0 {
		listWorst(*worst, late, dues, seen, t0)
	}
	var got []time.Duration
	for i := range late {
		if seen[i].Load() {
			got = append(got, late[i])
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
		cpu.wall.Round(time.Second), 100*cpu.self.Seconds()/cpu.wall.Seconds(),
		100*max(cpu.machine-cpu.self, 0).Seconds()/cpu.wall.Seconds(), runtime.NumCPU())
	fmt.Printf("host process RSS at T0 (holding %d deferred jobs) %s; peak (VmHWM) %s\n", *jobs, kb(rssAtT0), kb(hwm))
}

// listWorst prints the n latest jobs, in order of due time.
func listWorst(n int, late []time.Duration, dues []time.Time, seen []atomic.Bool, t0 time.Time) {
	type lj struct {
		i int
		l time.Duration
	}
	var all []lj
	for i := range late {
		if seen[i].Load() {
			all = append(all, lj{i, late[i]})
		}
	}
	slices.SortFunc(all, func(a, b lj) int { return int(b.l - a.l) })
	all = all[:min(n, len(all))]
	for _, x := range all {
		fmt.Printf("  job %d due T0+%s late %s\n", x.i, dues[x.i].Sub(t0), msd(x.l))
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

	const workers = 64
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for range workers {
		wg.Go(func() {
			rnd := quota.NewRand()
			for {
				i := int(next.Add(1) - 1)
				if i >= n {
					return
				}
				d := host.Deferral{Key: key, Provider: "github", ResetAt: time.UnixMilli(due[i])}
				_, _, err := host.SubmitDeferred(ctx, st, fmt.Sprintf("w%d-%d", i, due[i]), spec, d, nil,
					host.DeferOptions{Now: time.Now(), Policy: p, Rand: rnd, Retained: true})
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

// cpuSample is the CPU time the machine and this process have used, and
// when it was read.
type cpuSample struct {
	at            time.Time
	wall          time.Duration
	machine, self time.Duration
}

// readCPU reads the machine's busy time from /proc/stat (every field but
// idle and iowait) and this process's from /proc/self/stat (utime + stime).
// Both count clock ticks of 1/100 s.
func readCPU() cpuSample {
	const tick = 10 * time.Millisecond
	s := cpuSample{at: time.Now()}
	if b, err := os.ReadFile("/proc/stat"); err == nil {
		line, _, _ := strings.Cut(string(b), "\n")
		f := strings.Fields(line)
		for i, v := range f[1:min(len(f), 9)] {
			if i == 3 || i == 4 { // idle, iowait
				continue
			}
			n, _ := strconv.ParseInt(v, 10, 64)
			s.machine += time.Duration(n) * tick
		}
	}
	if b, err := os.ReadFile("/proc/self/stat"); err == nil {
		_, rest, _ := strings.Cut(string(b), ") ")
		f := strings.Fields(rest)
		if len(f) > 12 {
			u, _ := strconv.ParseInt(f[11], 10, 64)
			k, _ := strconv.ParseInt(f[12], 10, 64)
			s.self = time.Duration(u+k) * tick
		}
	}
	return s
}

func (s cpuSample) sub(o cpuSample) cpuSample {
	return cpuSample{wall: s.at.Sub(o.at), machine: s.machine - o.machine, self: s.self - o.self}
}

// procStatus reads a "kB" line of /proc/self/status, in kB.
func procStatus(field string) int64 {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return -1
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), field+":"); ok {
			n, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return n
		}
	}
	return -1
}

func kb(n int64) string { return fmt.Sprintf("%.1f MB", float64(n)/1024) }

func msd(d time.Duration) string { return fmt.Sprintf("%.1f ms", float64(d.Microseconds())/1000) }
