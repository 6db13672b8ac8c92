package workflow

// Durable runs (docs/workflows.md, Durable runs): flow submit stores the
// run and hands each task to the durable host as a job; a Coordinator,
// which serve runs, moves the task records to match their jobs and
// releases the tasks whose needs completed.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/layoverhq/layover/clock"
	"github.com/layoverhq/layover/host"
	"github.com/layoverhq/layover/job"
	"github.com/layoverhq/layover/provider/agentcli"
	"github.com/layoverhq/layover/workflow/record"
)

// DurableStore is what a durable run needs of layover's store; every
// store.Store has it.
type DurableStore interface {
	Store
	Run(ctx context.Context, id string) (record.Run, error)
	Runs(ctx context.Context) ([]record.Run, error)
	Job(ctx context.Context, id string) (job.Job, error)
	JobHistory(ctx context.Context, id string) (job.History, error)
}

// SubmitOptions configure one Submit. RunID, Store and Jobs are required.
type SubmitOptions struct {
	// RunID names the run; an existing durable run of the same definition
	// is the same submission.
	RunID string
	Store DurableStore
	// Jobs is the host's front door the tasks' jobs enter by.
	Jobs *host.Jobs
	// Dir is the tasks' working directory (the workflow file's).
	Dir string
	// Clock tells the time (default the system's).
	Clock clock.Clock
}

// ErrNotDurable is Submit's error for a run id an in-process run (flow
// run) already holds.
var ErrNotDurable = errors.New("workflow: the run is an in-process run (flow run resumes it)")

// Submit stores def as a durable run under o.RunID, every task pending,
// and submits a job for each task whose needs are met (none). It returns
// the run's tasks as stored. Submitting the same run id and definition
// again submits nothing twice.
func Submit(ctx context.Context, def Definition, o SubmitOptions) ([]record.Task, error) {
	switch {
	case o.RunID == "":
		return nil, errors.New("workflow: a run id is required")
	case !host.ValidID(o.RunID):
		return nil, fmt.Errorf("workflow: run id %q: use letters, digits, '.', '_' and '-' (at most 128)", o.RunID)
	case o.Store == nil || o.Jobs == nil:
		return nil, errors.New("workflow: a store and the host's jobs are required")
	}
	if o.Clock == nil {
		o.Clock = clock.Real{}
	}
	def = def.WithDefaults()
	if err := def.Validate(); err != nil {
		return nil, fmt.Errorf("workflow: %w", err)
	}
	for _, t := range def.Tasks {
		if t.Func != nil {
			return nil, fmt.Errorf("workflow: task %s is a Go function: only flow run runs those", t.Name)
		}
	}
	defJ, err := canonical(def)
	if err != nil {
		return nil, err
	}
	now := o.Clock.Now()
	r := record.Run{ID: o.RunID, Name: def.Name, Definition: defJ, Status: record.RunRunning, Durable: true}
	if def.Timeout > 0 {
		r.Deadline = now.Add(def.Timeout)
	}
	var recs []record.Task
	for _, t := range def.Tasks {
		rt := record.Task{RunID: r.ID, Name: t.Name, State: record.TaskPending, Stage: "pending", Workdir: o.Dir}
		if len(t.Needs) > 0 {
			rt.WaitingOn = "needs " + strings.Join(t.Needs, ", ")
		}
		recs = append(recs, rt)
	}
	stored, _, err := o.Store.CreateRun(ctx, r, recs, now)
	if err != nil {
		if errors.Is(err, record.ErrConflict) {
			return nil, fmt.Errorf("workflow: run %s exists with another definition: %w", r.ID, err)
		}
		return nil, fmt.Errorf("workflow: create run %s: %w", r.ID, err)
	}
	if !stored.Durable {
		return nil, fmt.Errorf("%w: run %s", ErrNotDurable, r.ID)
	}
	c := &Coordinator{Store: o.Store, Jobs: o.Jobs, Clock: o.Clock}
	if err := c.syncRun(ctx, stored); err != nil {
		return nil, err
	}
	return o.Store.RunTasks(ctx, r.ID)
}

// Coordinator keeps the durable runs moving: Sync reads each task's job,
// moves the task's record to match, releases the tasks whose needs
// completed, skips the dependents of a failed task, switches an agent
// task limited by a quota to a candidate that is not, and sets the run's
// status. Every write is a compare-and-set on the record and every job id
// is derived from the run and task, so Sync may run again, or on two
// hosts at once, without submitting a job twice.
type Coordinator struct {
	Store DurableStore
	Jobs  *host.Jobs
	Clock clock.Clock // default the system's
	// Moved, when set, is told of each run whose status this Sync changed,
	// as stored.
	Moved func(record.Run)
}

// Sync brings every durable run that has not ended up to date with its
// jobs. A run that fails to sync does not stop the others; the first
// error is returned.
func (c *Coordinator) Sync(ctx context.Context) error {
	runs, err := c.Store.Runs(ctx)
	if err != nil {
		return fmt.Errorf("workflow: list runs: %w", err)
	}
	var first error
	for _, r := range runs {
		if r.Durable && r.Status == record.RunCancelled && c.now().Sub(r.UpdatedAt) < cancelSweep {
			if err := c.stopRun(ctx, r); err != nil && first == nil {
				first = err
			}
			continue
		}
		if !r.Durable || r.Status == record.RunComplete || r.Status == record.RunCancelled {
			continue
		}
		if err := c.syncRun(ctx, r); err != nil && first == nil {
			first = err
		}
	}
	return first
}

