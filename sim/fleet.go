package sim

import (
	"container/heap"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/layoverhq/layover/clock"
	"github.com/layoverhq/layover/command"
	"github.com/layoverhq/layover/quota"
	"github.com/layoverhq/layover/store"
	"github.com/layoverhq/layover/store/sqlite"
	"github.com/layoverhq/layover/transport"
)

// fleetUser is the one GitHub user every host of a simulated fleet is
// authenticated as; fleetToken the fake token they send (it names no
// account anywhere: the fake answers it).
const (
	fleetUser  = "thirdshift"
	fleetToken = "sim-fleet-token"
)

// fleetStart is the virtual time a fleet run starts at, on a reset.
var fleetStart = time.Date(2026, 11, 10, 0, 0, 0, 0, time.UTC)

// FleetConfig is one run of a fleet scenario.
type FleetConfig struct {
	Scenario Scenario
	// Seed fixes the passes' jitter and layover's own wait jitter: two
	// runs with one seed give the same figures.
	Seed uint64
	// Ledger is LedgerMemory (default) or LedgerSQLite. Dir is where a
	// SQLite ledger's temporary file is made (default /dev/shm when it is
	// a directory, else the system's temporary one).
	Ledger, Dir string
}

// StrategyReport is what one strategy did over the run.
type StrategyReport struct {
	Strategy      string `json:"strategy"`
	PassesRun     int    `json:"passes_run"`
	PassesSkipped int    `json:"passes_skipped"`
	PassesFailed  int    `json:"passes_failed_mid_work"`
	CommandsDone  int    `json:"commands_done"`
	CommandsLost  int    `json:"commands_lost"`
	// AcceptedCalls and RejectedCalls are the calls the fake provider
	// answered and refused for quota; RejectedPerHostPerReset is
	// RejectedCalls over hosts × windows.
	AcceptedCalls           int64   `json:"accepted_calls"`
	RejectedCalls           int64   `json:"rejected_calls"`
	RejectedPerHostPerReset float64 `json:"rejected_per_host_per_reset"`
	// FirstMinuteMax is the most calls accepted in the first minute after
	// any reset; ReexhaustedResets the resets after which a call was
	// refused within that minute.
	FirstMinuteMax    int64 `json:"first_minute_calls_max"`
	ReexhaustedResets int   `json:"reexhausted_resets"`
	// WorkPercent is the share of the quota (limit × windows) spent on
	// admitted work that did not fail: calls of a pass that failed mid-work
	// or of a command that was lost are not work.
	WorkPercent float64 `json:"quota_on_work_percent"`
	// Waiting is the total time passes and commands spent waiting for a
	// reset.
	Waiting time.Duration `json:"-"`
	// WaitingSeconds is Waiting for --json.
	WaitingSeconds float64 `json:"waiting_seconds"`
	// Agent jobs (docs/simulator.md): done, lost (their work with them),
	// still under way when the run ended; the captured sessions that took
	// a turn again after a limit (AgentsResumed, counted at that turn: a
	// job the run ended first is not resumed), of which AgentsDeferred
	// after a deferral; the turns the limit refused (AgentLimitHits, also
	// among RejectedCalls); the turns spent on jobs that were lost; the
	// time spent waiting in their runs and deferred, up to the run's end.
	AgentsDone       int           `json:"agent_jobs_done"`
	AgentsLost       int           `json:"agent_jobs_lost"`
	AgentsUnfinished int           `json:"agent_jobs_unfinished"`
	AgentsResumed    int           `json:"agent_sessions_resumed"`
	AgentsDeferred   int           `json:"agent_jobs_deferred"`
	AgentLimitHits   int64         `json:"agent_limit_hits"`
	AgentUnitsWasted int64         `json:"agent_units_wasted"`
	AgentWaiting     time.Duration `json:"-"`
	AgentDeferred    time.Duration `json:"-"`
	// AgentsHeld counts the starts and continuations of agent jobs that
	// the ledger held back (the key exhausted, as `layover run --quota
	// claude-code` reads it before starting the command), of which
	// AgentsHeldDeferred were deferred rather than waited; their time is in
	// AgentWaiting and AgentDeferred.
	AgentsHeld         int `json:"agent_runs_held"`
	AgentsHeldDeferred int `json:"agent_runs_held_deferred"`
	// AgentWaitingSeconds and AgentDeferredSeconds are AgentWaiting and
	// AgentDeferred for --json.
	AgentWaitingSeconds  float64 `json:"agent_waiting_seconds"`
	AgentDeferredSeconds float64 `json:"agent_deferred_seconds"`
}

