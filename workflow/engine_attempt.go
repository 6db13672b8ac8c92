package workflow

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/layoverhq/layover/clock"
	"github.com/layoverhq/layover/host"
	"github.com/layoverhq/layover/job"
	"github.com/layoverhq/layover/provider"
	"github.com/layoverhq/layover/provider/agentcli"
	"github.com/layoverhq/layover/quota"
	"github.com/layoverhq/layover/workflow/record"
)

// done is work a goroutine finished, applied by the loop under the lock.
type done struct {
	apply  func() error
	worker bool // a check, attempt or verify (not a timer)
}

// spawn runs work off the lock; what it returns is applied by the loop.
func (e *engine) spawn(work func() func() error) {
	e.running++
	go func() {
		apply := work()
		e.results <- done{worker: true, apply: func() error {
			e.running--
			return apply()
		}}
	}()
}

// canStart reports whether a task may start now: not once Start's
// context ended, even before the loop has seen it.
func (e *engine) canStart() bool {
	return !e.stopped && !e.timedOut && !e.budgetOut && e.running < e.o.Concurrency && e.runCtx.Err() == nil
}

// launch starts a task on cand: its check first when it started before.
func (e *engine) launch(ctx context.Context, tr *taskRun, cand string) error {
	if e.run.Starts >= e.def.Budget.Runs {
		return e.begin(ctx, tr, cand) // puts it back, and ends the starts
	}
	if tr.rec.Starts == 0 || tr.def.Check == "" {
		return e.begin(ctx, tr, cand)
	}
	tr.phase = busy
	if err := e.move(ctx, tr, func(t *record.Task) {
		t.State, t.Stage, t.WaitingOn = record.TaskRunning, "check", ""
	}, record.TaskEvent{Reason: "reconcile before the re-run: " + tr.def.Check, Candidate: cand}, time.Time{}); err != nil {
		return err
	}
	id := e.attemptID(tr, tr.rec.Starts+1)
	e.spawn(func() func() error {
		res := e.shell(e.runCtx, tr, tr.def.Check, id)
		return func() error { return e.checked(ctx, tr, cand, id, res) }
	})
	return nil
}

// spent ends the run's starts: the budget is used up.
func (e *engine) spent() error {
	if !e.budgetOut {
		e.budgetOut = true
		return e.runEvent(fmt.Sprintf("the budget of %d task starts is spent: nothing more starts", e.def.Budget.Runs))
	}
	return nil
}

// checked applies a check's exit: 0 complete (once verify, when set,
// exits 0 too), 1 run, other blocked.
func (e *engine) checked(ctx context.Context, tr *taskRun, cand, id string, res host.Result) error {
	if e.runCtx.Err() != nil {
		return e.halted(ctx, tr, "the check was stopped")
	}
	code := res.ExitCode
	ev := record.TaskEvent{ExitCode: &code, Candidate: cand}
	switch code {
	case 0:
		if tr.def.Verify != "" {
			e.spawn(func() func() error {
				v := e.shell(e.runCtx, tr, tr.def.Verify, id)
				return func() error { return e.checkVerified(ctx, tr, cand, v) }
			})
			return nil
		}
		tr.phase = held
		ev.Reason = "check: the outcome already holds"
		return e.move(ctx, tr, func(t *record.Task) { t.State, t.Stage, t.Quota = record.TaskComplete, "complete", nil }, ev, time.Time{})
	case 1:
		return e.rerun(ctx, tr, cand, ev, "check: run it", false)
	}
	tr.phase = held
	ev.Reason = fmt.Sprintf("check exited %d: neither done nor to run", code)
	return e.move(ctx, tr, func(t *record.Task) { t.State, t.Stage = record.TaskBlocked, "blocked" }, ev, time.Time{})
}