// cancelSweep is how long after a durable run was cancelled Sync still
// cancels its jobs that have not ended: flow cancel cancels them, and this
// catches a job released while the cancel was under way.
const cancelSweep = time.Hour

// stopRun cancels the jobs of a cancelled run's tasks that have not ended.
func (c *Coordinator) stopRun(ctx context.Context, r record.Run) error {
	recs, err := c.Store.RunTasks(ctx, r.ID)
	if err != nil {
		return fmt.Errorf("workflow: read run %s: %w", r.ID, err)
	}
	for _, rt := range recs {
		if rt.JobID == "" {
			continue
		}
		if err := c.stopJob(ctx, r, Task{Name: rt.Name}, rt.JobID); err != nil {
			return err
		}
	}
	return nil
}

// maxSyncTries bounds the re-reads of a run whose records another writer
// changed under this Sync.
const maxSyncTries = 5

// syncRun syncs one run, reading it again after a conflicting write.
func (c *Coordinator) syncRun(ctx context.Context, r record.Run) error {
	var err error
	for try := 0; try < maxSyncTries; try++ {
		if try > 0 {
			if r, err = c.Store.Run(ctx, r.ID); err != nil {
				return fmt.Errorf("workflow: read run %s: %w", r.ID, err)
			}
		}
		if err = c.syncOnce(ctx, r); !errors.Is(err, record.ErrConflict) {
			return err
		}
	}
	return err
}

func (c *Coordinator) now() time.Time {
	if c.Clock == nil {
		return time.Now()
	}
	return c.Clock.Now()
}

// syncOnce is one pass over a run's tasks, in dependency order, so that a
// task completed in this pass releases its dependents in the same pass.
func (c *Coordinator) syncOnce(ctx context.Context, r record.Run) error {
	def, err := decodeCanonical(r.Definition)
	if err != nil {
		return fmt.Errorf("workflow: run %s: %w", r.ID, err)
	}
	recs, err := c.Store.RunTasks(ctx, r.ID)
	if err != nil {
		return fmt.Errorf("workflow: read run %s: %w", r.ID, err)
	}
	byName := map[string]*record.Task{}
	for i := range recs {
		byName[recs[i].Name] = &recs[i]
	}
	if r.Status == record.RunCancelled {
		return nil
	}
	p := &pass{run: r, def: def, byName: byName, budget: def.Budget.Runs,
		timedOut: !r.Deadline.IsZero() && !c.now().Before(r.Deadline), moved: map[*record.Task]int{}}
	if p.budget <= 0 {
		p.budget = DefaultBudgetRuns
	}
	if err := c.readJobs(ctx, p, recs); err != nil {
		return err
	}
	for _, t := range def.Order() {
		rt := byName[t.Name]
		if rt == nil {
			return fmt.Errorf("workflow: run %s: task %s is not stored", r.ID, t.Name)
		}
		if err := c.syncTask(ctx, p, t, rt); err != nil {
			return err
		}
	}
	if err := c.flush(ctx, p); err != nil {
		return err
	}
	return c.settleRun(ctx, r, recs, p.timedOut)
}

// settleRun sets run r's status and starts from its tasks recs, as a pass
// left them: a compare-and-set on r's version. A run's status and starts
// follow its tasks' records alone, so when another writer changed the run
// first (two syncs of one run at once), the run and then its tasks are
// read again and the run set from those, without reading the jobs again:
// every writer of a task writes it before the run, so tasks read after
// the run are as new as those its writer saw. A run already as they say,
// or cancelled, is left as it is: its Moved, if any, was its writer's.
func (c *Coordinator) settleRun(ctx context.Context, r record.Run, recs []record.Task, timedOut bool) error {
	for try := 1; ; try++ {
		status, starts := durableStatus(recs, timedOut), 0
		for _, rt := range recs {
			starts += rt.Starts
		}
		if r.Status == record.RunCancelled || (status == r.Status && starts == r.Starts) {
			return nil
		}
		r.Status, r.Starts = status, starts
		stored, err := c.Store.UpdateRun(ctx, r, c.now())
		if err == nil {
			if c.Moved != nil {
				c.Moved(stored)
			}
			return nil
		}
		if !errors.Is(err, record.ErrConflict) || try == maxSyncTries {
			return fmt.Errorf("workflow: run %s: %w", r.ID, err)
		}
		id := r.ID
		if r, err = c.Store.Run(ctx, id); err != nil {
			return fmt.Errorf("workflow: read run %s: %w", id, err)
		}
		if recs, err = c.Store.RunTasks(ctx, id); err != nil {
			return fmt.Errorf("workflow: read run %s: %w", id, err)
		}
	}
}

// pass is what one syncOnce knows of its run.
type pass struct {
	run    record.Run
	def    Definition
	byName map[string]*record.Task
	// budget is the run's budget.runs: task starts, quota reruns included.
	budget int
	// timedOut: the run's timeout has passed; nothing more starts.
	timedOut bool

	// The moves recorded and not yet written (flush), the records they
	// are of, and what waits for them to be written, in order.
	writes  []record.TaskWrite
	targets []*record.Task
	moved   map[*record.Task]int
	after   []func() error

	// jobs are the jobs of the tasks syncTask follows, read together at
	// the start of the pass (readJobs), by id; asked are the ids read, so
	// an id asked and absent has no job. Nil when the store reads one job
	// at a time.
	jobs  map[string]job.Job
	asked map[string]bool
}

