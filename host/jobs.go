package host

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/layoverhq/layover/clock"
	"github.com/layoverhq/layover/job"
	"github.com/layoverhq/layover/provider/registry"
	"github.com/layoverhq/layover/quota"
	"github.com/layoverhq/layover/receipt"
)

// Jobs is the host's front door: the one way a job enters the store
// (Submit, SubmitDeferred), the receipt of a deferral nothing stores
// (PrepareDeferred), and the operator's actions (Cancel, Approve, Unblock,
// Adopt, Checkpoint, LiveHosts). A Host embeds its Jobs, so the host and a
// program that only submits or acts on jobs (the CLI) go through the same
// methods with the same Config. Every time comes from Config.Clock.
//
// A Jobs is safe for concurrent use.
type Jobs struct {
	cfg Config
	st  Store
	// providers finds a quota key's provider: the API hosts of
	// provider/registry, and those the environment's base-URL variables
	// name (GITHUB_API_URL, …).
	providers *registry.Hosts
	// live reports whether a running durable host will wake a deferral
	// recorded now: set by the Host that embeds this Jobs; nil asks the
	// store for a live host.
	live func() bool
	// wake tells the Host that embeds this Jobs of a job the front door
	// submitted or made due (Submit, SubmitDeferred, Approve, Unblock), so
	// its scheduler does not sleep past it; nil when no host runs here.
	wake func(job.Job)
	hub  hub // the subscriptions (Subscribe)
}

