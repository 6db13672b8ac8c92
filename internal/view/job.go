package view

import (
	"encoding/json"

	"github.com/layoverhq/layover/job"
	"github.com/layoverhq/layover/receipt"
)

// Job is the show contract of docs/design.md (Output contracts). The
// history is there exactly when its pointers are set: JobDetail sets them,
// to arrays empty or not; Job leaves them nil, which leaves those keys out
// (jobs --json).
type Job struct {
	ID          string             `json:"id"`
	Name        string             `json:"name"`
	State       job.State          `json:"state"`
	Stage       string             `json:"stage"`
	Ownership   any                `json:"ownership"`
	Spec        Spec               `json:"spec"`
	Attempts    *[]Attempt         `json:"attempts,omitempty"`
	Receipts    *[]json.RawMessage `json:"receipts,omitempty"`
	Transitions *[]Transition      `json:"transitions,omitempty"`
	Checkpoint  *job.Checkpoint    `json:"checkpoint"`
	// Checks are the reconcile checks run before re-runs; Owners the
	// evidence of each retained receipt's wake-up (show only).
	Checks *[]Check        `json:"checks,omitempty"`
	Owners *[]ReceiptOwner `json:"receipt_owners,omitempty"`
	// SessionID is the agent session a resume continues, null when none
	// was captured.
	SessionID any `json:"session_id"`
	// Cleanup is the state of the job's cleanup command (job.Job.Cleanup),
	// null when it has none (show only).
	Cleanup *any `json:"cleanup,omitempty"`
}

// Check is one reconcile check: what started it, its exit code (null: it
// could not run) and what the host did.
type Check struct {
	Fence    int64  `json:"fence"`
	At       any    `json:"at"`
	Trigger  string `json:"trigger"`
	ExitCode *int   `json:"exit_code"`
	Result   string `json:"result"`
	Detail   string `json:"detail"`
}

// ReceiptOwner proves which wake-up a retained receipt names: the host and
// fence the store kept with it, and whether the receipt's ownership
// digests are theirs (receipt.Owner).
type ReceiptOwner struct {
	Seq     int    `json:"seq"`
	Host    string `json:"host"`
	Fence   int64  `json:"fence"`
	WakeAt  any    `json:"wake_at"`
	Matches bool   `json:"matches"`
}

// Attempt is one attempt of the show contract; ended_at is null while the
// attempt runs; waited_s is the seconds it spent in Quota waits.
type Attempt struct {
	ID        string  `json:"attempt_id"`
	Fence     int64   `json:"fence"`
	StartedAt any     `json:"started_at"`
	EndedAt   any     `json:"ended_at"`
	Outcome   any     `json:"outcome"`
	ExitCode  *int    `json:"exit_code"`
	WaitedS   float64 `json:"waited_s"`
}

// Transition is one transition; from is null for the submission.
type Transition struct {
	From   any       `json:"from"`
	To     job.State `json:"to"`
	At     any       `json:"at"`
	Reason string    `json:"reason"`
}

// Spec is a job's spec; commands it does not have are null.
type Spec struct {
	Argv                  []string `json:"argv"`
	EnvNames              []string `json:"env_names"`
	Quota                 []string `json:"quota"`
	Priority              int      `json:"priority"`
	Deadline              any      `json:"deadline"`
	ResumeCmd             any      `json:"resume_cmd"`
	CheckCmd              any      `json:"check_cmd"`
	VerifyCmd             any      `json:"verify_cmd"`
	PlanCmd               any      `json:"plan_cmd"`
	CleanupCmd            any      `json:"cleanup_cmd"`
	Agent                 any      `json:"agent"`
	FreshApprovalRequired bool     `json:"fresh_approval_required"`
	MaxAttempts           int      `json:"max_attempts"`
	ProgressTimeout       any      `json:"progress_timeout"`
	Provider              string   `json:"provider"`
}