// jobsReader is a store that reads many jobs in one statement; every
// store.Store is.
type jobsReader interface {
	JobsByID(ctx context.Context, ids []string) (map[string]job.Job, error)
}

// readJobs reads, in one call when the store can, the job of every task
// of recs that syncTask reads a job for: each that has a job and is
// neither ended nor stopped. A task's job is read before the pass moves
// any task, as syncTask would read it at the task's turn: in a pass, only
// a task's own turn submits or cancels its job.
func (c *Coordinator) readJobs(ctx context.Context, p *pass, recs []record.Task) error {
	r, ok := c.Store.(jobsReader)
	if !ok {
		return nil
	}
	var ids []string
	for i := range recs {
		if rt := &recs[i]; rt.JobID != "" && !rt.State.Terminal() && !stopped(rt) {
			ids = append(ids, rt.JobID)
		}
	}
	jobs, err := r.JobsByID(ctx, ids)
	if err != nil {
		return fmt.Errorf("workflow: run %s: read its jobs: %w", p.run.ID, err)
	}
	p.jobs, p.asked = jobs, make(map[string]bool, len(ids))
	for _, id := range ids {
		p.asked[id] = true
	}
	return nil
}

// job is the job id as the pass read it (readJobs), or as the store holds
// it now for an id the pass did not read: job.ErrNotFound when it has
// none.
func (c *Coordinator) job(ctx context.Context, p *pass, id string) (job.Job, error) {
	if !p.asked[id] {
		return c.Store.Job(ctx, id)
	}
	j, ok := p.jobs[id]
	if !ok {
		return job.Job{}, job.ErrNotFound
	}
	return j, nil
}

// then does f once the pass's moves so far are written.
func (p *pass) then(f func() error) error {
	p.after = append(p.after, f)
	return nil
}

// starts is the run's task starts so far: the sum of its tasks', each the
// Runs of its jobs as last read (Coordinator.counts), so every host and
// every Sync counts the same.
func (p *pass) starts() int {
	n := 0
	for _, rt := range p.byName {
		n += rt.Starts
	}
	return n
}

// spent reports whether the run's budget is used up: nothing more starts.
func (p *pass) spent() bool { return p.starts() >= p.budget }

// roomToRelease reports whether a task may be released: the starts made,
// and one for each released task whose job has not started yet, leave
// room in the budget.
func (p *pass) roomToRelease() bool {
	n := p.starts()
	for _, rt := range p.byName {
		if rt.State == record.TaskRunning && rt.Starts == 0 {
			n++
		}
	}
	return n < p.budget
}

// The stages of a task that a durable run stopped while it was not
// running: the budget was spent, or the run's timeout passed. Its job is
// cancelled, and the task keeps its state (a paused task its quota record).
const (
	stageBudgetSpent = "the budget is spent"
	stageTimedOut    = "the run's timeout passed"
	// stageResetPastTimeout: the task's quota resets after the run's
	// deadline, so the host cancelled its job instead of deferring it.
	stageResetPastTimeout = "its quota resets after the run's timeout"
)

// stopped reports whether a task's stage says a durable run stopped it.
func stopped(rt *record.Task) bool {
	switch rt.Stage {
	case stageBudgetSpent, stageTimedOut, stageResetPastTimeout:
		return true
	}
	return false
}

// durableStatus is a durable run's status from its tasks after a pass:
// complete when every one is, running while a task's job is ready or
// running, failed when one failed, was skipped or needs an operator, when
// the budget stopped a task or the run's timeout passed (timedOut), else
// paused (on a quota).
func durableStatus(recs []record.Task, timedOut bool) record.RunStatus {
	complete, failed, paused, moving := 0, 0, 0, 0
	for _, t := range recs {
		switch t.State {
		case record.TaskComplete:
			complete++
		case record.TaskFailed, record.TaskBlocked, record.TaskAuthWait, record.TaskSkipped, record.TaskCancelled:
			failed++
		case record.TaskPaused, record.TaskWaiting:
			paused++
		case record.TaskRunning:
			moving++
		}
		if t.Stage == stageBudgetSpent {
			failed++
		}
		// A task still pending after a pass waits for a need that has
		// not completed: the need's state says where the run stands.
	}
	switch {
	case complete == len(recs):
		return record.RunComplete
	case moving > 0:
		return record.RunRunning
	case failed > 0, timedOut:
		return record.RunFailed
	}
	return record.RunPaused
}

