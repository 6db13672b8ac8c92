// Command river compares layover's durable host with River
// (github.com/riverqueue/river) on one machine, on SQLite (River's SQLite
// driver) and, with -postgres, on PostgreSQL (River's pgx driver,
// riverpgxv5, against layover's PostgreSQL store): each schedules the same
// no-op jobs a few seconds ahead, wakes them and works them to completion.
//
// This is its own module, so River never enters layover's go.mod; a replace
// directive points it at the layover tree two folders up.
//
// One run of one system (-system layover or river) does, in a fresh SQLite
// file with the same settings (WAL, synchronous=FULL, 10 s busy timeout,
// immediate transactions, 4 MB journal size limit), or with -store postgres
// in a fresh schema of its own on the server -postgres names (layover's in
// that DSN's database, River's in a database river_bench beside it, made
// if missing, its migrations applied by rivermigrate; each schema dropped
// at the end):
//
//  1. start the system: a layover host (Go function runner, Concurrency
//     -workers, no jitter, no resume rate) or a River client (one queue,
//     MaxWorkers -workers);
//  2. at S, schedule -jobs jobs from 64 goroutines, each call durable before
//     it returns: layover through (*host.Host).SubmitDeferred (a job deferred
//     with its receipt and wake-up, retained by the live host), River through
//     Client.Insert with InsertOpts.ScheduledAt. Job i is due at
//     S + -lead + U_i * -spread, U_i uniform in [0, 1) from a fixed seed,
//     in whole milliseconds;
//  3. each job's worker notes, on its first call, lateness = time.Now() - due
//     and returns nil;
//  4. a job is complete when its completion has been written: for layover
//     when the store's ApplyJob to complete has returned, for River when the
//     client's JobCompleted event arrives (sent once the completer wrote it).
//
// It reports scheduling calls per second, jobs per second through schedule ->
// wake -> complete (jobs / (last completion - S)), the rate of the wake ->
// complete drain (jobs / (last completion - first due)), lateness p50, p90,
// p99 and max, and the process's CPU time and peak RSS.
//
// With no -system it runs every configuration (layover; River with its
// defaults; River polling every 50 ms) in its own process, for both
// scenarios (burst: every job due at once; spread: due uniformly over
// -spread-window, at a rate both keep up with), on SQLite and, with
// -postgres, on PostgreSQL, -rounds times interleaved, and prints the
// medians side by side with the ratios:
//
//	cd bench/river && go run . [-jobs 10000] [-rounds 3] [-postgres "$LAYOVER_TEST_POSTGRES"]
package main

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/riverdriver/riversqlite"
	"github.com/riverqueue/river/rivermigrate"
	_ "modernc.org/sqlite"

	"github.com/layoverhq/layover/bench/internal/benchkit"
	"github.com/layoverhq/layover/host"
	"github.com/layoverhq/layover/job"
	"github.com/layoverhq/layover/quota"
	"github.com/layoverhq/layover/store/postgres"
	"github.com/layoverhq/layover/store/sqlite"
)

// options of one run.
type options struct {
	System     string        `json:"system"`
	Store      string        `json:"store"`
	Postgres   string        `json:"-"`
	Jobs       int           `json:"jobs"`
	Lead       time.Duration `json:"lead"`
	Spread     time.Duration `json:"spread"`
	Workers    int           `json:"workers"`
	Inserters  int           `json:"inserters"`
	RiverPoll  time.Duration `json:"river_poll"`
	RiverCool  time.Duration `json:"river_cooldown"`
	Timeout    time.Duration `json:"timeout"`
	Dir        string        `json:"-"`
	Label      string        `json:"label"`
	ScenarioID string        `json:"scenario"`
}

