package workflow

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/layoverhq/layover/clock"
	"github.com/layoverhq/layover/host"
	"github.com/layoverhq/layover/provider"
	"github.com/layoverhq/layover/provider/agentcli"
	"github.com/layoverhq/layover/quota"
	"github.com/layoverhq/layover/textsafe"
	"github.com/layoverhq/layover/workflow/record"
)

// Store is what a run needs of layover's store; every store.Store has it.
type Store interface {
	CreateRun(ctx context.Context, r record.Run, tasks []record.Task, now time.Time) (record.Run, bool, error)
	RunTasks(ctx context.Context, runID string) ([]record.Task, error)
	UpdateRun(ctx context.Context, r record.Run, now time.Time) (record.Run, error)
	UpdateTask(ctx context.Context, t record.Task, ev *record.TaskEvent, now time.Time) (record.Task, error)
}

// Options configure one Start. RunID and Store are required; every other
// field has a default.
type Options struct {
	// RunID names the run: a new id creates it, an existing one (with the
	// same definition) resumes it.
	RunID string
	// Store keeps the run, its tasks and their histories.
	Store Store
	// Clock tells the time and times every wait (default the system's).
	Clock clock.Clock
	// Rand draws the jitter of waits on a reset (default seeded).
	Rand quota.Rand
	// Policy holds the reset margin, jitter, secondary wait and the reset
	// assumed when a provider names none; a zero Policy is
	// quota.DefaultPolicy().
	Policy quota.Policy
	// Dir is the tasks' working directory (the workflow file's); "" is
	// the process's.
	Dir string
	// Env is the tasks' environment before the LAYOVER_* variables
	// (default os.Environ()).
	Env []string
	// StoreLocation is handed to command and agent tasks as LAYOVER_STORE,
	// so `layover checkpoint` inside a task records the checkpoint in the
	// run's store; "" leaves Env's.
	StoreLocation string
	// CheckpointDir holds the files LAYOVER_CHECKPOINT points at: a task's
	// last checkpoint data, handed to its next attempt (default a
	// temporary directory, removed when Start returns).
	CheckpointDir string
	// Shell runs run:, check: and verify: commands and agent templates as
	// Shell -c CMD (default /bin/sh).
	Shell string
	// Runner runs one attempt of a command or agent task, and each check
	// and verify command (default a host.ProcessRunner classifying output
	// with agentcli.ClassifyAuto). Go-function tasks are called directly.
	Runner host.Runner
	// Quotas resolves a task's quota names, so that a task whose quota is
	// known to be exhausted waits or pauses without starting; nil: not
	// checked.
	Quotas host.Quotas
	// Concurrency is how many tasks run at once (default 4).
	Concurrency int
	// Events receives each task move and waiting notice, in the order
	// written, from one goroutine at a time; nil: none. It must not block
	// for long: the run waits for it.
	Events func(Event)
}

// DefaultConcurrency is Options.Concurrency's default.
const DefaultConcurrency = 4

// Result is where a run stands when Start returns.
type Result struct {
	RunID  string
	Status record.RunStatus
	// Reason says, in words, why the run is failed or paused; "" when
	// complete.
	Reason string
	// Tasks are the run's tasks in the order of the definition.
	Tasks []record.Task
	// EarliestReset is the earliest known reset among the paused tasks'
	// quotas: when a later Start can run one of them. Zero: none known.
	EarliestReset time.Time
}

// Event is one task move or waiting notice. An event with Task "" is about
// the whole run (its budget spent, its timeout passed).
type Event struct {
	At       time.Time
	RunID    string
	Task     string
	From, To record.TaskState // equal for a notice without a move (a candidate switch, a checkpoint)
	Reason   string
	// Until is a wait's end (To is waiting, or pending before a retry);
	// zero otherwise.
	Until time.Time
}

// ErrBusy is Start's error for a run that another process runs: its
// status is running and it was written within OwnerTimeout. It is a
// record.ErrConflict too (errors.Is).
var ErrBusy error = busyError{}

type busyError struct{}

func (busyError) Error() string        { return "workflow: another process runs the run" }
func (busyError) Is(target error) bool { return target == record.ErrConflict }

// While a Start runs it renews its run (rewrites it) every RenewEvery of
// its Clock; a run left running that was not written for OwnerTimeout
// belongs to a process that is gone, and the next Start takes it over.
const (
	RenewEvery   = 10 * time.Second
	OwnerTimeout = 30 * time.Second
)

