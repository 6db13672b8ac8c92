package workflow

import (
	"context"
	"errors"
	"time"

	"github.com/layoverhq/layover/host"
	"github.com/layoverhq/layover/provider"
	"github.com/layoverhq/layover/quota"
	"github.com/layoverhq/layover/workflow/record"
)

// QuotaFault reads a quota fault out of err, however wrapped: a
// *host.OutcomeError of class quota or secondary (host.Quota,
// host.Secondary). It returns the reset (zero when unknown; a secondary
// limit's is unknown here, as its wait starts when it is met) and the
// fault's message; ok is false for any other error, nil included.
func QuotaFault(err error) (resetAt time.Time, message string, ok bool) {
	var oe *host.OutcomeError
	if !errors.As(err, &oe) {
		return time.Time{}, "", false
	}
	switch oe.Outcome.Class {
	case provider.ClassQuota, provider.ClassSecondary:
		return oe.Outcome.ResetAt, oe.Error(), true
	}
	return time.Time{}, "", false
}

// admit runs the quota check of a task about to start off the lock, with
// the run's context (it ends with the run); what it finds is applied by
// the loop: nothing exhausted, the task starts at its next decide; an
// exhausted quota limits every candidate until its reset (the task then
// waits or pauses without starting), or fails the task under on_quota
// fail.
func (e *engine) admit(ctx context.Context, tr *taskRun) {
	tr.phase = busy
	names := tr.def.Quota
	e.spawn(func() func() error {
		q, exhausted := e.preflight(e.runCtx, names, e.now())
		return func() error {
			tr.phase = idle
			if !exhausted {
				tr.admitted = true
				return nil
			}
			if e.def.OnQuota.Action == ActionFail {
				tr.phase = held
				return e.move(ctx, tr, func(t *record.Task) {
					t.State, t.Stage, t.WaitingOn, t.Quota = record.TaskFailed, "failed", "", &q
				}, record.TaskEvent{Reason: "on_quota fail: " + q.Message}, time.Time{})
			}
			now := e.now()
			for _, c := range tr.cands {
				tr.limits[c] = later(tr.limits[c], quota.RerunAt(now, q.ResetAt))
				tr.hits[c] = q
			}
			return nil
		}
	})
}

// preflight asks Options.Quotas for the current state of a task's quotas
// before it starts. An exhausted one (nothing remains before a reset still
// ahead) is returned as the quota that limits the task, which then waits
// or pauses without starting. A check that fails lets the task start
// (fail open, as admission does).
func (e *engine) preflight(ctx context.Context, names []string, now time.Time) (record.Quota, bool) {
	keys, err := e.o.Quotas.Keys(ctx, names)
	if err != nil || len(keys) == 0 {
		return record.Quota{}, false
	}
	states, err := e.o.Quotas.Fresh(ctx, keys)
	if err != nil {
		return record.Quota{}, false
	}
	var hit record.Quota
	found := false
	for _, s := range states {
		if !s.Exhausted(now) {
			continue
		}
		if !found || s.ResetAt.After(hit.ResetAt) {
			hit = record.Quota{Provider: s.Host, Resource: s.Resource, ResetAt: s.ResetAt,
				Message: "exhausted before the start (" + s.String() + ")"}
			found = true
		}
	}
	return hit, found
}