// result of one run, printed as one JSON line.
type result struct {
	Options    options       `json:"options"`
	Scheduled  time.Duration `json:"scheduled"` // S to the last scheduling call's return
	End        time.Duration `json:"end"`       // S to the last completion
	FirstDue   time.Duration `json:"first_due"` // S to the earliest due time
	Started    int           `json:"started"`
	Completed  int           `json:"completed"`
	P50        time.Duration `json:"p50"`
	P90        time.Duration `json:"p90"`
	P99        time.Duration `json:"p99"`
	Max        time.Duration `json:"max"`
	CPU        time.Duration `json:"cpu"`
	PeakRSSKB  int64         `json:"peak_rss_kb"`
	OtherCPU   time.Duration `json:"other_cpu"` // CPU the rest of the machine used meanwhile
	Wall       time.Duration `json:"wall"`
	GoVersion  string        `json:"go"`
	Gomaxprocs int           `json:"gomaxprocs"`
}

func main() {
	var o options
	flag.StringVar(&o.System, "system", "", "layover or river; empty: every configuration and scenario in turn, side by side")
	flag.StringVar(&o.Store, "store", "sqlite", "with -system: sqlite or postgres")
	flag.StringVar(&o.Postgres, "postgres", "", "the PostgreSQL server (a DSN) for -store postgres; with no -system, also run every configuration on it")
	flag.IntVar(&o.Jobs, "jobs", 10000, "jobs to schedule")
	flag.DurationVar(&o.Lead, "lead", 5*time.Second, "the first job is due this long after scheduling starts")
	flag.DurationVar(&o.Spread, "spread", 0, "due times are spread uniformly over this window after the lead (0: all at once)")
	flag.IntVar(&o.Workers, "workers", host.DefaultConcurrency, "jobs worked at once (layover Concurrency, River MaxWorkers)")
	flag.IntVar(&o.Inserters, "inserters", 64, "goroutines scheduling jobs at once")
	flag.DurationVar(&o.RiverPoll, "river-poll", river.FetchPollIntervalDefault, "River's FetchPollInterval")
	flag.DurationVar(&o.RiverCool, "river-cooldown", river.FetchCooldownDefault, "River's FetchCooldown")
	flag.DurationVar(&o.Timeout, "timeout", 5*time.Minute, "give up this long after the last job was due")
	flag.StringVar(&o.Dir, "dir", "", "folder for the database (default a new temporary one)")
	flag.StringVar(&o.Label, "label", "", "name of the configuration in the output")
	flag.StringVar(&o.ScenarioID, "scenario", "", "name of the scenario in the output")
	spreadWindow := flag.Duration("spread-window", time.Minute, "with no -system: the spread scenario's window")
	rounds := flag.Int("rounds", 3, "with no -system: how many times to run every configuration (medians are reported)")
	flag.Parse()
	if o.Jobs < 1 || o.Workers < 1 || o.Inserters < 1 || o.Lead < 0 || o.Spread < 0 ||
		(o.Store != "sqlite" && o.Store != "postgres") || (o.Store == "postgres" && o.Postgres == "") {
		fail("bad flags")
	}
	benchkit.Name = "river bench"
	if o.System == "" {
		compare(o, *spreadWindow, *rounds)
		return
	}
	if o.Dir == "" {
		d, err := os.MkdirTemp("", "riverbench-")
		if err != nil {
			fail("%v", err)
		}
		defer os.RemoveAll(d)
		o.Dir = d
	}
	var res result
	var err error
	switch o.System {
	case "layover":
		res, err = runLayover(o)
	case "river":
		res, err = runRiver(o)
	default:
		fail("-system: layover or river")
	}
	if err != nil {
		fail("%s: %v", o.System, err)
	}
	out, _ := json.Marshal(res)
	fmt.Println(string(out))
}

// recorder keeps each job's lateness and the time of the last completion.
type recorder struct {
	late      []time.Duration
	seen      []atomic.Bool
	started   atomic.Int64
	completed atomic.Int64
	mu        sync.Mutex
	lastDone  time.Time
	allDone   chan struct{}
	n         int64
}

func newRecorder(n int) *recorder {
	return &recorder{late: make([]time.Duration, n), seen: make([]atomic.Bool, n), allDone: make(chan struct{}), n: int64(n)}
}