// ErrDurable is Start's error for a run that flow submit handed to the
// durable host: serve runs it, not Start.
var ErrDurable = errors.New("workflow: the run belongs to the durable host")

// Start runs def under o.RunID until nothing more can run, and returns
// where the run stands: complete, paused (a task waits for a quota's
// reset beyond on_quota.max_wait) or failed (a task failed, is blocked or
// waits for credentials, the budget is spent, or the run's timeout
// passed). Task failures are the Result's, not errors; the error
// is a bad definition or Options, a store that fails, or ctx ending (the
// Result then holds the run as left: interrupted tasks are pending again).
//
// A new run id creates the run with every task pending. An existing one
// resumes it: complete tasks never run again; a paused task whose reset
// is unknown or past runs at once, one within max_wait is waited for, a
// later one stays paused without running. The semantics are those of
// docs/workflows.md (Semantics).
func Start(ctx context.Context, def Definition, o Options) (Result, error) {
	e, err := newEngine(def, o)
	if err != nil {
		return Result{RunID: o.RunID}, err
	}
	defer e.removeCheckpoints()
	if err := e.open(ctx); err != nil {
		return Result{RunID: o.RunID}, err
	}
	return e.loop(ctx)
}

func (o *Options) defaults() error {
	switch {
	case o.RunID == "":
		return errors.New("workflow: a run id is required")
	case !host.ValidID(o.RunID):
		return fmt.Errorf("workflow: run id %q: use letters, digits, '.', '_' and '-' (at most 128)", o.RunID)
	case o.Store == nil:
		return errors.New("workflow: a store is required")
	case o.Concurrency < 0:
		return fmt.Errorf("workflow: concurrency %d: want 1 or more (0: %d)", o.Concurrency, DefaultConcurrency)
	}
	if o.Clock == nil {
		o.Clock = clock.Real{}
	}
	if o.Rand == nil {
		o.Rand = quota.NewRand()
	}
	if o.Policy.UnknownReset == 0 {
		o.Policy = quota.DefaultPolicy()
	}
	if err := o.Policy.Validate(); err != nil {
		return fmt.Errorf("workflow: %w", err)
	}
	if o.Env == nil {
		o.Env = os.Environ()
	}
	if o.Shell == "" {
		o.Shell = "/bin/sh"
	}
	if o.Runner == nil {
		now := o.Clock.Now
		o.Runner = &host.ProcessRunner{Classify: classifyAny, Now: now}
	}
	if o.Concurrency == 0 {
		o.Concurrency = DefaultConcurrency
	}
	return nil
}

// classifyAny reads a failed process's output with every agent CLI's and
// gh's classifier.
func classifyAny(code int, stdout, stderr []byte, now time.Time) provider.Outcome {
	return agentcli.ClassifyAuto(code, stdout, stderr, now, time.Local)
}

// phase is what the engine is doing with a task in this process.
type phase int

const (
	idle  phase = iota // decided at the next schedule
	busy               // a check, attempt or verify is under way
	timed              // a wait or a retry's backoff is under way
	held               // paused, blocked or done with in this process
)

// taskRun is the engine's state of one task in this process.
type taskRun struct {
	def   Task
	rec   record.Task
	phase phase
	cands []string // agent candidates (Agent names), or the one "" of a command or function
	// limits is when each candidate may run again: the record's Limited,
	// and for a command or function the quota's reset under "".
	limits map[string]time.Time
	// hits are the quota records of this process's hits, per candidate.
	hits map[string]record.Quota
	// fresh: loaded paused or waiting by this Start, so an unknown or past
	// reset runs at once.
	fresh bool
	// afterPause: the next attempt is the first after a pause (or a
	// quota switch): its id is a quota rerun's, and it may continue the
	// session.
	afterPause bool
	// switched: the next attempt is on another candidate after a quota.
	switched bool
	// admitted: the quota check before a start found nothing exhausted,
	// so the next decide starts the task without checking again.
	admitted bool
	stop     chan struct{} // closes the pending timer, if any
	// checkpointPath is LAYOVER_CHECKPOINT of the attempt under way: its
	// last checkpoint's data, written as it began; "" for none.
	checkpointPath string
}