// syncTask moves one task: a pending one is released or skipped, one
// with a job takes its job's state. Once the budget is spent or the run's
// timeout passed nothing more starts: no task is released, and the job of
// a task that is not running is cancelled, the task keeping its state.
func (c *Coordinator) syncTask(ctx context.Context, p *pass, t Task, rt *record.Task) error {
	r, def := p.run, p.def
	if rt.State.Terminal() {
		if rt.State == record.TaskFailed && rt.JobID != "" {
			return c.stopJob(ctx, r, t, rt.JobID)
		}
		return nil
	}
	if stopped(rt) {
		if rt.JobID == "" {
			return nil
		}
		return c.stopJob(ctx, r, t, rt.JobID) // stopped: it stays as it is
	}
	if rt.JobID == "" {
		if rt.State != record.TaskPending {
			return nil
		}
		for _, n := range t.Needs {
			switch s := p.byName[n].State; s {
			case record.TaskFailed, record.TaskSkipped, record.TaskCancelled:
				return c.move(ctx, p, rt, record.TaskEvent{Reason: "need " + n + " is " + string(s)}, func(x *record.Task) {
					x.State, x.Stage, x.WaitingOn = record.TaskSkipped, "skipped", ""
				})
			case record.TaskComplete:
			default:
				return nil
			}
		}
		switch {
		case p.timedOut:
			return nil
		case p.spent():
			return c.stopForBudget(ctx, p, t, rt, nil)
		case !p.roomToRelease():
			return nil // the released tasks' first starts may use what is left
		}
		return c.release(ctx, p, t, rt, firstCandidate(t), r.ID+"."+t.Name, "released: its needs are complete")
	}
	j, err := c.job(ctx, p, rt.JobID)
	if errors.Is(err, job.ErrNotFound) {
		// Recorded, then the process ended before it submitted: submit it
		// now (the same id and spec).
		return c.submit(ctx, r, def, t, rt.JobID, rt.Candidate, rt.Workdir)
	}
	if err != nil {
		return fmt.Errorf("workflow: run %s task %s: job %s: %w", r.ID, t.Name, rt.JobID, err)
	}
	if j.State == job.Deferred && def.OnQuota.Action == ActionFail {
		// on_quota fail: the quota fails the task, as any failure; the
		// failure is recorded before the job is cancelled, and a failed
		// task's job that has not ended is cancelled at every Sync.
		q, err := c.quotaOf(ctx, rt, j)
		if err != nil {
			return err
		}
		starts, attempts, err := c.counts(ctx, rt, j)
		if err != nil {
			return err
		}
		if err := c.move(ctx, p, rt, record.TaskEvent{Reason: "on_quota fail: " + j.Stage, Candidate: rt.Candidate}, func(x *record.Task) {
			x.State, x.Stage, x.WaitingOn, x.Quota = record.TaskFailed, "failed", "", q
			x.Starts, x.Attempts = starts, attempts
		}); err != nil {
			return err
		}
		return p.then(func() error { return c.stopJob(ctx, r, t, j.ID) })
	}
	if waitsToStart(j) {
		starts, _, err := c.counts(ctx, rt, j)
		if err != nil {
			return err
		}
		if p.timedOut || p.starts()-rt.Starts+starts >= p.budget {
			q, err := c.quotaOf(ctx, rt, j)
			if err != nil {
				return err
			}
			w := waiting{job: j, starts: starts, quota: q}
			if p.timedOut {
				return c.stopForTimeout(ctx, p, t, rt, j, &w)
			}
			return c.stopForBudget(ctx, p, t, rt, &w)
		}
	}
	if j.State == job.Cancelled && p.timedOut {
		return c.stopForTimeout(ctx, p, t, rt, j, nil) // the host cancelled it at the run's deadline
	}
	if j.State == job.Cancelled && !p.run.Deadline.IsZero() {
		if reset, err := c.declaredReset(ctx, rt, j); err != nil || reset.After(p.run.Deadline) {
			if err != nil {
				return err
			}
			return c.pausePastTimeout(ctx, p, rt, j, reset)
		}
	}
	if j.State == job.Deferred && len(t.Agent) > 1 {
		if next, ok := nextCandidate(t, rt, c.now()); ok {
			return c.switchCandidate(ctx, p, t, rt, j, next)
		}
	}
	return c.follow(ctx, p, rt, j)
}

// waitsToStart reports whether a job is not running but may start again:
// ready, deferred, resumable or waiting for credentials.
func waitsToStart(j job.Job) bool {
	switch j.State {
	case job.Ready, job.Deferred, job.Resumable, job.AuthWait:
		return true
	}
	return false
}

// waiting is a task's job that waits to start again, as a stop settles
// the task on it: the job, the task's starts and the quota it waits on
// (nil: none).
type waiting struct {
	job    job.Job
	starts int
	quota  *record.Quota
}

// stopForBudget stops a task the spent budget leaves without a start: a
// task that was to be released (w nil) stays pending; one whose job waits
// to start again (after a quota, a transient failure, for credentials)
// takes the job's state, a paused one its quota record, and the job is
// cancelled after the record is written.
func (c *Coordinator) stopForBudget(ctx context.Context, p *pass, t Task, rt *record.Task, w *waiting) error {
	ev := record.TaskEvent{Reason: fmt.Sprintf("the budget of %d task starts is spent: nothing more starts", p.budget), Candidate: rt.Candidate}
	if err := c.move(ctx, p, rt, ev, func(x *record.Task) {
		if w != nil {
			settle(x, *w)
		}
		x.Stage = stageBudgetSpent
	}); err != nil {
		return err
	}
	if w == nil {
		return nil
	}
	return p.then(func() error { return c.stopJob(ctx, p.run, t, w.job.ID) })
}

// stopForTimeout stops a task at the run's deadline: its job j (which the
// host cancels at the same deadline) is cancelled after the record is
// written, and the task is paused, keeping its quota record, but for a
// pending one, which stays pending. w is j when it waits to start, else
// nil.
func (c *Coordinator) stopForTimeout(ctx context.Context, p *pass, t Task, rt *record.Task, j job.Job, w *waiting) error {
	why := "the run's timeout passed at " + p.run.Deadline.UTC().Format(time.RFC3339) + ": nothing more starts; start a new run id"
	if err := c.move(ctx, p, rt, record.TaskEvent{Reason: why, Candidate: rt.Candidate}, func(x *record.Task) {
		if w != nil {
			settle(x, *w)
		}
		if x.State == record.TaskRunning {
			x.State = record.TaskPaused
		}
		x.Stage = stageTimedOut
	}); err != nil {
		return err
	}
	return p.then(func() error { return c.stopJob(ctx, p.run, t, j.ID) })
}

