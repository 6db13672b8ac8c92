package host

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/layoverhq/layover/job"
	"github.com/layoverhq/layover/quota"
	"github.com/layoverhq/layover/receipt"
)

// ErrChainEnded is returned when a re-deferral would need a wake-up after
// the resume_by of the chain it continues. Re-deferring never extends a
// chain, so the job ends (cancelled) instead.
var ErrChainEnded = errors.New("the quota is still short at the end of the deferral chain's resume_by")

// windowError reports whether err is a receipt window that could not be
// made (the job cannot wait that long), as opposed to a failure to make the
// receipt itself.
func windowError(err error) bool {
	return errors.Is(err, receipt.ErrDeadline) || errors.Is(err, receipt.ErrTooFar) || errors.Is(err, ErrChainEnded)
}

// issueInput is what one receipt is issued from.
type issueInput struct {
	Now  time.Time
	Job  job.Job // its ID and Spec
	Wait wait    // ResetAt must be provider-declared (non-zero)
	// Jitter is the policy jitter drawn once for this wait.
	Jitter time.Duration
	// ChainBy is the resume_by of the receipt this deferral continues
	// (zero for the first of a chain). A chain of deferrals never outlives
	// its first resume_by: the new receipt's resume_by is at most ChainBy.
	ChainBy  time.Time
	Keys     []quota.Key
	Retained bool
	// Owner is the durable host that records a retained receipt's wake-up;
	// the receipt's ownership digests bind it, the job and Job.Fence
	// (receipt.Owner).
	Owner string
}

// issueReceipt is the one place a receipt is made, for a job deferred by
// `layover run --defer-after`/`--submit` (PrepareDeferred) and by the host
// (deferJob). The window is receipt.Window's, bounded by the job's deadline
// and by in.ChainBy; an empty window is receipt.ErrTooFar or
// receipt.ErrDeadline (ErrChainEnded when the chain's bound emptied it).
func (f *Jobs) issueReceipt(ctx context.Context, in issueInput) (*receipt.Receipt, []byte, error) {
	p := f.cfg.Policy
	bound := in.Job.Spec.Deadline
	if !in.ChainBy.IsZero() && (bound.IsZero() || in.ChainBy.Before(bound)) {
		bound = in.ChainBy
	}
	after, by, err := receipt.Window(in.Now, in.Wait.ResetAt, p.ResetMargin, in.Jitter, bound)
	if errors.Is(err, receipt.ErrDeadline) && bound.Equal(in.ChainBy) {
		err = ErrChainEnded
	}
	if err != nil {
		return nil, nil, err
	}
	b, err := f.bindings(ctx, in.Job, in.Keys)
	if err != nil {
		return nil, nil, fmt.Errorf("cannot compute bindings: %w", err)
	}
	params := receipt.Params{Reason: receiptReason(in.Wait), IssuedAt: in.Now, ResumeAfter: after, ResumeBy: by,
		Bindings: b, FreshApprovalRequired: in.Job.Spec.FreshApprovalRequired}
	var rc *receipt.Receipt
	if in.Retained {
		o := receipt.Owner{JobID: in.Job.ID, HostID: in.Owner, Fence: in.Job.Fence, WakeAt: after}
		rc, err = receipt.NewRetained(params, o.WakeupDigest(), o.CancellationDigest())
	} else {
		rc, err = receipt.NewHandoff(params)
	}
	if err != nil {
		return nil, nil, err
	}
	data, err := receipt.Encode(rc)
	if err != nil {
		return nil, nil, err
	}
	return rc, data, nil
}

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
