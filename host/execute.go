package host

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/layoverhq/layover/clock"
	"github.com/layoverhq/layover/job"
	"github.com/layoverhq/layover/provider"
	"github.com/layoverhq/layover/quota"
	"github.com/layoverhq/layover/receipt"
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
	out, err := h.st.ApplyJob(wctx, j.ID, j.Fence, ch)
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

// keysOf resolves a job's quota names.
func (h *Host) keysOf(ctx context.Context, j job.Job) ([]quota.Key, error) {
	if h.cfg.Quotas == nil || len(j.Spec.Quota) == 0 {
		return nil, nil
	}
	return h.cfg.Quotas.Keys(ctx, j.Spec.Quota)
}

// missingEnv names the first variable the job declared that the host lacks.
func (h *Host) missingEnv(j job.Job) string {
	for _, name := range j.Spec.EnvNames {
		found := false
		for _, kv := range h.cfg.Env {
			if k, _, _ := strings.Cut(kv, "="); k == name {
				found = true
				break
			}
		}
		if !found {
			return name
		}
	}
	return ""
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
			if s, ok := latestExhausted(states, now); ok {
				h.deferJob(ctx, j, waitFromState(s), nil, keys)
				return
			}
		}
	}
	h.attempt(ctx, j, j.Spec.Argv, "started", keys)
}

func latestExhausted(states []quota.State, now time.Time) (quota.State, bool) {
	var best quota.State
	found := false
	for _, s := range states {
		if s.Exhausted(now) && (!found || s.ResetAt.After(best.ResetAt)) {
			best, found = s, true
		}
	}
	return best, found
}

// wait is a quota wait a job must sit out.
type wait struct {
	Key       quota.Key
	Provider  string
	Secondary bool
	// ResetAt is the provider-declared end of the wait; zero when the
	// provider declared none (no receipt can be issued then).
	ResetAt time.Time
	// Room: the fresh check after the failure found the quota has room
	// again (the reset came in between).
	Room bool
	Why  string
}

func waitFromState(s quota.State) wait {
	w := wait{Key: s.Key, Provider: "github", Why: "quota wait: " + s.Resource + " exhausted"}
	if s.ResetKnown {
		w.ResetAt = s.ResetAt
	}
	return w
}

// waitFromOutcome turns a failed attempt's quota outcome into a wait,
// asking the provider for a reset the output did not give.
func (h *Host) waitFromOutcome(ctx context.Context, o provider.Outcome, keys []quota.Key) wait {
	now := h.cfg.Clock.Now()
	w := wait{Provider: o.Provider, Secondary: o.Class == provider.ClassSecondary, ResetAt: o.ResetAt}
	resource := o.Resource
	if resource == "" {
		resource = "core"
	}
	w.Key = quota.Key{Resource: resource}
	for _, k := range keys {
		if k.Resource == resource {
			w.Key = k
		}
	}
	if w.Secondary {
		w.Why = "secondary limit: " + o.Reason
		if o.RetryAfter >= 0 && w.ResetAt.IsZero() {
			w.ResetAt = now.Add(o.RetryAfter)
		}
		return w
	}
	w.Why = "quota exhausted: " + o.Reason
	if w.ResetAt.IsZero() && h.cfg.Quotas != nil && w.Key.Host != "" {
		cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		if fresh, err := h.cfg.Quotas.Fresh(cctx, []quota.Key{w.Key}); err == nil {
			for _, s := range fresh {
				if s.Key == w.Key && s.Remaining == 0 && s.ResetKnown && s.ResetAt.After(now) {
					w.ResetAt = s.ResetAt
				} else if s.Key == w.Key && s.Remaining > 0 {
					w.Room = true
				}
			}
		}
	}
	return w
}