// checkVerified applies the verify command run after a check exited 0:
// 0 completes the task; another exit runs it, as a check's exit 1 does.
func (e *engine) checkVerified(ctx context.Context, tr *taskRun, cand string, res host.Result) error {
	if e.runCtx.Err() != nil {
		return e.halted(ctx, tr, "the verify command was stopped")
	}
	code := res.ExitCode
	ev := record.TaskEvent{ExitCode: &code, Candidate: cand}
	if code == 0 {
		tr.phase = held
		ev.Reason = "check: the outcome already holds, verified"
		return e.move(ctx, tr, func(t *record.Task) { t.State, t.Stage, t.Quota = record.TaskComplete, "complete", nil }, ev, time.Time{})
	}
	return e.rerun(ctx, tr, cand, ev, fmt.Sprintf("check exited 0 but verify exited %d: run it", code), true)
}

// rerun starts a task its check said to run, or puts it back pending when
// nothing more starts.
//
// note: the event ev is written even when the task starts (a check's exit
// 1 needs none: the start is its outcome).
func (e *engine) rerun(ctx context.Context, tr *taskRun, cand string, ev record.TaskEvent, why string, note bool) error {
	if !e.canStartAfter() {
		tr.phase = idle
		ev.Reason = why + "; " + e.whyNoStart()
		return e.move(ctx, tr, func(t *record.Task) { t.State, t.Stage = record.TaskPending, "pending" }, ev, time.Time{})
	}
	if note {
		// The start that follows says nothing of why it runs: say it first.
		ev.Reason = why
		if err := e.move(ctx, tr, func(*record.Task) {}, ev, time.Time{}); err != nil {
			return err
		}
	}
	return e.begin(ctx, tr, cand)
}

// canStartAfter is canStart for a task whose check just ended: its own
// slot is free again.
func (e *engine) canStartAfter() bool {
	return !e.stopped && !e.timedOut && e.run.Starts < e.def.Budget.Runs
}

func (e *engine) whyNoStart() string {
	if e.timedOut {
		return "the run's timeout passed"
	}
	if e.stopped {
		return "the run was interrupted"
	}
	_ = e.spent()
	return "the budget is spent"
}

// halted puts back a task whose work the run stopped: paused after the
// run's timeout (the run is failed), pending when interrupted.
func (e *engine) halted(ctx context.Context, tr *taskRun, what string) error {
	tr.phase = held
	if e.timedOut {
		tr.afterPause = true
		return e.move(ctx, tr, func(t *record.Task) { t.State, t.Stage = record.TaskPaused, "paused" },
			record.TaskEvent{Reason: what + " by the run's timeout"}, time.Time{})
	}
	return e.move(ctx, tr, func(t *record.Task) { t.State, t.Stage = record.TaskPending, "pending" },
		record.TaskEvent{Reason: what + ": interrupted"}, time.Time{})
}

// attemptID is the id of a task's start n: <run>:<task>:<n>, and
// <run>:<task>:quota:<n> for a rerun after a quota.
func (e *engine) attemptID(tr *taskRun, n int) string {
	key := e.o.RunID + ":" + tr.def.Name
	if tr.afterPause {
		return key + ":quota:" + strconv.Itoa(n)
	}
	return key + ":" + strconv.Itoa(n)
}

