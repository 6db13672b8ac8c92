package crashtest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/layoverhq/layover/internal/fake"
	"github.com/layoverhq/layover/store/postgres/pgtest"
)

// The knobs of a run, from the environment. scripts/crashtest.sh sets them
// for the full run; `go test` uses the small defaults.
const (
	envJobs    = "LAYOVER_CRASH_JOBS"    // jobs to submit (default 30)
	envKills   = "LAYOVER_CRASH_KILLS"   // SIGKILLs before serve may finish (default max(4, jobs/6))
	envSeed    = "LAYOVER_CRASH_SEED"    // seed of every random choice (default: random, printed)
	envTimeout = "LAYOVER_CRASH_TIMEOUT" // bound on the whole run (default 60 s + 1 s per job)
)

const (
	ghToken = "crash-token-1"
	// serve runs with a short lease, and no margin or jitter, so that a
	// deferred job resumes right at its reset.
	lease = 2 * time.Second
)

var serveArgs = []string{"serve", "--lease", lease.String(), "--heartbeat", "500ms",
	"--reset-margin", "0s", "--jitter", "0s", "--concurrency", "8"}

type config struct {
	jobs, kills int
	seed        uint64
	timeout     time.Duration
}

func loadConfig(t *testing.T) config {
	t.Helper()
	num := func(name string, def int) int {
		v := os.Getenv(name)
		if v == "" {
			return def
		}
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			t.Fatalf("%s=%q: want a whole number", name, v)
		}
		return n
	}
	c := config{jobs: num(envJobs, 30)}
	if c.jobs < 1 {
		t.Fatalf("%s must be at least 1", envJobs)
	}
	c.kills = num(envKills, max(4, c.jobs/6))
	c.seed = rand.Uint64()
	if v := os.Getenv(envSeed); v != "" {
		s, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			t.Fatalf("%s=%q: want an unsigned integer", envSeed, v)
		}
		c.seed = s
	}
	c.timeout = 60*time.Second + time.Duration(c.jobs)*time.Second
	if v := os.Getenv(envTimeout); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			t.Fatalf("%s=%q: want a duration", envTimeout, v)
		}
		c.timeout = d
	}
	return c
}

// plannedJob is one job of the run: its shell command appends "start" to
// the sink, works a little, for some jobs calls `gh api` (which fails while
// the fake GitHub's quota is exhausted), and appends "end".
//
// A few jobs stall past their progress deadline until one of their runs is
// asked to stop (SIGTERM): the host that runs them loses the claim while it
// is alive and must stop the process before the job runs again. That run
// cleans up slowly and then writes "end fail": only a host that kills it in
// time, before the lease it lost could run out, keeps that line from
// landing after the next claim's start. (A run that dies with its host
// stalls again next time, so every such job meets a live host's take-back,
// at the latest once the kills are over.)
type plannedJob struct {
	ID           string
	GH           bool
	SlowFirst    bool
	Work1, Work2 time.Duration
	Gap          time.Duration // before it is submitted
}

const (
	progressTimeout = 1500 * time.Millisecond // of the slow-first jobs
	stall           = 4 * time.Second         // their first run's stall
	cleanup         = 2500 * time.Millisecond // its cleanup after SIGTERM, longer than the lease
)

func makePlan(rng *rand.Rand, n int) []plannedJob {
	plan := make([]plannedJob, n)
	for i := range plan {
		plan[i] = plannedJob{
			ID:        "job-" + strconv.Itoa(i+1),
			GH:        rng.IntN(2) == 0,
			SlowFirst: i%10 == 5, // job-6, job-16, …
			Work1:     time.Duration(100+rng.IntN(300)) * time.Millisecond,
			Work2:     time.Duration(rng.IntN(200)) * time.Millisecond,
			Gap:       time.Duration(rng.IntN(120)) * time.Millisecond,
		}
	}
	return plan
}

func seconds(d time.Duration) string { return strconv.FormatFloat(d.Seconds(), 'f', 3, 64) }

