package host

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"sync"
	"time"

	"github.com/layoverhq/layover/job"
	"github.com/layoverhq/layover/quota"
	"github.com/layoverhq/layover/receipt"
)

// idPattern is what a job id may look like: safe in paths and shells.
var idPattern = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$`) })

// ValidID reports whether id can name a job.
func ValidID(id string) bool { return idPattern().MatchString(id) }

// NewID returns a fresh job id.
func NewID() string { return "job-" + randomHex(8) }

// Submit queues a ready job. The same id with an equal spec returns the
// stored job (created false); with a different spec, job.ErrConflict. A
// spec that job.Spec.Validate refuses (a secret in its commands, a bad
// name) is not stored.
func Submit(ctx context.Context, st Store, id string, spec job.Spec, now time.Time) (job.Job, bool, error) {
	if !ValidID(id) {
		return job.Job{}, false, fmt.Errorf("job id %q: use letters, digits, '.', '_' and '-' (at most 128)", id)
	}
	if err := spec.Validate(); err != nil {
		return job.Job{}, false, err
	}
	return st.SubmitJob(ctx, job.Job{ID: id, Spec: spec, State: job.Ready, Stage: "ready", CreatedAt: now, UpdatedAt: now}, nil, now)
}

// Submit queues a ready job on this host's store and wakes the scheduler.
func (h *Host) Submit(ctx context.Context, id string, spec job.Spec) (job.Job, bool, error) {
	j, created, err := Submit(ctx, h.st, id, spec, h.cfg.Clock.Now())
	if err == nil {
		h.Nudge()
	}
	return j, created, err
}

// Deferral is a wait a provider declared, for recording a job already
// deferred.
type Deferral struct {
	// Key is the exhausted quota; Provider names its provider ("github").
	Key      quota.Key
	Provider string
	// Secondary marks a short throttle (receipt reason
	// provider-secondary-limit).
	Secondary bool
	// ResetAt is the declared reset (or now + retry-after). Required.
	ResetAt time.Time
}

// ErrNoDeclaredReset is returned when a receipt is asked for without a
// reset the provider declared: a receipt needs a declared wait.
var ErrNoDeclaredReset = errors.New("no receipt without a reset the provider declared")

// SubmitDeferred records a new job that is already deferred: its receipt
// and its wake-up are written in one transaction with the job, and the call
// returns once they are durable. Ownership is retained when this host is
// running (it will wake the job), else handoff. keys are the job's resolved
// quota keys (for the scope binding).
func (h *Host) SubmitDeferred(ctx context.Context, id string, spec job.Spec, d Deferral, keys []quota.Key) (job.Job, *receipt.Receipt, error) {
	h.mu.Lock()
	live := h.started && !h.stopped
	h.mu.Unlock()
	j, rc, err := SubmitDeferred(ctx, h.st, id, spec, d, keys, DeferOptions{
		Now: h.cfg.Clock.Now(), Policy: h.cfg.Policy, Rand: h.cfg.Rand, Retained: live, Shell: h.cfg.Shell, Env: h.cfg.Env})
	if err == nil && live {
		// The loop may be asleep until after this wake-up.
		h.nudgeIfSooner(j)
	}
	return j, rc, err
}

// DeferOptions are what SubmitDeferred needs outside a running host.
type DeferOptions struct {
	Now    time.Time
	Policy quota.Policy
	Rand   quota.Rand
	// Retained: a live durable host will wake the job; else handoff.
	Retained bool
	Shell    string   // runs the plan command (default /bin/sh)
	Env      []string // the plan command's environment
}

// PrepareDeferred issues the receipt of a job that is deferred now, without
// storing anything: `layover run --defer-after` prints it. A reset more than
// 24 h ahead, or past the job's deadline, yields no receipt.
func PrepareDeferred(ctx context.Context, id string, spec job.Spec, d Deferral, keys []quota.Key, o DeferOptions) (job.Job, *receipt.Receipt, []byte, error) {
	if !ValidID(id) {
		return job.Job{}, nil, nil, fmt.Errorf("job id %q: use letters, digits, '.', '_' and '-' (at most 128)", id)
	}
	if d.ResetAt.IsZero() {
		return job.Job{}, nil, nil, ErrNoDeclaredReset
	}
	if o.Shell == "" {
		o.Shell = "/bin/sh"
	}
	j := job.Job{ID: id, Spec: spec, State: job.Deferred, CreatedAt: o.Now, UpdatedAt: o.Now}
	hh := &Host{cfg: Config{Shell: o.Shell, Env: o.Env, Policy: o.Policy}}
	w := wait{Key: d.Key, Provider: d.Provider, Secondary: d.Secondary, ResetAt: d.ResetAt}
	rc, data, err := hh.issueReceipt(ctx, issueInput{Now: o.Now, Job: j, Wait: w, Jitter: o.Policy.DrawJitter(o.Rand),
		Keys: keys, Retained: o.Retained})
	if err != nil {
		return job.Job{}, nil, nil, err
	}
	j.Ownership = job.Handoff
	if o.Retained {
		j.Ownership = job.Retained
	}
	j.RunAt, j.ResumeBy = rc.ResumeAfter(), rc.ResumeBy()
	j.Stage = "Quota wait until " + stageTime(j.RunAt)
	return j, rc, data, nil
}

// SubmitDeferred records a new deferred job with its receipt on st, as
// `layover run --submit` does: the job, its receipt and its wake-up in one
// transaction, durable when it returns. Nothing is stored on an error, nor
// for a spec that job.Spec.Validate refuses.
func SubmitDeferred(ctx context.Context, st Store, id string, spec job.Spec, d Deferral, keys []quota.Key, o DeferOptions) (job.Job, *receipt.Receipt, error) {
	if err := spec.Validate(); err != nil {
		return job.Job{}, nil, err
	}
	j, rc, data, err := PrepareDeferred(ctx, id, spec, d, keys, o)
	if err != nil {
		return job.Job{}, nil, err
	}
	stored, created, err := st.SubmitJob(ctx, j, &job.Receipt{JobID: id, JSON: data, IssuedAt: o.Now}, o.Now)
	if err != nil {
		return job.Job{}, nil, err
	}
	if !created {
		return stored, nil, fmt.Errorf("%w: job %s already exists (%s)", job.ErrConflict, id, stored.State)
	}
	return stored, rc, nil
}
