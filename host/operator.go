package host

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/layoverhq/layover/job"
	"github.com/layoverhq/layover/receipt"
)

// Operator actions: they work on the store directly, with or without a
// running host, and carry no fence (an action that takes a running job from
// its host bumps the fence, so the host loses it and stops the process).

var notEnded = []job.State{job.Ready, job.Running, job.Deferred, job.Resumable, job.Blocked}

// Cancel cancels a job that has not ended. A running job's process is
// signalled by its host when the host's next heartbeat finds the lease gone.
func Cancel(ctx context.Context, st Store, id string, now time.Time) (job.Job, error) {
	return st.ApplyJob(ctx, id, job.NoFence, job.Change{To: job.Cancelled, From: notEnded, Reason: "cancelled by the operator", Now: now,
		Mutate: func(x *job.Job) { x.Stage = "cancelled"; releaseLease(x) }})
}

// Approve gives a job the fresh approval its resume needs. A job parked
// awaiting approval wakes at once.
func Approve(ctx context.Context, st Store, id string, now time.Time) (job.Job, error) {
	return st.ApplyJob(ctx, id, job.NoFence, job.Change{From: notEnded, Now: now, Mutate: func(x *job.Job) {
		x.Approved = true
		if x.State == job.Deferred && strings.HasPrefix(x.Stage, awaitingApproval) {
			x.RunAt = now
		}
	}})
}

// Unblock returns a blocked job to ready.
func Unblock(ctx context.Context, st Store, id string, now time.Time) (job.Job, error) {
	return st.ApplyJob(ctx, id, job.NoFence, job.Change{To: job.Ready, From: []job.State{job.Blocked}, Reason: "unblocked by the operator", Now: now,
		Mutate: func(x *job.Job) {
			x.Stage, x.RunAt, x.Ownership, x.ResumeBy = "ready", now, job.NoOwnership, time.Time{}
		}})
}

// ErrNoLiveHost is returned when adopt finds no durable host running on the
// store.
var ErrNoLiveHost = errors.New("no live durable host on this store (start one with layover serve)")

// LiveHosts lists the hosts that heartbeated within their own lease of now.
func LiveHosts(ctx context.Context, st Store, now time.Time) ([]job.Host, error) {
	hosts, err := st.Hosts(ctx)
	if err != nil {
		return nil, err
	}
	var live []job.Host
	for _, h := range hosts {
		if h.Live(now) {
			live = append(live, h)
		}
	}
	return live, nil
}

// Adopt hands a job deferred with handoff ownership to the live host on the
// store: a new receipt with retained ownership and the same bindings is
// appended, with its wake-up, in one transaction.
func Adopt(ctx context.Context, st Store, id string, now time.Time) (job.Job, *receipt.Receipt, error) {
	live, err := LiveHosts(ctx, st, now)
	if err != nil {
		return job.Job{}, nil, err
	}
	if len(live) == 0 {
		return job.Job{}, nil, ErrNoLiveHost
	}
	j, err := st.Job(ctx, id)
	if err != nil {
		return job.Job{}, nil, err
	}
	if j.State != job.Deferred || j.Ownership != job.Handoff {
		return job.Job{}, nil, fmt.Errorf("%w: job %s is %s with %q ownership; only a handoff deferral can be adopted",
			job.ErrTransition, id, j.State, j.Ownership)
	}
	hist, err := st.JobHistory(ctx, id)
	if err != nil || len(hist.Receipts) == 0 {
		return job.Job{}, nil, fmt.Errorf("job %s has no receipt to adopt", id)
	}
	old, err := receipt.Decode(hist.Receipts[len(hist.Receipts)-1].JSON)
	if err != nil {
		return job.Job{}, nil, fmt.Errorf("job %s: its receipt is not valid: %w", id, err)
	}
	after := old.ResumeAfter()
	if after.Before(now) {
		after = now
	}
	by := min(old.ResumeBy().UnixMilli(), now.Add(receipt.MaxWindow).UnixMilli())
	if by < after.UnixMilli() {
		return job.Job{}, nil, fmt.Errorf("job %s: its receipt expired at %s", id, old.ResumeBy().Format(time.RFC3339))
	}
	nonce := randomHex(16)
	rc, err := receipt.NewRetained(receipt.Params{Version: old.Version, Reason: old.Reason, IssuedAt: now, ResumeAfter: after,
		ResumeBy: time.UnixMilli(by), Bindings: old.Bindings, FreshApprovalRequired: old.FreshApprovalRequired},
		receipt.Digest("wakeup:"+id+":"+nonce), receipt.Digest("cancel:"+id+":"+nonce))
	if err != nil {
		return job.Job{}, nil, err
	}
	data, err := receipt.Encode(rc)
	if err != nil {
		return job.Job{}, nil, err
	}
	j, err = st.ApplyJob(ctx, id, job.NoFence, job.Change{To: job.Deferred, From: []job.State{job.Deferred}, Now: now,
		Reason: "adopted by a live host", Receipt: &job.Receipt{JobID: id, JSON: data, IssuedAt: now},
		Mutate: func(x *job.Job) {
			x.Ownership, x.RunAt, x.ResumeBy = job.Retained, rc.ResumeAfter(), rc.ResumeBy()
		}})
	return j, rc, err
}

// Checkpoint records a running job's last verified stage, renewing its
// progress deadline. A stale fence is refused with job.ErrStaleFence.
func Checkpoint(ctx context.Context, st Store, id string, fence int64, stage string, data json.RawMessage, now time.Time) (job.Job, error) {
	if err := job.ValidateCheckpoint(stage, data); err != nil {
		return job.Job{}, fmt.Errorf("checkpoint: %w", err)
	}
	return st.ApplyJob(ctx, id, fence, job.Change{From: []job.State{job.Running}, Now: now, Mutate: func(x *job.Job) {
		x.Checkpoint = &job.Checkpoint{Stage: stage, Data: data, At: now}
		x.Stage = stage
		if x.Spec.ProgressTimeout > 0 {
			x.ProgressBy = now.Add(x.Spec.ProgressTimeout)
		}
	}})
}
