package sim

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/layoverhq/layover/clock"
	"github.com/layoverhq/layover/host"
	"github.com/layoverhq/layover/job"
	"github.com/layoverhq/layover/quota"
	"github.com/layoverhq/layover/store"
	"github.com/layoverhq/layover/store/sqlite"
)

// The kinds of lane: the wait its first attempt meets.
const (
	WaitResource = "WAIT_RESOURCE" // a quota exhausted, with a declared reset
	WaitAuth     = "WAIT_AUTH"     // credentials refused, until they work again
)

// The invariants a lane can break (Violation.Kind).
const (
	RunTwice          = "lane run more often than its script allows"
	AuthByReset       = "auth lane ended by a quota reset"
	ResourceByCreds   = "resource lane ended by new credentials"
	WrongEndState     = "lane ended in the wrong state"
	ProviderCallsMade = "call left the process"
)

// Stores a lane harness can run on (LanesConfig.Store).
const (
	StoreSQLite = "sqlite" // a SQLite file in a temporary directory
	// StoreMemory is the same SQLite store on a RAM-backed file system
	// (/dev/shm), so a commit's sync costs nothing: the host's and the
	// store's code without the disk.
	StoreMemory = "memory"
)

// MaxLanes bounds each kind of lane.
const MaxLanes = 100_000

// simProvider is the fake provider every lane draws on; its keys live on
// simHost, one resource per lane.
const (
	simProvider = "sim"
	simHost     = "sim.invalid"
	simUser     = "lanes"
)

// LanesConfig is one run of the lane harness.
type LanesConfig struct {
	// Resource and Auth are how many lanes of each kind run (each at most
	// MaxLanes).
	Resource, Auth int
	// Seed fixes every lane's reset and credentials times: two runs with
	// one seed print the same figures but the wall time and the clock
	// steps (how often the driver found the host still).
	Seed uint64
	// Store is StoreSQLite (default) or StoreMemory; Dir is where the
	// store's temporary directory is made (default the system's).
	Store, Dir string
	// Concurrency is how many attempts the host runs at once, and how many
	// lanes are submitted at once (default 256, the most writes the SQLite
	// store commits together).
	Concurrency int
	// Budget bounds the run's wall time (default 10 minutes): a run that
	// has not ended by then stops and counts its unfinished lanes.
	Budget time.Duration
	// Logger receives the host's log (default: discarded).
	Logger *slog.Logger

	// fault breaks the fake world on purpose, for the tests of the
	// invariants (faultEarlyCredentials, faultFlakySecondRun).
	fault string
}

// The faults a test can inject (LanesConfig.fault).
const (
	// faultEarlyCredentials: an auth lane's credentials check passes
	// before its credentials work.
	faultEarlyCredentials = "early-credentials"
	// faultFlakySecondRun: a lane's second attempt fails transiently, so
	// the host runs it a third time.
	faultFlakySecondRun = "flaky-second-run"
	// faultSharedKey: every lane also names one key, sharedLane, always
	// full, whose resumes the host paces at one per sharedInterval, so
	// resumes wait for their slot on the fake clock.
	faultSharedKey = "shared-key"
)

// sharedLane is the resource of the key faultSharedKey gives every lane.
const (
	sharedLane     = "shared"
	sharedInterval = 10 * time.Minute
)

// Violation is one lane's broken invariant.
type Violation struct {
	Lane, Kind, Detail string
}

func (v Violation) String() string { return v.Lane + ": " + v.Kind + ": " + v.Detail }

