package host

// Cleanup commands (docs/lifecycle.md, Cleanup): a job submitted with a
// cleanup command (job.Spec.CleanupCmd) has its cleanup armed. Once the job
// has ended cancelled or failed, however it got there (this host, another,
// the operator, the sweep), one host runs the command, once, so that the
// job leaves nothing it claimed (an issue, a lock) behind. The cleanup runs
// under the job's quota keys: a key exhausted with a known reset holds it
// until after the reset, and a run whose output says it hit a quota or a
// throttle is tried again after it.

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"syscall"
	"time"

	"github.com/layoverhq/layover/job"
	"github.com/layoverhq/layover/platform"
	"github.com/layoverhq/layover/provider"
	"github.com/layoverhq/layover/provider/agentcli"
	"github.com/layoverhq/layover/quota"
)

const (
	// CleanupTimeout bounds one run of a cleanup command: past it the run
	// is killed and the cleanup failed.
	CleanupTimeout = 10 * time.Minute
	// CleanupTries bounds the runs of one cleanup that end on a quota or a
	// throttle: the last one fails the cleanup.
	CleanupTries = 5
	// cleanupBatch is how many pending cleanups one round reads. A
	// cleanup put back to wait for a reset is updated, so it goes to the
	// end of the list, and those behind it are read in the next round.
	cleanupBatch = 32
)

// cleanupState is what a host keeps in memory about cleanups; guarded by
// Host.mu. Losing it (the host restarts) loses only the count of quota
// tries and the wait before the next one, which the key's state in the
// ledger gives again.
type cleanupState struct {
	// look is when the scheduler next lists the pending cleanups: at most
	// a heartbeat after the last round, sooner for a wait this host keeps
	// or a job it just ended. busy is set while a round runs.
	look time.Time
	busy bool
	// wait holds, by job id, the cleanups this host put back to wait for a
	// reset.
	wait map[string]cleanupWait
}

// cleanupWait is a cleanup waiting for a quota: not tried before
// notBefore; tries counts its runs that ended on a quota.
type cleanupWait struct {
	notBefore time.Time
	tries     int
}

// cleanupSoon makes the scheduler list the pending cleanups at its next
// pass, and wakes it: this host has just ended a job whose cleanup is due.
func (h *Host) cleanupSoon() {
	h.mu.Lock()
	h.cleanups.look = time.Time{}
	h.mu.Unlock()
	h.Nudge()
}

// cleanupIn is how long the scheduler may sleep before its next round of
// cleanups is due; false while a round runs.
func (h *Host) cleanupIn(now time.Time) (time.Duration, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.cleanups.busy {
		return 0, false
	}
	return max(h.cleanups.look.Sub(now), 0), true
}

// maybeCleanup starts a round of cleanups in the background when one is
// due and none is running; ended says this pass's sweep has just ended jobs,
// whose cleanups are due now.
func (h *Host) maybeCleanup(ctx context.Context, now time.Time, ended bool) {
	h.mu.Lock()
	if ended {
		h.cleanups.look = time.Time{}
	}
	due := !h.cleanups.busy && !now.Before(h.cleanups.look)
	if due {
		// A cleanupSoon while the round runs clears look again.
		h.cleanups.busy, h.cleanups.look = true, now.Add(h.cfg.Heartbeat)
	}
	h.mu.Unlock()
	if !due {
		return
	}
	h.loops.Add(1)
	h.workStarted()
	go func() {
		defer h.loops.Done()
		defer h.workEnded()
		next := h.runCleanups(ctx)
		h.mu.Lock()
		h.cleanups.busy = false
		sooner := !next.IsZero() && next.Before(h.cleanups.look)
		if sooner {
			h.cleanups.look = next
		}
		// The scheduler sleeps until the next round at the latest
		// (cleanupIn), unless it chose its sleep while this round ran:
		// then it is woken if it sleeps past the next round, or is about
		// to sleep (at most a heartbeat, about when the round after this
		// one was due) when the next round is sooner.
		look, wake := h.cleanups.look, h.sleepUntil
		nudge := look.Before(wake) || wake.IsZero() && (sooner || !look.After(h.cfg.Clock.Now()))
		h.mu.Unlock()
		if nudge {
			h.Nudge()
		}
	}()
}