type engine struct {
	o    Options
	def  Definition
	defJ []byte
	now  func() time.Time

	mu    sync.Mutex
	run   record.Run
	tasks []*taskRun
	index map[string]*taskRun
	order []*taskRun // dependency order

	running   int
	budgetOut bool
	timedOut  bool
	stopped   bool
	// cancelled: flow cancel cancelled the run while it ran; nothing more
	// is written of it (cancelled).
	cancelled  bool
	runCtx     context.Context
	cancelRuns context.CancelFunc
	results    chan done // work done, to apply in the loop
	timers     int
	// ckDir is the temporary CheckpointDir made for this Start, if any.
	ckDir string
}

func newEngine(def Definition, o Options) (*engine, error) {
	if err := o.defaults(); err != nil {
		return nil, err
	}
	def = def.WithDefaults()
	if err := def.Validate(); err != nil {
		return nil, fmt.Errorf("workflow: %w", err)
	}
	defJ, err := canonical(def)
	if err != nil {
		return nil, err
	}
	e := &engine{o: o, def: def, defJ: defJ, now: o.Clock.Now, index: map[string]*taskRun{}, results: make(chan done, 64)}
	for _, t := range def.Tasks {
		tr := &taskRun{def: t, limits: map[string]time.Time{}, hits: map[string]record.Quota{}}
		tr.cands = []string{""}
		if len(t.Agent) > 0 {
			tr.cands = nil
			for _, a := range t.Agent {
				ag, _ := agentcli.AgentNamed(a)
				tr.cands = append(tr.cands, ag.Name)
			}
		}
		e.tasks = append(e.tasks, tr)
		e.index[t.Name] = tr
	}
	for _, t := range def.Order() {
		e.order = append(e.order, e.index[t.Name])
	}
	return e, nil
}

// open creates the run, or loads it to resume.
func (e *engine) open(ctx context.Context) error {
	now := e.now()
	r := record.Run{ID: e.o.RunID, Name: e.def.Name, Definition: e.defJ, Status: record.RunRunning}
	if e.def.Timeout > 0 {
		r.Deadline = now.Add(e.def.Timeout)
	}
	var recs []record.Task
	for _, t := range e.def.Tasks {
		rt := record.Task{RunID: r.ID, Name: t.Name, State: record.TaskPending, Stage: "pending", Workdir: e.o.Dir}
		if len(t.Needs) > 0 {
			rt.WaitingOn = "needs " + strings.Join(t.Needs, ", ")
		}
		recs = append(recs, rt)
	}
	stored, created, err := e.o.Store.CreateRun(ctx, r, recs, now)
	if err != nil {
		if errors.Is(err, record.ErrConflict) {
			return fmt.Errorf("workflow: run %s exists with another definition: %w", r.ID, err)
		}
		return fmt.Errorf("workflow: create run %s: %w", r.ID, err)
	}
	e.run = stored
	if !created && stored.Durable {
		return fmt.Errorf("%w: run %s (flow status shows it)", ErrDurable, r.ID)
	}
	if since := now.Sub(stored.UpdatedAt); !created && stored.Status == record.RunRunning && since < OwnerTimeout {
		return fmt.Errorf("%w: run %s is running, written %s ago (a run left by a process that is gone is taken over %s after its last write)",
			ErrBusy, r.ID, since.Round(time.Second), OwnerTimeout)
	}
	if recs, err = e.o.Store.RunTasks(ctx, r.ID); err != nil {
		return fmt.Errorf("workflow: read run %s: %w", r.ID, err)
	}
	if len(recs) != len(e.tasks) {
		return fmt.Errorf("workflow: run %s: %d tasks stored, %d defined", r.ID, len(recs), len(e.tasks))
	}
	for i, rt := range recs {
		if rt.Name != e.tasks[i].def.Name {
			return fmt.Errorf("workflow: run %s: stored task %d is %q, defined %q", r.ID, i, rt.Name, e.tasks[i].def.Name)
		}
		tr := e.tasks[i]
		tr.rec = rt
		for c, until := range rt.Limited {
			tr.limits[c] = until
		}
		if q := rt.Quota; q != nil && len(tr.def.Agent) == 0 {
			tr.limits[""] = q.ResetAt
		}
		switch rt.State {
		case record.TaskPaused, record.TaskWaiting:
			tr.fresh, tr.afterPause = true, true
		case record.TaskComplete, record.TaskFailed, record.TaskSkipped, record.TaskCancelled, record.TaskBlocked:
			tr.phase = held
		}
	}
	if e.run.Status == record.RunCancelled {
		for _, tr := range e.tasks {
			tr.phase = held
		}
		return nil
	}
	if !created {
		// Writing the run claims it: of two processes taking over a run
		// left by a third, the second to write gets record.ErrConflict.
		e.run.Status = record.RunRunning
		if e.run, err = e.o.Store.UpdateRun(ctx, e.run, now); err != nil {
			return fmt.Errorf("workflow: resume run %s: %w", r.ID, err)
		}
	}
	return nil
}