// LanesReport is what a run of the lane harness found.
type LanesReport struct {
	Resource, Auth int
	// Resumes counts lanes that left their wait and ran again.
	Resumes int
	// Attempts counts the attempts the fake runner saw; Checks the
	// reconcile checks the store recorded; FakeCalls the calls the fake
	// provider answered (attempts, quota reads, credentials checks).
	Attempts, Checks int
	FakeCalls        int64
	// ProviderCalls counts HTTP requests this process tried to send while
	// the lanes ran (each refused); ProviderTokens the tokens such calls
	// spent. Both are 0 unless something bypassed the fakes.
	ProviderCalls, ProviderTokens int64
	// WrongState counts lanes that did not end complete.
	WrongState int
	// Violations lists every invariant broken, sorted by lane.
	Violations []Violation
	// Virtual is the simulated time from the first submission to the last
	// lane's last transition; Wall the real time of the whole run, store and
	// verification included; Steps the clock moves.
	Virtual, Wall time.Duration
	Steps         int
}

// OK reports whether no invariant was broken.
func (r LanesReport) OK() bool { return len(r.Violations) == 0 && r.WrongState == 0 }

// Write prints the report as the `layover sim lanes` output.
func (r LanesReport) Write(w io.Writer) error {
	_, err := fmt.Fprintf(w, `lanes: %d WAIT_RESOURCE + %d WAIT_AUTH
resumes: %d
attempts: %d (reconcile checks: %d)
fake provider calls: %d
provider calls: %d
provider tokens: %d
lanes in the wrong state: %d
invariants broken: %d
virtual time: %s in %d clock steps
wall time: %s
`, r.Resource, r.Auth, r.Resumes, r.Attempts, r.Checks, r.FakeCalls, r.ProviderCalls, r.ProviderTokens,
		r.WrongState, len(r.Violations), r.Virtual.Round(time.Second), r.Steps, r.Wall.Round(time.Millisecond))
	if err != nil {
		return err
	}
	for i, v := range r.Violations {
		if i == 20 {
			_, err = fmt.Fprintf(w, "… and %d more\n", len(r.Violations)-i)
			return err
		}
		if _, err := fmt.Fprintln(w, "  "+v.String()); err != nil {
			return err
		}
	}
	return nil
}

// lanesStart is the virtual time the lanes are submitted at.
var lanesStart = time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)

// lane is one job's script and the times of its world.
type lane struct {
	id   string
	kind string
	// reset is when the lane's quota resets. A resource lane's first
	// attempt meets it exhausted until then; an auth lane's never is (its
	// reset passes while it waits for credentials, and must not end
	// that wait).
	reset time.Time
	// restore is when the lane's credentials work. An auth lane's fail
	// until then; a resource lane's always work, and are renewed at
	// restore, before its reset (which must not end its quota wait).
	restore time.Time
	runs    atomic.Int32
}

// lanePlan draws the lanes of cfg from its seed.
func lanePlan(cfg LanesConfig) []*lane {
	rnd := rand.New(rand.NewPCG(cfg.Seed, cfg.Seed^0x5eed))
	between := func(lo, hi time.Duration) time.Time {
		return lanesStart.Add(lo + time.Duration(rnd.Int64N(int64(hi-lo)))).Truncate(time.Second)
	}
	lanes := make([]*lane, 0, cfg.Resource+cfg.Auth)
	for i := range cfg.Resource + cfg.Auth {
		l := &lane{id: fmt.Sprintf("lane-%05d", i)}
		if i < cfg.Resource {
			// A reset within the hour, GitHub's window.
			l.kind, l.reset = WaitResource, between(time.Minute, time.Hour)
			l.restore = between(0, l.reset.Sub(lanesStart))
		} else {
			// Credentials fixed within 10 minutes; a reset before then.
			l.kind, l.restore = WaitAuth, between(30*time.Second, 10*time.Minute)
			l.reset = between(0, l.restore.Sub(lanesStart))
		}
		lanes = append(lanes, l)
	}
	return lanes
}

// world is the fake provider: the runner, the quotas and the credentials
// of every lane, on the fake clock.
type world struct {
	clk   *clock.Fake
	fault string
	lanes map[string]*lane

	calls atomic.Int64
	mu    sync.Mutex
	bad   []Violation
}

func (w *world) violate(l, kind, format string, a ...any) {
	w.mu.Lock()
	w.bad = append(w.bad, Violation{Lane: l, Kind: kind, Detail: fmt.Sprintf(format, a...)})
	w.mu.Unlock()
}