// FleetReport is what a fleet run found, one report per strategy.
type FleetReport struct {
	Hosts      int              `json:"hosts"`
	Resets     int              `json:"windows"`
	Limit      int64            `json:"limit"`
	Duration   time.Duration    `json:"-"`
	DurationS  float64          `json:"duration_seconds"`
	AgentJobs  int              `json:"agent_jobs"`
	Seed       uint64           `json:"seed"`
	Strategies []StrategyReport `json:"strategies"`
	// ProviderCalls counts requests that tried to leave the process (each
	// refused) while the strategies ran: 0 unless something bypassed the
	// fakes.
	ProviderCalls int64         `json:"provider_calls"`
	Wall          time.Duration `json:"-"`
}

// Fleet runs cfg's scenario under each of its strategies, side by side
// (each on its own virtual clock, fake quota and ledger, driven by one
// goroutine), and reports what each did.
func Fleet(ctx context.Context, cfg FleetConfig) (FleetReport, error) {
	start := time.Now()
	s := cfg.Scenario
	if s.line == nil {
		if err := s.validate(); err != nil {
			return FleetReport{}, err
		}
	}
	rep := FleetReport{Hosts: s.Hosts, Limit: s.Quota.Limit, Duration: s.Duration.Duration, DurationS: s.Duration.Seconds(),
		Seed: cfg.Seed, Resets: int((s.Duration.Duration + s.Quota.Window.Duration - 1) / s.Quota.Window.Duration), AgentJobs: s.Agents.Count}
	runs := make([]*run, len(s.Strategies))
	fakes := map[string]*fakeGitHub{}
	for i, name := range s.Strategies {
		runs[i] = newRun(ctx, cfg, name)
		fakes[fleetAPIHost(name)] = runs[i].gh
	}
	net := guardFleetNetwork(fakes)
	defer net.restore()
	reports := make([]StrategyReport, len(runs))
	errs := make([]error, len(runs))
	var wg sync.WaitGroup
	for i, r := range runs {
		wg.Go(func() { reports[i], errs[i] = r.run(cfg) })
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			return FleetReport{}, fmt.Errorf("%s: %w", s.Strategies[i], err)
		}
	}
	rep.Strategies = reports
	rep.ProviderCalls = net.refused.Load()
	rep.Wall = time.Since(start)
	return rep, nil
}

// The kinds of event of a fleet run.
const (
	evNextPass    = iota // the next pass's base time: its start is drawn
	evPass               // a pass starts (admission)
	evPassCall           // one call of a running pass
	evCmdCall            // one call of a long command
	evCmdStart           // a command slot starts its next command
	evNextSlot           // a cron slot: every host's passes are drawn
	evAgentStart         // an agent job starts
	evAgentTurn          // one turn of an agent job
	evAgentResume        // a deferred agent job's fresh run
	evAgentGate          // an agent job reads the ledger before a turn
)

type event struct {
	at   time.Time
	seq  int64
	kind int
	id   int // pass index or command index
	call int
}

type events []event

