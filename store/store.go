// Package store defines what layover remembers and the one interface every
// storage backend implements whole. It is an internal seam: backends live
// in subpackages (store/sqlite, store/postgres), each asserting that its
// *Store is a Store, and all pass the conformance suite in store/storetest.
//
// A store keeps quota states, learned logins, the activity log, the
// commands that are waiting, the durable host's jobs and hosts, and the
// records of workflow runs (package workflow/record). It
// never keeps a token: principals are logins or token fingerprints (see
// quota.TokenFingerprint). A consumer that needs only part of it declares
// its own smaller interface.
package store

import (
	"context"
	"errors"
	"time"

	"github.com/layoverhq/layover/job"
	"github.com/layoverhq/layover/quota"
	"github.com/layoverhq/layover/workflow/record"
)

// Sentinel errors of every backend. A job or host that does not exist is
// job.ErrNotFound, the one not-found error of every backend.
var (
	// ErrUnsupported: the location names a backend this build does not have.
	ErrUnsupported = errors.New("unsupported store")
	// ErrSchemaOld: a store opened read-only has an older schema than this
	// layover reads (or none yet); only a read-write open upgrades it.
	ErrSchemaOld = errors.New("the store's schema is older than this layover reads")
	// ErrNoSchema: a PostgreSQL store opened read-only has no layover
	// schema at all (no migration applied: nothing is stored there yet).
	// It comes wrapped with ErrSchemaOld.
	ErrNoSchema = errors.New("no layover store there yet")
)

// Activity is one line of the activity log.
type Activity struct {
	ID   int64
	At   time.Time
	Kind string // "skip", "wait", "waited", ...
	Line string // what an operator reads, e.g. "skipped: GitHub Quota wait until …"
}

// Waiter is a command registered in the store while it waits for a quota, so
// that status can list it.
type Waiter struct {
	ID        int64
	Hostname  string // machine the waiting process runs on
	PID       int
	Command   string // the command line, as the user typed it
	Key       quota.Key
	Stage     string // "Quota wait until <time>"
	WaitUntil time.Time
	StartedAt time.Time
}