// receiptReason maps a wait to the receipt reasons of docs/receipt.md (Fields).
func receiptReason(w wait) receipt.Reason {
	switch {
	case w.Secondary:
		return receipt.ProviderSecondaryLimit
	case w.Provider != "github" && w.Provider != "":
		return receipt.ProviderQuota
	case w.Key.Resource == "graphql":
		return receipt.GraphQLReserve
	}
	return receipt.RESTReserve
}

// deferJob records a deferral. A declared reset yields a receipt with
// retained ownership and a wake-up, in one transaction; an undeclared one is
// probed again on the backoff, without a receipt. A reset more than 24 h
// away blocks the job.
func (h *Host) deferJob(ctx context.Context, j job.Job, w wait, att *job.Attempt, keys []quota.Key) {
	now := h.cfg.Clock.Now()
	p := h.cfg.Policy
	// A deferral found by the preflight of a resume (no attempt ran)
	// continues the chain of the receipt it resumed: it keeps that
	// receipt's resume_by, so re-deferring never extends a chain. A
	// deferral after an attempt starts a new chain.
	var chainBy time.Time
	if att == nil {
		chainBy = j.ResumeBy
	}
	if w.ResetAt.IsZero() {
		backoff := p.SecondaryWait
		if !w.Secondary {
			backoff = ProbeBackoff[min(j.Probes, len(ProbeBackoff)-1)]
		}
		runAt := now.Add(backoff)
		why, note := w.Why+" (reset unknown; probing again)", " (reset unknown)"
		if w.Room && !w.Secondary && j.Probes == 0 {
			// The quota has room again: the reset came between the failure
			// and the check. Run again after the margin, once, as run does;
			// a second such failure in a row probes on the backoff.
			runAt = p.ResumeAt(now, h.cfg.Rand)
			why, note = w.Why+" (the quota has room again; running again after the margin)", " (the quota has room again)"
		}
		h.apply(ctx, j, job.Change{To: job.Deferred, Reason: why, Attempt: att,
			Mutate: func(x *job.Job) {
				// A probe inside a chain keeps its resume_by: the sweep
				// cancels the job if the chain ends before the quota is back.
				x.RunAt, x.ResumeBy, x.Ownership, x.Probes = runAt, chainBy, job.Retained, x.Probes+1
				x.Stage = "Quota wait until " + stageTime(runAt) + note
				releaseLease(x)
			}})
		return
	}
	if w.ResetAt.After(now.Add(receipt.MaxWindow)) {
		h.block(ctx, j, "the quota resets more than 24h from now ("+stageTime(w.ResetAt)+")", att)
		return
	}
	rc, data, err := h.issueReceipt(ctx, issueInput{Now: now, Job: j, Wait: w, Jitter: p.DrawJitter(h.cfg.Rand),
		ChainBy: chainBy, Keys: keys, Retained: true})
	if windowError(err) {
		h.apply(ctx, j, job.Change{To: job.Cancelled, Reason: err.Error(), Attempt: att,
			Mutate: func(x *job.Job) { x.Stage = "Cancelled: " + err.Error(); releaseLease(x) }})
		return
	}
	if err != nil {
		h.block(ctx, j, "cannot issue a receipt: "+err.Error(), att)
		return
	}
	h.apply(ctx, j, job.Change{To: job.Deferred, Reason: w.Why, Attempt: att,
		Receipt: &job.Receipt{JobID: j.ID, JSON: data, IssuedAt: now},
		Mutate: func(x *job.Job) {
			x.RunAt, x.ResumeBy, x.Ownership, x.Probes = rc.ResumeAfter(), rc.ResumeBy(), job.Retained, 0
			x.Stage = "Quota wait until " + stageTime(rc.ResumeAfter())
			releaseLease(x)
		}})
}

// stageTime renders a time for a stage line: RFC 3339 UTC.
func stageTime(t time.Time) string { return t.UTC().Format(time.RFC3339) }

// scopeKeys renders keys as host/resource for the scope digest; without
// resolved keys, the job's quota names.
func scopeKeys(j job.Job, keys []quota.Key) []string {
	if len(keys) == 0 {
		return append([]string{}, j.Spec.Quota...)
	}
	out := make([]string, len(keys))
	for i, k := range keys {
		out[i] = k.Host + "/" + k.Resource
	}
	return out
}

