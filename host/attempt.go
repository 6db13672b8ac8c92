package host

// Attempts: a claimed job's run, its outcome, and the writes that record
// them (docs/lifecycle.md, Transitions).

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/layoverhq/layover/clock"
	"github.com/layoverhq/layover/job"
	"github.com/layoverhq/layover/provider"
	"github.com/layoverhq/layover/quota"
)

// execute takes one claimed job through to its next resting state.
func (h *Host) execute(ctx context.Context, j job.Job) {
	switch j.State {
	case job.Ready:
		h.startReady(ctx, j)
	case job.Resumable:
		h.resume(ctx, j)
	}
}

// apply writes a change about a job this host holds. Writes finish even
// while the host stops; a stale fence means the lease was lost, and the
// change is dropped.
func (h *Host) apply(ctx context.Context, j job.Job, ch job.Change) (job.Job, bool) {
	return h.applyDeferral(ctx, j, ch, wait{})
}

// applyDeferral is apply for a change that defers j on the quota wait w,
// which its event and log line name.
func (h *Host) applyDeferral(ctx context.Context, j job.Job, ch job.Change, w wait) (job.Job, bool) {
	if ch.Now.IsZero() {
		ch.Now = h.cfg.Clock.Now()
	}
	if len(ch.From) == 0 {
		// Compare and set on the state this host last saw: a sweep may have
		// taken the job back without bumping the fence yet.
		ch.From = []job.State{j.State}
	}
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	out, err := h.applyWait(wctx, j.ID, j.Fence, ch, w)
	if err != nil {
		level := "error"
		if errors.Is(err, job.ErrStaleFence) {
			level = "lease lost"
		}
		h.cfg.Logger.Warn("job write refused", "job", j.ID, "to", ch.To, "why", level, "err", err)
		return j, false
	}
	h.nudgeIfSooner(out)
	return out, true
}

// block moves a job to blocked, saying why.
func (h *Host) block(ctx context.Context, j job.Job, why string, att *job.Attempt) {
	h.apply(ctx, j, job.Change{To: job.Blocked, Reason: why, Attempt: att, Mutate: func(x *job.Job) {
		x.Stage = "Blocked: " + why
		releaseLease(x)
	}})
}

func releaseLease(x *job.Job) {
	x.LeaseOwner, x.LeaseUntil, x.ProgressBy = "", time.Time{}, time.Time{}
}

// startReady runs a ready job, unless one of its keys is already in a Quota
// wait: then it is deferred without spending a call.
func (h *Host) startReady(ctx context.Context, j job.Job) {
	if name := h.missingEnv(j); name != "" {
		if j2, ok := h.apply(ctx, j, job.Change{To: job.Running, Reason: "claimed"}); ok {
			h.block(ctx, j2, "the host lacks the environment variable "+name, nil)
		}
		return
	}
	keys, err := h.keysOf(ctx, j)
	if err != nil {
		if j2, ok := h.apply(ctx, j, job.Change{To: job.Running, Reason: "claimed"}); ok {
			h.block(ctx, j2, "quota: "+err.Error(), nil)
		}
		return
	}
	if len(keys) > 0 {
		states, err := h.st.States(ctx, keys)
		if err == nil {
			now := h.cfg.Clock.Now()
			// A start is held back only by an exhaustion, as a running
			// command is (docs/design.md, Who decides).
			if b, ok := h.cfg.Policy.Blocking(now, states, quota.Running); ok {
				h.deferJob(ctx, j, h.waitFromState(b.State), nil, keys)
				return
			}
		}
	}
	if j.Runs > 0 && j.Spec.CheckCmd != "" {
		// A re-run reconciles first (docs/lifecycle.md, Reconcile): the
		// job is moved to running for its check, which may end it.
		trigger := rerunTrigger(h.lastReason(ctx, j))
		var ok bool
		if j, ok = h.apply(ctx, j, job.Change{To: job.Running, Reason: "claimed: reconciling before the " + trigger + " re-run"}); !ok {
			return
		}
		if j, ok = h.reconcile(ctx, j, trigger); !ok {
			return
		}
	}
	h.attempt(ctx, j, j.Spec.Argv, "started", keys)
}