// begin counts a start and runs one attempt.
func (e *engine) begin(ctx context.Context, tr *taskRun, cand string) error {
	if e.run.Starts >= e.def.Budget.Runs {
		if tr.rec.State == record.TaskRunning {
			tr.phase = idle
			if err := e.move(ctx, tr, func(t *record.Task) { t.State, t.Stage = record.TaskPending, "pending" },
				record.TaskEvent{Reason: "the budget is spent"}, time.Time{}); err != nil {
				return err
			}
		}
		return e.spent()
	}
	run := e.run
	run.Starts++
	stored, err := e.o.Store.UpdateRun(ctx, run, e.now())
	if errors.Is(err, record.ErrConflict) && e.cancelledInStore(ctx) {
		return nil // nothing starts
	}
	if err != nil {
		return fmt.Errorf("workflow: run %s: %w", run.ID, err)
	}
	e.run = stored
	n := tr.rec.Starts + 1
	id := e.attemptID(tr, n)
	cmd, session, why := e.command(tr, cand)
	if tr.def.Func == nil {
		tr.checkpointPath = e.checkpointFile(tr)
	}
	tr.afterPause, tr.switched, tr.phase = false, false, busy
	if err := e.move(ctx, tr, func(t *record.Task) {
		t.State, t.Stage, t.WaitingOn, t.Starts = record.TaskRunning, "running", "", n
		if len(tr.def.Agent) > 0 && t.Candidate != cand {
			t.Candidate, t.SessionID = cand, "" // a session is its candidate's
		}
	}, record.TaskEvent{Reason: why, AttemptID: id, Candidate: cand}, time.Time{}); err != nil {
		return err
	}
	e.spawn(func() func() error {
		res := e.attempt(e.runCtx, tr, cand, id, cmd, session)
		return func() error { return e.attempted(ctx, tr, cand, id, res) }
	})
	return nil
}

// command is what an attempt of tr on cand runs (a shell command; "" for a
// Go function), the session it continues, and the event's words for it.
func (e *engine) command(tr *taskRun, cand string) (cmd, session, why string) {
	t := tr.def
	n := strconv.Itoa(tr.rec.Starts + 1)
	continuing := tr.afterPause && !tr.switched && t.Resume != ResumeRestart &&
		tr.rec.SessionID != "" && (len(t.Agent) == 0 || cand == tr.rec.Candidate)
	switch {
	case t.Func != nil:
		if continuing {
			return "", tr.rec.SessionID, "start " + n + ": continuing session " + tr.rec.SessionID
		}
		return "", "", "start " + n
	case len(t.Agent) == 0:
		return t.Run, "", "start " + n + ": " + t.Run
	}
	a, _ := agentcli.AgentNamed(cand)
	on := "start " + n + " on " + cand
	if continuing {
		return strings.ReplaceAll(a.ResumeCmd, "{session_id}", agentcli.ShellQuote(tr.rec.SessionID)), tr.rec.SessionID,
			on + ": continuing session " + tr.rec.SessionID
	}
	cmd = strings.ReplaceAll(a.StartCmd, "{prompt}", agentcli.ShellQuote(t.Prompt))
	switch {
	case tr.switched:
		why = on + ": switched after a quota, with the brief"
	case tr.afterPause && t.Resume == ResumeRestart:
		why = on + ": resume restart, with the brief"
	case tr.afterPause && cand == tr.rec.Candidate:
		why = on + ": no session was captured, so the task restarts from its brief"
	case tr.afterPause:
		why = on + ": another candidate than the paused one, with the brief"
	default:
		why = on + ": the brief"
	}
	return cmd, "", why
}

// env is an attempt's environment: Options.Env and the task's LAYOVER_*.
func (e *engine) env(tr *taskRun, attemptID string) []string {
	own := map[string]string{
		"LAYOVER_RUN_ID":          e.o.RunID,
		"LAYOVER_TASK":            tr.def.Name,
		"LAYOVER_IDEMPOTENCY_KEY": e.o.RunID + ":" + tr.def.Name,
		"LAYOVER_ATTEMPT_ID":      attemptID,
	}
	names := []string{"LAYOVER_RUN_ID", "LAYOVER_TASK", "LAYOVER_IDEMPOTENCY_KEY", "LAYOVER_ATTEMPT_ID"}
	if e.o.StoreLocation != "" {
		own["LAYOVER_STORE"] = e.o.StoreLocation
		names = append(names, "LAYOVER_STORE")
	}
	if path := tr.checkpointPath; path != "" {
		own["LAYOVER_CHECKPOINT"] = path
		names = append(names, "LAYOVER_CHECKPOINT")
	}
	out := make([]string, 0, len(e.o.Env)+len(own))
	for _, kv := range e.o.Env {
		k, _, _ := strings.Cut(kv, "=")
		if _, mine := own[k]; !mine && k != "LAYOVER_CHECKPOINT" {
			out = append(out, kv)
		}
	}
	for _, k := range names {
		out = append(out, k+"="+own[k])
	}
	return out
}