// script is the job's `sh -c` command. Its first word is the run's marker,
// so /proc shows which processes are the test's jobs.
func (w *world) script(j plannedJob) string {
	var b strings.Builder
	fmt.Fprintf(&b, ": %s; s='%s'; l=\"$LAYOVER_JOB_ID $LAYOVER_FENCE\"; echo \"$l start\" >>\"$s\"; ",
		w.marker, w.sink)
	if j.SlowFirst {
		dir := filepath.Join(w.dir, "stopped-"+j.ID)
		fmt.Fprintf(&b, "if [ ! -d '%s' ]; then trap 'mkdir %s; sleep %s; echo \"$l end fail\" >>\"$s\"; exit 143' TERM; sleep %s; fi; ",
			dir, dir, seconds(cleanup), seconds(stall))
	}
	fmt.Fprintf(&b, "sleep %s; ", seconds(j.Work1))
	if j.GH {
		b.WriteString(`gh api /repos/octo/demo || { c=$?; echo "$l end fail" >>"$s"; exit $c; }; `)
	}
	fmt.Fprintf(&b, "sleep %s; echo \"$l end\" >>\"$s\"", seconds(j.Work2))
	return b.String()
}

// world is one run: a fake GitHub, a store, a sink, and the environment the
// layover binary runs in.
type world struct {
	t      *testing.T
	dir    string
	store  string
	sink   string
	marker string
	gh     *fake.GitHub
	env    []string
}

func newWorld(t *testing.T, rng *rand.Rand) *world {
	gh := fake.NewGitHub(fake.GitHubConfig{})
	base, err := gh.Start("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { gh.Close() })
	dir := t.TempDir()
	if strings.ContainsAny(dir, `'"$\`+"`") {
		t.Fatalf("the temporary directory %q needs quoting the job scripts do not do", dir)
	}
	w := &world{t: t, dir: dir, store: filepath.Join(dir, "state", "layover.db"), sink: filepath.Join(dir, "sink"),
		marker: fmt.Sprintf("crashmark-%d-%08x", os.Getpid(), rng.Uint32()), gh: gh}
	w.env = []string{
		"PATH=" + binDir + ":/usr/bin:/bin",
		"HOME=" + dir,
		"GH_TOKEN=" + ghToken,
		"GITHUB_API_URL=" + base,
		"LAYOVER_STORE=" + w.store,
		"GH_REPO=octo/demo",
		"TZ=UTC",
		// A race-enabled binary otherwise sleeps a second at every exit.
		"GORACE=atexit_sleep_ms=0",
	}
	return w
}

// useStore points every layover process of the run at the store at loc.
func (w *world) useStore(loc string) {
	w.store = loc
	for i, kv := range w.env {
		if strings.HasPrefix(kv, "LAYOVER_STORE=") {
			w.env[i] = "LAYOVER_STORE=" + loc
		}
	}
}

type result struct {
	code           int
	stdout, stderr string
}

// layover runs the binary to completion. It is safe to call from any
// goroutine: it reports trouble as an error, never through t.
func (w *world) layover(args ...string) (result, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(binDir, "layover"), args...)
	cmd.Env, cmd.Dir = w.env, w.dir
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	if ctx.Err() != nil {
		return result{}, fmt.Errorf("layover %v timed out; stderr:\n%s", args, errb.String())
	}
	r := result{stdout: out.String(), stderr: errb.String()}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		r.code = ee.ExitCode()
	} else if err != nil {
		return result{}, fmt.Errorf("layover %v: %v", args, err)
	}
	return r, nil
}

type listedJob struct {
	ID    string `json:"id"`
	State string `json:"state"`
	Stage string `json:"stage"`
}