// loop schedules tasks and applies the work done until nothing more can
// run.
func (e *engine) loop(ctx context.Context) (Result, error) {
	wctx := context.WithoutCancel(ctx)
	e.runCtx, e.cancelRuns = context.WithCancel(ctx)
	defer e.cancelRuns()
	var deadline <-chan time.Time
	if !e.run.Deadline.IsZero() && e.run.Status != record.RunCancelled {
		deadline = e.o.Clock.After(e.run.Deadline.Sub(e.now()))
	}
	var ctxErr error
	interrupted := ctx.Done()
	renew := e.o.Clock.After(RenewEvery)
	if !e.run.Deadline.IsZero() && !e.now().Before(e.run.Deadline) {
		deadline = nil
		e.mu.Lock()
		err := e.timeout(wctx)
		e.mu.Unlock()
		if err != nil {
			return e.result(), err
		}
	}
	for {
		e.mu.Lock()
		err := e.schedule(wctx)
		quiet := e.running == 0 && e.timers == 0
		e.mu.Unlock()
		if err != nil {
			e.abort()
			return e.result(), err
		}
		if quiet {
			if ctxErr == nil && ctx.Err() != nil {
				ctxErr = ctx.Err() // it ended before the loop saw it: nothing started since
			}
			break
		}
		select {
		case d := <-e.results:
			e.mu.Lock()
			err = d.apply()
			e.mu.Unlock()
		case <-deadline:
			deadline = nil
			e.mu.Lock()
			err = e.timeout(wctx)
			e.mu.Unlock()
		case <-renew:
			renew = e.o.Clock.After(RenewEvery)
			e.mu.Lock()
			err = e.renew(wctx)
			e.mu.Unlock()
		case <-interrupted:
			interrupted = nil
			ctxErr = ctx.Err()
			e.mu.Lock()
			err = e.interrupt(wctx)
			e.mu.Unlock()
		}
		if err != nil {
			e.abort()
			return e.result(), err
		}
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if err := e.finish(wctx); err != nil {
		return e.result(), err
	}
	return e.result(), ctxErr
}

// renew rewrites the run, so that another process sees it is run
// (OwnerTimeout).
func (e *engine) renew(ctx context.Context) error {
	if e.run.Status != record.RunRunning {
		return nil
	}
	r, err := e.o.Store.UpdateRun(ctx, e.run, e.now())
	if errors.Is(err, record.ErrConflict) && e.cancelledInStore(ctx) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("workflow: renew run %s: %w", e.run.ID, err)
	}
	e.run = r
	return nil
}

// runReader reads a run back; every store.Store does.
type runReader interface {
	Run(ctx context.Context, id string) (record.Run, error)
}

// cancelledInStore reads the run after a write of it or of a task lost to
// another writer, and reports whether that was flow cancel: then the run
// stops as an interrupt stops it (attempts under way are stopped, their
// processes too; waits end; nothing more starts), its tasks are taken as
// flow cancel left them, and nothing more of the run is written.
func (e *engine) cancelledInStore(ctx context.Context) bool {
	rr, ok := e.o.Store.(runReader)
	if !ok {
		return false
	}
	r, err := rr.Run(ctx, e.run.ID)
	if err != nil || r.Status != record.RunCancelled {
		return false
	}
	e.run, e.cancelled, e.stopped = r, true, true
	e.cancelRuns()
	e.stopTimers()
	if recs, err := e.o.Store.RunTasks(ctx, e.run.ID); err == nil {
		for _, rt := range recs {
			if tr := e.index[rt.Name]; tr != nil {
				tr.rec, tr.phase = rt, held
			}
		}
	}
	_ = e.runEvent("the run was cancelled (flow cancel): its attempts are stopped")
	return true
}