// laneOf is the lane a key's resource names.
func (w *world) laneOf(k quota.Key) *lane {
	if k.Host != simHost {
		return nil
	}
	return w.lanes[k.Resource]
}

// Keys implements host.Quotas: "sim:LANE" is LANE's own resource.
func (w *world) Keys(_ context.Context, names []string) ([]quota.Key, error) {
	keys := make([]quota.Key, 0, len(names))
	for _, n := range names {
		p, res, ok := strings.Cut(n, ":")
		if !ok || p != simProvider || w.lanes[res] == nil && (res != sharedLane || w.fault != faultSharedKey) {
			return nil, fmt.Errorf("unknown quota %q", n)
		}
		keys = append(keys, quota.Key{Host: simHost, Principal: simUser, Resource: res})
	}
	return keys, nil
}

// Fresh implements host.Quotas: a lane's quota is out until its reset,
// for a resource lane, and full after it (an auth lane's always is).
func (w *world) Fresh(_ context.Context, keys []quota.Key) ([]quota.State, error) {
	now := w.clk.Now()
	out := make([]quota.State, 0, len(keys))
	for _, k := range keys {
		w.calls.Add(1)
		if w.fault == faultSharedKey && k.Resource == sharedLane {
			out = append(out, quota.State{Key: k, Limit: 5000, Remaining: 5000, ResetAt: now.Add(time.Hour), ResetKnown: true,
				ObservedAt: now, Source: quota.SourceRateLimit})
			continue
		}
		l := w.laneOf(k)
		if l == nil {
			return nil, fmt.Errorf("no such key %s", k)
		}
		s := quota.State{Key: k, Limit: 5000, Remaining: 5000, ResetAt: l.reset.Add(time.Hour), ResetKnown: true,
			ObservedAt: now, Source: quota.SourceRateLimit}
		if l.kind == WaitResource && now.Before(l.reset) {
			s.Remaining, s.ResetAt = 0, l.reset
		}
		out = append(out, s)
	}
	return out, nil
}

// CheckCredentials implements host.Credentials: an auth lane's work from
// its restore time on, a resource lane's always.
func (w *world) CheckCredentials(_ context.Context, keys []quota.Key) (ok, known bool, err error) {
	now := w.clk.Now()
	for _, k := range keys {
		w.calls.Add(1)
		if w.fault == faultSharedKey && k.Resource == sharedLane {
			continue
		}
		l := w.laneOf(k)
		if l == nil {
			return false, false, nil
		}
		if l.kind == WaitAuth && now.Before(l.restore) && w.fault != faultEarlyCredentials {
			return false, true, nil
		}
	}
	return true, true, nil
}

// run is the lanes' runner: a lane's first attempt meets its wait, its
// second completes, and any later one breaks the lane's script.
func (w *world) run(_ context.Context, r host.Run) error {
	w.calls.Add(1)
	l := w.lanes[r.Job.ID]
	if l == nil {
		return host.Permanent("no such lane")
	}
	now := w.clk.Now()
	switch n := l.runs.Add(1); {
	case n == 1 && l.kind == WaitResource:
		return host.Quota(simProvider, l.id, l.reset)
	case n == 1:
		return host.Auth("bad credentials")
	case n == 2:
		if l.kind == WaitAuth && now.Before(l.restore) {
			w.violate(l.id, AuthByReset, "ran again at %s, before its credentials worked at %s", stamp(now), stamp(l.restore))
		}
		if l.kind == WaitResource && now.Before(l.reset) {
			w.violate(l.id, ResourceByCreds, "ran again at %s, before its reset at %s", stamp(now), stamp(l.reset))
		}
		if w.fault == faultFlakySecondRun {
			return errors.New("connection reset")
		}
		return nil
	default:
		w.violate(l.id, RunTwice, "attempt %d of a script of 2", n)
		return host.Permanent("the lane's script allows two attempts")
	}
}

func stamp(t time.Time) string { return t.UTC().Format(time.TimeOnly) }