// checkpointFile writes tr's last checkpoint data (JSON "null" for none)
// to a file of CheckpointDir for its next attempt, and returns its path:
// "" when tr has no checkpoint or the file cannot be written. It runs
// under the lock, as the attempt begins.
func (e *engine) checkpointFile(tr *taskRun) string {
	cp := tr.rec.Checkpoint
	if cp == nil {
		return ""
	}
	dir := e.o.CheckpointDir
	if dir == "" {
		if e.ckDir == "" {
			d, err := os.MkdirTemp("", "layover-checkpoints-")
			if err != nil {
				return ""
			}
			e.ckDir = d
		}
		dir = e.ckDir
	}
	data := cp.Data
	if len(data) == 0 {
		data = json.RawMessage("null")
	}
	path := filepath.Join(dir, e.o.RunID+"."+tr.def.Name+".json")
	if os.WriteFile(path, data, 0o600) != nil {
		return ""
	}
	return path
}

// removeCheckpoints removes the temporary CheckpointDir, if one was made.
func (e *engine) removeCheckpoints() {
	if e.ckDir != "" {
		_ = os.RemoveAll(e.ckDir)
	}
}

// checkpointed reports whether tr's stored record is its running attempt's
// with a checkpoint `layover checkpoint` wrote since the engine's last
// write, and if so takes that checkpoint and version into tr's record.
// Any other change is another writer's: the caller's conflict stands.
func (e *engine) checkpointed(ctx context.Context, tr *taskRun) bool {
	if tr.rec.State != record.TaskRunning {
		return false
	}
	recs, err := e.o.Store.RunTasks(ctx, tr.rec.RunID)
	if err != nil {
		return false
	}
	for _, cur := range recs {
		if cur.Name != tr.rec.Name {
			continue
		}
		r := tr.rec
		// The same attempt (state, start count, candidate) with a
		// checkpoint written since.
		if cur.Version <= r.Version || cur.Checkpoint == nil || cur.State != r.State || cur.Starts != r.Starts ||
			cur.Candidate != r.Candidate {
			return false
		}
		// What the engine holds but has not written yet (the attempt's
		// session, a transient failure's count) stays; the checkpoint,
		// its stage and the version are the store's.
		r.Checkpoint, r.Stage, r.Version, r.UpdatedAt = cur.Checkpoint, cur.Stage, cur.Version, cur.UpdatedAt
		tr.rec = r
		return true
	}
	return false
}

// hostRun is the host.Run of a shell command of tr.
func (e *engine) hostRun(tr *taskRun, agent, attemptID, cmd string) host.Run {
	argv := []string{e.o.Shell, "-c", cmd}
	return host.Run{
		Job: job.Job{ID: tr.def.Name, Spec: job.Spec{
			Argv: argv, Workdir: e.o.Dir, Agent: agent, EnvNames: tr.def.Env, Name: tr.def.Name,
		}},
		AttemptID: attemptID,
		Argv:      argv,
		Env:       e.env(tr, attemptID),
	}
}

// shell runs a task's check or verify command.
func (e *engine) shell(ctx context.Context, tr *taskRun, cmd, attemptID string) host.Result {
	return e.o.Runner.Run(ctx, e.hostRun(tr, "", attemptID, cmd))
}