// bindings computes the receipt bindings of a job now.
func (f *Jobs) bindings(ctx context.Context, j job.Job, keys []quota.Key) (receipt.Bindings, error) {
	var b receipt.Bindings
	var err error
	if b.ScopeDigest, err = receipt.ScopeDigest(j.Spec.Name, j.Spec.Workdir, scopeKeys(j, keys)); err != nil {
		return b, err
	}
	if b.RequestDigest, err = receipt.RequestDigest(j.Spec.Argv, j.Spec.EnvNames, j.Spec.ResumeCmd); err != nil {
		return b, err
	}
	if j.Spec.PlanCmd != "" {
		code, out, err := f.shell(ctx, j, j.Spec.PlanCmd, nil)
		if err != nil {
			return b, fmt.Errorf("plan-cmd: %w", err)
		}
		if code != 0 {
			return b, fmt.Errorf("plan-cmd exited %d", code)
		}
		b.PlanDigest = receipt.PlanDigest(out)
	}
	return b, nil
}

// resume runs the fresh-resume preflight of a resumable job, then its
// command as a new process.
func (h *Host) resume(ctx context.Context, j job.Job) {
	now := h.cfg.Clock.Now()
	// 1. The receipt, when the deferral has one.
	var rc *receipt.Receipt
	if !j.ResumeBy.IsZero() {
		hist, err := h.st.JobHistory(ctx, j.ID)
		if err != nil {
			// The store did not answer: leave the job to its lease, which
			// runs out and lets a later claim try again.
			h.cfg.Logger.Error("read job history", "job", j.ID, "err", err)
			return
		}
		if len(hist.Receipts) == 0 {
			h.block(ctx, j, "the deferral's receipt is missing", nil)
			return
		}
		r, err := receipt.Decode(hist.Receipts[len(hist.Receipts)-1].JSON)
		if err != nil {
			h.block(ctx, j, "receipt not valid: "+err.Error(), nil)
			return
		}
		st, err := receipt.Validate(r, now)
		if err != nil {
			h.block(ctx, j, "receipt not valid: "+err.Error(), nil)
			return
		}
		if st.Expired() {
			h.apply(ctx, j, job.Change{To: job.Cancelled, Reason: "expired", Mutate: func(x *job.Job) {
				x.Stage = "Cancelled: the receipt expired"
				releaseLease(x)
			}})
			return
		}
		rc = r
	}
	// 2. The claim is fresh: ClaimJobs gave this attempt a new fence.
	keys, err := h.keysOf(ctx, j)
	if err != nil {
		h.block(ctx, j, "quota: "+err.Error(), nil)
		return
	}
	// 3. Fresh quota state; a key still exhausted or below its reserve
	// defers again with a new receipt.
	if len(keys) > 0 {
		if w, short := h.stillShort(ctx, keys, now); short {
			h.deferJob(ctx, j, w, nil, keys)
			return
		}
	}
	// 4. Bindings.
	if rc != nil {
		b, err := h.bindings(ctx, j, keys)
		if err != nil {
			h.block(ctx, j, "cannot recompute bindings: "+err.Error(), nil)
			return
		}
		if what := mismatch(rc.Bindings, b); what != "" {
			h.block(ctx, j, "binding changed: "+what, nil)
			return
		}
	}
	// 5. Fresh approval.
	if j.Spec.FreshApprovalRequired && !j.Approved {
		h.awaitApproval(ctx, j, now)
		return
	}
	// 6. The check command: 0 the outcome already holds, 1 run, other blocked.
	if j.Spec.CheckCmd != "" {
		code, _, err := h.shell(ctx, j, j.Spec.CheckCmd, nil)
		switch {
		case err != nil:
			h.block(ctx, j, "check-cmd: "+err.Error(), nil)
			return
		case code == 0:
			h.apply(ctx, j, job.Change{To: job.Complete, Reason: "check-cmd: the outcome already holds",
				Mutate: func(x *job.Job) { x.Stage = "complete"; releaseLease(x) }})
			return
		case code != 1:
			h.block(ctx, j, "check-cmd exited "+strconv.Itoa(code)+": unsafe to run", nil)
			return
		}
	}
	if !h.pace(ctx, keys) {
		return
	}
	h.attempt(ctx, j, h.resumeArgv(j), "resumed", keys)
}