// jobs reads `layover jobs --json`.
func (w *world) jobs() ([]listedJob, error) {
	r, err := w.layover("jobs", "--json")
	if err != nil {
		return nil, err
	}
	if r.code != 0 {
		return nil, fmt.Errorf("layover jobs --json: exit %d: %s", r.code, r.stderr)
	}
	var out []listedJob
	if err := json.Unmarshal([]byte(r.stdout), &out); err != nil {
		return nil, fmt.Errorf("layover jobs --json: %v\n%s", err, r.stdout)
	}
	return out, nil
}

type shownJob struct {
	ID       string `json:"id"`
	State    string `json:"state"`
	Stage    string `json:"stage"`
	Attempts []struct {
		AttemptID string `json:"attempt_id"`
		Fence     int64  `json:"fence"`
		Outcome   string `json:"outcome"`
		ExitCode  *int   `json:"exit_code"`
	} `json:"attempts"`
	Spec struct {
		Deadline time.Time `json:"deadline"`
	} `json:"spec"`
	Receipts    []json.RawMessage `json:"receipts"`
	Transitions []transition      `json:"transitions"`
}

type transition struct {
	From   string    `json:"from"`
	To     string    `json:"to"`
	At     time.Time `json:"at"`
	Reason string    `json:"reason"`
}

func (w *world) show(id string) (shownJob, string, error) {
	r, err := w.layover("show", id, "--json")
	if err != nil {
		return shownJob{}, "", err
	}
	if r.code != 0 {
		return shownJob{}, "", fmt.Errorf("layover show %s --json: exit %d: %s", id, r.code, r.stderr)
	}
	var j shownJob
	if err := json.Unmarshal([]byte(r.stdout), &j); err != nil {
		return shownJob{}, "", fmt.Errorf("layover show %s --json: %v\n%s", id, err, r.stdout)
	}
	return j, r.stdout, nil
}

// server is one incarnation of `layover serve`.
type server struct {
	n       int
	cmd     *exec.Cmd
	log     string
	started time.Time
	done    chan struct{}
}

func (w *world) startServe(n int) *server {
	w.t.Helper()
	logPath := filepath.Join(w.dir, fmt.Sprintf("serve-%03d.log", n))
	logf, err := os.Create(logPath)
	if err != nil {
		w.t.Fatal(err)
	}
	defer logf.Close()
	cmd := exec.Command(filepath.Join(binDir, "layover"), serveArgs...)
	cmd.Env = append(slices.Clone(w.env), markerEnv+"="+w.marker)
	cmd.Dir = w.dir
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		w.t.Fatal(err)
	}
	s := &server{n: n, cmd: cmd, log: logPath, started: time.Now(), done: make(chan struct{})}
	go func() {
		// How a server ended is judged by its log and the store, not its
		// exit status (most are SIGKILLed).
		_ = cmd.Wait()
		close(s.done)
	}()
	w.t.Cleanup(func() { s.kill() })
	return s
}

// kill SIGKILLs the server and reaps it.
func (s *server) kill() {
	// The server may have exited already (os.ErrProcessDone).
	_ = s.cmd.Process.Signal(syscall.SIGKILL)
	<-s.done
}

// raced reports whether the race detector spoke in the server's log.
func (s *server) raced() bool {
	data, _ := os.ReadFile(s.log)
	return bytes.Contains(data, []byte("WARNING: DATA RACE"))
}

func (s *server) exited() bool {
	select {
	case <-s.done:
		return true
	default:
		return false
	}
}

func (s *server) logTail() string {
	data, _ := os.ReadFile(s.log)
	if len(data) > 4000 {
		data = data[len(data)-4000:]
	}
	return string(data)
}

// stats are what a run did, logged at its end.
type stats struct {
	kills, incarnations, windows int
}