// Lanes runs the lane harness of cfg to its end and reports what it found.
// The error is a harness that could not run (the store, the host); a
// broken invariant is in the report.
func Lanes(ctx context.Context, cfg LanesConfig) (LanesReport, error) {
	rep := LanesReport{Resource: cfg.Resource, Auth: cfg.Auth}
	if cfg.Resource < 0 || cfg.Auth < 0 || cfg.Resource > MaxLanes || cfg.Auth > MaxLanes {
		return rep, fmt.Errorf("lanes: --resource and --auth must be 0 to %d", MaxLanes)
	}
	if cfg.Concurrency <= 0 {
		cfg.Concurrency = 256
	}
	if cfg.Budget <= 0 {
		cfg.Budget = 10 * time.Minute
	}
	logger := cfg.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	began := time.Now()
	st, cleanup, err := openLaneStore(ctx, cfg)
	if err != nil {
		return rep, err
	}
	defer cleanup()

	clk := clock.NewFake(lanesStart)
	w := &world{clk: clk, fault: cfg.fault, lanes: map[string]*lane{}}
	plan := lanePlan(cfg)
	for _, l := range plan {
		w.lanes[l.id] = l
	}
	guard := guardNetwork()
	defer guard.restore()

	p := quota.DefaultPolicy()
	// The lanes' resets are spread by the seed; the host draws jitter in
	// the order its goroutines run, which no seed fixes.
	p.Jitter = 0
	resumeRate := float64(host.DefaultResumeRate)
	if cfg.fault == faultSharedKey {
		resumeRate = float64(time.Second) / float64(sharedInterval)
	}
	h, err := host.New(host.Config{Store: st, Runner: host.FuncRunner(w.run), Quotas: w, Credentials: w,
		Policy: p, Clock: clk, Rand: rand.New(rand.NewPCG(cfg.Seed, 1)), ID: "sim-lanes", Hostname: "sim",
		Concurrency: cfg.Concurrency, Lease: host.MaxLease, Heartbeat: laneHeartbeat, Env: []string{"PATH=/usr/bin:/bin"}, CheckpointDir: os.TempDir(),
		ResumeRate: resumeRate, Logger: logger})
	if err != nil {
		return rep, err
	}
	if err := h.Start(ctx); err != nil {
		return rep, err
	}
	defer h.Stop()
	// The lanes are submitted concurrently, so that the store commits
	// their submissions together (a group commit) rather than one by one.
	if err := eachLane(plan, cfg.Concurrency, func(l *lane) error {
		spec := job.Spec{Name: strings.ToLower(l.kind), Argv: []string{"lane", l.id}, Quota: []string{simProvider + ":" + l.id},
			Provider: simProvider, MaxAttempts: host.DefaultMaxAttempts,
			// The reconcile check: 1 says the lane's work is not done yet.
			CheckCmd: "exit 1"}
		if cfg.fault == faultSharedKey {
			spec.Quota = append(spec.Quota, simProvider+":"+sharedLane)
		}
		if _, _, err := h.Submit(ctx, l.id, spec); err != nil {
			return fmt.Errorf("submit %s: %w", l.id, err)
		}
		return nil
	}); err != nil {
		return rep, err
	}
	d := driver{st: st, clk: clk, h: h, total: len(plan), deadline: began.Add(cfg.Budget)}
	if err := d.run(ctx); err != nil {
		return rep, err
	}
	rep.Steps = d.steps
	if err := verifyLanes(ctx, st, plan, &rep); err != nil {
		return rep, err
	}
	rep.FakeCalls = w.calls.Load()
	rep.ProviderCalls = guard.calls.Load()
	w.mu.Lock()
	rep.Violations = append(rep.Violations, w.bad...)
	w.mu.Unlock()
	if rep.ProviderCalls > 0 {
		rep.Violations = append(rep.Violations, Violation{Lane: "-", Kind: ProviderCallsMade,
			Detail: strconv.FormatInt(rep.ProviderCalls, 10) + " HTTP requests refused"})
	}
	slices.SortStableFunc(rep.Violations, func(a, b Violation) int { return strings.Compare(a.Lane, b.Lane) })
	rep.Wall = time.Since(began)
	return rep, nil
}