func (r *recorder) work(i int, due time.Time) {
	now := time.Now()
	if i >= 0 && i < len(r.late) && r.seen[i].CompareAndSwap(false, true) {
		r.late[i] = now.Sub(due)
		r.started.Add(1)
	}
}

func (r *recorder) done() {
	now := time.Now()
	r.mu.Lock()
	if now.After(r.lastDone) {
		r.lastDone = now
	}
	r.mu.Unlock()
	if r.completed.Add(1) == r.n {
		close(r.allDone)
	}
}

// dueTimes draws the due times, in Unix milliseconds, and returns the
// earliest.
func dueTimes(o options, s time.Time) ([]int64, int64) {
	rnd := rand.New(rand.NewPCG(1, 2))
	base := s.Add(o.Lead).UnixMilli()
	due := make([]int64, o.Jobs)
	first := int64(-1)
	for i := range due {
		due[i] = base
		if o.Spread > 0 {
			due[i] += rnd.Int64N(o.Spread.Milliseconds())
		}
		if first < 0 || due[i] < first {
			first = due[i]
		}
	}
	return due, first
}

// schedule calls submit for every job from o.Inserters goroutines.
func schedule(o options, submit func(i int) error) error {
	var next atomic.Int64
	var wg sync.WaitGroup
	var firstErr error
	var once sync.Once
	for range o.Inserters {
		wg.Go(func() {
			for {
				i := int(next.Add(1) - 1)
				if i >= o.Jobs {
					return
				}
				if err := submit(i); err != nil {
					once.Do(func() { firstErr = err })
					return
				}
			}
		})
	}
	wg.Wait()
	return firstErr
}

// finish waits for every completion (or the timeout) and builds the result.
func finish(o options, rec *recorder, s time.Time, scheduled time.Duration, firstDue int64, cpu0 benchkit.CPU, lastDue time.Time) result {
	select {
	case <-rec.allDone:
	case <-time.After(time.Until(lastDue.Add(o.Timeout))):
	}
	cpu := benchkit.ReadCPU().Sub(cpu0)
	rec.mu.Lock()
	last := rec.lastDone
	rec.mu.Unlock()
	var got []time.Duration
	for i := range rec.late {
		if rec.seen[i].Load() {
			got = append(got, rec.late[i])
		}
	}
	slices.Sort(got)
	res := result{Options: o, Scheduled: scheduled, End: last.Sub(s), FirstDue: time.UnixMilli(firstDue).Sub(s),
		Started: len(got), Completed: int(rec.completed.Load()), CPU: cpu.Self, OtherCPU: max(cpu.Machine-cpu.Self, 0),
		Wall: cpu.Wall, PeakRSSKB: benchkit.ProcStatusKB("VmHWM"), GoVersion: runtime.Version(), Gomaxprocs: runtime.GOMAXPROCS(0)}
	if len(got) > 0 {
		res.P50, res.P90, res.P99, res.Max = benchkit.Pct(got, 50), benchkit.Pct(got, 90), benchkit.Pct(got, 99), got[len(got)-1]
	}
	return res
}

// --- layover -------------------------------------------------------------

// doneStore notes every job the host has durably completed.
type doneStore struct {
	host.Store
	rec *recorder
}

func (d doneStore) ApplyJob(ctx context.Context, id string, fence int64, ch job.Change) (job.Job, error) {
	j, err := d.Store.ApplyJob(ctx, id, fence, ch)
	if err == nil && ch.To == job.Complete {
		d.rec.done()
	}
	return j, err
}

// openLayover opens a fresh store: a SQLite file in o.Dir, or a new schema
// on the PostgreSQL server.
func openLayover(ctx context.Context, o options) (host.Store, func(), error) {
	if o.Store == "postgres" {
		dsn, drop := benchkit.PostgresSchema(ctx, o.Postgres, "layover_riverbench")
		st, err := postgres.Open(ctx, dsn)
		if err != nil {
			drop()
			return nil, nil, err
		}
		return st, func() { st.Close(); drop() }, nil
	}
	st, err := sqlite.Open(ctx, filepath.Join(o.Dir, "layover.db"))
	if err != nil {
		return nil, nil, err
	}
	return st, func() { st.Close() }, nil
}

