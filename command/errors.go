package command

import (
	"fmt"
	"os"
	"time"

	"github.com/layoverhq/layover/quota"
)

// The errors of Run, Exec, ResolveGitHub and ResolveQuotas. Each is how the run ended,
// and `layover run` maps it to its exit code (docs/design.md, Exit codes);
// Run's Result is still filled in beside it. A run that ends with the
// command's own exit code, success or not, returns no error.

// InputError is a Config or an environment that cannot be run: an unknown
// provider, a resume command holding a token, a --submit job holding a
// secret, a GITHUB_API_URL (or another API's base-URL variable) that is no
// API root, a token that cannot be read. Nothing was started. `layover
// run` exits 2.
type InputError struct{ Err error }

func (e *InputError) Error() string { return e.Err.Error() }
func (e *InputError) Unwrap() error { return e.Err }

// StoreError is a store that could not be read or written. `layover run`
// exits 125.
type StoreError struct {
	Op  string // "read" or "write"
	Err error
}

func (e *StoreError) Error() string { return e.Op + " store: " + e.Err.Error() }
func (e *StoreError) Unwrap() error { return e.Err }

// StartError is a command that could not be started. `layover run` exits
// 127 when NotFound, else 126 (the shell's codes).
type StartError struct {
	Name     string // the command, argv[0]
	NotFound bool
	Reason   string // "command not found", "permission denied", …
	Err      error
}

func (e *StartError) Error() string { return e.Name + ": " + e.Reason }
func (e *StartError) Unwrap() error { return e.Err }

// NotStartedError is a run that did not start its command: a key of
// Config.Quota is exhausted until ResetAt and waiting for it would take the
// run past its wait cap. `layover run` exits 75.
type NotStartedError struct {
	Key     quota.Key
	ResetAt time.Time
	Err     *quota.CapError
}

func (e *NotStartedError) Error() string {
	return fmt.Sprintf("not started: the GitHub quota (%s) is exhausted until %s; %v", e.Key.Resource, HumanTime(e.ResetAt), e.Err)
}
func (e *NotStartedError) Unwrap() error { return e.Err }

// DeferredError is a run that deferred instead of waiting (Config.Defer).
// `layover run` exits 6.
type DeferredError struct {
	// Receipt is the deferred receipt, canonical JSON on one line; Run has
	// printed it as the last line of Stdout.
	Receipt []byte
	// JobID names the job recorded for the durable host (Config.Submit);
	// "" without Submit.
	JobID string
	// ResumeAt is when a fresh run may start: the receipt's resume_after.
	ResumeAt time.Time
}

func (e *DeferredError) Error() string { return "deferred until " + HumanTime(e.ResumeAt) }

// InterruptedError is a wait ended by SIGINT or SIGTERM on Config.Signals,
// or by the end of the context (Signal nil, Err the context's error). The
// command was not run again. `layover run` exits 143 for SIGTERM and the
// end of the context, else 130 (SIGINT).
type InterruptedError struct {
	Signal os.Signal
	What   string // the wait: "Quota wait" or "Secondary limit wait"
	Err    error
}

func (e *InterruptedError) Error() string {
	if e.Signal == nil {
		return e.What + " ended: " + e.Err.Error()
	}
	return fmt.Sprintf("%s ended by %v", e.What, e.Signal)
}
func (e *InterruptedError) Unwrap() error { return e.Err }

// SubmitError is a deferral the store refused to record (Config.Submit):
// Err is the host's or the store's error (job.ErrConflict, …).
type SubmitError struct{ Err error }

func (e *SubmitError) Error() string { return e.Err.Error() }
func (e *SubmitError) Unwrap() error { return e.Err }