// afterKill checks, right after a host was SIGKILLed, that every process
// of its jobs died with it: the job's shell and what the shell started. Each
// job runs under a supervisor that kills its process group when the host's
// end of their link closes, so nothing may outlive the host by more than a
// moment (allowing for a loaded machine).
func (w *world) afterKill(st *stats, final bool) {
	w.t.Helper()
	const wait = 2 * time.Second
	deadline := time.Now().Add(wait)
	for {
		left := survivors(w.marker)
		if len(left) == 0 {
			return
		}
		if time.Now().After(deadline) {
			what := "job processes outlived the SIGKILLed host"
			if final {
				what = "processes of the test's jobs remain after the final kill"
			}
			w.t.Fatalf("%s (%s after the kill): %v", what, wait, left)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestCrashSafety is the crash test of issue 3 §4, on the SQLite store.
func TestCrashSafety(t *testing.T) {
	crashSafety(t, "TestCrashSafety", "")
}

// TestCrashSafetyPostgres is the same on the PostgreSQL fleet store (a
// fresh schema of the server LAYOVER_TEST_POSTGRES names); skipped without
// one, except under CI.
func TestCrashSafetyPostgres(t *testing.T) {
	crashSafety(t, "TestCrashSafetyPostgres", pgtest.Schema(t))
}

// crashSafety runs the crash test on the store at loc ("" for a SQLite
// file of the run's own).
func crashSafety(t *testing.T, name, loc string) {
	cfg := loadConfig(t)
	repro := fmt.Sprintf("%s=%d %s=%d %s=%d go test -count=1 -run '^%s$' ./internal/crashtest",
		envJobs, cfg.jobs, envKills, cfg.kills, envSeed, cfg.seed, name)
	t.Logf("crash test: %d jobs, %d kills, seed %d, timeout %s", cfg.jobs, cfg.kills, cfg.seed, cfg.timeout)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("seed %d; the same plan, kill times and quota windows again: %s", cfg.seed, repro)
		}
	})
	rng := rand.New(rand.NewPCG(cfg.seed, 0x6c61796f766572))
	w := newWorld(t, rng)
	if loc != "" {
		w.useStore(loc)
	}
	plan := makePlan(rng, cfg.jobs)
	// Each goroutine draws from a source of its own, derived from the seed.
	quotaRng := rand.New(rand.NewPCG(rng.Uint64(), rng.Uint64()))
	killRng := rand.New(rand.NewPCG(rng.Uint64(), rng.Uint64()))
	begin := time.Now()
	deadline := begin.Add(cfg.timeout)
	st := &stats{}

	// Submit the jobs over time, so kills land on every part of their
	// lives. A job counts as submitted once submit printed its id.
	var submitted atomic.Int64
	var subErrP atomic.Pointer[error]
	subErr := func() error {
		if p := subErrP.Load(); p != nil {
			return *p
		}
		return nil
	}
	subDone, stopSub := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(subDone)
		for i, j := range plan {
			select {
			case <-stopSub:
				return
			case <-time.After(j.Gap):
			}
			args := []string{"submit", "--id", j.ID}
			if j.GH {
				args = append(args, "--quota", "github")
			}
			if j.SlowFirst {
				args = append(args, "--progress-timeout", progressTimeout.String())
			}
			args = append(args, "--", "sh", "-c", w.script(j))
			r, err := w.layover(args...)
			if err == nil && (r.code != 0 || r.stdout != j.ID+"\n") {
				err = fmt.Errorf("layover submit --id %s: exit %d stdout %q stderr %q", j.ID, r.code, r.stdout, r.stderr)
			}
			if err != nil {
				subErrP.Store(&err)
				return
			}
			submitted.Store(int64(i + 1))
		}
	}()
	defer func() { close(stopSub); <-subDone }()

	// Exhaust the fake GitHub's core quota now and then, with a reset a
	// couple of whole seconds ahead; windows never overlap. The first opens
	// as soon as a job that calls gh has started, so that it meets it. Once
	// the kills are over and a job was seen deferred with a receipt, no new
	// window opens: the last serve finishes the run in peace.
	var killsOver, sawReceipt atomic.Bool
	stopQuota := make(chan struct{})
	quotaDone := make(chan struct{})
	var windows atomic.Int64
	go func() {
		defer close(quotaDone)
		pause := func(d time.Duration) bool {
			select {
			case <-stopQuota:
				return false
			case <-time.After(d):
				return true
			}
		}
		for first := true; ; first = false {
			if first {
				for !w.sinkHasGHStart(plan) {
					if !pause(20 * time.Millisecond) {
						return
					}
				}
			} else if !pause(time.Duration(500+quotaRng.IntN(2500)) * time.Millisecond) {
				return
			}
			if killsOver.Load() && sawReceipt.Load() {
				return
			}
			reset := time.Now().Add(2 * time.Second).Truncate(time.Second).Add(time.Second)
			w.gh.SetQuota(ghToken, "core", 0, reset)
			windows.Add(1)
			if !pause(time.Until(reset) + 50*time.Millisecond) {
				return
			}
		}
	}()
	stopQuotaOnce := sync.OnceFunc(func() { close(stopQuota); <-quotaDone })
	defer stopQuotaOnce()

	// Kill serve after a random 0.3–2 s and restart it, cfg.kills times;
	// then let the last one run until every job is terminal, and kill it
	// too.
	everComplete := map[string]bool{}
	check := func(when string) (all bool) {
		t.Helper()
		n := int(submitted.Load()) // before the listing, which must hold them all
		listed, err := w.jobs()
		if err != nil {
			t.Fatalf("%s: %v", when, err)
		}
		byID := map[string]listedJob{}
		for _, j := range listed {
			byID[j.ID] = j
		}
		all = true
		for _, p := range plan[:n] {
			j, ok := byID[p.ID]
			switch {
			case !ok:
				t.Fatalf("%s: job %s was submitted but is lost: `layover jobs --json` does not list it", when, p.ID)
			case j.State == "complete":
				everComplete[j.ID] = true
			case j.State == "deferred" && receiptStage(j.Stage):
				sawReceipt.Store(true)
				all = false
			case j.State == "failed" || j.State == "cancelled" || j.State == "blocked":
				w.explain(j.ID)
				t.Fatalf("%s: job %s is %s (%s); every job of this run must complete", when, j.ID, j.State, j.Stage)
			case everComplete[j.ID]:
				t.Fatalf("%s: job %s was complete and is now %s: a terminal state was left", when, j.ID, j.State)
			default:
				all = false
			}
		}
		return all && n == len(plan)
	}
	var srv *server
	for n := 1; ; n++ {
		if err := subErr(); err != nil {
			t.Fatal(err)
		}
		if time.Now().After(deadline) {
			w.timedOut(cfg, plan)
		}
		srv = w.startServe(n)
		st.incarnations++
		if st.kills < cfg.kills {
			life := time.Duration(300+killRng.IntN(1700)) * time.Millisecond
			select {
			case <-srv.done:
				t.Fatalf("serve #%d exited on its own; its log:\n%s", n, srv.logTail())
			case <-time.After(life):
			}
			srv.kill()
			st.kills++
			if srv.raced() {
				t.Fatalf("serve #%d: the race detector reported:\n%s", n, srv.logTail())
			}
			w.afterKill(st, false)
			if check(fmt.Sprintf("after kill %d", st.kills)) {
				break // every job is terminal: that kill was the final one
			}
			continue
		}
		killsOver.Store(true)
		for !check("while serve #" + strconv.Itoa(n) + " runs") {
			if srv.exited() {
				t.Fatalf("serve #%d exited on its own; its log:\n%s", n, srv.logTail())
			}
			if err := subErr(); err != nil {
				t.Fatal(err)
			}
			if time.Now().After(deadline) {
				w.timedOut(cfg, plan)
			}
			time.Sleep(250 * time.Millisecond)
		}
		srv.kill()
		st.kills++
		if srv.raced() {
			t.Fatalf("serve #%d: the race detector reported:\n%s", n, srv.logTail())
		}
		break
	}
	stopQuotaOnce()
	st.windows = int(windows.Load())
	w.afterKill(st, true)
	runtime := time.Since(begin)

	// Every job is complete and none is lost.
	listed, err := w.jobs()
	if err != nil {
		t.Fatal(err)
	}
	if len(listed) != len(plan) {
		t.Errorf("layover jobs --json lists %d jobs, %d were submitted", len(listed), len(plan))
	}
	planned := map[string]plannedJob{}
	for _, p := range plan {
		planned[p.ID] = p
	}
	for _, j := range listed {
		if _, ok := planned[j.ID]; !ok {
			t.Errorf("job %s was never submitted", j.ID)
		}
	}

	data, err := os.ReadFile(w.sink)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	sinkJobs, problems := checkSink(lines)
	explained := map[string]bool{}
	for _, p := range problems {
		t.Error(p)
		// "sink line N: JOB: ..." — show the first few jobs' histories.
		if _, rest, ok := strings.Cut(p, ": "); ok {
			if id, _, ok := strings.Cut(rest, ":"); ok && planned[id].ID == id && !explained[id] && len(explained) < 3 {
				explained[id] = true
				w.explain(id)
			}
		}
	}

	var deferredJobs, receipts, wakeUps, leaseLost, reruns, unknownResets, requeued, slow int
	// Why jobs were deferred, by the transition reason's first words: after
	// a run ("quota exhausted"), or by a preflight that found the key still
	// in its wait ("quota wait") or below its reserve ("reserve still
	// short").
	deferredBy := map[string]int{}
	for _, p := range plan {
		j, raw, err := w.show(p.ID)
		if err != nil {
			t.Fatal(err)
		}
		fail := func(format string, args ...any) {
			t.Helper()
			t.Errorf("job %s: %s\nshow --json:\n%s\nsink: %s", p.ID, fmt.Sprintf(format, args...), raw, sinkLines(lines, p.ID))
		}
		if j.State != "complete" {
			fail("state %s (%s), want complete", j.State, j.Stage)
			continue
		}
		if p.SlowFirst {
			slow++
		}
		// Exactly one move into a terminal state, and it is the last.
		var terminal []int
		for i, tr := range j.Transitions {
			if tr.To == "complete" || tr.To == "failed" || tr.To == "cancelled" {
				terminal = append(terminal, i)
			}
			if tr.To == "resumable" {
				wakeUps++
			}
			if tr.To == "deferred" && strings.Contains(tr.Reason, "probing again") {
				unknownResets++
			}
			if tr.To == "deferred" {
				why, _, _ := strings.Cut(tr.Reason, ":")
				deferredBy[tr.From+" > deferred: "+why]++
			}
			if tr.Reason == "progress deadline passed" {
				requeued++
				if !p.SlowFirst {
					fail("passed a progress deadline it does not have")
				}
			}
		}
		if len(terminal) != 1 || terminal[0] != len(j.Transitions)-1 || j.Transitions[terminal[0]].To != "complete" {
			fail("%d moves into a terminal state (at %v of %d transitions); want exactly one, the last, to complete",
				len(terminal), terminal, len(j.Transitions))
		}
		// Exactly one attempt succeeded, and the sink saw that run whole.
		var ok []int64
		var quotaFences []int64
		attempted := map[int64]bool{}
		for _, a := range j.Attempts {
			attempted[a.Fence] = true
			switch a.Outcome {
			case "ok":
				ok = append(ok, a.Fence)
			case "quota":
				quotaFences = append(quotaFences, a.Fence)
			case "lease-lost":
				leaseLost++
			}
		}
		if len(ok) != 1 {
			fail("%d successful attempts (fences %v), want exactly 1", len(ok), ok)
			continue
		}
		sj := sinkJobs[p.ID]
		var run *sinkRun
		if sj != nil {
			run = sj.run(ok[0])
			if len(sj.Runs) > 1 {
				reruns++
			}
			// Every run the sink saw had its claim and attempt recorded
			// first.
			for _, r := range sj.Runs {
				if !attempted[r.Fence] {
					fail("the sink shows a run under fence %d, which no recorded attempt holds", r.Fence)
				}
			}
		}
		if run == nil || !run.Ended || run.Failed {
			fail("the successful attempt (fence %d) has no start and clean end in the sink", ok[0])
		}
		if len(quotaFences) > 0 && !p.GH {
			fail("an attempt failed for quota, but the job never calls gh")
		}
		// A deferral is resumed fresh: a later claim (a greater fence) ran
		// the command again.
		if len(j.Receipts) > 0 {
			deferredJobs++
			receipts += len(j.Receipts)
			if !p.GH {
				fail("deferred with a receipt, but the job draws on no quota")
			}
			if err := checkReceiptChains(j.Receipts, j.Transitions, j.Spec.Deadline, st.windows); err != nil {
				fail("%v", err)
			}
		}
		for _, f := range quotaFences {
			if f >= ok[0] {
				fail("the quota failure at fence %d was not followed by a fresh run under a new fence (ok at %d)", f, ok[0])
			}
		}
	}
	rejected := w.rejectedCalls()
	t.Logf("%d jobs complete in %s: %d serve incarnations, %d SIGKILLs; %d quota windows, %d gh calls rejected; "+
		"%d jobs deferred with %d receipts, %d wake-ups; %d runs ended by a lost lease; %d runs taken back at their "+
		"progress deadline (%d slow-first jobs); %d jobs ran more than once; %d sink lines", len(plan), runtime.Round(time.Millisecond),
		st.incarnations, st.kills, st.windows, rejected, deferredJobs, receipts, wakeUps, leaseLost, requeued, slow,
		reruns, len(lines))
	if unknownResets > 0 {
		t.Logf("%d deferrals had no receipt (reset unknown)", unknownResets)
	}
	t.Logf("deferrals by cause: %v", deferredBy)
	if deferredJobs == 0 {
		t.Errorf("no job was deferred with a receipt (%d quota windows, %d gh calls rejected): the run did not test deferral",
			st.windows, rejected)
	}
}