func (e events) Len() int { return len(e) }
func (e events) Less(i, j int) bool {
	if !e[i].at.Equal(e[j].at) {
		return e[i].at.Before(e[j].at)
	}
	return e[i].seq < e[j].seq
}
func (e events) Swap(i, j int) { e[i], e[j] = e[j], e[i] }
func (e *events) Push(x any)   { *e = append(*e, x.(event)) }
func (e *events) Pop() any {
	old := *e
	x := old[len(old)-1]
	*e = old[:len(old)-1]
	return x
}

// work is one pass or long command under way.
type work struct {
	host     int
	calls    int // calls left
	accepted int64
	budget   quota.Budget
	every    time.Duration // commands: between calls
}

// run is one strategy's run.
type run struct {
	ctx    context.Context
	s      Scenario
	name   string
	layer  bool // layover's strategies
	clk    *clock.Fake
	q      *windowQuota
	gh     *fakeGitHub
	rnd    *rand.Rand // the workload's draws
	evs    events
	seq    int64
	end    time.Time
	passes map[int]*work
	cmds   map[int]*work
	nCmds  int
	// nPasses numbers a cron schedule's passes
	nPasses int
	rep     StrategyReport
	wasted  int64
	// per window: calls accepted and refused in its first minute
	firstMin  map[int64]int64
	reexhaust map[int64]bool
	hosts     []*fleetHost
	policy    quota.Policy
	// agent jobs: the fake agent CLI, the jobs by index, and the source of
	// layover's wait jitter for them
	agent    *fakeAgent
	agents   map[int]*agentJob
	agentRnd *rand.Rand
	// the fleet's ledger (layover's strategies), and the keys `layover
	// run --quota claude-code` checks in it (agentKeys)
	st        store.Store
	agentKeys []quota.Key
	// inspect, when set (tests), reads the ledger once the events are
	// over, before it is closed
	inspect func(store.Store) error
}

// fleetHost is one host of a layover strategy: its transport (its own
// in-memory view, as one process has) and its pass admission, both on
// the shared ledger.
type fleetHost struct {
	tr   *transport.Transport
	pass *command.PassConfig
}

// The random streams of a run (rand.NewPCG(seed, stream)), one per
// source so that no source's draws move another's: the workload's, each
// host's transport jitter (streamHost + the host's index, for every host
// a scenario may have), then the agent jobs' starts and their wait
// jitter, past every host's, so that a scenario without agents draws as
// it did before agents existed.
const (
	streamWorkload    = 1
	streamHost        = 2
	streamAgentStarts = streamHost + MaxFleetHosts
	streamAgentJitter = streamAgentStarts + 1
)

// hostStream is host h's stream (h from 0).
func hostStream(h int) uint64 { return streamHost + uint64(h) }

func newRun(ctx context.Context, cfg FleetConfig, name string) *run {
	s := cfg.Scenario
	clk := clock.NewFake(fleetStart)
	r := &run{ctx: ctx, s: s, name: name, clk: clk, layer: name != StrategyNone,
		q:   &windowQuota{limit: s.Quota.Limit, window: s.Quota.Window.Duration, start: fleetStart},
		rnd: rand.New(rand.NewPCG(cfg.Seed, streamWorkload)), end: fleetStart.Add(s.Duration.Duration),
		passes: map[int]*work{}, cmds: map[int]*work{}, firstMin: map[int64]int64{}, reexhaust: map[int64]bool{},
		policy: quota.DefaultPolicy()}
	r.rep.Strategy = name
	r.gh = &fakeGitHub{q: r.q, clk: clk, onCall: r.counted}
	r.agent = &fakeAgent{q: r.q, counted: r.counted, seed: cfg.Seed, sessions: map[string]*agentSession{}}
	r.agents, r.agentRnd = map[int]*agentJob{}, rand.New(rand.NewPCG(cfg.Seed, streamAgentJitter))
	return r
}