func runLayover(o options) (result, error) {
	ctx := context.Background()
	st, closeStore, err := openLayover(ctx, o)
	if err != nil {
		return result{}, err
	}
	defer closeStore()
	rec := newRecorder(o.Jobs)
	runner := host.FuncRunner(func(_ context.Context, r host.Run) error {
		i, due, ok := parseID(r.Job.ID)
		if !ok {
			return host.Permanent("not a bench job: " + r.Job.ID)
		}
		rec.work(i, due)
		return nil
	})
	p := quota.DefaultPolicy()
	p.ResetMargin, p.Jitter = 0, 0 // the wake-up is the due time itself
	h, err := host.New(host.Config{Store: doneStore{st, rec}, Runner: runner, Policy: p, ResumeRate: host.MaxResumeRate,
		Concurrency: o.Workers, Rand: &lockedRand{r: rand.New(rand.NewPCG(3, 4))}, Env: []string{"PATH=/usr/bin:/bin"},
		Hostname: "riverbench"})
	if err != nil {
		return result{}, err
	}
	if err := h.Start(ctx); err != nil {
		return result{}, err
	}
	defer h.Stop()

	key := quota.Key{Host: "api.github.com", Principal: "bench", Resource: "core"}
	spec := job.Spec{Name: "noop", Argv: []string{"noop"}, Workdir: "/", Provider: "github"}
	cpu0 := benchkit.ReadCPU()
	s := time.Now()
	due, first := dueTimes(o, s)
	err = schedule(o, func(i int) error {
		_, rc, err := h.SubmitDeferred(ctx, "n"+strconv.Itoa(i)+"-"+strconv.FormatInt(due[i], 10), spec,
			host.Deferral{Key: key, Provider: "github", ResetAt: time.UnixMilli(due[i])}, nil)
		if err == nil && !rc.IsRetained() {
			err = errors.New("a deferral was not retained")
		}
		return err
	})
	if err != nil {
		return result{}, err
	}
	scheduled := time.Since(s)
	return finish(o, rec, s, scheduled, first, cpu0, time.UnixMilli(slices.Max(due))), nil
}

// parseID reads job i's index and due time back from its id, n<i>-<due ms>.
func parseID(id string) (int, time.Time, bool) {
	a, b, ok := strings.Cut(strings.TrimPrefix(id, "n"), "-")
	i, err1 := strconv.Atoi(a)
	d, err2 := strconv.ParseInt(b, 10, 64)
	if !ok || err1 != nil || err2 != nil {
		return 0, time.Time{}, false
	}
	return i, time.UnixMilli(d), true
}

// lockedRand is a quota.Rand safe for concurrent use.
type lockedRand struct {
	mu sync.Mutex
	r  *rand.Rand
}

func (l *lockedRand) Int64N(n int64) int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.r.Int64N(n)
}

// --- River ---------------------------------------------------------------

// NoopArgs is a River job: its index and due time (Unix ms).
type NoopArgs struct {
	I   int   `json:"i"`
	Due int64 `json:"due"`
}

func (NoopArgs) Kind() string { return "noop" }

type noopWorker struct {
	river.WorkerDefaults[NoopArgs]
	rec *recorder
}

func (w *noopWorker) Work(_ context.Context, j *river.Job[NoopArgs]) error {
	w.rec.work(j.Args.I, time.UnixMilli(j.Args.Due))
	return nil
}

// riverDSN opens the file as layover's store does: WAL, synchronous=FULL,
// a 10 s busy timeout, immediate transactions, a 4 MB journal size limit.
func riverDSN(path string) string {
	return path + "?_pragma=busy_timeout(" + strconv.Itoa(sqlite.BusyTimeoutMS) + ")" +
		"&_pragma=journal_mode(WAL)&_pragma=synchronous(FULL)" +
		"&_pragma=journal_size_limit(4194304)&_txlock=immediate"
}