// Store is layover's memory: the ledger, the activity log, the waiting
// commands, the jobs and the durable hosts. Implementations are safe for
// concurrent use by many goroutines and many processes at once; every
// write is atomic, and a method that changes a claimed job checks its
// fence in the same transaction.
type Store interface {
	// The ledger.

	// RecordStates upserts observations. For each key the most recently
	// observed state wins, whatever order concurrent writers commit in. In
	// the same transaction it adds them to the keys' bounded histories
	// (Observations).
	RecordStates(ctx context.Context, states []quota.State) error
	// States returns the stored states of the given keys (absent keys are
	// left out), expired or not: decisions filter by time themselves.
	States(ctx context.Context, keys []quota.Key) ([]quota.State, error)
	// AllStates returns every stored state, ordered by key.
	AllStates(ctx context.Context) ([]quota.State, error)
	// Observations returns key's kept observations (see ObservationsKept)
	// observed at or after since: the newest limit of them (all when limit
	// <= 0), oldest first. RecordStates keeps them in the transaction that
	// records the states; LearnLogin merges a token principal's history
	// into its login's, as it merges their states.
	Observations(ctx context.Context, key quota.Key, since time.Time, limit int) ([]Observation, error)

	// Login returns the login learned for a token fingerprint on host.
	Login(ctx context.Context, host, fingerprint string) (login string, ok bool, err error)
	// LearnLogin records that the token with this fingerprint belongs to
	// login, and merges the states kept under the token principal
	// ("tok:"+fingerprint) into the login's, so two tokens of one user are
	// one quota; their histories (Observations) merge alike, per bucket
	// the newer observation winning.
	LearnLogin(ctx context.Context, host, fingerprint, login string, at time.Time) error

	// The activity log.

	// RecordSkip writes a skip line to the activity log only when reasonKey
	// differs from the last skip reason recorded for scope. It reports
	// whether it wrote.
	RecordSkip(ctx context.Context, scope, reasonKey string, a Activity) (bool, error)
	// ClearSkip forgets scope's last skip reason, so the next skip writes.
	ClearSkip(ctx context.Context, scope string) error
	// AppendActivity writes one line to the activity log.
	AppendActivity(ctx context.Context, a Activity) error
	// Activity returns the newest limit lines (all when limit <= 0), oldest
	// first.
	Activity(ctx context.Context, limit int) ([]Activity, error)

	// The waiting commands.

	// RegisterWaiter records a waiting command and returns its id.
	RegisterWaiter(ctx context.Context, w Waiter) (int64, error)
	// RemoveWaiter deletes a waiter; removing one that is gone is no error.
	RemoveWaiter(ctx context.Context, id int64) error
	// Waiters lists the registered waiters, oldest first.
	Waiters(ctx context.Context) ([]Waiter, error)

	// The jobs and the durable hosts.

	// SubmitJob records a new job. When the id exists with an equal spec it
	// returns the stored job and created=false; with a different spec,
	// job.ErrConflict. A non-nil receipt is stored in the same transaction
	// (a job submitted already deferred, with its wake-up in RunAt).
	SubmitJob(ctx context.Context, j job.Job, rc *job.Receipt, now time.Time) (stored job.Job, created bool, err error)
	// Job returns one job, or job.ErrNotFound.
	Job(ctx context.Context, id string) (job.Job, error)
	// JobsByID returns the jobs of ids that exist, keyed by id, read in one
	// statement (one snapshot); an id without a job is left out (no
	// error), an id given twice is read once. No ids reads nothing.
	JobsByID(ctx context.Context, ids []string) (map[string]job.Job, error)
	// ListJobs returns the jobs in state (all when state is ""), oldest first.
	ListJobs(ctx context.Context, state job.State) ([]job.Job, error)
	// JobHistory returns a job's attempts, transitions, receipts and
	// reconcile checks.
	JobHistory(ctx context.Context, id string) (job.History, error)
	// CountJobs counts jobs per state.
	CountJobs(ctx context.Context) (map[job.State]int, error)
	// PendingCleanups returns up to limit jobs whose cleanup is to run
	// (job.Job.CleanupDue: armed, and the job ended cancelled or failed),
	// the least recently updated first (then by id); none when limit <= 0.
	PendingCleanups(ctx context.Context, limit int) ([]job.Job, error)

	// ApplyJob applies one change, with its transition, attempt, receipt and
	// check, or nothing of it. fence >= 0 must equal the job's fence
	// (else job.ErrStaleFence); job.NoFence (any fence < 0) skips the
	// check (operator actions). An operator change that moves a running job elsewhere also
	// bumps the fence, so the host that held it loses it.
	ApplyJob(ctx context.Context, id string, fence int64, ch job.Change) (job.Job, error)

	// ClaimJobs claims up to limit due jobs for hostID: ready jobs whose
	// RunAt has come, and resumable ones, highest priority first, then
	// earliest RunAt. Each claim increments the fence and sets the lease
	// until now+lease, in one transaction. States do not change. No other
	// state is claimed: an auth-wait job waits for its host's re-check.
	ClaimJobs(ctx context.Context, hostID string, now time.Time, lease time.Duration, limit int) ([]job.Job, error)
	// RenewLeases extends the leases hostID holds (id -> fence) to
	// now+lease and returns the ids whose fence or owner no longer match:
	// leases the host lost.
	RenewLeases(ctx context.Context, hostID string, held map[string]int64, now time.Time, lease time.Duration) (lost []string, err error)
	// SweepJobs does the time-driven transitions due at now and returns how
	// many of each it made: deferred jobs with retained ownership whose
	// RunAt came become resumable; deferred or resumable jobs whose ResumeBy
	// passed, and unfinished jobs past their deadline, are cancelled (but
	// auth-wait ones, which fail: they never got working credentials); claimed
	// jobs whose lease expired, or running jobs past their progress
	// deadline, lose the claim (running ones go back to ready).
	SweepJobs(ctx context.Context, now time.Time) (SweepResult, error)
	// NextJobDue is the earliest time a sweep or claim has work: the next
	// RunAt, ResumeBy, deadline, lease or progress expiry. It includes an
	// auth-wait job's RunAt (when its host next re-checks the credentials;
	// none when zero), though no claim takes that job. ok is false when
	// nothing is scheduled.
	NextJobDue(ctx context.Context) (at time.Time, ok bool, err error)

	// RegisterHost records a durable host, with its lease length;
	// HostHeartbeat renews its LastSeen (job.ErrNotFound for a host not
	// registered); UnregisterHost removes it; Hosts lists them.
	RegisterHost(ctx context.Context, h job.Host) error
	HostHeartbeat(ctx context.Context, id string, now time.Time) error
	UnregisterHost(ctx context.Context, id string) error
	Hosts(ctx context.Context) ([]job.Host, error)

	// The workflow runs (docs/workflows.md). Every write validates what it
	// writes (record.ErrInvalid), keeps times to the millisecond in UTC,
	// and is a compare-and-set on the record's Version: the stored one or
	// record.ErrConflict, then Version+1. A run or task that does not exist
	// is job.ErrNotFound.

	// CreateRun records a new run and its tasks in one transaction (see
	// NewRun: Version 1, CreatedAt and UpdatedAt now, the tasks' too). When
	// the id exists with an equal Definition it returns the stored run and
	// created=false, leaving its tasks as they are; with another,
	// record.ErrConflict.
	CreateRun(ctx context.Context, r record.Run, tasks []record.Task, now time.Time) (stored record.Run, created bool, err error)
	// Run returns one run.
	Run(ctx context.Context, id string) (record.Run, error)
	// Runs returns every run, oldest first.
	Runs(ctx context.Context) ([]record.Run, error)
	// RunTasks returns a run's tasks in the order CreateRun was given them.
	RunTasks(ctx context.Context, runID string) ([]record.Task, error)
	// UpdateRun writes r's Status, Durable, Deadline and Starts, with
	// UpdatedAt now; its ID, Name, Definition and CreatedAt stay as stored.
	// It returns the run as stored but for the Definition, which it
	// neither reads nor checks (it never changes): r's is returned.
	UpdateRun(ctx context.Context, r record.Run, now time.Time) (record.Run, error)
	// UpdateTask writes t (all but RunID and Name, which name it), with
	// UpdatedAt now, and appends ev, when not nil, to the task's history in
	// the same transaction: of t's task, Seq the next from 1, At now when
	// zero. A refused write appends nothing.
	UpdateTask(ctx context.Context, t record.Task, ev *record.TaskEvent, now time.Time) (record.Task, error)
	// UpdateTasks applies each write as UpdateTask does, in order, all in
	// one transaction: every one or none. A write that is refused (a stale
	// Version: record.ErrConflict; a task that does not exist; an invalid
	// record) refuses the batch, which then writes nothing. It returns the
	// tasks as stored, in the writes' order.
	UpdateTasks(ctx context.Context, writes []record.TaskWrite, now time.Time) ([]record.Task, error)
	// TaskEvents returns a task's history, oldest first.
	TaskEvents(ctx context.Context, runID, task string) ([]record.TaskEvent, error)
	// CountRuns counts runs per status; a status without runs is left out.
	CountRuns(ctx context.Context) (map[record.RunStatus]int, error)

	// The schedules (docs/schedules.md).

	// AddSchedule stores s; a name taken is ErrScheduleExists unless
	// replace, when s replaces it (its claimed slots are kept).
	AddSchedule(ctx context.Context, s Schedule, replace bool) error
	// Schedules returns every schedule, ordered by name.
	Schedules(ctx context.Context) ([]Schedule, error)
	// RemoveSchedule deletes a schedule and its slots (job.ErrNotFound for
	// one that does not exist).
	RemoveSchedule(ctx context.Context, name string) error
	// ClaimSlot claims slot at of schedule for sl.HostID, with sl's result
	// and detail: the first claim of a (schedule, at) wins across every
	// process, and a later one returns false and writes nothing. A
	// schedule that does not exist is job.ErrNotFound.
	ClaimSlot(ctx context.Context, sl Slot) (claimed bool, err error)
	// FinishSlot sets a claimed slot's result and detail.
	FinishSlot(ctx context.Context, schedule string, at time.Time, result SlotResult, detail string) error
	// LastSlot returns schedule's latest claimed slot (by At); ok is false
	// when it has none.
	LastSlot(ctx context.Context, schedule string) (sl Slot, ok bool, err error)

	// The resume slots (docs/lifecycle.md, Resume pacing).

	// TakeResumeSlot takes key's next resume slot for a resume wanted at
	// now, interval after the slot taken before it, across every process
	// sharing the store: it returns start, the later of the key's next
	// free time and now, and sets the next free time to start+interval, in
	// one atomic statement. Times are kept to the microsecond; an interval
	// below one is none.
	TakeResumeSlot(ctx context.Context, key quota.Key, now time.Time, interval time.Duration) (start time.Time, err error)

	// Close releases the store.
	Close() error
}

// SweepResult counts what one sweep did.
type SweepResult struct {
	Woken     int // deferred -> resumable
	Expired   int // deferred/resumable -> cancelled (resume_by passed)
	PastDue   int // -> cancelled, or failed from auth-wait (job deadline passed)
	Reclaimed int // lease or progress deadline lost
	// AuthFailed counts, of PastDue, the jobs failed from auth-wait (the
	// rest were cancelled).
	AuthFailed int
	// Failed are the ids of the jobs the sweep failed, in id order: the
	// first MaxSweptFailed of the AuthFailed.
	Failed []string
}

// MaxSweptFailed bounds SweepResult.Failed, in job ids.
const MaxSweptFailed = 16

// Moved reports whether the sweep moved any job.
func (r SweepResult) Moved() bool { return r.Woken+r.Expired+r.PastDue+r.Reclaimed > 0 }
