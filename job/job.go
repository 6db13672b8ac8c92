// Package job holds the value types of a durable job: its spec, state,
// attempts, transitions, receipts and checkpoint. It depends on nothing else
// in layover but redact (Spec.Validate refuses secrets), so the
// host and every store can share it without a cycle.
//
// The lifecycle is that of docs/lifecycle.md: a job is ready, running, deferred,
// resumable, auth-wait, blocked, or ended (complete, failed, cancelled). Every write
// about a claimed job carries its fence, a number that grows with every
// claim; a write with an older fence is refused.
package job

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// State is where a job is in its lifecycle.
type State string

const (
	Ready     State = "ready"     // waiting to be claimed
	Running   State = "running"   // claimed by a host, its process running
	Deferred  State = "deferred"  // waiting for a quota reset
	Resumable State = "resumable" // its wake-up came; preflight next
	AuthWait  State = "auth-wait" // waiting for working credentials (never for a quota reset)
	Blocked   State = "blocked"   // needs an operator (unblock or cancel)
	Complete  State = "complete"
	Failed    State = "failed"
	Cancelled State = "cancelled"
)

// States lists every state, in lifecycle order.
var States = []State{Ready, Running, Deferred, Resumable, AuthWait, Blocked, Complete, Failed, Cancelled}

// Terminal reports whether s is an end state.
func (s State) Terminal() bool { return s == Complete || s == Failed || s == Cancelled }

// Valid reports whether s is a known state.
func (s State) Valid() bool {
	for _, v := range States {
		if s == v {
			return true
		}
	}
	return false
}

// Ownership of a deferred job.
type Ownership string

const (
	// NoOwnership: the job is not deferred with a receipt.
	NoOwnership Ownership = ""
	// Retained: a live durable host recorded a wake-up and can cancel it.
	Retained Ownership = "retained"
	// Handoff: no live host; the job waits for `layover adopt`.
	Handoff Ownership = "handoff"
)

// Spec is what was submitted. It is immutable after submission: the same id
// with an equal spec is the same job, with a different one a conflict.
type Spec struct {
	Name    string   `json:"name"`
	Argv    []string `json:"argv"`
	Workdir string   `json:"workdir"`
	// EnvNames are variables the job needs from the host's environment.
	// Values are never stored.
	EnvNames []string `json:"env_names"`
	// Quota names the quotas the job draws on, as "github" or
	// "github:RESOURCE".
	Quota    []string `json:"quota"`
	Provider string   `json:"provider"`
	Priority int      `json:"priority"` // higher runs first; default 0
	// Deadline: the job is cancelled if not done by then (failed, if it is
	// waiting for credentials then). Zero: none; the host gives a job
	// submitted without one DefaultDeadline.
	Deadline time.Time `json:"deadline"`
	// Shell commands (sh -c) run by the host around the job.
	ResumeCmd string `json:"resume_cmd"` // run instead of Argv on a resume; may hold {session_id}
	CheckCmd  string `json:"check_cmd"`  // before a resume: 0 done, 1 run, other blocked
	VerifyCmd string `json:"verify_cmd"` // after exit 0: only its success completes the job
	PlanCmd   string `json:"plan_cmd"`   // its output is the plan the receipt binds
	// CleanupCmd runs after the job is cancelled or fails, so that it
	// leaves nothing claimed (an issue, a lock) behind.
	CleanupCmd string `json:"cleanup_cmd,omitempty"`
	// Agent names the agent CLI the job runs (docs/agents.md): its
	// credentials check serves auth-wait.
	Agent string `json:"agent,omitempty"`
	// FreshApprovalRequired: a resume waits for `layover approve`.
	FreshApprovalRequired bool `json:"fresh_approval_required"`
	// MaxAttempts bounds runs ended by non-quota transient failures.
	MaxAttempts int `json:"max_attempts"`
	// ProgressTimeout: a running job that records no checkpoint for this
	// long is taken back (0: off). A heartbeat never renews it.
	ProgressTimeout time.Duration `json:"progress_timeout"`
	// Flow names the workflow run and task the job runs, for a job that
	// flow submit made (docs/workflows.md, Durable runs); nil for any other.
	Flow *FlowRef `json:"flow,omitempty"`
}