// riverBenchDB is the database River's PostgreSQL runs use, beside the one
// the -postgres DSN names, made if missing.
const riverBenchDB = "river_bench"

// riverPostgres makes a fresh schema in riverBenchDB and returns a pool
// on that database, the schema's name and a function that drops it.
func riverPostgres(ctx context.Context, o options) (*pgxpool.Pool, string, func(), error) {
	conn, err := pgx.Connect(ctx, o.Postgres)
	if err != nil {
		return nil, "", nil, err
	}
	var exists bool
	err = conn.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)", riverBenchDB).Scan(&exists)
	if err == nil && !exists {
		_, err = conn.Exec(ctx, "CREATE DATABASE "+riverBenchDB)
		if err != nil && strings.Contains(err.Error(), "already exists") { // made meanwhile by another run
			err = nil
		}
	}
	conn.Close(ctx)
	if err != nil {
		return nil, "", nil, fmt.Errorf("database %s: %w", riverBenchDB, err)
	}
	cfg, err := pgx.ParseConfig(o.Postgres)
	if err != nil {
		return nil, "", nil, err
	}
	u := strings.Replace(o.Postgres, "/"+cfg.Database, "/"+riverBenchDB, 1)
	dsn, drop := benchkit.PostgresSchema(ctx, u, "river")
	pcfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		drop()
		return nil, "", nil, err
	}
	// River's pool as layover's: as many connections as layover's
	// PostgreSQL store opens by default.
	pcfg.MaxConns = postgres.DefaultMaxConns
	pool, err := pgxpool.NewWithConfig(ctx, pcfg)
	if err != nil {
		drop()
		return nil, "", nil, err
	}
	return pool, pcfg.ConnConfig.RuntimeParams["search_path"], func() { pool.Close(); drop() }, nil
}

// riverSQLite opens a fresh SQLite file in o.Dir for River.
func riverSQLite(o options) (*sql.DB, error) {
	path, err := filepath.Abs(filepath.Join(o.Dir, "river.db"))
	if err != nil {
		return nil, err
	}
	db, err := sql.Open("sqlite", riverDSN(path))
	if err != nil {
		return nil, err
	}
	// riversqlite's documentation: River runs operations in parallel, which
	// SQLite answers with SQLITE_BUSY; one connection avoids it.
	db.SetMaxOpenConns(1)
	return db, nil
}

func runRiver(o options) (result, error) {
	if o.Store == "postgres" {
		ctx := context.Background()
		pool, schema, closeDB, err := riverPostgres(ctx, o)
		if err != nil {
			return result{}, err
		}
		defer closeDB()
		return runRiverOn(ctx, o, riverpgxv5.New(pool), schema)
	}
	db, err := riverSQLite(o)
	if err != nil {
		return result{}, err
	}
	defer db.Close()
	return runRiverOn(context.Background(), o, riversqlite.New(db), "")
}

