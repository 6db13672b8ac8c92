package host

// Reconcile before every re-run (docs/lifecycle.md, Reconcile): before any
// attempt after a job's first (a resume, a transient retry, a re-claim after
// a lost lease or a passed progress deadline) the host runs the job's
// check command, and its exit decides: 0 the outcome already holds, 1 run,
// anything else blocked. Each check is recorded with the job.

import (
	"context"
	"strconv"
	"strings"

	"github.com/layoverhq/layover/job"
)

// The triggers of a reconcile check, as show lists them.
const (
	TriggerResume      = "resume"
	TriggerRetry       = "transient retry"
	TriggerLeaseLost   = "lease lost"
	TriggerProgress    = "progress deadline"
	TriggerHostStopped = "host stopped"
	TriggerUnblocked   = "unblocked"
	TriggerCredentials = "credentials restored"
	TriggerRerun       = "re-run"
)

// rerunTrigger names why a ready job that ran before runs again, from the
// transition that made it ready.
func rerunTrigger(reason string) string {
	switch {
	case reason == job.ReasonLeaseLost:
		return TriggerLeaseLost
	case reason == job.ReasonProgress:
		return TriggerProgress
	case reason == reasonHostStopped:
		return TriggerHostStopped
	case strings.HasPrefix(reason, reasonTransient):
		return TriggerRetry
	case reason == reasonUnblocked:
		return TriggerUnblocked
	case reason == reasonCredentials:
		return TriggerCredentials
	}
	return TriggerRerun
}

// The reasons of the transitions that make a job ready to run again.
const (
	reasonHostStopped = "host stopped"
	reasonTransient   = "transient failure"
	reasonUnblocked   = "unblocked by the operator"
	reasonCredentials = "credentials check passed"
)

// reconcile runs j's check command, if it has one, and records it. It
// reports whether the attempt may go on; when it may not, the job has been
// completed (the outcome already holds) or blocked. j is claimed, running
// or resumable.
func (h *Host) reconcile(ctx context.Context, j job.Job, trigger string) (job.Job, bool) {
	if j.Spec.CheckCmd == "" {
		return j, true
	}
	code, _, err := h.shell(ctx, j, j.Spec.CheckCmd, nil)
	if ctx.Err() != nil {
		// The host is stopping or lost the lease while the check ran: its
		// exit says nothing about the job. A stop gives a running job back
		// (a resumable one stays resumable: its lease runs out and another
		// claim resumes it); a lost lease leaves it to the store.
		if h.stopping() && j.State == job.Running {
			h.apply(ctx, j, job.Change{To: job.Ready, Reason: reasonHostStopped,
				Mutate: func(x *job.Job) { x.Stage = "ready"; releaseLease(x) }})
		}
		return j, false
	}
	chk := &job.Check{Fence: j.Fence, At: h.cfg.Clock.Now(), Trigger: trigger}
	if err == nil {
		chk.ExitCode = &code
	}
	switch {
	case err != nil:
		chk.Result, chk.Detail = job.CheckBlocked, "check-cmd did not run: "+err.Error()
	case code == 0:
		chk.Result, chk.Detail = job.CheckComplete, "the outcome already holds"
	case code == 1:
		chk.Result, chk.Detail = job.CheckRun, "not done yet: running"
	default:
		chk.Result, chk.Detail = job.CheckBlocked, "check-cmd exited "+strconv.Itoa(code)+": unsafe to run"
	}
	switch chk.Result {
	case job.CheckComplete:
		h.apply(ctx, j, job.Change{To: job.Complete, Reason: "check-cmd: the outcome already holds", Checked: chk,
			Mutate: func(x *job.Job) { x.Stage = "complete"; releaseLease(x) }})
		return j, false
	case job.CheckBlocked:
		h.apply(ctx, j, job.Change{To: job.Blocked, Reason: chk.Detail, Checked: chk, Mutate: func(x *job.Job) {
			x.Stage = "Blocked: " + chk.Detail
			releaseLease(x)
		}})
		return j, false
	}
	return h.apply(ctx, j, job.Change{Checked: chk})
}

// lastReason is the reason of j's last transition, "" when it cannot be
// read.
func (h *Host) lastReason(ctx context.Context, j job.Job) string {
	hist, err := h.st.JobHistory(ctx, j.ID)
	if err != nil || len(hist.Transitions) == 0 {
		return ""
	}
	return hist.Transitions[len(hist.Transitions)-1].Reason
}