// FlowRef names the task of a durable workflow run that a job runs.
type FlowRef struct {
	Run  string `json:"run"`
	Task string `json:"task"`
}

// DefaultDeadline is how long after its submission a job submitted without
// a deadline has to finish: the host sets Spec.Deadline to the submission
// time plus this.
const DefaultDeadline = 24 * time.Hour

// Equal reports whether two specs are the same submission. A deadline is
// compared as an instant, whatever its zone (a store returns it in UTC), and
// an empty list equals a nil one.
func (s Spec) Equal(o Spec) bool {
	a, _ := json.Marshal(s.canonical())
	b, _ := json.Marshal(o.canonical())
	return string(a) == string(b)
}

// canonical is s with the representation choices Equal ignores made one
// way.
func (s Spec) canonical() Spec {
	s.Deadline = s.Deadline.UTC()
	for _, l := range []*[]string{&s.Argv, &s.EnvNames, &s.Quota} {
		if len(*l) == 0 {
			*l = nil
		}
	}
	return s
}

// Job is a job's current record.
type Job struct {
	ID    string
	Spec  Spec
	State State
	// Stage is what an operator reads: "Quota wait until <time>", the last
	// checkpoint's stage, "running", ...
	Stage     string
	Ownership Ownership
	CreatedAt time.Time
	UpdatedAt time.Time
	// RunAt is when the job may next start: a deferred job's wake-up, a
	// ready job's backoff. Zero: now.
	RunAt time.Time
	// ResumeBy is when a deferred job's receipt expires; zero without one.
	ResumeBy time.Time
	// Fence grows with every claim; writes carry it.
	Fence int64
	// LeaseOwner is the host id holding the claim; LeaseUntil its expiry.
	LeaseOwner string
	LeaseUntil time.Time
	// ProgressBy is a running job's progress deadline; zero: none.
	ProgressBy time.Time
	// Attempts counts runs that ended in a non-quota failure; quota waits
	// never count.
	Attempts int
	// Probes counts deferrals without a declared reset in a row, for the
	// unknown-reset backoff.
	Probes int
	// Runs counts the attempts started, whatever their outcome: a job with
	// Runs > 0 that starts again is a re-run, which reconciles first
	// (Spec.CheckCmd).
	Runs int
	// Secondaries counts secondary-limit deferrals in a row.
	Secondaries int
	// Approved is set by `layover approve`; a resume consumes it.
	Approved bool
	// SessionID is the agent session a resume continues, when known.
	SessionID  string
	Checkpoint *Checkpoint
	// Cleanup is the state of the job's cleanup command (Spec.CleanupCmd):
	// CleanupNone, CleanupArmed, CleanupRunning(host), CleanupDone or
	// CleanupFailed(why). A host runs an armed cleanup once the job has
	// ended cancelled or failed (CleanupDue).
	Cleanup string
}

// The states of a job's cleanup command (Job.Cleanup). An armed cleanup
// waits for its job to end cancelled or failed; a host claims it
// (CleanupRunning) before it runs it, and records how it ended: done, or
// failed with why. A cleanup that hit a quota is armed again, to run after
// the reset.
const (
	CleanupNone  = ""      // the job has no cleanup command
	CleanupArmed = "armed" // to run if the job ends cancelled or failed
	CleanupDone  = "done"  // ran and exited 0
)

// CleanupRunning is the cleanup state of a cleanup the host hostID has
// claimed and runs.
func CleanupRunning(hostID string) string { return "running " + hostID }

// CleanupFailed is the cleanup state of a cleanup that will not run again,
// and why ("exit 2", "quota still exhausted after 5 tries").
func CleanupFailed(why string) string { return "failed: " + why }

// CleanupDue reports whether j's cleanup command is to run now: it is
// armed, and the job ended cancelled or failed. A job that completed never
// runs its cleanup.
func (j Job) CleanupDue() bool {
	return j.Cleanup == CleanupArmed && (j.State == Cancelled || j.State == Failed)
}

