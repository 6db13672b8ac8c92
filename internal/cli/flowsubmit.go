package cli

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/layoverhq/layover/host"
	"github.com/layoverhq/layover/job"
	"github.com/layoverhq/layover/notify"
	"github.com/layoverhq/layover/store"
	"github.com/layoverhq/layover/workflow"
	"github.com/layoverhq/layover/workflow/record"
)

// FlowSubmitOptions are the flags of layover flow submit.
type FlowSubmitOptions struct {
	File  string
	RunID string // "": DefaultRunID
	Store string
}

func runFlowSubmit(ctx context.Context, env *Env, args []string) error {
	var o FlowSubmitOptions
	fs := newFlagSet("flow submit", "flow submit FILE [--run-id ID] [--store S]")
	fs.StringVar(&o.RunID, "run-id", "", "the run's id: submitting an id again is the same submission (default: the file's name without its extension, '-', the UTC date as YYYYMMDD)")
	storeLoc := storeFlag(fs)
	file, err := fs.parseArg(env, args, "workflow file")
	if err != nil {
		return err
	}
	o.File, o.Store = file, *storeLoc
	return o.run(ctx, env)
}

// run stores the run as durable and submits the jobs of its first tasks;
// serve runs them, and releases the rest (docs/workflows.md, Durable runs).
func (o *FlowSubmitOptions) run(ctx context.Context, env *Env) error {
	def, runID, dir, err := readFlowFile(env, "flow submit", o.File, o.RunID)
	if err != nil {
		return err
	}
	st, err := openStore(ctx, env, o.Store)
	if err != nil {
		return err
	}
	defer st.Close()
	jobs, err := host.NewJobs(host.Config{Store: st, Clock: env.Clock, Env: env.Environ})
	if err != nil {
		return internalErr("flow submit: %v", err)
	}
	tasks, err := workflow.Submit(ctx, def, workflow.SubmitOptions{RunID: runID, Store: st, Jobs: jobs, Dir: dir, Clock: env.Clock})
	switch {
	case errors.Is(err, workflow.ErrNotDurable), errors.Is(err, record.ErrConflict), errors.Is(err, job.ErrConflict):
		return failErr("flow submit: %v", err)
	case err != nil:
		return internalErr("flow submit: %v", err)
	}
	fmt.Fprintln(env.Stdout, runID)
	fmt.Fprintf(env.Stderr, "run %s submitted: %s; layover serve runs it (flow status %s shows it)\n", runID, taskCounts(tasks), runID)
	return nil
}

// coordinate keeps the durable runs moving while serve runs (a
// workflow.Coordinator): a Sync at the start, after each event that ends
// or defers a job, and at every heartbeat, so that a dropped event or a
// crash loses nothing. It returns when ctx ends or the host stops.
func coordinate(ctx context.Context, env *Env, st store.Store, h *host.Host, sub *host.Subscription, heartbeat time.Duration, logger *slog.Logger, n *notify.Notifier) {
	c := &workflow.Coordinator{Store: st, Jobs: h.Jobs, Clock: env.Clock, Moved: func(r record.Run) {
		logger.Info("workflow run", "run", r.ID, "status", string(r.Status))
		notifyRun(ctx, st, n, r, logger)
	}}
	sync := func() {
		if err := c.Sync(ctx); err != nil && ctx.Err() == nil {
			logger.Warn("workflow sync failed", "err", err)
		}
	}
	sync()
	tick := env.Clock.After(heartbeat)
	for {
		select {
		case <-ctx.Done():
			return
		case ev, ok := <-sub.C():
			if !ok {
				return
			}
			if !syncEvent(ev) {
				continue
			}
		case <-tick:
			tick = env.Clock.After(heartbeat)
		}
		sync()
	}
}

// syncEvent reports whether a host event may move a workflow task: a job
// that ended, was deferred or woke, or a sweep.
func syncEvent(ev host.Event) bool {
	if ev.JobID == "" {
		return true
	}
	switch ev.To {
	case job.Deferred, job.Resumable, job.AuthWait, job.Blocked, job.Complete, job.Failed, job.Cancelled:
		return true
	}
	return ev.From == job.Deferred || ev.From == job.Resumable
}