// eachLane runs fn for every lane, at most limit at a time, and returns
// the first error.
func eachLane(plan []*lane, limit int, fn func(*lane) error) error {
	var (
		wg    sync.WaitGroup
		once  sync.Once
		first error
	)
	sem := make(chan struct{}, limit)
	for _, l := range plan {
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			if err := fn(l); err != nil {
				once.Do(func() { first = err })
			}
		}()
	}
	wg.Wait()
	return first
}

// openLaneStore opens a new SQLite store in a temporary directory, which
// the cleanup removes.
func openLaneStore(ctx context.Context, cfg LanesConfig) (*sqlite.Store, func(), error) {
	parent := cfg.Dir
	switch cfg.Store {
	case "", StoreSQLite:
	case StoreMemory:
		if parent == "" {
			parent = "/dev/shm"
		}
		if fi, err := os.Stat(parent); err != nil || !fi.IsDir() {
			return nil, nil, fmt.Errorf("lanes: --store memory needs a RAM-backed directory (%s is none)", parent)
		}
	default:
		return nil, nil, fmt.Errorf("lanes: --store is sqlite or memory, not %q", cfg.Store)
	}
	dir, err := os.MkdirTemp(parent, "layover-sim-")
	if err != nil {
		return nil, nil, err
	}
	st, err := sqlite.Open(ctx, filepath.Join(dir, "layover.db"))
	if err != nil {
		_ = os.RemoveAll(dir)
		return nil, nil, err
	}
	return st, func() { _ = st.Close(); _ = os.RemoveAll(dir) }, nil
}

// driver moves the fake clock whenever the host has nothing running and
// nothing due.
type driver struct {
	st       store.Store
	clk      *clock.Fake
	h        *host.Host
	total    int
	deadline time.Time
	steps    int
}

// The sim host's leases last host.MaxLease, renewed every laneHeartbeat,
// and the clock moves at most maxStep at a time: a running attempt's lease
// outlasts any move, even one the driver made while a claim it could not
// see was starting.
const (
	laneHeartbeat = 10 * time.Minute
	maxStep       = 30 * time.Minute
)

// minStep is the least the driver moves the clock: work due within it
// starts together, a little late (never early).
const minStep = 30 * time.Second

// maxVirtual bounds a run's simulated time: every lane's wait ends well
// within it.
const maxVirtual = 48 * time.Hour

// errBudget is a run that did not end within its wall-time budget.
var errBudget = errors.New("the lanes did not end within the time budget")

func (d *driver) run(ctx context.Context) error {
	for {
		ended, next, err := d.waitStill(ctx)
		if err != nil {
			return err
		}
		if ended == d.total {
			return nil
		}
		now := d.clk.Now()
		if next.IsZero() || next.Sub(lanesStart) > maxVirtual {
			// Nothing will ever move the rest: they count as wrong.
			return nil
		}
		if next.Before(now.Add(minStep)) {
			next = now.Add(minStep)
		}
		if next.After(now.Add(maxStep)) {
			next = now.Add(maxStep)
		}
		d.clk.Set(next)
		d.steps++
		d.h.Nudge()
	}
}