// pausePastTimeout pauses a task whose job the host cancelled because its
// quota resets after the run's deadline: as flow run, the task is paused
// with its quota record, and nothing starts it again (the run fails at its
// deadline).
func (c *Coordinator) pausePastTimeout(ctx context.Context, p *pass, rt *record.Task, j job.Job, reset time.Time) error {
	starts, attempts, err := c.counts(ctx, rt, j)
	if err != nil {
		return err
	}
	q := jobQuota(j)
	q.ResetAt = reset
	why := fmt.Sprintf("paused on %s until %s, after the run's timeout (%s): it does not run again",
		quotaName(*q), reset.UTC().Format(time.RFC3339), p.run.Deadline.UTC().Format(time.RFC3339))
	return c.move(ctx, p, rt, record.TaskEvent{Reason: why, Candidate: rt.Candidate}, func(x *record.Task) {
		x.State, x.Stage, x.Quota, x.WaitingOn = record.TaskPaused, stageResetPastTimeout, q, waitingOn(*q)
		x.Starts, x.Attempts, x.SessionID = starts, attempts, j.SessionID
	})
}

// settle gives a task the state of its job that waits to start, as follow
// would: paused with its quota for a deferred or resumable job, auth-wait,
// or pending for a ready one (a retry); and its starts.
func settle(x *record.Task, w waiting) {
	switch w.job.State {
	case job.Deferred, job.Resumable:
		x.State, x.Quota, x.WaitingOn = record.TaskPaused, w.quota, ""
		if w.quota != nil {
			x.WaitingOn = waitingOn(*w.quota)
		}
	case job.AuthWait:
		x.State = record.TaskAuthWait
	default:
		x.State = record.TaskPending
	}
	x.Starts, x.SessionID = w.starts, w.job.SessionID
}

// firstCandidate is a task's first agent candidate ("" for a command).
func firstCandidate(t Task) string {
	if len(t.Agent) == 0 {
		return ""
	}
	a, _ := agentcli.AgentNamed(t.Agent[0])
	return a.Name
}

// nextCandidate is the first candidate of t after the current one that is
// not limited at now.
func nextCandidate(t Task, rt *record.Task, now time.Time) (string, bool) {
	var names []string
	cur := -1
	for i, a := range t.Agent {
		ag, _ := agentcli.AgentNamed(a)
		names = append(names, ag.Name)
		if ag.Name == rt.Candidate {
			cur = i
		}
	}
	for k := 1; k < len(names); k++ {
		n := names[(cur+k+len(names))%len(names)]
		if n == rt.Candidate {
			continue
		}
		if until, ok := rt.Limited[n]; !ok || !until.After(now) {
			return n, true
		}
	}
	return "", false
}

// switchCandidate records the switch (a new job id), cancels the deferred
// job and submits the next candidate's with the brief.
func (c *Coordinator) switchCandidate(ctx context.Context, p *pass, t Task, rt *record.Task, old job.Job, next string) error {
	r, def := p.run, p.def
	id := nextJobID(r.ID, t.Name, rt.JobID)
	prev := rt.Candidate
	until, err := c.declaredReset(ctx, rt, old)
	if err != nil {
		return err
	}
	if until.IsZero() {
		until = old.RunAt // no reset declared: limited until the host's probe
	}
	if err := c.move(ctx, p, rt, record.TaskEvent{Reason: "switched from " + prev + " after a quota, with the brief", Candidate: next},
		func(x *record.Task) {
			if x.Limited == nil {
				x.Limited = map[string]time.Time{}
			}
			x.Limited[prev] = until
			x.State, x.Stage, x.Candidate, x.SessionID, x.JobID, x.Quota = record.TaskRunning, "ready", next, "", id, nil
		}); err != nil {
		return err
	}
	return p.then(func() error {
		if _, err := c.Jobs.Cancel(ctx, old.ID); err != nil && !errors.Is(err, job.ErrTransition) {
			return fmt.Errorf("workflow: run %s task %s: cancel job %s: %w", r.ID, t.Name, old.ID, err)
		}
		return c.submit(ctx, r, def, t, id, next, rt.Workdir)
	})
}

// stopJob cancels a task's job that has not ended.
func (c *Coordinator) stopJob(ctx context.Context, r record.Run, t Task, id string) error {
	j, err := c.Store.Job(ctx, id)
	if errors.Is(err, job.ErrNotFound) || (err == nil && j.State.Terminal()) {
		return nil
	}
	if err == nil {
		_, err = c.Jobs.Cancel(ctx, id)
	}
	if err != nil && !errors.Is(err, job.ErrTransition) {
		return fmt.Errorf("workflow: run %s task %s: cancel job %s: %w", r.ID, t.Name, id, err)
	}
	return nil
}

// nextJobID is the job id after a candidate switch from cur:
// <run>.<task>.<n>, n from 2.
func nextJobID(run, task, cur string) string {
	base := run + "." + task
	n := 1
	if rest, ok := strings.CutPrefix(cur, base+"."); ok {
		if k, err := strconv.Atoi(rest); err == nil {
			n = k
		}
	}
	return base + "." + strconv.Itoa(n+1)
}

