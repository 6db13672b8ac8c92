package host

// Deferrals: the quota waits a job sits out, with a receipt or as a probe
// (docs/lifecycle.md, Probes for unknown resets; Deferral chains).

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/layoverhq/layover/job"
	"github.com/layoverhq/layover/provider"
	"github.com/layoverhq/layover/provider/registry"
	"github.com/layoverhq/layover/quota"
	"github.com/layoverhq/layover/receipt"
)

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

// waitFromState is the wait of a key its state says is exhausted (or
// short); the key's provider is the registry's (provider/registry).
func (f *Jobs) waitFromState(s quota.State) wait {
	w := wait{Key: s.Key, Why: "quota wait: " + s.Resource + " exhausted"}
	if p, ok := f.providers.OfKey(s.Key); ok {
		w.Provider = p.Name
	}
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
	if p, ok := registry.Lookup(o.Provider); ok && resource == "" {
		// The resource a limit is recorded under when the evidence names
		// none (GitHub's core).
		resource = p.DefaultResource
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
				if s.Key == w.Key && s.Exhausted(now) && s.ResetKnown {
					w.ResetAt = s.ResetAt
				} else if s.Key == w.Key && s.HasRoom() {
					w.Room = true
				}
			}
		}
	}
	return w
}

// receiptReason maps a wait to the receipt reasons of docs/receipt.md
// (Reasons), as the wait's provider says (registry.ReceiptReason).
func receiptReason(w wait) receipt.Reason {
	return registry.ReceiptReason(w.Provider, w.Key.Resource, w.Secondary)
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
	secondaries := 0
	if w.Secondary {
		secondaries = j.Secondaries + 1
	}
	if w.ResetAt.IsZero() {
		backoff := p.SecondaryWait
		if !w.Secondary {
			if j.Probes >= MaxProbes {
				h.fail(ctx, j, fmt.Sprintf("%s: the reset stayed unknown through %d probes", w.Why, j.Probes), att)
				return
			}
			backoff = h.probeWait(j.Probes)
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
		h.applyDeferral(ctx, j, job.Change{To: job.Deferred, Reason: why, Attempt: att,
			Mutate: func(x *job.Job) {
				// A probe inside a chain keeps its resume_by: the sweep
				// cancels the job if the chain ends before the quota is back.
				x.RunAt, x.ResumeBy, x.Ownership, x.Probes = runAt, chainBy, job.Retained, x.Probes+1
				x.Secondaries = secondaries
				x.Stage = "Quota wait until " + stageTime(runAt) + note
				releaseLease(x)
			}}, w)
		return
	}
	if w.ResetAt.After(now.Add(receipt.MaxWindow)) {
		h.block(ctx, j, "the quota resets more than 24h from now ("+stageTime(w.ResetAt)+")", att)
		return
	}
	rc, data, err := h.issueReceipt(ctx, issueInput{Now: now, Job: j, Wait: w, Jitter: p.DrawJitter(h.cfg.Rand),
		ChainBy: chainBy, Keys: keys, Retained: true, Owner: h.cfg.ID})
	if windowError(err) {
		h.apply(ctx, j, job.Change{To: job.Cancelled, Reason: err.Error() + resetNote + stageTime(w.ResetAt), Attempt: att,
			Mutate: func(x *job.Job) { x.Stage = "Cancelled: " + err.Error(); releaseLease(x) }})
		return
	}
	if err != nil {
		h.block(ctx, j, "cannot issue a receipt: "+err.Error(), att)
		return
	}
	h.applyDeferral(ctx, j, job.Change{To: job.Deferred, Reason: w.Why + resetNote + stageTime(w.ResetAt), Attempt: att,
		Receipt: &job.Receipt{JobID: j.ID, JSON: data, IssuedAt: now, HostID: h.cfg.ID, Fence: j.Fence},
		Mutate: func(x *job.Job) {
			x.RunAt, x.ResumeBy, x.Ownership, x.Probes = rc.ResumeAfter(), rc.ResumeBy(), job.Retained, 0
			x.Secondaries = secondaries
			x.Stage = "Quota wait until " + stageTime(rc.ResumeAfter())
			releaseLease(x)
		}}, w)
}

// resetNote ends the reason of a deferral on a declared reset, before the
// reset itself (RFC 3339 UTC): the job's wake-up, in its RunAt and stage,
// is that reset plus the policy's margin and jitter. DeclaredReset reads
// it back.
const resetNote = "; resets at "

// DeclaredReset is the reset a provider declared for the deferral whose
// transition reason is reason, as the host records it (docs/lifecycle.md),
// or for the cancel of a job whose wait on that reset would outlast its
// deadline; false for a deferral without a declared reset (a probe) or a
// reason the host did not write.
func DeclaredReset(reason string) (time.Time, bool) {
	i := strings.LastIndex(reason, resetNote)
	if i < 0 {
		return time.Time{}, false
	}
	t, err := time.Parse(time.RFC3339, reason[i+len(resetNote):])
	if err != nil {
		return time.Time{}, false
	}
	return t, true
}

// stageTime renders a time for a stage line: RFC 3339 UTC.
func stageTime(t time.Time) string { return t.UTC().Format(time.RFC3339) }