// Attempt is one run of a job's process.
type Attempt struct {
	ID        string    `json:"attempt_id"`
	Fence     int64     `json:"fence"`
	StartedAt time.Time `json:"started_at"`
	EndedAt   time.Time `json:"ended_at"`
	Outcome   string    `json:"outcome"`   // outcome class, or OutcomeLeaseLost, OutcomeKilled
	ExitCode  *int      `json:"exit_code"` // nil: no exit seen
	WaitedS   float64   `json:"waited_s"`
}

// The outcomes of the attempts a store closes itself, when it takes a job
// from the host that held it (an operator's change, a sweep).
const (
	OutcomeKilled    = "killed"     // the job was cancelled
	OutcomeLeaseLost = "lease-lost" // the job went elsewhere
)

// The reasons of the transitions a store records itself: a submission and
// the sweep's time-driven moves.
const (
	ReasonSubmitted = "submitted"
	ReasonPastDue   = "deadline passed"
	ReasonExpired   = "expired"
	ReasonLeaseLost = "lease lost"
	ReasonProgress  = "progress deadline passed"
	ReasonWakeUp    = "wake-up"
)

// Transition is one recorded state change.
type Transition struct {
	From   State     `json:"from"`
	To     State     `json:"to"`
	At     time.Time `json:"at"`
	Reason string    `json:"reason"`
}

// The results of a reconcile check (Check.Result).
const (
	CheckComplete = "complete" // check-cmd exit 0: the outcome already holds
	CheckRun      = "run"      // exit 1: run the job
	CheckBlocked  = "blocked"  // any other exit, or the check could not run
)

// Check is one reconcile check, the job's check-cmd run before a re-run.
type Check struct {
	Fence int64     `json:"fence"` // the claim it ran under
	At    time.Time `json:"at"`
	// Trigger is what the re-run follows: "resume", "transient retry",
	// "lease lost", "progress deadline", "host stopped".
	Trigger  string `json:"trigger"`
	ExitCode *int   `json:"exit_code"` // nil: the check could not run
	Result   string `json:"result"`    // CheckComplete, CheckRun or CheckBlocked
	Detail   string `json:"detail"`
}

// Checkpoint is the last verified stage a job reported.
type Checkpoint struct {
	Stage string          `json:"stage"`
	Data  json.RawMessage `json:"data"`
	At    time.Time       `json:"at"`
}

// Receipt is a stored deferral receipt: its canonical JSON, as issued.
type Receipt struct {
	JobID    string
	Seq      int // 1 for the first receipt of a job
	JSON     []byte
	IssuedAt time.Time
	// HostID is the host that issued it; Fence the fence of the claim it
	// was issued under (0 for a receipt issued at submission).
	HostID string
	Fence  int64
}

// Host is a registered durable host.
type Host struct {
	ID        string
	Hostname  string
	PID       int
	StartedAt time.Time
	LastSeen  time.Time
	// Lease is the host's own lease length (its claims hold this long
	// without renewal): it is live while its last heartbeat is within it.
	// Stores keep it to the millisecond.
	Lease time.Duration
}

// Validate refuses a host record a store must not keep: no id, or a lease
// that is not positive (such a host would never be live, yet its claims
// would hold).
func (h Host) Validate() error {
	switch {
	case h.ID == "":
		return errors.New("host: no id")
	case h.Lease <= 0:
		return fmt.Errorf("host %s: lease %s: want a positive lease", h.ID, h.Lease)
	}
	return nil
}

// Live reports whether the host heartbeated within its own lease of now.
func (h Host) Live(now time.Time) bool {
	return now.Sub(h.LastSeen) <= h.Lease
}

// NoFence is the fence of a write that holds no claim (an operator's
// action): given to a store's ApplyJob in place of a claim's fence, it
// skips the fence check.
const NoFence int64 = -1

// Sentinel errors shared by the host and the stores.
var (
	// ErrNotFound: the job (or durable host) asked for does not exist. It
	// is the one not-found error of every store.
	ErrNotFound   = errors.New("not found")
	ErrConflict   = errors.New("job id already used with a different spec")
	ErrStaleFence = errors.New("stale fence: the job was claimed again")
	ErrTransition = errors.New("transition not allowed")
)