// checkReceiptChains checks the receipts of one job, oldest first, against
// the rules of deferral chains (docs/lifecycle.md). A chain is a run of
// deferrals with no attempt started between them (a preflight that finds
// the quota still short re-defers without running anything); an attempt
// that starts ends the chain, and its own deferral starts a new one.
//   - Each receipt is for a new wait the provider declared: it resumes
//     strictly later than the one before it, so no wait has two receipts.
//   - A receipt never extends its chain's first resume_by.
//   - No receipt reaches past the job's deadline, which bounds every chain.
//   - A job cannot collect more receipts than the run had quota windows to
//     wait out, plus the one its key was in when the run began.
func checkReceiptChains(raws []json.RawMessage, transitions []transition, deadline time.Time, windows int) error {
	type window struct {
		IssuedAt    int64 `json:"issued_at_ms"`
		ResumeAfter int64 `json:"resume_after_ms"`
		ResumeBy    int64 `json:"resume_by_ms"`
	}
	if len(raws) > windows+1 {
		return fmt.Errorf("%d receipts, but the run had only %d quota windows", len(raws), windows)
	}
	// ranBetween reports whether an attempt started after one receipt was
	// issued and at or before the next one was.
	ranBetween := func(from, to int64) bool {
		for _, tr := range transitions {
			if at := tr.At.UnixMilli(); tr.To == "running" && at > from && at <= to {
				return true
			}
		}
		return false
	}
	var chainBy int64
	var prev window
	for i, raw := range raws {
		var r window
		if err := json.Unmarshal(raw, &r); err != nil {
			return fmt.Errorf("receipt %d: %v", i, err)
		}
		if r.ResumeBy > deadline.UnixMilli() {
			return fmt.Errorf("receipt %d: resume_by %d ms is past the job's deadline %s", i, r.ResumeBy, deadline.Format(time.RFC3339))
		}
		switch {
		case i == 0 || ranBetween(prev.IssuedAt, r.IssuedAt):
			chainBy = r.ResumeBy
		case r.ResumeAfter <= prev.ResumeAfter:
			return fmt.Errorf("receipt %d resumes at %d ms, not after receipt %d's %d ms: two receipts for one wait",
				i, r.ResumeAfter, i-1, prev.ResumeAfter)
		case r.ResumeBy > chainBy:
			return fmt.Errorf("receipt %d extends its chain's resume_by from %d to %d ms", i, chainBy, r.ResumeBy)
		}
		prev = r
	}
	return nil
}