// abort stops every attempt and waits for them, after a store failure.
func (e *engine) abort() {
	e.cancelRuns()
	e.mu.Lock()
	e.stopped = true
	e.stopTimers()
	n := e.running
	e.mu.Unlock()
	for n > 0 {
		if d := <-e.results; d.worker {
			n-- // its outcome is not written: the store failed
		}
	}
}

func (e *engine) stopTimers() {
	for _, tr := range e.tasks {
		if tr.stop != nil {
			close(tr.stop)
			tr.stop = nil
			e.timers--
		}
	}
}

// timeout ends the waits at the run's deadline and stops what runs: each
// task stays (or becomes) paused, nothing more starts, and the run is
// failed.
func (e *engine) timeout(ctx context.Context) error {
	e.timedOut = true
	e.cancelRuns()
	if err := e.runEvent("the run's timeout (" + e.def.Timeout.String() + ") passed: nothing more starts"); err != nil {
		return err
	}
	return e.endWaits(ctx, "the run's timeout ended the wait")
}

// endWaits ends every wait and backoff under way: a waiting task is
// paused again (why says by what), a task waiting to retry stays pending.
func (e *engine) endWaits(ctx context.Context, why string) error {
	for _, tr := range e.tasks {
		if tr.stop == nil {
			continue
		}
		close(tr.stop)
		tr.stop = nil
		e.timers--
		tr.phase = held
		if tr.rec.State == record.TaskWaiting {
			if err := e.move(ctx, tr, func(t *record.Task) { t.State, t.Stage = record.TaskPaused, "paused" },
				record.TaskEvent{Reason: why}, time.Time{}); err != nil {
				return err
			}
		}
	}
	return nil
}

// interrupt stops what runs when Start's context ends.
func (e *engine) interrupt(ctx context.Context) error {
	e.stopped = true
	return e.endWaits(ctx, "the wait was interrupted")
}

// finish writes the run's status.
func (e *engine) finish(ctx context.Context) error {
	status, _ := e.status()
	if e.run.Status == status {
		return nil
	}
	e.run.Status = status
	r, err := e.o.Store.UpdateRun(ctx, e.run, e.now())
	if errors.Is(err, record.ErrConflict) && e.cancelledInStore(ctx) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("workflow: run %s: %w", e.run.ID, err)
	}
	e.run = r
	return nil
}

// status is the run's status from its tasks, and why.
func (e *engine) status() (record.RunStatus, string) {
	if e.run.Status == record.RunCancelled {
		return record.RunCancelled, "the run was cancelled"
	}
	var failed, paused, waiting []string
	complete := 0
	for _, tr := range e.tasks {
		switch s := tr.rec.State; s {
		case record.TaskComplete:
			complete++
		case record.TaskFailed, record.TaskBlocked, record.TaskAuthWait, record.TaskSkipped, record.TaskCancelled:
			failed = append(failed, tr.def.Name+" "+string(s))
		case record.TaskPaused, record.TaskWaiting:
			paused = append(paused, tr.def.Name)
		default:
			waiting = append(waiting, tr.def.Name)
		}
	}
	switch {
	case complete == len(e.tasks):
		return record.RunComplete, ""
	case e.budgetOut:
		return record.RunFailed, fmt.Sprintf("the budget of %d task starts is spent", e.def.Budget.Runs)
	case len(failed) > 0:
		return record.RunFailed, strings.Join(failed, ", ")
	case e.timedOut:
		return record.RunFailed, fmt.Sprintf("the run's timeout passed at %s; start a new run id (not complete: %s)",
			e.run.Deadline.UTC().Format(time.RFC3339), strings.Join(append(paused, waiting...), ", "))
	case len(paused) > 0:
		return record.RunPaused, "paused on a quota: " + strings.Join(paused, ", ")
	}
	return record.RunPaused, "interrupted: " + strings.Join(waiting, ", ")
}

func (e *engine) result() Result {
	status, why := e.status()
	res := Result{RunID: e.run.ID, Status: status, Reason: why}
	if res.RunID == "" {
		res.RunID = e.o.RunID
	}
	for _, tr := range e.tasks {
		res.Tasks = append(res.Tasks, tr.rec)
		if q := tr.rec.Quota; q != nil && tr.rec.State == record.TaskPaused && !q.ResetAt.IsZero() {
			if res.EarliestReset.IsZero() || q.ResetAt.Before(res.EarliestReset) {
				res.EarliestReset = q.ResetAt
			}
		}
	}
	return res
}