// release records a task's job id, then submits the job: a crash between
// the two leaves a task whose job the next Sync submits.
func (c *Coordinator) release(ctx context.Context, p *pass, t Task, rt *record.Task, cand, id, why string) error {
	r, def := p.run, p.def
	if err := c.move(ctx, p, rt, record.TaskEvent{Reason: why, Candidate: cand}, func(x *record.Task) {
		x.State, x.Stage, x.WaitingOn, x.Candidate, x.JobID = record.TaskRunning, "ready", "", cand, id
	}); err != nil {
		return err
	}
	return p.then(func() error { return c.submit(ctx, r, def, t, id, cand, rt.Workdir) })
}

// submit submits task t's job id on cand; the same id and spec is the
// same job, so submitting again is harmless.
func (c *Coordinator) submit(ctx context.Context, r record.Run, def Definition, t Task, id, cand, dir string) error {
	spec, err := JobSpec(r, def, t, cand, dir)
	if err != nil {
		return err
	}
	if _, _, err := c.Jobs.Submit(ctx, id, spec); err != nil {
		return fmt.Errorf("workflow: run %s task %s: submit job %s: %w", r.ID, t.Name, id, err)
	}
	return nil
}

// JobSpec is the job of task t of run r on candidate cand ("" for a
// command task), run in dir: sh -c RUN, or the candidate's start command
// with the brief; its resume command continues the conversation (none for
// resume: restart, which starts again with the brief).
func JobSpec(r record.Run, def Definition, t Task, cand, dir string) (job.Spec, error) {
	s := job.Spec{
		Name: r.ID + "." + t.Name, Workdir: dir, EnvNames: t.Env, Quota: t.Quota,
		CheckCmd: t.Check, VerifyCmd: t.Verify, MaxAttempts: def.Attempts, Deadline: r.Deadline,
		Flow: &job.FlowRef{Run: r.ID, Task: t.Name},
	}
	if len(t.Agent) == 0 {
		s.Argv = []string{"sh", "-c", t.Run}
		return s, nil
	}
	a, ok := agentcli.AgentNamed(cand)
	if !ok {
		return job.Spec{}, fmt.Errorf("workflow: task %s: unknown agent %q", t.Name, cand)
	}
	s.Agent = a.Name
	s.Argv = []string{"sh", "-c", strings.ReplaceAll(a.StartCmd, "{prompt}", agentcli.ShellQuote(t.Prompt))}
	if t.Resume != ResumeRestart {
		s.ResumeCmd = a.ResumeCmd
	}
	return s, nil
}

// follow moves a task's record to its job's state.
func (c *Coordinator) follow(ctx context.Context, p *pass, rt *record.Task, j job.Job) error {
	var to record.TaskState
	switch j.State {
	case job.Ready, job.Running:
		to = record.TaskRunning
	case job.Deferred, job.Resumable:
		to = record.TaskPaused
	case job.AuthWait:
		to = record.TaskAuthWait
	case job.Blocked:
		to = record.TaskBlocked
	case job.Complete:
		to = record.TaskComplete
	case job.Failed:
		to = record.TaskFailed
	case job.Cancelled:
		to = record.TaskCancelled
	default:
		return nil
	}
	stage := safe(j.Stage)
	if stage == "" {
		stage = string(to)
	}
	var q *record.Quota
	if to == record.TaskPaused {
		var err error
		if q, err = c.quotaOf(ctx, rt, j); err != nil {
			return err
		}
	}
	starts, attempts, err := c.counts(ctx, rt, j)
	if err != nil {
		return err
	}
	if rt.State == to && rt.Stage == stage && rt.Starts == starts && rt.Attempts == attempts && sameQuota(rt.Quota, q) {
		return nil
	}
	ev := record.TaskEvent{Reason: "job " + j.ID + " is " + string(j.State), Candidate: rt.Candidate}
	if rt.State == to {
		ev.Reason = "job " + j.ID + ": " + stage
	}
	return c.move(ctx, p, rt, ev, func(x *record.Task) {
		x.State, x.Stage, x.Starts, x.Attempts, x.Quota, x.SessionID = to, stage, starts, attempts, q, j.SessionID
		x.WaitingOn = ""
		if q != nil {
			x.WaitingOn = waitingOn(*q)
		}
		if j.Checkpoint != nil {
			cp := *j.Checkpoint
			x.Checkpoint = &cp
		}
	})
}

// counts are a task's starts and counted failures: its job's, plus those
// of the jobs it ran before a switch of candidate (<run>.<task>, .2, …).
func (c *Coordinator) counts(ctx context.Context, rt *record.Task, j job.Job) (starts, attempts int, err error) {
	starts, attempts = j.Runs, j.Attempts
	base := rt.RunID + "." + rt.Name
	for id := base; id != j.ID; id = nextJobID(rt.RunID, rt.Name, id) {
		if !strings.HasPrefix(j.ID, base) || len(id) > len(j.ID) {
			break // not a job id this task's switches made
		}
		prev, err := c.Store.Job(ctx, id)
		if errors.Is(err, job.ErrNotFound) {
			continue
		}
		if err != nil {
			return 0, 0, fmt.Errorf("workflow: run %s task %s: job %s: %w", rt.RunID, rt.Name, id, err)
		}
		starts, attempts = starts+prev.Runs, attempts+prev.Attempts
	}
	return starts, attempts, nil
}