// receiptStage reports whether a deferred job's stage is the one the host
// writes with a receipt: "Quota wait until TIME", no remark after it.
func receiptStage(stage string) bool {
	at, ok := strings.CutPrefix(stage, "Quota wait until ")
	if !ok {
		return false
	}
	_, err := time.Parse(time.RFC3339, at)
	return err == nil
}

// rejectedCalls counts the jobs' gh calls the fake GitHub refused for quota.
func (w *world) rejectedCalls() int {
	n := 0
	for _, r := range w.gh.Requests() {
		if r.Path == "/repos/octo/demo" && r.Status == 403 {
			n++
		}
	}
	return n
}

// sinkHasGHStart reports whether a job that calls gh has started.
func (w *world) sinkHasGHStart(plan []plannedJob) bool {
	data, err := os.ReadFile(w.sink)
	if err != nil {
		return false
	}
	gh := map[string]bool{}
	for _, p := range plan {
		gh[p.ID] = p.GH
	}
	for _, line := range strings.Split(string(data), "\n") {
		if f := strings.Fields(line); len(f) == 3 && f[2] == "start" && gh[f[0]] {
			return true
		}
	}
	return false
}

// sinkLines is what the sink says about one job, for a failure message.
func sinkLines(lines []string, id string) string {
	var out []string
	for i, l := range lines {
		if strings.HasPrefix(l, id+" ") {
			out = append(out, fmt.Sprintf("%d:%s", i+1, l))
		}
	}
	return strings.Join(out, " | ")
}