// schedule decides every idle task, in dependency order: skipped when a
// need failed, started when its needs are complete and room remains.
func (e *engine) schedule(ctx context.Context) error {
	if e.stopped {
		return nil
	}
	for _, tr := range e.order {
		if tr.phase != idle {
			continue
		}
		switch tr.rec.State {
		case record.TaskComplete, record.TaskFailed, record.TaskSkipped, record.TaskCancelled, record.TaskBlocked:
			tr.phase = held
			continue
		}
		if err := e.decide(ctx, tr); err != nil {
			return err
		}
	}
	return nil
}

// decide handles one idle task whose state allows a run.
func (e *engine) decide(ctx context.Context, tr *taskRun) error {
	// A need that failed skips the task even while another is unfinished.
	for _, n := range tr.def.Needs {
		switch s := e.index[n].rec.State; s {
		case record.TaskFailed, record.TaskSkipped, record.TaskCancelled:
			tr.phase = held
			return e.move(ctx, tr, func(t *record.Task) {
				t.State, t.Stage, t.WaitingOn = record.TaskSkipped, "skipped", ""
			}, record.TaskEvent{Reason: fmt.Sprintf("needs %s, which is %s", n, s)}, time.Time{})
		}
	}
	for _, n := range tr.def.Needs {
		if e.index[n].rec.State != record.TaskComplete {
			return nil // it waits for its needs (WaitingOn says which)
		}
	}
	now := e.now()
	cand, ok := tr.available(now)
	admitted := tr.admitted
	tr.admitted = false
	if ok && e.canStart() && e.o.Quotas != nil && len(tr.def.Quota) > 0 && !admitted {
		e.admit(ctx, tr)
		return nil
	}
	if !ok {
		c, q := tr.earliest(now)
		if !tr.fresh || (!q.ResetAt.IsZero() && q.ResetAt.After(now)) {
			return e.hold(ctx, tr, now, record.TaskEvent{})
		}
		cand = c // resumed with an unknown or past reset: run at once
	}
	if !e.canStart() {
		return nil
	}
	tr.fresh = false
	if len(tr.def.Agent) > 0 && cand == "" {
		cand = tr.cands[0]
	}
	return e.launch(ctx, tr, cand)
}

// available returns the first candidate whose limit has passed.
func (tr *taskRun) available(now time.Time) (string, bool) {
	for _, c := range tr.cands {
		if !tr.limits[c].After(now) {
			return c, true
		}
	}
	return "", false
}

// earliest returns the candidate whose limit ends first, and the quota
// that limits it.
func (tr *taskRun) earliest(now time.Time) (string, record.Quota) {
	best := tr.cands[0]
	for _, c := range tr.cands[1:] {
		if tr.limits[c].Before(tr.limits[best]) {
			best = c
		}
	}
	if q, ok := tr.hits[best]; ok {
		return best, q
	}
	if q := tr.rec.Quota; q != nil && (best == "" || q.Provider == providerOf(best)) {
		return best, *q
	}
	return best, record.Quota{Provider: providerOf(best), ResetAt: tr.limits[best], Message: "limited until " + tr.limits[best].UTC().Format(time.RFC3339)}
}

// providerOf is a candidate's provider name ("" for a command or function:
// "unknown").
func providerOf(cand string) string {
	if a, ok := agentcli.AgentNamed(cand); ok {
		return a.Provider
	}
	return "unknown"
}