// quotaOf is the quota record of a task whose job j is deferred or
// resumable: the quota as the host deferred the job on it, with the reset
// the provider declared (zero when it declared none: a probe), not the
// job's wake-up (the reset plus the policy's margin and jitter). The
// reset is read from the job's last deferral once per deferral: while
// the job's stage is the one recorded, or the job woke from it, the
// recorded reset stands. For an agent task with other candidates limited,
// the reset is the earliest of the limits still ahead, as flow run's.
func (c *Coordinator) quotaOf(ctx context.Context, rt *record.Task, j job.Job) (*record.Quota, error) {
	q := jobQuota(j)
	switch {
	case rt.Quota != nil && rt.JobID == j.ID && rt.State == record.TaskPaused &&
		(j.State == job.Resumable || rt.Quota.Message == q.Message):
		kept := *rt.Quota
		return &kept, nil // the record of this deferral
	case j.State == job.Deferred:
		var err error
		if q.ResetAt, err = c.declaredReset(ctx, rt, j); err != nil {
			return nil, err
		}
	}
	now := c.now()
	for cand, until := range rt.Limited {
		if cand == rt.Candidate || !until.After(now) || (!q.ResetAt.IsZero() && !until.Before(q.ResetAt)) {
			continue
		}
		// Another candidate's limit ends first: the pause is on it, and the
		// next Sync after it ends switches to it.
		a, _ := agentcli.AgentNamed(cand)
		q = &record.Quota{Provider: a.Provider, ResetAt: until,
			Message: safe(fmt.Sprintf("every candidate is limited; %s first, until %s", a.Name, until.UTC().Format(time.RFC3339)))}
	}
	return q, nil
}

// declaredReset is the reset the provider declared for the last deferral
// of task rt's job j (zero: none declared), from the job's history; for a
// cancelled job, the reset its cancel names (the host cancels a job whose
// wait would outlast its deadline).
func (c *Coordinator) declaredReset(ctx context.Context, rt *record.Task, j job.Job) (time.Time, error) {
	h, err := c.Store.JobHistory(ctx, j.ID)
	if err != nil {
		return time.Time{}, fmt.Errorf("workflow: run %s task %s: job %s: %w", rt.RunID, rt.Name, j.ID, err)
	}
	for i := len(h.Transitions) - 1; i >= 0; i-- {
		if tr := h.Transitions[i]; tr.To == job.Deferred || (tr.To == job.Cancelled && i == len(h.Transitions)-1) {
			reset, _ := host.DeclaredReset(tr.Reason)
			return reset, nil
		}
	}
	return time.Time{}, nil
}

// jobQuota is the quota record of a deferred job but its reset: its
// provider and resource from its quota names (else its agent's provider),
// its message the job's stage (its wake-up).
func jobQuota(j job.Job) *record.Quota {
	q := &record.Quota{Provider: j.Spec.Provider, Message: safe(j.Stage)}
	if len(j.Spec.Quota) > 0 {
		p, res, _ := strings.Cut(j.Spec.Quota[0], ":")
		if q.Provider == "" {
			q.Provider = p
		}
		q.Resource = res
	}
	if q.Provider == "" && j.Spec.Agent != "" {
		if a, ok := agentcli.AgentNamed(j.Spec.Agent); ok {
			q.Provider = a.Provider
		}
	}
	return q
}

func sameQuota(a, b *record.Quota) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.Provider == b.Provider && a.Resource == b.Resource && a.ResetAt.Equal(b.ResetAt) && a.Message == b.Message
}

// move records a change to rt with its event: a compare-and-set on rt's
// version, written with the pass's other moves when p flushes (rt holds
// the change at once, and the stored record after the flush).
func (c *Coordinator) move(ctx context.Context, p *pass, rt *record.Task, ev record.TaskEvent, change func(*record.Task)) error {
	if _, ok := p.moved[rt]; ok {
		// A second move of a task in one pass: the first is written first.
		if err := c.flush(ctx, p); err != nil {
			return err
		}
	}
	t := *rt
	change(&t)
	now := c.now()
	ev.RunID, ev.Task, ev.At, ev.From, ev.To = t.RunID, t.Name, now, rt.State, t.State
	ev.Reason = safe(ev.Reason)
	p.moved[rt] = len(p.writes)
	p.writes = append(p.writes, record.TaskWrite{Task: t, Event: &ev})
	p.targets = append(p.targets, rt)
	*rt = t
	return nil
}

// taskBatcher is a store that writes several tasks in one transaction;
// every store.Store is.
type taskBatcher interface {
	UpdateTasks(ctx context.Context, writes []record.TaskWrite, now time.Time) ([]record.Task, error)
}

// flush writes the pass's moves, in one transaction when the store can,
// then does what waited for them (a job submitted or cancelled after the
// task recorded it), in order. A refused write (record.ErrConflict:
// another writer was first) writes none of a batch and does none of what
// waited for it.
func (c *Coordinator) flush(ctx context.Context, p *pass) error {
	writes, targets, after := p.writes, p.targets, p.after
	p.writes, p.targets, p.after, p.moved = nil, nil, nil, map[*record.Task]int{}
	if len(writes) > 0 {
		stored, err := c.writeMoves(ctx, p.run.ID, writes)
		if err != nil {
			return fmt.Errorf("workflow: run %s: %w", p.run.ID, err)
		}
		for i, rt := range targets {
			*rt = stored[i]
		}
	}
	for _, f := range after {
		if err := f(); err != nil {
			return err
		}
	}
	return nil
}