// attempt runs one attempt of tr off the lock.
func (e *engine) attempt(ctx context.Context, tr *taskRun, cand, id, cmd, session string) host.Result {
	if tr.def.Func == nil {
		return e.o.Runner.Run(ctx, e.hostRun(tr, cand, id, cmd))
	}
	a := &Attempt{
		RunID: e.o.RunID, Task: tr.def.Name, AttemptID: id, IdempotencyKey: e.o.RunID + ":" + tr.def.Name,
		SessionID:      session,
		CheckpointFunc: func(stage string, data json.RawMessage) error { return e.checkpoint(ctx, tr, id, stage, data) },
	}
	return host.FuncRunner(func(ctx context.Context, _ host.Run) (err error) {
		defer func() {
			if p := recover(); p != nil {
				err = host.Permanent(fmt.Sprintf("panic: %v", p))
			}
		}()
		return tr.def.Func(ctx, a)
	}).Run(ctx, host.Run{})
}

// checkpoint records a Go task's checkpoint while its attempt runs.
func (e *engine) checkpoint(ctx context.Context, tr *taskRun, id, stage string, data json.RawMessage) error {
	if err := job.ValidateCheckpoint(stage, data); err != nil {
		return fmt.Errorf("workflow: checkpoint: %w", err)
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if tr.rec.State != record.TaskRunning || e.stopped {
		return fmt.Errorf("workflow: checkpoint: task %s is %s", tr.def.Name, tr.rec.State)
	}
	at := e.now()
	return e.move(context.WithoutCancel(ctx), tr, func(t *record.Task) {
		t.Stage = stage
		t.Checkpoint = &job.Checkpoint{Stage: stage, Data: append(json.RawMessage(nil), data...), At: at}
	}, record.TaskEvent{Reason: "checkpoint " + stage, AttemptID: id}, time.Time{})
}

// attempted applies an attempt's outcome.
func (e *engine) attempted(ctx context.Context, tr *taskRun, cand, id string, res host.Result) error {
	if res.SessionID != "" {
		tr.rec.SessionID = res.SessionID
	}
	if e.runCtx.Err() != nil {
		return e.halted(ctx, tr, "the attempt was stopped")
	}
	o := res.Outcome
	code := res.ExitCode
	ev := record.TaskEvent{AttemptID: id, ExitCode: &code, Outcome: string(o.Class), Candidate: cand}
	fail := func(reason string) error {
		tr.phase = held
		ev.Reason = reason
		return e.move(ctx, tr, func(t *record.Task) { t.State, t.Stage = record.TaskFailed, "failed" }, ev, time.Time{})
	}
	switch o.Class {
	case provider.ClassOK:
		if tr.def.Verify == "" {
			tr.phase = held
			ev.Reason = "exit 0"
			return e.move(ctx, tr, func(t *record.Task) { t.State, t.Stage, t.Quota = record.TaskComplete, "complete", nil }, ev, time.Time{})
		}
		e.spawn(func() func() error {
			v := e.shell(e.runCtx, tr, tr.def.Verify, id)
			return func() error { return e.verified(ctx, tr, cand, id, v) }
		})
		return nil
	case provider.ClassQuota, provider.ClassSecondary:
		if e.def.OnQuota.Action == ActionFail {
			return fail("on_quota fail: " + o.Reason)
		}
		return e.limited(ctx, tr, cand, o, ev)
	case provider.ClassAuth:
		tr.phase = held
		ev.Reason = "credentials failed: " + o.Reason
		return e.move(ctx, tr, func(t *record.Task) { t.State, t.Stage = record.TaskAuthWait, "auth-wait" }, ev, time.Time{})
	case provider.ClassTransient:
		tr.rec.Attempts++
		if tr.rec.Attempts >= e.def.Attempts {
			return fail(fmt.Sprintf("%s; no attempts left (%d of %d)", o.Reason, tr.rec.Attempts, e.def.Attempts))
		}
		until := e.now().Add(clock.Exponential(host.DefaultBackoff, host.MaxBackoff).Next(tr.rec.Attempts - 1))
		tr.phase = timed
		e.arm(tr, until)
		ev.Reason = fmt.Sprintf("%s; retry %d of %d at %s", o.Reason, tr.rec.Attempts, e.def.Attempts-1, until.UTC().Format(time.RFC3339))
		return e.move(ctx, tr, func(t *record.Task) {
			t.State, t.Stage, t.WaitingOn = record.TaskPending, "retry at "+until.UTC().Format(time.RFC3339), "retry after a transient failure"
		}, ev, until)
	}
	tr.rec.Attempts++
	return fail(o.Reason)
}

// verified applies a verify command's exit: 0 complete, else failed.
func (e *engine) verified(ctx context.Context, tr *taskRun, cand, id string, res host.Result) error {
	if e.runCtx.Err() != nil {
		return e.halted(ctx, tr, "the verify command was stopped")
	}
	code := res.ExitCode
	ev := record.TaskEvent{AttemptID: id, ExitCode: &code, Candidate: cand}
	tr.phase = held
	if code == 0 {
		ev.Reason, ev.Outcome = "exit 0, verified", string(provider.ClassOK)
		return e.move(ctx, tr, func(t *record.Task) { t.State, t.Stage, t.Quota = record.TaskComplete, "complete", nil }, ev, time.Time{})
	}
	ev.Reason, ev.Outcome = fmt.Sprintf("verify exited %d", code), string(provider.ClassPermanent)
	return e.move(ctx, tr, func(t *record.Task) { t.State, t.Stage = record.TaskFailed, "failed" }, ev, time.Time{})
}

// limited applies a quota or secondary outcome: the candidate is limited
// until its reset, the next one not limited runs at once with the brief,
// and with none left the task waits (a reset within max_wait) or pauses.
// It never counts as an attempt.
func (e *engine) limited(ctx context.Context, tr *taskRun, cand string, o provider.Outcome, ev record.TaskEvent) error {
	now := e.now()
	q, until := quotaOf(o, cand, now, e.o.Policy)
	tr.limits[cand] = later(tr.limits[cand], until)
	tr.hits[cand] = q
	tr.afterPause = true
	next, ok := tr.available(now)
	if ok && !e.canStartAfter() {
		tr.phase = idle
		ev.Reason = fmt.Sprintf("%s on %s; %s", o.Class, quotaName(q), e.whyNoStart())
		return e.move(ctx, tr, func(t *record.Task) {
			t.State, t.Stage, t.Limited, t.Quota = record.TaskPending, "pending", agentLimits(tr), &q
		}, ev, time.Time{})
	}
	if ok {
		tr.switched = true
		ev.Reason = fmt.Sprintf("%s on %s: switching to %s", o.Class, quotaName(q), next)
		if err := e.move(ctx, tr, func(t *record.Task) { t.Limited = agentLimits(tr) }, ev, time.Time{}); err != nil {
			return err
		}
		return e.launch(ctx, tr, next)
	}
	ev.Reason = fmt.Sprintf("%s on %s", o.Class, quotaName(q))
	return e.hold(ctx, tr, now, ev)
}

// quotaOf is the quota record of a quota or secondary outcome on cand at
// now, and until when cand is limited: a known reset (at least
// quota.MinRerunWait ahead), a secondary limit's wait, or an unknown
// reset assumed Policy.UnknownReset ahead (the record's reset stays
// zero).
func quotaOf(o provider.Outcome, cand string, now time.Time, p quota.Policy) (record.Quota, time.Time) {
	q := record.Quota{Provider: o.Provider, Resource: o.Resource, ResetAt: o.ResetAt, Message: safe(o.Reason)}
	if q.Provider == "" || q.Provider == "func" || q.Provider == agentcli.ProviderAuto {
		q.Provider = providerOf(cand)
	}
	if o.Class == provider.ClassSecondary && q.ResetAt.IsZero() {
		q.ResetAt = now.Add(p.SecondaryDelay(o.RetryAfter))
	}
	if q.ResetAt.IsZero() {
		return q, p.AssumedReset(now)
	}
	return q, quota.RerunAt(now, q.ResetAt)
}