// waitStill waits until the host is still (host.Host.Still: its
// scheduler asleep until a time ahead, nothing under way) and returns how
// many lanes have ended and the next time anything is due (zero: nothing
// is; at or before now: the host waits for the clock to move). The store
// is read between two looks at the host that find it still in one epoch,
// so nothing moved in between. The driver waits on the host's Stilled
// signal alone: the wall clock only bounds the run (its budget). A resume
// waiting for its slot under the resume rate (lanes that share a key) is
// not work for Still; its wake-up (host.Host.Pacing) is one of the times
// the driver moves the clock to.
func (d *driver) waitStill(ctx context.Context) (int, time.Time, error) {
	budget := time.NewTimer(time.Until(d.deadline))
	defer budget.Stop()
	for {
		if time.Now().After(d.deadline) {
			counts, _ := d.st.CountJobs(ctx)
			next, _ := d.clk.Next()
			return 0, time.Time{}, fmt.Errorf("%w (at %s: jobs %v, next timer %s)", errBudget,
				stamp(d.clk.Now()), counts, stamp(next))
		}
		if still, epoch := d.h.Still(); still {
			counts, err := d.st.CountJobs(ctx)
			if err != nil {
				return 0, time.Time{}, err
			}
			at, due, err := d.st.NextJobDue(ctx)
			if err != nil {
				return 0, time.Time{}, err
			}
			pacing := d.h.Pacing()
			if again, e := d.h.Still(); again && e == epoch {
				ended := counts[job.Complete] + counts[job.Failed] + counts[job.Cancelled] + counts[job.Blocked]
				if !pacing.IsZero() && (!due || pacing.Before(at)) {
					at, due = pacing, true
				}
				if ended == d.total || !due {
					return ended, time.Time{}, nil
				}
				return ended, at, nil
			}
			continue
		}
		select {
		case <-d.h.Stilled():
		case <-budget.C:
		case <-ctx.Done():
			return 0, time.Time{}, ctx.Err()
		}
	}
}

// verifyLanes reads every lane's job and history back from the store and
// checks each against its script.
func verifyLanes(ctx context.Context, st store.Store, plan []*lane, rep *LanesReport) error {
	for _, l := range plan {
		j, err := st.Job(ctx, l.id)
		if err != nil {
			return err
		}
		hist, err := st.JobHistory(ctx, l.id)
		if err != nil {
			return err
		}
		rep.Attempts += int(l.runs.Load())
		if n := len(hist.Transitions); n > 0 {
			rep.Virtual = max(rep.Virtual, hist.Transitions[n-1].At.Sub(lanesStart))
		}
		rep.Checks += len(hist.Checks)
		if j.State != job.Complete {
			rep.WrongState++
			rep.Violations = append(rep.Violations, Violation{Lane: l.id, Kind: WrongEndState,
				Detail: fmt.Sprintf("%s (%s)", j.State, j.Stage)})
		}
		resumed := false
		for _, tr := range hist.Transitions {
			switch {
			case tr.From == job.Deferred && tr.To == job.Resumable:
				resumed = true
				if l.kind == WaitAuth {
					rep.Violations = append(rep.Violations, Violation{Lane: l.id, Kind: AuthByReset,
						Detail: "woken from a quota wait at " + stamp(tr.At)})
				} else if tr.At.Before(l.reset) {
					rep.Violations = append(rep.Violations, Violation{Lane: l.id, Kind: ResourceByCreds,
						Detail: "woken at " + stamp(tr.At) + ", before its reset at " + stamp(l.reset)})
				}
			case tr.From == job.AuthWait && tr.To == job.Ready:
				resumed = true
				if l.kind == WaitResource {
					rep.Violations = append(rep.Violations, Violation{Lane: l.id, Kind: ResourceByCreds,
						Detail: "left a credentials wait at " + stamp(tr.At)})
				} else if tr.At.Before(l.restore) {
					rep.Violations = append(rep.Violations, Violation{Lane: l.id, Kind: AuthByReset,
						Detail: "left its credentials wait at " + stamp(tr.At) + " (" + tr.Reason + "), before they worked at " + stamp(l.restore)})
				}
			}
		}
		if resumed {
			rep.Resumes++
		}
		// The re-run was reconciled: its check ran, and said run.
		if j.State == job.Complete && !slices.ContainsFunc(hist.Checks, func(c job.Check) bool { return c.Result == job.CheckRun }) {
			rep.Violations = append(rep.Violations, Violation{Lane: l.id, Kind: WrongEndState,
				Detail: "completed without a reconcile check"})
		}
	}
	return nil
}