// run drives the strategy's events in time order until the scenario's
// duration has passed.
func (r *run) run(cfg FleetConfig) (StrategyReport, error) {
	ctx, s := r.ctx, r.s
	if r.layer {
		cleanup, err := r.openHosts(cfg)
		if err != nil {
			return StrategyReport{}, err
		}
		defer cleanup()
	}
	if r.layer && s.Agents.Count > 0 {
		if err := r.resolveAgentKeys(); err != nil {
			return StrategyReport{}, err
		}
	}
	switch {
	case s.Passes.Cron != "":
		if first := s.Passes.cron.Next(fleetStart.Add(-time.Nanosecond)); !first.IsZero() {
			r.push(event{at: first, kind: evNextSlot})
		}
	case s.Passes.PerHour > 0 || s.Passes.Every.Duration > 0:
		r.push(event{at: fleetStart, kind: evNextPass})
	}
	for i := range s.Commands.Count {
		r.push(event{at: fleetStart.Add(r.slotOffset(i)), kind: evCmdStart, id: i})
	}
	if s.Agents.Count > 0 {
		r.agentStarts(cfg.Seed)
	}
	for len(r.evs) > 0 {
		if err := ctx.Err(); err != nil {
			return StrategyReport{}, err
		}
		ev := heap.Pop(&r.evs).(event)
		if !ev.at.Before(r.end) {
			break
		}
		r.clk.Set(ev.at)
		if err := r.handle(ev); err != nil {
			return StrategyReport{}, err
		}
	}
	if r.inspect != nil && r.st != nil {
		if err := r.inspect(r.st); err != nil {
			return StrategyReport{}, err
		}
	}
	r.finish()
	return r.rep, nil
}

// openHosts makes the shared ledger and each host's transport and pass
// admission, as `layover pass --quota github` and a command's transport
// run them.
func (r *run) openHosts(cfg FleetConfig) (func(), error) {
	var st store.Store
	cleanup := func() {}
	switch cfg.Ledger {
	case "", LedgerMemory:
		st = newMemLedger()
	case LedgerSQLite:
		parent := cfg.Dir
		if parent == "" {
			if fi, err := os.Stat("/dev/shm"); err == nil && fi.IsDir() {
				parent = "/dev/shm"
			}
		}
		dir, err := os.MkdirTemp(parent, "layover-fleet-")
		if err != nil {
			return nil, err
		}
		db, err := sqlite.Open(r.ctx, filepath.Join(dir, "layover.db"))
		if err != nil {
			_ = os.RemoveAll(dir)
			return nil, err
		}
		st, cleanup = db, func() { _ = db.Close(); _ = os.RemoveAll(dir) }
	default:
		return nil, fmt.Errorf("fleet: the ledger is memory or sqlite, not %q", cfg.Ledger)
	}
	r.st = st
	getenv := func(k string) string {
		switch k {
		case "GH_TOKEN":
			return fleetToken
		case "GITHUB_API_URL":
			return "https://" + fleetAPIHost(r.name)
		}
		return ""
	}
	for h := range r.s.Hosts {
		name := "host-" + strconv.Itoa(h+1)
		gh, err := command.ResolveGitHub(r.ctx, &command.GitHubConfig{Store: st, Principal: fleetUser, Getenv: getenv,
			Clock: r.clk, Hostname: name})
		if err != nil {
			cleanup()
			return nil, err
		}
		pol := r.policy
		tr, err := transport.New(r.gh, &transport.Options{Provider: transport.GitHub(), Store: st, Principal: fleetUser, Clock: r.clk, Policy: &pol,
			Rand: rand.New(rand.NewPCG(cfg.Seed, hostStream(h))), Mode: transport.ModeDefer, Hostname: name,
			Command: "layover sim fleet", TransientRetries: -1})
		if err != nil {
			cleanup()
			return nil, err
		}
		r.hosts = append(r.hosts, &fleetHost{tr: tr, pass: &command.PassConfig{Store: st, GitHub: gh, Principal: fleetUser,
			Getenv: getenv, Policy: r.policy, Now: r.clk.Now, Pace: r.name == StrategyPacing}})
	}
	return cleanup, nil
}