// runCleanups runs, one at a time, the pending cleanups that wait for no
// reset this host knows of. It returns the earliest wait still ahead
// (zero: none).
func (h *Host) runCleanups(ctx context.Context) (next time.Time) {
	pending, err := h.st.PendingCleanups(ctx, cleanupBatch)
	if err != nil {
		if ctx.Err() == nil {
			h.cfg.Logger.Error("list pending cleanups", "err", err)
		}
		return time.Time{}
	}
	ahead := func(t time.Time) {
		if !t.IsZero() && (next.IsZero() || t.Before(next)) {
			next = t
		}
	}
	for _, j := range pending {
		if ctx.Err() != nil {
			break
		}
		h.mu.Lock()
		w := h.cleanups.wait[j.ID]
		h.mu.Unlock()
		if w.notBefore.After(h.cfg.Clock.Now()) {
			ahead(w.notBefore)
			continue
		}
		ahead(h.cleanup(ctx, j, w.tries))
	}
	return next
}

// ended are the states a job's cleanup runs in.
var ended = []job.State{job.Cancelled, job.Failed}

// setCleanup moves an ended job's cleanup from one state to another, when
// it is still in from, and returns the job as stored.
func (h *Host) setCleanup(ctx context.Context, id, from, to string) (job.Job, error) {
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	return h.applyJob(wctx, id, job.NoFence, job.Change{From: ended, Now: h.cfg.Clock.Now(), Mutate: func(x *job.Job) {
		if x.Cleanup == from {
			x.Cleanup = to
		}
	}})
}

// cleanup claims j's cleanup and runs it; tries counts its earlier runs
// that ended on a quota. It returns when to try again, zero when the
// cleanup is over here (done, failed, or another host's).
func (h *Host) cleanup(ctx context.Context, j job.Job, tries int) time.Time {
	// The bound on the run counts from the claim, on the host's clock.
	deadline := h.cfg.Clock.After(CleanupTimeout)
	mine := job.CleanupRunning(h.cfg.ID)
	c, err := h.setCleanup(ctx, j.ID, job.CleanupArmed, mine)
	if err != nil || c.Cleanup != mine {
		// Another host claimed it first (or the store did not answer: the
		// cleanup stays armed for a later round).
		if err != nil && !errors.Is(err, job.ErrTransition) {
			h.cfg.Logger.Warn("claim cleanup", "job", j.ID, "err", err)
		}
		h.forgetCleanup(j.ID)
		return time.Time{}
	}
	keys, err := h.keysOf(ctx, c)
	if err != nil {
		// The cleanup runs all the same: it must not be left undone
		// because a quota name no longer resolves.
		h.cfg.Logger.Warn("cleanup: quota names", "job", c.ID, "err", err)
	}
	if b, ok := h.exhausted(ctx, keys); ok {
		return h.rearm(ctx, c, tries, h.cfg.Policy.ResumeAt(b.State.ResetAt, h.cfg.Rand))
	}

	rctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	go func() {
		select {
		case <-deadline:
			cancel(errCleanupTimeout)
		case <-rctx.Done():
		}
	}()
	// The command's output is read only by the classifier: it may hold
	// secrets, so it is neither logged nor stored.
	code, out, err := h.runCleanupCmd(rctx, c)
	switch {
	case err == nil && code == 0:
		return h.endCleanup(ctx, c, job.CleanupDone)
	case ctx.Err() != nil:
		// The host stops: the cleanup goes back to armed for the next
		// host, this try not counted.
		return h.rearm(ctx, c, tries, time.Time{})
	case errors.Is(context.Cause(rctx), errCleanupTimeout):
		return h.endCleanup(ctx, c, job.CleanupFailed("timed out after "+CleanupTimeout.String()))
	case err != nil:
		return h.endCleanup(ctx, c, job.CleanupFailed("did not run: "+err.Error()))
	}
	o := h.classifyCleanup(code, out)
	if o.Class != provider.ClassQuota && o.Class != provider.ClassSecondary {
		return h.endCleanup(ctx, c, job.CleanupFailed(fmt.Sprintf("exit %d", code)))
	}
	if tries++; tries >= CleanupTries {
		return h.endCleanup(ctx, c, job.CleanupFailed(fmt.Sprintf("%s after %d tries (exit %d)", o.Class, tries, code)))
	}
	return h.rearm(ctx, c, tries, h.cleanupRetryAt(ctx, o, keys, tries))
}

// errCleanupTimeout ends a cleanup command that ran for CleanupTimeout.
var errCleanupTimeout = errors.New("cleanup timed out")