// runRiverOn migrates River's tables into schema ("": the default) and
// runs the jobs.
func runRiverOn[TTx any](ctx context.Context, o options, driver riverdriver.Driver[TTx], schema string) (result, error) {
	migrator, err := rivermigrate.New(driver, &rivermigrate.Config{Schema: schema,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		return result{}, err
	}
	if _, err := migrator.Migrate(ctx, rivermigrate.DirectionUp, nil); err != nil {
		return result{}, fmt.Errorf("migrate: %w", err)
	}

	rec := newRecorder(o.Jobs)
	workers := river.NewWorkers()
	river.AddWorker(workers, &noopWorker{rec: rec})
	client, err := river.NewClient(driver, &river.Config{
		Queues:            map[string]river.QueueConfig{river.QueueDefault: {MaxWorkers: o.Workers}},
		Workers:           workers,
		FetchPollInterval: o.RiverPoll,
		FetchCooldown:     o.RiverCool,
		Schema:            schema,
		Logger:            slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if err != nil {
		return result{}, err
	}
	events, cancel := client.SubscribeConfig(&river.SubscribeConfig{Kinds: []river.EventKind{river.EventKindJobCompleted},
		ChanSize: o.Jobs + 1000})
	defer cancel()
	go func() {
		for range events {
			rec.done()
		}
	}()
	if err := client.Start(ctx); err != nil {
		return result{}, err
	}
	defer func() {
		sctx, c := context.WithTimeout(ctx, time.Minute)
		defer c()
		if err := client.Stop(sctx); err != nil {
			fmt.Fprintf(os.Stderr, "river bench: stop River: %v\n", err)
		}
	}()

	cpu0 := benchkit.ReadCPU()
	s := time.Now()
	due, first := dueTimes(o, s)
	err = schedule(o, func(i int) error {
		_, err := client.Insert(ctx, NoopArgs{I: i, Due: due[i]}, &river.InsertOpts{ScheduledAt: time.UnixMilli(due[i])})
		return err
	})
	if err != nil {
		return result{}, err
	}
	scheduled := time.Since(s)
	return finish(o, rec, s, scheduled, first, cpu0, time.UnixMilli(slices.Max(due))), nil
}

// --- side by side ----------------------------------------------------------

type config struct {
	label string
	args  []string
}

func compare(o options, spreadWindow time.Duration, rounds int) {
	exe, err := os.Executable()
	if err != nil {
		fail("%v", err)
	}
	common := []string{"-jobs", strconv.Itoa(o.Jobs), "-lead", o.Lead.String(), "-workers", strconv.Itoa(o.Workers),
		"-inserters", strconv.Itoa(o.Inserters), "-timeout", o.Timeout.String()}
	configs := []config{
		{"layover", []string{"-system", "layover"}},
		{"river (defaults: poll 1s, cooldown 100ms)", []string{"-system", "river"}},
		{"river (poll 50ms, cooldown 10ms)", []string{"-system", "river", "-river-poll", "50ms", "-river-cooldown", "10ms"}},
	}
	scenarios := []struct {
		id     string
		spread time.Duration
	}{{"burst", 0}, {"spread", spreadWindow}}
	stores := []string{"sqlite"}
	if o.Postgres != "" {
		stores = append(stores, "postgres")
	}
	// runs[store/scenario][config] holds one result per round; rounds
	// interleave the configurations, so that a busy spell on the machine
	// falls on all.
	runs := map[string]map[string][]result{}
	loads := []string{benchkit.Uptime()}
	for round := range rounds {
		for _, sc := range scenarios {
			for _, st := range stores {
				key := st + "/" + sc.id
				if runs[key] == nil {
					runs[key] = map[string][]result{}
				}
				for _, c := range configs {
					args := slices.Concat(common, c.args, []string{"-spread", sc.spread.String(), "-label", c.label,
						"-scenario", sc.id, "-store", st, "-postgres", o.Postgres})
					fmt.Fprintf(os.Stderr, "river bench: round %d, %s, %s, %s ...\n", round+1, st, sc.id, c.label)
					cmd := exec.Command(exe, args...)
					var out bytes.Buffer
					cmd.Stdout, cmd.Stderr = &out, os.Stderr
					if err := cmd.Run(); err != nil {
						fail("%s %s %s: %v", st, sc.id, c.label, err)
					}
					var r result
					if err := json.Unmarshal(lastLine(out.Bytes()), &r); err != nil {
						fail("%s %s %s: %v: %s", st, sc.id, c.label, err, out.Bytes())
					}
					fmt.Println(string(lastLine(out.Bytes())))
					runs[key][c.label] = append(runs[key][c.label], r)
				}
			}
		}
		loads = append(loads, benchkit.Uptime())
	}
	fmt.Printf("\n%d jobs, %d workers, %d goroutines scheduling, first due %s after scheduling starts; %s, GOMAXPROCS %d; median of %d rounds\n",
		o.Jobs, o.Workers, o.Inserters, o.Lead, runtime.Version(), runtime.GOMAXPROCS(0), rounds)
	fmt.Printf("load (/proc/loadavg) at the start and after each round: %s\n", strings.Join(loads, "; "))
	for _, st := range stores {
		for _, sc := range scenarios {
			compareScenario(st, sc.id, sc.spread, configs, runs[st+"/"+sc.id])
		}
	}
}

// compareScenario prints one store's and scenario's medians, side by side.
func compareScenario(st, id string, spread time.Duration, configs []config, runs map[string][]result) {
	what := "every job due at once"
	if spread > 0 {
		what = "due uniformly over " + spread.String()
	}
	fmt.Printf("\n%s, %s: %s\n", st, id, what)
	fmt.Printf("%-42s %8s %8s %8s %9s %9s %9s %9s %7s %7s %6s\n", "system", "sched/s", "jobs/s", "drain/s",
		"p50", "p90", "p99", "max", "cpu", "other", "rss")
	meds := map[string]summary{}
	for _, c := range configs {
		rs := runs[c.label]
		m := summarize(rs)
		meds[c.label] = m
		fmt.Printf("%-42s %8.0f %8.0f %8.0f %9s %9s %9s %9s %7s %7s %5.1fM\n", c.label, m.sched, m.rate, m.drain,
			msd(m.p50), msd(m.p90), msd(m.p99), msd(m.max), m.cpu.Round(100*time.Millisecond),
			m.other.Round(100*time.Millisecond), m.rss/1024)
		for _, r := range rs {
			if r.Completed != r.Options.Jobs {
				fmt.Printf("  ! a run completed only %d of %d\n", r.Completed, r.Options.Jobs)
			}
		}
	}
	base := meds[configs[0].label]
	for _, c := range configs[1:] {
		m := meds[c.label]
		fmt.Printf("layover / %s: sched/s x%.2f, jobs/s x%.2f, drain/s x%.2f; lateness p50 x%.3f, p99 x%.3f (below 1: layover wakes sooner)\n",
			c.label, base.sched/m.sched, base.rate/m.rate, base.drain/m.drain, float64(base.p50)/float64(m.p50), float64(base.p99)/float64(m.p99))
	}
}

// summary holds the medians of a configuration's runs.
type summary struct {
	sched, rate, drain, rss float64
	p50, p90, p99, max      time.Duration
	cpu, other              time.Duration
}

func summarize(rs []result) summary {
	f := func(get func(r *result) float64) float64 {
		v := make([]float64, len(rs))
		for i := range rs {
			v[i] = get(&rs[i])
		}
		slices.Sort(v)
		return v[(len(v)-1)/2]
	}
	d := func(get func(r *result) time.Duration) time.Duration {
		return time.Duration(f(func(r *result) float64 { return float64(get(r)) }))
	}
	return summary{
		sched: f((*result).schedRate), rate: f((*result).rate), drain: f((*result).drain),
		rss: f(func(r *result) float64 { return float64(r.PeakRSSKB) }),
		p50: d(func(r *result) time.Duration { return r.P50 }), p90: d(func(r *result) time.Duration { return r.P90 }),
		p99: d(func(r *result) time.Duration { return r.P99 }), max: d(func(r *result) time.Duration { return r.Max }),
		cpu: d(func(r *result) time.Duration { return r.CPU }), other: d(func(r *result) time.Duration { return r.OtherCPU }),
	}
}

func (r *result) schedRate() float64 { return float64(r.Options.Jobs) / r.Scheduled.Seconds() }
func (r *result) rate() float64      { return float64(r.Completed) / r.End.Seconds() }
func (r *result) drain() float64 {
	return float64(r.Completed) / max(r.End-r.FirstDue, time.Millisecond).Seconds()
}

func lastLine(b []byte) []byte {
	lines := bytes.Split(bytes.TrimRight(b, "\n"), []byte("\n"))
	return lines[len(lines)-1]
}

// --- measuring -------------------------------------------------------------

func msd(d time.Duration) string { return fmt.Sprintf("%.1fms", float64(d.Microseconds())/1000) }

func fail(format string, a ...any) {
	fmt.Fprintf(os.Stderr, "river bench: "+format+"\n", a...)
	os.Exit(1)
}