func (r *run) push(ev event) {
	r.seq++
	ev.seq = r.seq
	heap.Push(&r.evs, ev)
}

// counted is told of every call the fake provider charged.
func (r *run) counted(accepted bool) {
	now := r.clk.Now()
	w := int64(now.Sub(fleetStart) / r.q.window)
	inFirst := w > 0 && now.Sub(fleetStart.Add(time.Duration(w)*r.q.window)) < time.Minute
	if accepted {
		r.rep.AcceptedCalls++
		if inFirst {
			r.firstMin[w]++
		}
		return
	}
	r.rep.RejectedCalls++
	if inFirst {
		r.reexhaust[w] = true
	}
}

// passBase is the base start time and host of pass i.
func (r *run) passBase(i int) (time.Time, int) {
	p := r.s.Passes
	if p.Every.Duration > 0 {
		per := r.s.Hosts * p.PerSlot
		return fleetStart.Add(time.Duration(i/per) * p.Every.Duration), i % per % r.s.Hosts
	}
	return fleetStart.Add(time.Duration(float64(i) * float64(time.Hour) / float64(p.PerHour))), i % r.s.Hosts
}

// jittered is at plus the pass's jitter, drawn from the seed, to the
// second.
func (r *run) jittered(at time.Time) time.Time {
	if j := r.s.Passes.Jitter.Duration; j > 0 {
		at = at.Add(time.Duration(r.rnd.Int64N(int64(j) + 1)))
	}
	return at.Truncate(time.Second)
}

func (r *run) handle(ev event) error {
	switch ev.kind {
	case evNextPass:
		at, host := r.passBase(ev.id)
		r.push(event{at: r.jittered(at), kind: evPass, id: ev.id, call: host})
		next, _ := r.passBase(ev.id + 1)
		r.push(event{at: next, kind: evNextPass, id: ev.id + 1})
	case evNextSlot:
		p := r.s.Passes
		for i := range r.s.Hosts * p.PerSlot {
			r.push(event{at: r.jittered(ev.at), kind: evPass, id: r.nPasses, call: i % r.s.Hosts})
			r.nPasses++
		}
		if next := p.cron.Next(ev.at); !next.IsZero() {
			r.push(event{at: next, kind: evNextSlot})
		}
	case evPass:
		return r.startPass(ev.id, ev.call)
	case evPassCall:
		return r.passCall(ev.id)
	case evCmdCall:
		return r.cmdCall(ev.id)
	case evCmdStart:
		r.startCommand(ev.id)
		r.push(event{at: r.clk.Now().Add(r.s.Commands.Length.Duration), kind: evCmdStart, id: ev.id})
	case evAgentStart:
		r.startAgent(ev.id)
	case evAgentTurn:
		return r.agentTurn(ev.id)
	case evAgentResume:
		return r.agentResume(ev.id)
	case evAgentGate:
		return r.agentGate(ev.id)
	}
	return nil
}

func (r *run) startPass(id, host int) error {
	if r.layer {
		adm, err := command.AdmitPass(r.ctx, r.hosts[host].pass)
		if err != nil {
			return err
		}
		if !adm.Admit {
			r.rep.PassesSkipped++
			return nil
		}
	}
	r.rep.PassesRun++
	p := r.s.Passes
	r.passes[id] = &work{host: host, calls: p.Calls, budget: quota.Budget{Max: r.policy.MaxTotalWait}}
	r.push(event{at: r.clk.Now(), kind: evPassCall, id: id})
	return nil
}

// callOutcome is what one call of a piece of work came to.
type callOutcome int

const (
	callDone   callOutcome = iota // accepted
	callWait                      // waits until the time returned
	callFailed                    // the work fails here
)