// writeMoves writes a pass's moves (writeTasks) and returns the tasks as
// stored. A move another writer already made, so that the stored task is
// the record the move would write, is not written again: of two syncs of
// one run (two serves, or a Sync and serve's own), the second finds the
// first's record and goes on, where its compare-and-set alone would fail.
// A move whose task another writer changed otherwise is a race this pass
// lost: record.ErrConflict, and the run is read again (syncRun). Each
// round writes fewer moves, so this ends.
func (c *Coordinator) writeMoves(ctx context.Context, runID string, writes []record.TaskWrite) ([]record.Task, error) {
	out := make([]record.Task, len(writes))
	left := make([]int, len(writes)) // the moves still to write, by index
	for i := range left {
		left[i] = i
	}
	for {
		ws := make([]record.TaskWrite, len(left))
		for k, i := range left {
			ws[k] = writes[i]
		}
		stored, err := c.writeTasks(ctx, ws)
		if err == nil {
			for k, i := range left {
				out[i] = stored[k]
			}
			return out, nil
		}
		if !errors.Is(err, record.ErrConflict) {
			return nil, err
		}
		cur, rerr := c.Store.RunTasks(ctx, runID)
		if rerr != nil {
			return nil, fmt.Errorf("read its tasks again: %w", rerr)
		}
		byName := make(map[string]record.Task, len(cur))
		for _, t := range cur {
			byName[t.Name] = t
		}
		var still []int
		for _, i := range left {
			w, now := writes[i].Task, byName[writes[i].Task.Name]
			switch {
			case now.Version == w.Version:
				still = append(still, i) // nobody wrote it: write it
			case sameTaskRecord(now, w):
				out[i] = now // made already
			default:
				return nil, err
			}
		}
		if len(still) == len(left) {
			return nil, err // none was made already: not a race this can settle
		}
		if left = still; len(left) == 0 {
			return out, nil
		}
	}
}

// sameTaskRecord reports whether two records of a task say the same, their
// versions and update times aside, with times as the stores keep them (to
// the millisecond).
func sameTaskRecord(a, b record.Task) bool {
	sameMS := func(x, y time.Time) bool { return x.UnixMilli() == y.UnixMilli() }
	if a.RunID != b.RunID || a.Name != b.Name || a.State != b.State || a.Stage != b.Stage ||
		a.Attempts != b.Attempts || a.Starts != b.Starts || a.Candidate != b.Candidate ||
		a.SessionID != b.SessionID || a.Workdir != b.Workdir || a.WaitingOn != b.WaitingOn ||
		a.JobID != b.JobID || len(a.Limited) != len(b.Limited) {
		return false
	}
	if (a.Quota == nil) != (b.Quota == nil) || (a.Checkpoint == nil) != (b.Checkpoint == nil) {
		return false
	}
	if a.Quota != nil {
		qa, qb := *a.Quota, *b.Quota
		if !sameMS(qa.ResetAt, qb.ResetAt) {
			return false
		}
		qa.ResetAt = qb.ResetAt
		if !sameQuota(&qa, &qb) {
			return false
		}
	}
	if a.Checkpoint != nil && (a.Checkpoint.Stage != b.Checkpoint.Stage ||
		string(a.Checkpoint.Data) != string(b.Checkpoint.Data) || !sameMS(a.Checkpoint.At, b.Checkpoint.At)) {
		return false
	}
	for cand, until := range a.Limited {
		if u, ok := b.Limited[cand]; !ok || !sameMS(until, u) {
			return false
		}
	}
	return true
}

// writeTasks writes a pass's moves: in one transaction, or one by one.
func (c *Coordinator) writeTasks(ctx context.Context, writes []record.TaskWrite) ([]record.Task, error) {
	now := c.now()
	if b, ok := c.Store.(taskBatcher); ok {
		return b.UpdateTasks(ctx, writes, now)
	}
	out := make([]record.Task, len(writes))
	for i, w := range writes {
		t, err := c.Store.UpdateTask(ctx, w.Task, w.Event, now)
		if err != nil {
			return nil, fmt.Errorf("task %s: %w", w.Task.Name, err)
		}
		out[i] = t
	}
	return out, nil
}

// decodeCanonical reads a definition back from its stored form
// (canonical).
func decodeCanonical(b []byte) (Definition, error) {
	var in storedDefinition
	if err := json.Unmarshal(b, &in); err != nil {
		return Definition{}, fmt.Errorf("the stored definition: %w", err)
	}
	d := Definition{Name: in.Name, Attempts: in.Attempts, Budget: Budget{Runs: in.Budget.Runs}, OnQuota: OnQuota{Action: in.OnQuota.Action}}
	var err error
	if in.OnQuota.MaxWait != "" {
		if d.OnQuota.MaxWait, err = time.ParseDuration(in.OnQuota.MaxWait); err != nil {
			return Definition{}, fmt.Errorf("the stored definition: %w", err)
		}
	}
	if in.Timeout != "" {
		if d.Timeout, err = time.ParseDuration(in.Timeout); err != nil {
			return Definition{}, fmt.Errorf("the stored definition: %w", err)
		}
	}
	for _, t := range in.Tasks {
		d.Tasks = append(d.Tasks, Task{Name: t.Name, Needs: t.Needs, Run: t.Run, Agent: t.Agent, Prompt: t.Prompt, PromptFile: t.PromptFile,
			Resume: t.Resume, Check: t.Check, Verify: t.Verify, Goal: t.Goal, Quota: t.Quota, Env: t.Env})
	}
	return d, nil
}
