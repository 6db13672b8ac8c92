package host

// The resume preflight of docs/lifecycle.md (The resume preflight): what a
// resumable job passes before it runs again.

import (
	"context"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/layoverhq/layover/job"
	"github.com/layoverhq/layover/provider/agentcli"
	"github.com/layoverhq/layover/quota"
	"github.com/layoverhq/layover/receipt"
)

// keysOf resolves a job's quota names.
func (h *Host) keysOf(ctx context.Context, j job.Job) ([]quota.Key, error) {
	if h.cfg.Quotas == nil || len(j.Spec.Quota) == 0 {
		return nil, nil
	}
	return h.cfg.Quotas.Keys(ctx, j.Spec.Quota)
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
	// Its turn under the resume rate, before anything it reads or runs
	// (the quota, the plan, the check), so that those happen at its turn
	// and see the quota as it is then.
	if !h.pace(ctx, j, keys) {
		return
	}
	now = h.cfg.Clock.Now()
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
	// 6. Reconcile: the check command (0 the outcome already holds, 1 run,
	// other blocked), recorded with the job.
	var ok bool
	if j, ok = h.reconcile(ctx, j, TriggerResume); !ok {
		return
	}
	argv, why := h.resumeArgv(j)
	h.attempt(ctx, j, argv, why, keys)
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
	// A resume can start later, so a key below its reserve holds it back
	// too (docs/design.md, Who decides).
	b, ok := h.cfg.Policy.Blocking(now, states, quota.Scheduled)
	if !ok {
		return wait{}, false
	}
	w := h.waitFromState(b.State)
	if b.Cause == quota.CauseBelowReserve {
		w.Why = "reserve still short: " + b.State.Resource + " has " + strconv.FormatInt(b.State.Remaining, 10) + " left"
	}
	return w, true
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

// pace holds a resume until its keys' resume rate allows it: for each key
// it takes the key's next resume slot from the store, shared by every host
// of the fleet (store.Store.TakeResumeSlot), and waits for it. When the
// store cannot give one, it counts the key's slots in this host alone
// (docs/lifecycle.md, Resume pacing). A slot after the job's latest start
// (its resume_by, else its deadline) cancels the job rather than waiting
// for it. The wait does not count as work for Still: its wake-up is one of
// the host's (Pacing). It reports false when the job may not go on: ctx
// ended first (the host stops, the lease is lost), or the job was
// cancelled.
func (h *Host) pace(ctx context.Context, j job.Job, keys []quota.Key) bool {
	interval := time.Duration(float64(time.Second) / h.cfg.ResumeRate)
	for _, k := range keys {
		now := h.cfg.Clock.Now()
		slot, err := h.st.TakeResumeSlot(ctx, k, now, interval)
		if err != nil {
			if ctx.Err() != nil {
				return false
			}
			h.cfg.Logger.Warn("no shared resume slot; pacing this host's resumes alone", "key", k.String(), "err", err)
			slot = h.localSlot(k, now, interval)
		}
		if by, what := latestStart(j); !by.IsZero() && slot.After(by) {
			h.apply(ctx, j, job.Change{To: job.Cancelled, Reason: "resume slot past " + what, Mutate: func(x *job.Job) {
				x.Stage = "Cancelled: its turn under the resume rate on " + k.String() + " comes after its " + what
				releaseLease(x)
			}})
			return false
		}
		if slot.After(now) {
			// The timer first, for the slot's time (timerAt): a clock
			// moved once the wait is not work finds it armed, and one
			// moved since now was read does not make it late.
			timer := h.timerAt(slot)
			done := h.pacingFrom(slot)
			select {
			case <-ctx.Done():
				done()
				return false
			case <-timer:
				done()
			}
		}
	}
	return true
}

// latestStart is the latest time a resume of j may start, and what sets
// it: the receipt's resume_by, else the job's deadline (zero: none).
func latestStart(j job.Job) (time.Time, string) {
	switch {
	case !j.ResumeBy.IsZero() && (j.Spec.Deadline.IsZero() || !j.Spec.Deadline.Before(j.ResumeBy)):
		return j.ResumeBy, "resume_by"
	case !j.Spec.Deadline.IsZero():
		return j.Spec.Deadline, "deadline"
	}
	return time.Time{}, ""
}

// localSlot is key's next resume slot as this host alone counts it.
func (h *Host) localSlot(k quota.Key, now time.Time, interval time.Duration) time.Time {
	h.mu.Lock()
	defer h.mu.Unlock()
	slot := h.lastRes[k].Add(interval)
	if slot.Before(now) {
		slot = now
	}
	h.lastRes[k] = slot
	return slot
}

// resumeArgv is the command of a resume and the reason its transition
// records: the resume command with {session_id} filled in when one is set
// and the session is known, else the job's own argv. An agent job whose
// session was not captured restarts from its brief, and says so.
func (h *Host) resumeArgv(j job.Job) ([]string, string) {
	rc := j.Spec.ResumeCmd
	switch {
	case rc == "":
		return j.Spec.Argv, "resumed"
	case strings.Contains(rc, "{session_id}") && j.SessionID == "":
		return j.Spec.Argv, "resumed: " + NoSessionNote
	}
	why := "resumed with --resume-cmd"
	if strings.Contains(rc, "{session_id}") {
		why = "resumed: continuing session " + j.SessionID
	}
	return []string{h.cfg.Shell, "-c", strings.ReplaceAll(rc, "{session_id}", agentcli.ShellQuote(j.SessionID))}, why
}

// NoSessionNote is what a resume records when the failed attempt's output
// named no agent session to continue.
const NoSessionNote = "no agent session was captured, so the job restarts from its brief"