// runCleanupCmd runs c's cleanup command with sh -c in the job's directory
// and environment, plus LAYOVER_JOB_STATE (cancelled or failed), in a
// process group of its own that is killed whole when ctx ends, so that what
// the command started does not outlive the bound. It returns the exit code
// and the end of its output (stdout and stderr as they interleave, at most
// the tail an attempt's classifier reads, secrets masked); err is a command
// that could not start.
func (h *Host) runCleanupCmd(ctx context.Context, c job.Job) (int, []byte, error) {
	cmd := exec.CommandContext(ctx, h.cfg.Shell, "-c", c.Spec.CleanupCmd)
	cmd.Dir = c.Spec.Workdir
	cmd.Env = append(h.jobEnv(c, ""), "LAYOVER_JOB_STATE="+string(c.State))
	out := &tailWriter{}
	cmd.Stdout, cmd.Stderr = out, out
	platform.NewProcessGroup(cmd)
	cmd.Cancel = func() error { return platform.SignalGroup(cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = outputDelay
	if err := cmd.Start(); err != nil {
		return -1, nil, err
	}
	err := cmd.Wait()
	return exitCode(cmd.ProcessState, err), out.tail(), nil
}

// exhausted reports a key of keys that the ledger says is exhausted with a
// known reset.
func (h *Host) exhausted(ctx context.Context, keys []quota.Key) (quota.Block, bool) {
	if len(keys) == 0 {
		return quota.Block{}, false
	}
	states, err := h.st.States(ctx, keys)
	if err != nil {
		return quota.Block{}, false
	}
	b, ok := h.cfg.Policy.Blocking(h.cfg.Clock.Now(), states, quota.Running)
	return b, ok && b.State.ResetKnown
}

// cleanupRetryAt is when a cleanup that hit a quota (outcome o) after tries
// runs tries again: after the reset its output declared, the reset the
// ledger knows for one of its keys, or the secondary wait; else on the
// probe backoff.
func (h *Host) cleanupRetryAt(ctx context.Context, o provider.Outcome, keys []quota.Key, tries int) time.Time {
	now := h.cfg.Clock.Now()
	at := now.Add(h.probeWait(tries - 1))
	switch b, ok := h.exhausted(ctx, keys); {
	case !o.ResetAt.IsZero():
		at = h.cfg.Policy.ResumeAt(o.ResetAt, h.cfg.Rand)
	case o.Class == provider.ClassSecondary && o.RetryAfter >= 0:
		at = now.Add(o.RetryAfter)
	case ok:
		at = h.cfg.Policy.ResumeAt(b.State.ResetAt, h.cfg.Rand)
	case o.Class == provider.ClassSecondary:
		at = now.Add(h.cfg.Policy.SecondaryWait)
	}
	return quota.RerunAt(now, at)
}

// classifyCleanup classifies a failed cleanup's output as the host's
// runner classifies attempts, or with every provider's signals when the
// runner is not a ProcessRunner.
func (h *Host) classifyCleanup(code int, out []byte) provider.Outcome {
	now := h.cfg.Clock.Now()
	if p, ok := h.cfg.Runner.(*ProcessRunner); ok && p.Classify != nil {
		return p.Classify(code, nil, out, now)
	}
	return agentcli.ClassifyAuto(code, nil, out, now, time.Local)
}

// rearm puts a claimed cleanup back to armed, to be tried again by this
// host not before notBefore (zero: at once, by any host), and returns
// notBefore.
func (h *Host) rearm(ctx context.Context, c job.Job, tries int, notBefore time.Time) time.Time {
	h.mu.Lock()
	if h.cleanups.wait == nil {
		h.cleanups.wait = map[string]cleanupWait{}
	}
	h.cleanups.wait[c.ID] = cleanupWait{notBefore: notBefore, tries: tries}
	h.mu.Unlock()
	if _, err := h.setCleanup(ctx, c.ID, c.Cleanup, job.CleanupArmed); err != nil {
		h.cfg.Logger.Error("cleanup: put back", "job", c.ID, "err", err)
	}
	return notBefore
}

// endCleanup records how a claimed cleanup ended (done, or failed: why).
func (h *Host) endCleanup(ctx context.Context, c job.Job, state string) time.Time {
	h.forgetCleanup(c.ID)
	if _, err := h.setCleanup(ctx, c.ID, c.Cleanup, state); err != nil {
		h.cfg.Logger.Error("cleanup: record its end", "job", c.ID, "cleanup", state, "err", err)
		return time.Time{}
	}
	h.cfg.Logger.Info("cleanup ended", "job", c.ID, "cleanup", state)
	return time.Time{}
}

func (h *Host) forgetCleanup(id string) {
	h.mu.Lock()
	delete(h.cleanups.wait, id)
	h.mu.Unlock()
}