// explain logs a job's history, its sink lines, and what the serve logs
// say about it.
func (w *world) explain(id string) {
	_, raw, err := w.show(id)
	if err != nil {
		raw = err.Error()
	}
	data, _ := os.ReadFile(w.sink)
	var logged []string
	logs, _ := filepath.Glob(filepath.Join(w.dir, "serve-*.log"))
	for _, path := range logs {
		text, _ := os.ReadFile(path)
		for _, l := range strings.Split(string(text), "\n") {
			if strings.Contains(l, "job="+id+" ") || strings.Contains(l, "["+id+"] ") {
				logged = append(logged, filepath.Base(path)+": "+l)
			}
		}
	}
	if len(logged) > 60 {
		logged = logged[len(logged)-60:]
	}
	w.t.Logf("job %s:\n%s\nsink: %s\nserve logs:\n  %s", id, raw, sinkLines(strings.Split(string(data), "\n"), id),
		strings.Join(logged, "\n  "))
}

// timedOut fails the run, saying which jobs never finished and why.
func (w *world) timedOut(cfg config, plan []plannedJob) {
	w.t.Helper()
	listed, err := w.jobs()
	if err != nil {
		w.t.Fatalf("the run passed its %s bound (%s), and: %v", cfg.timeout, envTimeout, err)
	}
	var open []string
	for _, j := range listed {
		if j.State != "complete" && j.State != "failed" && j.State != "cancelled" {
			open = append(open, fmt.Sprintf("%s %s (%s)", j.ID, j.State, j.Stage))
		}
	}
	if len(open) > 0 {
		w.explain(strings.Fields(open[0])[0])
	}
	w.t.Fatalf("the run passed its %s bound (%s) with %d of %d jobs listed and these not terminal:\n  %s",
		cfg.timeout, envTimeout, len(listed), len(plan), strings.Join(open, "\n  "))
}