// hold decides a task that cannot run now, every candidate limited: a
// known reset within max_wait is waited for, anything else leaves it
// paused. ev holds what the attempt that ended says, if one did.
func (e *engine) hold(ctx context.Context, tr *taskRun, now time.Time, ev record.TaskEvent) error {
	c, q := tr.earliest(now)
	if ev.Candidate == "" {
		ev.Candidate = c
	}
	tr.afterPause = true
	maxWait := e.def.OnQuota.MaxWait
	if !q.ResetAt.IsZero() && maxWait > 0 && q.ResetAt.Sub(now) <= maxWait && !e.timedOut && !e.stopped {
		until := later(quota.RerunAt(now, e.o.Policy.ResumeAt(q.ResetAt, e.o.Rand)), tr.limits[c])
		tr.phase = timed
		e.arm(tr, until)
		ev.Reason = joinReason(ev.Reason, fmt.Sprintf("waiting for the reset of %s (within max_wait %s)", quotaName(q), maxWait))
		return e.move(ctx, tr, func(t *record.Task) {
			t.State, t.Stage = record.TaskWaiting, "waiting until "+until.UTC().Format(time.RFC3339)
			t.Quota, t.WaitingOn, t.Limited = &q, waitingOn(q), agentLimits(tr)
		}, ev, until)
	}
	tr.phase = held
	if tr.rec.State == record.TaskPaused && ev.AttemptID == "" {
		return nil // paused already, and still
	}
	why := "paused on " + quotaName(q)
	if q.ResetAt.IsZero() {
		why += ", reset unknown"
	} else {
		why += " until " + q.ResetAt.UTC().Format(time.RFC3339)
	}
	ev.Reason = joinReason(ev.Reason, why)
	return e.move(ctx, tr, func(t *record.Task) {
		t.State, t.Stage = record.TaskPaused, "paused"
		t.Quota, t.WaitingOn, t.Limited = &q, waitingOn(q), agentLimits(tr)
	}, ev, time.Time{})
}

// joinReason joins two parts of a reason.
func joinReason(a, b string) string {
	if a == "" {
		return b
	}
	return a + "; " + b
}

func waitingOn(q record.Quota) string { return "quota " + quotaName(q) }

func quotaName(q record.Quota) string {
	if q.Resource == "" {
		return q.Provider
	}
	return q.Provider + "/" + q.Resource
}

// agentLimits are the limits a record keeps: an agent task's, per
// candidate.
func agentLimits(tr *taskRun) map[string]time.Time {
	if len(tr.def.Agent) == 0 {
		return nil
	}
	out := map[string]time.Time{}
	for c, t := range tr.limits {
		out[c] = t
	}
	return out
}

// arm starts a task's timer: at until, the task is decided again.
func (e *engine) arm(tr *taskRun, until time.Time) {
	stop := make(chan struct{})
	tr.stop = stop
	e.timers++
	fired := e.o.Clock.After(until.Sub(e.now()))
	go func() {
		select {
		case <-fired:
			e.results <- done{apply: func() error {
				if tr.stop == stop {
					tr.stop = nil
					e.timers--
					tr.phase = idle
				}
				return nil
			}}
		case <-stop:
		}
	}()
}

// move writes one task change with its event, and tells Events.
func (e *engine) move(ctx context.Context, tr *taskRun, change func(*record.Task), ev record.TaskEvent, until time.Time) error {
	if e.cancelled {
		return nil // flow cancel wrote the run's tasks
	}
	if tr.rec.State == record.TaskComplete {
		return fmt.Errorf("workflow: task %s is complete and never written again", tr.def.Name)
	}
	now := e.now()
	t := tr.rec
	change(&t)
	ev.RunID, ev.Task, ev.At, ev.From, ev.To = t.RunID, t.Name, now, tr.rec.State, t.State
	ev.Reason = safe(ev.Reason)
	t.Stage = safe(t.Stage)
	stored, err := e.o.Store.UpdateTask(ctx, t, &ev, now)
	if errors.Is(err, record.ErrConflict) && e.checkpointed(ctx, tr) {
		// `layover checkpoint` inside the attempt wrote the task: the
		// change applies to what it wrote.
		t = tr.rec
		change(&t)
		t.Stage = safe(t.Stage)
		stored, err = e.o.Store.UpdateTask(ctx, t, &ev, now)
	}
	if errors.Is(err, record.ErrConflict) && e.cancelledInStore(ctx) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("workflow: task %s: %w", t.Name, err)
	}
	tr.rec = stored
	if e.o.Events != nil {
		e.o.Events(Event{At: now, RunID: t.RunID, Task: t.Name, From: ev.From, To: ev.To, Reason: ev.Reason, Until: until})
	}
	return nil
}

// runEvent tells Events of something about the whole run.
func (e *engine) runEvent(reason string) error {
	if e.o.Events != nil {
		e.o.Events(Event{At: e.now(), RunID: e.run.ID, Reason: reason})
	}
	return nil
}

// safe makes a text the store keeps and a terminal shows one bounded line.
func safe(s string) string { return textsafe.Line(s, record.MaxTextBytes) }

func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}
