package store

import (
	"context"
	"time"

	"github.com/layoverhq/layover/job"
)

// Jobs is the durable host's memory: jobs, their history, leases and the
// hosts that hold them. Every method is atomic; a method that changes a
// claimed job checks its fence in the same transaction.
type Jobs interface {
	// SubmitJob records a new job. When the id exists with an equal spec it
	// returns the stored job and created=false; with a different spec,
	// job.ErrConflict. A non-nil receipt is stored in the same transaction
	// (a job submitted already deferred, with its wake-up in RunAt).
	SubmitJob(ctx context.Context, j job.Job, rc *job.Receipt, now time.Time) (stored job.Job, created bool, err error)
	// Job returns one job, or job.ErrNotFound.
	Job(ctx context.Context, id string) (job.Job, error)
	// ListJobs returns the jobs in state (all when state is ""), oldest first.
	ListJobs(ctx context.Context, state job.State) ([]job.Job, error)
	// JobHistory returns a job's attempts, transitions and receipts.
	JobHistory(ctx context.Context, id string) (job.History, error)
	// CountJobs counts jobs per state.
	CountJobs(ctx context.Context) (map[job.State]int, error)

	// ApplyJob applies one change. fence >= 0 must equal the job's fence
	// (else job.ErrStaleFence); fence < 0 skips the check (operator
	// actions). An operator change that moves a running job elsewhere also
	// bumps the fence, so the host that held it loses it.
	ApplyJob(ctx context.Context, id string, fence int64, ch job.Change) (job.Job, error)

	// ClaimJobs claims up to limit due jobs for hostID: ready jobs whose
	// RunAt has come, and resumable ones, highest priority first, then
	// earliest RunAt. Each claim increments the fence and sets the lease
	// until now+lease, in one transaction. States do not change.
	ClaimJobs(ctx context.Context, hostID string, now time.Time, lease time.Duration, limit int) ([]job.Job, error)
	// RenewLeases extends the leases hostID holds (id -> fence) to
	// now+lease and returns the ids whose fence or owner no longer match:
	// leases the host lost.
	RenewLeases(ctx context.Context, hostID string, held map[string]int64, now time.Time, lease time.Duration) (lost []string, err error)
	// SweepJobs does the time-driven transitions due at now and returns how
	// many of each it made: deferred jobs with retained ownership whose
	// RunAt came become resumable; deferred or resumable jobs whose ResumeBy
	// passed, and unfinished jobs past their deadline, are cancelled; claimed
	// jobs whose lease expired, or running jobs past their progress
	// deadline, lose the claim (running ones go back to ready).
	SweepJobs(ctx context.Context, now time.Time) (SweepResult, error)
	// NextJobDue is the earliest time a sweep or claim has work: the next
	// RunAt, ResumeBy, deadline, lease or progress expiry. ok is false when
	// nothing is scheduled.
	NextJobDue(ctx context.Context) (at time.Time, ok bool, err error)

	// RegisterHost records a durable host; HostHeartbeat renews its
	// LastSeen; UnregisterHost removes it; Hosts lists them.
	RegisterHost(ctx context.Context, h job.Host) error
	HostHeartbeat(ctx context.Context, id string, now time.Time) error
	UnregisterHost(ctx context.Context, id string) error
	Hosts(ctx context.Context) ([]job.Host, error)
}

// SweepResult counts what one sweep did.
type SweepResult struct {
	Woken     int // deferred -> resumable
	Expired   int // deferred/resumable -> cancelled (resume_by passed)
	PastDue   int // -> cancelled (job deadline passed)
	Reclaimed int // lease or progress deadline lost
}