// call makes one call of w at now: straight to the provider for
// StrategyNone, else through w's host's transport, as a command's
// request in wait mode would be (a refused request waits for the
// deferral's resume time, charged to w's budget).
func (r *run) call(w *work) (callOutcome, time.Time, error) {
	now := r.clk.Now()
	if !r.layer {
		if r.gh.q.take(now) {
			r.counted(true)
			return callDone, time.Time{}, nil
		}
		r.counted(false)
		return callFailed, time.Time{}, nil
	}
	h := r.hosts[w.host]
	for try := 0; ; try++ {
		req, err := http.NewRequestWithContext(r.ctx, http.MethodGet, "https://"+fleetAPIHost(r.name)+"/repos/thirdshift/factory/issues", nil)
		if err != nil {
			return 0, time.Time{}, err
		}
		req.Header.Set("Authorization", "Bearer "+fleetToken)
		resp, err := h.tr.RoundTrip(req)
		if ferr := h.tr.Flush(r.ctx); ferr != nil {
			return 0, time.Time{}, ferr
		}
		var de *quota.DeferralError
		switch {
		case errors.As(err, &de):
			until := de.ResumeAt
			if until.IsZero() {
				until = r.policy.AssumedReset(now)
			}
			until = quota.RerunAt(now, until)
			// Whole seconds, as every event of the run: the provider's
			// Date header has no finer grain.
			if f := until.Truncate(time.Second); f.Before(until) {
				until = f.Add(time.Second)
			}
			if w.budget.Take(until.Sub(now)) != nil {
				return callFailed, time.Time{}, nil
			}
			r.rep.Waiting = quota.SumSat(r.rep.Waiting, until.Sub(now))
			return callWait, until, nil
		case err != nil:
			return 0, time.Time{}, err
		}
		_ = resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			return callDone, time.Time{}, nil
		}
		if try > 0 { // a second refusal in one instant: the transport learned nothing
			return callFailed, time.Time{}, nil
		}
		// A refused call: the transport now knows the key is exhausted,
		// and the same request asked again says until when.
	}
}

func (r *run) passCall(id int) error {
	w := r.passes[id]
	out, until, err := r.call(w)
	if err != nil {
		return err
	}
	switch out {
	case callFailed:
		r.rep.PassesFailed++
		r.wasted += w.accepted
		delete(r.passes, id)
	case callWait:
		r.push(event{at: until, kind: evPassCall, id: id})
	case callDone:
		w.accepted++
		if w.calls--; w.calls == 0 {
			delete(r.passes, id)
			return nil
		}
		p := r.s.Passes
		gap := (p.Spread.Duration / time.Duration(max(p.Calls-1, 1))).Truncate(time.Second)
		r.push(event{at: r.clk.Now().Add(gap), kind: evPassCall, id: id})
	}
	return nil
}

// slotOffset is when command slot i starts its first command: the slots
// spread over one command's duration, so their commands do not all end
// together.
func (r *run) slotOffset(i int) time.Duration {
	c := r.s.Commands
	return (c.Length.Duration / time.Duration(c.Count) * time.Duration(i)).Truncate(time.Second)
}

// startCommand starts the next command of slot, on the slot's host. A
// slot starts a command every Length whatever became of the one before
// (done, still waiting, or lost), so every strategy is given the same
// commands.
func (r *run) startCommand(slot int) {
	c := r.s.Commands
	id := r.nCmds
	r.nCmds++
	every := max(time.Minute/time.Duration(c.CallsPerMinute), time.Second).Truncate(time.Second)
	r.cmds[id] = &work{host: slot % r.s.Hosts, calls: max(int(c.Length.Duration/every), 1), every: every,
		budget: quota.Budget{Max: r.policy.MaxTotalWait}}
	r.push(event{at: r.clk.Now(), kind: evCmdCall, id: id})
}