// NewJobs returns the front door to cfg.Store, which is required. It uses
// cfg's Store, Clock, Policy, Shell, Env and Logger (a line per job
// transition), with the defaults of Config (a
// zero Policy is quota.DefaultPolicy()); the rest of Config is the running
// host's and is ignored here. The front door draws no jitter: a deferral
// brings its own (Deferral.Jitter).
func NewJobs(cfg Config) (*Jobs, error) {
	if cfg.Store == nil {
		return nil, errors.New("host: Store is required")
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.Real{}
	}
	if cfg.Rand == nil {
		cfg.Rand = quota.NewRand()
	}
	if cfg.Policy.UnknownReset == 0 { // the zero Policy: use the defaults
		cfg.Policy = quota.DefaultPolicy()
	}
	if err := cfg.Policy.Validate(); err != nil {
		return nil, fmt.Errorf("host: %w", err)
	}
	if cfg.Env == nil {
		cfg.Env = os.Environ()
	}
	if cfg.Shell == "" {
		cfg.Shell = "/bin/sh"
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	return &Jobs{cfg: cfg, st: cfg.Store, providers: registry.NewHosts(envLookup(cfg.Env))}, nil
}

// idPattern is what a job id may look like: safe in paths and shells.
var idPattern = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$`) })

// ValidID reports whether id can name a job.
func ValidID(id string) bool { return idPattern().MatchString(id) }

// NewID returns a fresh job id.
func NewID() string { return "job-" + randomHex(8) }

func badID(id string) error {
	return fmt.Errorf("job id %q: use letters, digits, '.', '_' and '-' (at most 128)", id)
}

// Submit queues a ready job. The same id with an equal spec returns the
// stored job (created false); with a different spec, job.ErrConflict. A
// spec that job.Spec.Validate refuses (a secret in its commands, a bad
// name) is not stored.
func (f *Jobs) Submit(ctx context.Context, id string, spec job.Spec) (job.Job, bool, error) {
	return f.SubmitAt(ctx, id, spec, time.Time{})
}

// SubmitAt is Submit of a job that may start no sooner than runAt (zero:
// now): stored ready with its RunAt, it is claimed once that time comes
// (layover submit --at, --in). A job already stored is returned as
// Submit returns it, its RunAt as stored.
func (f *Jobs) SubmitAt(ctx context.Context, id string, spec job.Spec, runAt time.Time) (job.Job, bool, error) {
	if !ValidID(id) {
		return job.Job{}, false, badID(id)
	}
	if err := spec.Validate(); err != nil {
		return job.Job{}, false, err
	}
	spec = f.withDeadline(ctx, id, spec)
	now := f.cfg.Clock.Now()
	j := job.Job{ID: id, Spec: spec, State: job.Ready, Stage: "ready", CreatedAt: now, UpdatedAt: now}
	if runAt.After(now) {
		j.RunAt, j.Stage = runAt.UTC().Truncate(time.Millisecond), "ready at "+stageTime(runAt)
	}
	j, created, err := f.st.SubmitJob(ctx, j, nil, now)
	if err == nil {
		if created {
			f.submitted(j, now, wait{})
		}
		f.woke(j)
	}
	return j, created, err
}

// woke hands j to the embedding Host's scheduler, if any.
func (f *Jobs) woke(j job.Job) {
	if f.wake != nil {
		f.wake(j)
	}
}

// Deferral is a wait a provider declared, for recording a job already
// deferred.
type Deferral struct {
	// Key is the exhausted quota; Provider names its provider (as package
	// provider/registry does).
	Key      quota.Key
	Provider string
	// Secondary marks a short throttle (receipt reason
	// provider-secondary-limit).
	Secondary bool
	// ResetAt is the declared reset (or now + retry-after). Required.
	ResetAt time.Time
	// Jitter is this wait's share of the policy's jitter, drawn once by
	// the caller (quota.Policy.DrawJitter) and used as given: the receipt's
	// resume_after is ResetAt + the policy's margin + Jitter. Zero adds none.
	Jitter time.Duration
}

// ErrNoDeclaredReset is returned when a receipt is asked for without a
// reset the provider declared: a receipt needs a declared wait.
var ErrNoDeclaredReset = errors.New("no receipt without a reset the provider declared")

// PrepareDeferred issues the receipt of a job that is deferred now and that
// nothing stores: `layover run --defer-after` prints it. Its ownership is
// handoff. A reset more than 24 h ahead, or past the job's deadline, yields
// no receipt.
func (f *Jobs) PrepareDeferred(ctx context.Context, id string, spec job.Spec, d Deferral, keys []quota.Key) (job.Job, *receipt.Receipt, []byte, error) {
	return f.prepareDeferred(ctx, id, spec, d, keys, "")
}

// prepareDeferred is the deferred job and its receipt, issued at now by
// issueReceipt: retained by the durable host owner, or handoff when owner
// is "".
func (f *Jobs) prepareDeferred(ctx context.Context, id string, spec job.Spec, d Deferral, keys []quota.Key, owner string) (job.Job, *receipt.Receipt, []byte, error) {
	retained := owner != ""
	if !ValidID(id) {
		return job.Job{}, nil, nil, badID(id)
	}
	if d.ResetAt.IsZero() {
		return job.Job{}, nil, nil, ErrNoDeclaredReset
	}
	now := f.cfg.Clock.Now()
	j := job.Job{ID: id, Spec: spec, State: job.Deferred, CreatedAt: now, UpdatedAt: now}
	w := wait{Key: d.Key, Provider: d.Provider, Secondary: d.Secondary, ResetAt: d.ResetAt}
	rc, data, err := f.issueReceipt(ctx, issueInput{Now: now, Job: j, Wait: w, Jitter: d.Jitter, Keys: keys, Retained: retained, Owner: owner})
	if err != nil {
		return job.Job{}, nil, nil, err
	}
	j.Ownership = job.Handoff
	if retained {
		j.Ownership = job.Retained
	}
	j.RunAt, j.ResumeBy = rc.ResumeAfter(), rc.ResumeBy()
	j.Stage = "Quota wait until " + stageTime(j.RunAt)
	return j, rc, data, nil
}

// SubmitDeferred records a new job that is already deferred, as `layover
// run --submit` does: the job, its receipt and its wake-up in one
// transaction, durable when it returns. Ownership is retained when a
// durable host is live to wake it (the Host this Jobs belongs to is
// running; for a Jobs of its own, the store lists a live host), else
// handoff. keys are the job's resolved quota keys (for the scope binding).
// Nothing is stored on an error, nor for a spec that job.Spec.Validate
// refuses.
func (f *Jobs) SubmitDeferred(ctx context.Context, id string, spec job.Spec, d Deferral, keys []quota.Key) (job.Job, *receipt.Receipt, error) {
	if err := spec.Validate(); err != nil {
		return job.Job{}, nil, err
	}
	spec = f.withDeadline(ctx, id, spec)
	owner, err := f.liveOwner(ctx)
	if err != nil {
		return job.Job{}, nil, err
	}
	j, rc, data, err := f.prepareDeferred(ctx, id, spec, d, keys, owner)
	if err != nil {
		return job.Job{}, nil, err
	}
	stored, created, err := f.st.SubmitJob(ctx, j, &job.Receipt{JobID: id, JSON: data, IssuedAt: j.CreatedAt, HostID: owner}, j.CreatedAt)
	if err != nil {
		return job.Job{}, nil, err
	}
	if !created {
		return stored, nil, fmt.Errorf("%w: job %s already exists (%s)", job.ErrConflict, id, stored.State)
	}
	f.submitted(stored, j.CreatedAt, wait{Key: d.Key, ResetAt: d.ResetAt})
	f.woke(stored)
	return stored, rc, nil
}

// liveOwner names the durable host that will wake a deferral: this Jobs'
// own Host while it runs, else a live host on the store; "" when none is
// live.
func (f *Jobs) liveOwner(ctx context.Context) (string, error) {
	if f.live != nil {
		if f.live() {
			return f.cfg.ID, nil
		}
		return "", nil
	}
	live, err := f.LiveHosts(ctx)
	if err != nil {
		return "", fmt.Errorf("read hosts: %w", err)
	}
	if len(live) == 0 {
		return "", nil
	}
	return live[0].ID, nil
}

// withDeadline gives a spec without a deadline the default one: the
// stored job's, when the id was submitted before (so that submitting it
// again is the same submission), else DefaultDeadline from now.
func (f *Jobs) withDeadline(ctx context.Context, id string, spec job.Spec) job.Spec {
	if !spec.Deadline.IsZero() {
		return spec
	}
	if old, err := f.st.Job(ctx, id); err == nil {
		spec.Deadline = old.Spec.Deadline
		return spec
	}
	spec.Deadline = f.cfg.Clock.Now().Add(DefaultDeadline)
	return spec
}

// Operator actions: they work on the store directly, with or without a
// running host, and carry no fence (job.NoFence); an action that takes a
// running job from its host bumps the fence, so the host loses it and
// stops the process.

var notEnded = []job.State{job.Ready, job.Running, job.Deferred, job.Resumable, job.AuthWait, job.Blocked}

// Cancel cancels a job that has not ended. A running job's process is
// signalled by its host when the host's next heartbeat finds the lease gone.
func (f *Jobs) Cancel(ctx context.Context, id string) (job.Job, error) {
	return f.applyJob(ctx, id, job.NoFence, job.Change{To: job.Cancelled, From: notEnded, Reason: "cancelled by the operator",
		Now: f.cfg.Clock.Now(), Mutate: func(x *job.Job) { x.Stage = "cancelled"; releaseLease(x) }})
}

// Approve gives a job the fresh approval its resume needs. A job parked
// awaiting approval wakes at once.
func (f *Jobs) Approve(ctx context.Context, id string) (job.Job, error) {
	now := f.cfg.Clock.Now()
	j, err := f.applyJob(ctx, id, job.NoFence, job.Change{From: notEnded, Now: now, Mutate: func(x *job.Job) {
		x.Approved = true
		if x.State == job.Deferred && strings.HasPrefix(x.Stage, awaitingApproval) {
			x.RunAt = now
		}
	}})
	if err == nil {
		f.woke(j)
	}
	return j, err
}

// Unblock returns a blocked job, or one waiting for credentials, to ready.
func (f *Jobs) Unblock(ctx context.Context, id string) (job.Job, error) {
	now := f.cfg.Clock.Now()
	j, err := f.applyJob(ctx, id, job.NoFence, job.Change{To: job.Ready, From: []job.State{job.Blocked, job.AuthWait}, Reason: reasonUnblocked, Now: now,
		Mutate: func(x *job.Job) {
			x.Stage, x.RunAt, x.Ownership, x.ResumeBy, x.Probes = "ready", now, job.NoOwnership, time.Time{}, 0
		}})
	if err == nil {
		f.woke(j)
	}
	return j, err
}

// ErrNoLiveHost is returned when adopt finds no durable host running on the
// store.
var ErrNoLiveHost = errors.New("no live durable host on this store (start one with layover serve)")

// LiveHosts lists the hosts that heartbeated within their own lease
// (job.Host.Live).
func (f *Jobs) LiveHosts(ctx context.Context) ([]job.Host, error) {
	hosts, err := f.st.Hosts(ctx)
	if err != nil {
		return nil, err
	}
	now := f.cfg.Clock.Now()
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
func (f *Jobs) Adopt(ctx context.Context, id string) (job.Job, *receipt.Receipt, error) {
	live, err := f.LiveHosts(ctx)
	if err != nil {
		return job.Job{}, nil, err
	}
	if len(live) == 0 {
		return job.Job{}, nil, ErrNoLiveHost
	}
	j, err := f.st.Job(ctx, id)
	if err != nil {
		return job.Job{}, nil, err
	}
	if j.State != job.Deferred || j.Ownership != job.Handoff {
		return job.Job{}, nil, fmt.Errorf("%w: job %s is %s with %q ownership; only a handoff deferral can be adopted",
			job.ErrTransition, id, j.State, j.Ownership)
	}
	hist, err := f.st.JobHistory(ctx, id)
	if err != nil || len(hist.Receipts) == 0 {
		return job.Job{}, nil, fmt.Errorf("job %s has no receipt to adopt", id)
	}
	old, err := receipt.Decode(hist.Receipts[len(hist.Receipts)-1].JSON)
	if err != nil {
		return job.Job{}, nil, fmt.Errorf("job %s: its receipt is not valid: %w", id, err)
	}
	now := f.cfg.Clock.Now()
	after := old.ResumeAfter()
	if after.Before(now) {
		after = now
	}
	by := min(old.ResumeBy().UnixMilli(), now.Add(receipt.MaxWindow).UnixMilli())
	if by < after.UnixMilli() {
		return job.Job{}, nil, fmt.Errorf("job %s: its receipt expired at %s", id, old.ResumeBy().Format(time.RFC3339))
	}
	owner := receipt.Owner{JobID: id, HostID: live[0].ID, Fence: j.Fence, WakeAt: after}
	rc, err := receipt.NewRetained(receipt.Params{Version: old.Version, Reason: old.Reason, IssuedAt: now, ResumeAfter: after,
		ResumeBy: time.UnixMilli(by), Bindings: old.Bindings, FreshApprovalRequired: old.FreshApprovalRequired},
		owner.WakeupDigest(), owner.CancellationDigest())
	if err != nil {
		return job.Job{}, nil, err
	}
	data, err := receipt.Encode(rc)
	if err != nil {
		return job.Job{}, nil, err
	}
	j, err = f.applyJob(ctx, id, job.NoFence, job.Change{To: job.Deferred, From: []job.State{job.Deferred}, Now: now,
		Reason: "adopted by a live host", Receipt: &job.Receipt{JobID: id, JSON: data, IssuedAt: now, HostID: owner.HostID, Fence: j.Fence},
		Mutate: func(x *job.Job) {
			x.Ownership, x.RunAt, x.ResumeBy = job.Retained, rc.ResumeAfter(), rc.ResumeBy()
		}})
	return j, rc, err
}

// Checkpoint records a running job's last verified stage, renewing its
// progress deadline. fence is the holder's (LAYOVER_FENCE): a stale one is
// refused with job.ErrStaleFence, and job.NoFence (any fence < 0) too,
// since only the job's holder checkpoints.
func (f *Jobs) Checkpoint(ctx context.Context, id string, fence int64, stage string, data json.RawMessage) (job.Job, error) {
	if fence < 0 {
		return job.Job{}, fmt.Errorf("checkpoint: %w: fence %d is not a claim's", job.ErrStaleFence, fence)
	}
	if err := job.ValidateCheckpoint(stage, data); err != nil {
		return job.Job{}, fmt.Errorf("checkpoint: %w", err)
	}
	now := f.cfg.Clock.Now()
	return f.applyJob(ctx, id, fence, job.Change{From: []job.State{job.Running}, Now: now, Mutate: func(x *job.Job) {
		x.Checkpoint = &job.Checkpoint{Stage: stage, Data: data, At: now}
		x.Stage = stage
		if x.Spec.ProgressTimeout > 0 {
			x.ProgressBy = now.Add(x.Spec.ProgressTimeout)
		}
	}})
}