// attempt moves the job to running (a job its reconcile check already
// moved there stays) and runs one attempt. An attempt ends the job's
// deferral chain (docs/lifecycle.md, Deferral chains).
func (h *Host) attempt(ctx context.Context, j job.Job, argv []string, why string, keys []quota.Key) {
	start := h.cfg.Clock.Now()
	att := &job.Attempt{ID: "att-" + randomHex(8), Fence: j.Fence, StartedAt: start}
	var progressBy time.Time
	if j.Spec.ProgressTimeout > 0 {
		progressBy = start.Add(j.Spec.ProgressTimeout)
	}
	to := job.Running
	if j.State == job.Running {
		to = ""
	}
	j, ok := h.apply(ctx, j, job.Change{To: to, Reason: why, Attempt: att, Mutate: func(x *job.Job) {
		x.Stage, x.ProgressBy, x.Approved, x.RunAt = "running", progressBy, false, time.Time{}
		x.Ownership, x.ResumeBy, x.Runs = job.NoOwnership, time.Time{}, x.Runs+1
	}})
	if !ok {
		return
	}
	res := h.cfg.Runner.Run(ctx, Run{Job: j, AttemptID: att.ID, Fence: j.Fence, Argv: argv, Env: h.jobEnv(j, att.ID),
		Grace: h.grace})
	end := h.cfg.Clock.Now()
	code := res.ExitCode
	att.EndedAt, att.ExitCode, att.Outcome = end, &code, string(res.Outcome.Class)
	if res.SessionID != "" {
		j.SessionID = res.SessionID
	}
	if ctx.Err() != nil && res.Outcome.Class == provider.ClassOK {
		// The work finished before the stop or the lease loss was seen:
		// record it (a lost lease refuses the fenced write).
		octx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
		defer cancel()
		ctx = octx
	}
	if ctx.Err() != nil {
		if h.stopping() {
			att.Outcome = reasonHostStopped
			h.apply(ctx, j, job.Change{To: job.Ready, Reason: reasonHostStopped, Attempt: att, Mutate: func(x *job.Job) {
				x.Stage = "ready"
				releaseLease(x)
			}})
		}
		return // otherwise the lease was lost: the store already moved the job on
	}
	session := func(x *job.Job) {
		if res.SessionID != "" {
			x.SessionID = res.SessionID
		}
	}
	switch res.Outcome.Class {
	case provider.ClassOK:
		h.finishOK(ctx, j, att, session)
	case provider.ClassQuota, provider.ClassSecondary:
		if res.SessionID != "" {
			j, _ = h.apply(ctx, j, job.Change{Mutate: session})
		}
		if res.Outcome.Class == provider.ClassSecondary && j.Secondaries >= h.cfg.Policy.SecondaryRetries {
			h.fail(ctx, j, fmt.Sprintf("secondary limit again after %d retries: %s", j.Secondaries, res.Outcome.Reason), att)
			return
		}
		h.deferJob(ctx, j, h.waitFromOutcome(ctx, res.Outcome, keys), att, keys)
	case provider.ClassAuth:
		h.authWait(ctx, j, res.Outcome.Reason, att, session)
	case provider.ClassTransient:
		n := j.Attempts + 1
		limit := j.Spec.MaxAttempts
		if limit <= 0 {
			limit = DefaultMaxAttempts
		}
		if n >= limit {
			h.fail(ctx, j, fmt.Sprintf("transient failure, no attempts left (%d of %d): %s", n, limit, res.Outcome.Reason), att)
			return
		}
		runAt := end.Add(clock.Exponential(h.cfg.RetryBackoff, MaxBackoff).Next(n - 1))
		h.apply(ctx, j, job.Change{To: job.Ready, Reason: reasonTransient + ": " + res.Outcome.Reason, Attempt: att,
			Mutate: func(x *job.Job) {
				x.Attempts, x.RunAt, x.Stage = n, runAt, "retry at "+stageTime(runAt)
				x.Secondaries, x.Probes = 0, 0
				session(x)
				releaseLease(x)
			}})
	default:
		h.fail(ctx, j, "permanent failure: "+res.Outcome.Reason, att)
	}
}

func (h *Host) fail(ctx context.Context, j job.Job, why string, att *job.Attempt) {
	h.apply(ctx, j, job.Change{To: job.Failed, Reason: why, Attempt: att, Mutate: func(x *job.Job) {
		x.Stage = "Failed: " + why
		releaseLease(x)
	}})
}

// finishOK completes a job whose command exited 0, after its verify
// command when it has one.
func (h *Host) finishOK(ctx context.Context, j job.Job, att *job.Attempt, session func(*job.Job)) {
	if j.Spec.VerifyCmd != "" {
		code, _, err := h.shell(ctx, j, j.Spec.VerifyCmd, nil)
		if err != nil || code != 0 {
			why := "verify-cmd failed"
			if err != nil {
				why += ": " + err.Error()
			} else {
				why += " (exit " + strconv.Itoa(code) + ")"
			}
			h.fail(ctx, j, why, att)
			return
		}
	}
	h.apply(ctx, j, job.Change{To: job.Complete, Reason: "exit 0", Attempt: att, Mutate: func(x *job.Job) {
		x.Stage = "complete"
		session(x)
		releaseLease(x)
	}})
}

func (h *Host) stopping() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.stopped
}