func (r *run) cmdCall(id int) error {
	w := r.cmds[id]
	out, until, err := r.call(w)
	if err != nil {
		return err
	}
	switch out {
	case callFailed:
		r.rep.CommandsLost++
		r.wasted += w.accepted
		delete(r.cmds, id)
	case callWait:
		r.push(event{at: until, kind: evCmdCall, id: id})
	case callDone:
		w.accepted++
		if w.calls--; w.calls == 0 {
			r.rep.CommandsDone++
			delete(r.cmds, id)
			return nil
		}
		r.push(event{at: r.clk.Now().Add(w.every), kind: evCmdCall, id: id})
	}
	return nil
}

// finish works out the figures of the run.
func (r *run) finish() {
	windows := int64((r.s.Duration.Duration + r.q.window - 1) / r.q.window)
	for w, n := range r.firstMin {
		if w < windows {
			r.rep.FirstMinuteMax = max(r.rep.FirstMinuteMax, n)
		}
	}
	r.rep.ReexhaustedResets = len(r.reexhaust)
	r.rep.RejectedPerHostPerReset = float64(r.rep.RejectedCalls) / float64(int64(r.s.Hosts)*windows)
	quotaTotal := float64(r.q.limit) * float64(windows)
	r.rep.WorkPercent = 100 * float64(r.rep.AcceptedCalls-r.wasted) / quotaTotal
	r.rep.WaitingSeconds = r.rep.Waiting.Seconds()
	for _, j := range r.agents {
		if !j.over {
			r.rep.AgentsUnfinished++
		}
	}
	r.rep.AgentWaitingSeconds, r.rep.AgentDeferredSeconds = r.rep.AgentWaiting.Seconds(), r.rep.AgentDeferred.Seconds()
}

// Write prints the report: the run's shape, then one block per strategy.
func (rep FleetReport) Write(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "fleet: %d hosts, %s simulated, %d windows of %d calls, seed %d\n",
		rep.Hosts, rep.Duration, rep.Resets, rep.Limit, rep.Seed)
	for _, s := range rep.Strategies {
		fmt.Fprintf(&b, "\n%s:\n", s.Strategy)
		fmt.Fprintf(&b, "  passes: %d run, %d skipped, %d failed mid-work\n", s.PassesRun, s.PassesSkipped, s.PassesFailed)
		fmt.Fprintf(&b, "  commands: %d done, %d lost\n", s.CommandsDone, s.CommandsLost)
		fmt.Fprintf(&b, "  calls: %d accepted, %d rejected (%.2f per host per reset)\n", s.AcceptedCalls, s.RejectedCalls, s.RejectedPerHostPerReset)
		fmt.Fprintf(&b, "  first minute after a reset: %d calls at most, %d resets re-exhausted in it\n", s.FirstMinuteMax, s.ReexhaustedResets)
		fmt.Fprintf(&b, "  quota spent on admitted work: %.1f%%\n", s.WorkPercent)
		fmt.Fprintf(&b, "  total waiting: %s\n", s.Waiting.Round(time.Second))
		if rep.AgentJobs > 0 {
			fmt.Fprintf(&b, "  agent jobs: %d done, %d lost, %d under way; %d limit hits, %d units wasted\n",
				s.AgentsDone, s.AgentsLost, s.AgentsUnfinished, s.AgentLimitHits, s.AgentUnitsWasted)
			fmt.Fprintf(&b, "  agent sessions resumed: %d (%d after a deferral); waiting %s in their runs, %s deferred\n",
				s.AgentsResumed, s.AgentsDeferred, s.AgentWaiting.Round(time.Second), s.AgentDeferred.Round(time.Second))
			fmt.Fprintf(&b, "  agent runs held by the ledger before a turn: %d (%d deferred)\n", s.AgentsHeld, s.AgentsHeldDeferred)
		}
	}
	fmt.Fprintf(&b, "\nprovider calls: %d\n", rep.ProviderCalls)
	fmt.Fprintf(&b, "wall time: %s\n", rep.Wall.Round(time.Millisecond))
	_, err := io.WriteString(w, b.String())
	return err
}
