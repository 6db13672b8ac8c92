package workflow

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/layoverhq/layover/host"
	"github.com/layoverhq/layover/job"
	"github.com/layoverhq/layover/workflow/record"
)

// ErrCancelRefused is a cancel of a run that is complete or cancelled
// already.
var ErrCancelRefused = errors.New("refused")

// maxCancelTries bounds the re-reads of a write of a cancel that raced
// another writer of the run (a flow run still going).
const maxCancelTries = 5

// Cancel cancels run id as layover flow cancel does, and returns how many
// of its tasks it cancelled: the run is marked cancelled, then each task
// that has not ended (Terminal) is cancelled with an event saying so, and,
// for a durable run, each task's job that has not ended is cancelled
// through jobs (its host stops it at its next heartbeat). A run complete
// or cancelled already is refused (ErrCancelRefused); a run that does not
// exist is job.ErrNotFound. A write that lost to another writer reads the
// record again and retries, at most maxCancelTries times
// (record.ErrConflict after that).
func Cancel(ctx context.Context, st DurableStore, jobs *host.Jobs, id string, now time.Time) (int, error) {
	for try := 1; ; try++ {
		r, err := st.Run(ctx, id)
		if err != nil {
			return 0, err
		}
		switch r.Status {
		case record.RunComplete, record.RunCancelled:
			return 0, fmt.Errorf("%w: run %s is %s already", ErrCancelRefused, id, r.Status)
		}
		r.Status = record.RunCancelled
		_, err = st.UpdateRun(ctx, r, now)
		if errors.Is(err, record.ErrConflict) && try < maxCancelTries {
			continue
		}
		if err != nil {
			return 0, err
		}
		break
	}
	n, err := cancelTasks(ctx, st, id, now)
	if err != nil {
		return n, err
	}
	return n, cancelJobs(ctx, st, jobs, id)
}

func cancelTasks(ctx context.Context, st DurableStore, id string, now time.Time) (int, error) {
	n := 0
	for try := 1; ; try++ {
		tasks, err := st.RunTasks(ctx, id)
		if err != nil {
			return n, err
		}
		raced := false
		for _, t := range tasks {
			if t.State.Terminal() {
				continue
			}
			from := t.State
			t.State, t.Stage, t.WaitingOn = record.TaskCancelled, "cancelled", ""
			ev := &record.TaskEvent{RunID: id, Task: t.Name, At: now, From: from, To: record.TaskCancelled, Reason: "flow cancel"}
			_, err := st.UpdateTask(ctx, t, ev, now)
			if errors.Is(err, record.ErrConflict) && try < maxCancelTries {
				raced = true
				continue
			}
			if err != nil {
				return n, err
			}
			n++
		}
		if !raced {
			return n, nil
		}
	}
}

// cancelJobs cancels the jobs of a durable run's tasks; a job that has
// ended is left as it is.
func cancelJobs(ctx context.Context, st DurableStore, jobs *host.Jobs, runID string) error {
	r, err := st.Run(ctx, runID)
	if err != nil || !r.Durable {
		return err
	}
	tasks, err := st.RunTasks(ctx, runID)
	if err != nil {
		return err
	}
	for _, t := range tasks {
		if t.JobID == "" {
			continue
		}
		if _, err := jobs.Cancel(ctx, t.JobID); err != nil && !errors.Is(err, job.ErrTransition) && !errors.Is(err, job.ErrNotFound) {
			return fmt.Errorf("cancel job %s of task %s: %w", t.JobID, t.Name, err)
		}
	}
	return nil
}
