package host

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/layoverhq/layover/job"
	"github.com/layoverhq/layover/provider"
)

// Run is one attempt handed to a Runner.
type Run struct {
	Job       job.Job
	AttemptID string // a fresh idempotency key for this attempt
	Fence     int64
	// Argv is what to run: the job's argv, or its resume command.
	Argv []string
	// Env is the host's environment plus LAYOVER_JOB_ID, LAYOVER_ATTEMPT_ID,
	// LAYOVER_FENCE and, when the job has one, LAYOVER_CHECKPOINT.
	Env []string
	// Grace bounds how long a stopped attempt may take to end (0: no
	// bound): past it the runner kills the work, so that it is over before
	// the lease could run out and another claim run the job again.
	Grace time.Duration
}

// Result is how an attempt ended.
type Result struct {
	// ExitCode is the process's code (0 for a Go function that returned
	// nil); -1 when it could not be started.
	ExitCode int
	// Outcome classifies the attempt. A zero exit is ClassOK.
	Outcome provider.Outcome
	// SessionID is an agent session the attempt reported, for a later
	// {session_id} resume.
	SessionID string
}

// Runner runs one attempt to its end. It must return promptly once ctx is
// cancelled (the host lost the lease or is stopping), having stopped the
// work. Implementations must be safe for concurrent use.
type Runner interface {
	Run(ctx context.Context, r Run) Result
}

// FuncRunner runs jobs as Go functions, for programs that embed the host.
// The function signals its outcome through its error: nil is ok; an error
// made by Quota, Secondary, Auth or Permanent has that class; any other
// error is transient.
type FuncRunner func(ctx context.Context, r Run) error

// Run implements Runner.
func (f FuncRunner) Run(ctx context.Context, r Run) Result {
	err := f(ctx, r)
	if err == nil {
		return Result{Outcome: provider.Unknown("func", provider.ClassOK, "returned nil")}
	}
	var oe *OutcomeError
	if errors.As(err, &oe) {
		return Result{ExitCode: 1, Outcome: oe.Outcome}
	}
	return Result{ExitCode: 1, Outcome: provider.Unknown("func", provider.ClassTransient, err.Error())}
}

// OutcomeError carries an outcome class out of a FuncRunner function.
type OutcomeError struct {
	Outcome provider.Outcome
}

func (e *OutcomeError) Error() string {
	return fmt.Sprintf("%s: %s", e.Outcome.Class, e.Outcome.Reason)
}

// Quota reports primary exhaustion of resource on provider, resetting at
// resetAt (zero: unknown, probed again on the host's backoff).
func Quota(providerName, resource string, resetAt time.Time) error {
	o := provider.Unknown(providerName, provider.ClassQuota, "quota exhausted")
	o.Resource, o.ResetAt = resource, resetAt
	return &OutcomeError{Outcome: o}
}

// Secondary reports a short throttle with its retry-after (negative:
// unknown).
func Secondary(providerName, resource string, retryAfter time.Duration) error {
	o := provider.Unknown(providerName, provider.ClassSecondary, "secondary limit")
	o.Resource, o.RetryAfter = resource, retryAfter
	return &OutcomeError{Outcome: o}
}

// Auth reports a credentials failure; the job is blocked, never waited out.
func Auth(reason string) error {
	return &OutcomeError{Outcome: provider.Unknown("func", provider.ClassAuth, reason)}
}

// Permanent reports a failure no retry can fix.
func Permanent(reason string) error {
	return &OutcomeError{Outcome: provider.Unknown("func", provider.ClassPermanent, reason)}
}