// stillShort reads fresh quota state (falling back to the ledger when the
// check fails) and reports a key still exhausted or below its reserve.
func (h *Host) stillShort(ctx context.Context, keys []quota.Key, now time.Time) (wait, bool) {
	states, err := h.cfg.Quotas.Fresh(ctx, keys)
	if err != nil {
		if states, err = h.st.States(ctx, keys); err != nil {
			return wait{}, false
		}
	}
	states = slices.DeleteFunc(states, func(s quota.State) bool { return !slices.Contains(keys, s.Key) })
	if s, ok := latestExhausted(states, now); ok {
		return waitFromState(s), true
	}
	for _, s := range states {
		if s.BelowReserve(now, h.cfg.Policy.Reserve.For(s.Resource, s.Limit)) {
			w := waitFromState(s)
			w.Why = "reserve still short: " + s.Resource + " has " + strconv.FormatInt(s.Remaining, 10) + " left"
			return w, true
		}
	}
	return wait{}, false
}

func mismatch(a, b receipt.Bindings) string {
	switch {
	case a.ScopeDigest != b.ScopeDigest:
		return "scope"
	case a.RequestDigest != b.RequestDigest:
		return "request"
	case a.PlanDigest != b.PlanDigest:
		return "plan"
	}
	return ""
}

// awaitingApproval starts the stage of a job parked for approval.
const awaitingApproval = "Awaiting fresh approval"

// awaitApproval parks a job that needs fresh approval: deferred until
// `layover approve` wakes it, or blocked when resume_by comes first.
func (h *Host) awaitApproval(ctx context.Context, j job.Job, now time.Time) {
	until := j.ResumeBy.Add(-time.Minute)
	if j.ResumeBy.IsZero() || !until.After(now) {
		h.block(ctx, j, "fresh approval still missing at resume_by", nil)
		return
	}
	h.apply(ctx, j, job.Change{To: job.Deferred, Reason: "awaiting fresh approval", Mutate: func(x *job.Job) {
		x.RunAt = until
		x.Stage = awaitingApproval + " (layover approve " + x.ID + ")"
		releaseLease(x)
	}})
}

// pace holds a resume until its keys' resume rate allows it. It reports
// false when ctx ended first.
func (h *Host) pace(ctx context.Context, keys []quota.Key) bool {
	interval := time.Duration(float64(time.Second) / h.cfg.ResumeRate)
	for _, k := range keys {
		h.mu.Lock()
		now := h.cfg.Clock.Now()
		slot := h.lastRes[k].Add(interval)
		if slot.Before(now) {
			slot = now
		}
		h.lastRes[k] = slot
		h.mu.Unlock()
		if d := slot.Sub(now); d > 0 {
			select {
			case <-ctx.Done():
				return false
			case <-h.cfg.Clock.After(d):
			}
		}
	}
	return true
}

// resumeArgv is the command of a resume: the resume command with
// {session_id} filled in when one is set and the session is known, else the
// job's own argv.
func (h *Host) resumeArgv(j job.Job) []string {
	rc := j.Spec.ResumeCmd
	if rc == "" || (strings.Contains(rc, "{session_id}") && j.SessionID == "") {
		return j.Spec.Argv
	}
	return []string{h.cfg.Shell, "-c", strings.ReplaceAll(rc, "{session_id}", shellQuote(j.SessionID))}
}