// NewJob builds j without its history, as jobs --json lists it.
func NewJob(j job.Job) Job {
	out := Job{ID: j.ID, Name: j.Spec.Name, State: j.State, Stage: j.Stage, Ownership: Nullable(string(j.Ownership)),
		Checkpoint: j.Checkpoint, SessionID: Nullable(j.SessionID), Spec: Spec{
			Argv: j.Spec.Argv, EnvNames: nonNil(j.Spec.EnvNames), Quota: nonNil(j.Spec.Quota), Priority: j.Spec.Priority,
			Deadline: Time(j.Spec.Deadline), ResumeCmd: Nullable(j.Spec.ResumeCmd), CheckCmd: Nullable(j.Spec.CheckCmd),
			VerifyCmd: Nullable(j.Spec.VerifyCmd), PlanCmd: Nullable(j.Spec.PlanCmd),
			CleanupCmd: Nullable(j.Spec.CleanupCmd), Agent: Nullable(j.Spec.Agent),
			FreshApprovalRequired: j.Spec.FreshApprovalRequired, MaxAttempts: j.Spec.MaxAttempts, Provider: j.Spec.Provider}}
	if j.Spec.ProgressTimeout > 0 {
		out.Spec.ProgressTimeout = j.Spec.ProgressTimeout.String()
	}
	return out
}

// NewJobDetail builds j with its history, as show --json prints it. hist
// is as the store returns it; its waits are computed here
// (job.History.WithWaits).
func NewJobDetail(j job.Job, hist job.History) Job {
	hist = hist.WithWaits()
	out := NewJob(j)
	attempts, transitions, receipts := []Attempt{}, []Transition{}, []json.RawMessage{}
	checks, owners := []Check{}, []ReceiptOwner{}
	for _, c := range hist.Checks {
		checks = append(checks, Check{Fence: c.Fence, At: TimeMS(c.At), Trigger: c.Trigger, ExitCode: c.ExitCode,
			Result: c.Result, Detail: c.Detail})
	}
	for _, r := range hist.Receipts {
		if o, ok := NewReceiptOwner(j.ID, r); ok {
			owners = append(owners, o)
		}
	}
	for _, a := range hist.Attempts {
		attempts = append(attempts, Attempt{ID: a.ID, Fence: a.Fence, StartedAt: TimeMS(a.StartedAt),
			EndedAt: TimeMS(a.EndedAt), Outcome: Nullable(a.Outcome), ExitCode: a.ExitCode, WaitedS: a.WaitedS})
	}
	for _, tr := range hist.Transitions {
		transitions = append(transitions, Transition{From: Nullable(string(tr.From)), To: tr.To,
			At: TimeMS(tr.At), Reason: tr.Reason})
	}
	for _, r := range hist.Receipts {
		receipts = append(receipts, json.RawMessage(r.JSON))
	}
	out.Attempts, out.Transitions, out.Receipts = &attempts, &transitions, &receipts
	out.Checks, out.Owners = &checks, &owners
	cleanup := Nullable(j.Cleanup)
	out.Cleanup = &cleanup
	return out
}

// NewReceiptOwner is the wake-up evidence of a stored receipt with
// retained ownership; ok is false for a handoff receipt, one that does not
// decode, and one stored before receipts kept their host (show prints them
// as stored all the same).
func NewReceiptOwner(jobID string, r job.Receipt) (ReceiptOwner, bool) {
	rc, err := receipt.Decode(r.JSON)
	if err != nil || !rc.IsRetained() || r.HostID == "" {
		// A receipt stored before layover kept its host (migration 005)
		// has digests of a random handle: nothing to prove them by.
		return ReceiptOwner{}, false
	}
	o := receipt.Owner{JobID: jobID, HostID: r.HostID, Fence: r.Fence, WakeAt: rc.ResumeAfter()}
	return ReceiptOwner{Seq: r.Seq, Host: r.HostID, Fence: r.Fence, WakeAt: TimeMS(rc.ResumeAfter()), Matches: o.Names(rc)}, true
}