func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// attempt moves the job to running and runs one attempt.
func (h *Host) attempt(ctx context.Context, j job.Job, argv []string, why string, keys []quota.Key) {
	start := h.cfg.Clock.Now()
	att := &job.Attempt{ID: "att-" + randomHex(8), Fence: j.Fence, StartedAt: start}
	var progressBy time.Time
	if j.Spec.ProgressTimeout > 0 {
		progressBy = start.Add(j.Spec.ProgressTimeout)
	}
	j, ok := h.apply(ctx, j, job.Change{To: job.Running, Reason: why, Attempt: att, Mutate: func(x *job.Job) {
		x.Stage, x.ProgressBy, x.Approved, x.RunAt = "running", progressBy, false, time.Time{}
		x.Ownership, x.ResumeBy = job.NoOwnership, time.Time{}
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
			att.Outcome = "host stopped"
			h.apply(ctx, j, job.Change{To: job.Ready, Reason: "host stopped", Attempt: att, Mutate: func(x *job.Job) {
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
		h.deferJob(ctx, j, h.waitFromOutcome(ctx, res.Outcome, keys), att, keys)
	case provider.ClassAuth:
		h.block(ctx, j, "authentication: "+res.Outcome.Reason, att)
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
		runAt := end.Add(transientBackoff.Next(n - 1))
		h.apply(ctx, j, job.Change{To: job.Ready, Reason: "transient failure: " + res.Outcome.Reason, Attempt: att,
			Mutate: func(x *job.Job) {
				x.Attempts, x.RunAt, x.Stage = n, runAt, "retry at "+stageTime(runAt)
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

// jobEnv is the host's environment plus the job's LAYOVER_* variables.
func (f *Jobs) jobEnv(j job.Job, attemptID string) []string {
	env := slices.DeleteFunc(slices.Clone(f.cfg.Env), func(kv string) bool {
		k, _, _ := strings.Cut(kv, "=")
		return k == "LAYOVER_JOB_ID" || k == "LAYOVER_ATTEMPT_ID" || k == "LAYOVER_FENCE" || k == "LAYOVER_CHECKPOINT"
	})
	env = append(env, "LAYOVER_JOB_ID="+j.ID, "LAYOVER_ATTEMPT_ID="+attemptID,
		"LAYOVER_FENCE="+strconv.FormatInt(j.Fence, 10))
	if f.cfg.StoreLocation != "" {
		env = append(slices.DeleteFunc(env, func(kv string) bool { return strings.HasPrefix(kv, "LAYOVER_STORE=") }),
			"LAYOVER_STORE="+f.cfg.StoreLocation)
	}
	if j.Checkpoint != nil {
		path := filepath.Join(f.cfg.CheckpointDir, j.ID+".json")
		data := j.Checkpoint.Data
		if len(data) == 0 {
			data = []byte("null")
		}
		if err := os.WriteFile(path, data, 0o600); err == nil {
			env = append(env, "LAYOVER_CHECKPOINT="+path)
		}
	}
	return env
}

// shell runs a hook command with sh -c in the job's directory and
// environment, returning its exit code and stdout.
func (f *Jobs) shell(ctx context.Context, j job.Job, command string, extra []string) (int, []byte, error) {
	cmd := exec.CommandContext(ctx, f.cfg.Shell, "-c", command)
	cmd.Dir = j.Spec.Workdir
	cmd.Env = append(f.jobEnv(j, ""), extra...)
	var out bytes.Buffer
	cmd.Stdout = &out
	err := cmd.Run()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode(), out.Bytes(), nil
	}
	if err != nil {
		return -1, nil, err
	}
	return 0, out.Bytes(), nil
}

// transientBackoff gives the wait before the run after the n'th transient
// failure (Next(n-1) for n >= 1): DefaultBackoff doubled each time, at most
// MaxBackoff, so no attempt count shifts it past the largest Duration.
var transientBackoff = clock.Exponential(DefaultBackoff, MaxBackoff)
