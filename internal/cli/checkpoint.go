package cli

import (
	"context"
	"errors"
	"slices"
	"strconv"

	"github.com/layoverhq/layover/host"
	"github.com/layoverhq/layover/job"
	"github.com/layoverhq/layover/workflow/record"
)

func runCheckpoint(ctx context.Context, env *Env, args []string) error {
	fs := newFlagSet("checkpoint", "checkpoint --stage S [--data JSON]  (inside a job or a workflow task)")
	stage := fs.String("stage", "", "the last verified stage")
	data := fs.String("data", "", "JSON data a resumed run reads from $LAYOVER_CHECKPOINT")
	storeLoc := storeFlag(fs)
	if err := fs.parseNoArgs(env, args); err != nil {
		return err
	}
	if *stage == "" {
		return usageErr("checkpoint: --stage is required")
	}
	var raw []byte
	if *data != "" {
		raw = []byte(*data)
	}
	id, fenceText := env.Getenv("LAYOVER_JOB_ID"), env.Getenv("LAYOVER_FENCE")
	if id == "" && fenceText == "" && env.Getenv("LAYOVER_RUN_ID") != "" && env.Getenv("LAYOVER_TASK") != "" {
		return taskCheckpoint(ctx, env, *storeLoc, *stage, raw)
	}
	if id == "" || fenceText == "" {
		return usageErr("checkpoint: not inside a job or a workflow task (LAYOVER_JOB_ID and LAYOVER_FENCE, or LAYOVER_RUN_ID and LAYOVER_TASK, are unset)")
	}
	fence, err := strconv.ParseInt(fenceText, 10, 64)
	if err != nil || fence < 0 {
		return usageErr("checkpoint: LAYOVER_FENCE %q is not a fence", fenceText)
	}
	// The stage and the data are stored and shown (status, show --json):
	// neither may hold a secret (docs/secrets.md). The job's own variables
	// are known once its record is read.
	known := knownSecrets(env, *storeLoc, githubToken(ctx, env))
	if err := job.ValidateCheckpoint(*stage, raw, known...); err != nil {
		return checkpointErr(err)
	}
	st, err := openJobStore(ctx, env, *storeLoc)
	if err != nil {
		return err
	}
	defer st.Close()
	if j, err := st.Job(ctx, id); err == nil {
		if err := job.ValidateCheckpoint(*stage, raw, envValues(env, j.Spec.EnvNames)...); err != nil {
			return checkpointErr(err)
		}
	}
	jobs, err := host.NewJobs(host.Config{Store: st, Clock: env.Clock})
	if err != nil {
		return internalErr("%v", err)
	}
	_, err = jobs.Checkpoint(ctx, id, fence, *stage, raw)
	return jobError(err)
}

// checkpointErr is the usage error for a checkpoint job.ValidateCheckpoint
// refused; it never quotes a secret, and says nothing was stored.
func checkpointErr(err error) error {
	return usageErr("checkpoint: %v; nothing was stored", err)
}

// taskCheckpoint records the checkpoint of the workflow task flow run runs
// this process in (LAYOVER_RUN_ID, LAYOVER_TASK): its stage and data, with
// an event of the attempt (LAYOVER_ATTEMPT_ID). The task's next attempt
// reads the data from $LAYOVER_CHECKPOINT. A task that is not running is a
// refused operation (1).
func taskCheckpoint(ctx context.Context, env *Env, loc, stage string, raw []byte) error {
	runID, name := env.Getenv("LAYOVER_RUN_ID"), env.Getenv("LAYOVER_TASK")
	// The stage and the data are stored and shown (flow status): neither
	// may hold a secret (docs/secrets.md).
	if err := job.ValidateCheckpoint(stage, raw, knownSecrets(env, loc, githubToken(ctx, env))...); err != nil {
		return checkpointErr(err)
	}
	st, err := openStore(ctx, env, loc)
	if err != nil {
		return err
	}
	defer st.Close()
	tasks, err := st.RunTasks(ctx, runID)
	if err != nil {
		return jobError(err)
	}
	i := slices.IndexFunc(tasks, func(t record.Task) bool { return t.Name == name })
	if i < 0 {
		return failErr("checkpoint: run %s has no task %s", shown(runID), shown(name))
	}
	t := tasks[i]
	if t.State != record.TaskRunning {
		return failErr("checkpoint: task %s of run %s is %s, not running; nothing was stored", shown(name), shown(runID), t.State)
	}
	now := env.Clock.Now()
	t.Stage = stage
	t.Checkpoint = &job.Checkpoint{Stage: stage, Data: raw, At: now}
	ev := &record.TaskEvent{From: t.State, To: t.State, Reason: "checkpoint " + stage,
		AttemptID: env.Getenv("LAYOVER_ATTEMPT_ID")}
	if _, err := st.UpdateTask(ctx, t, ev, now); err != nil {
		if errors.Is(err, record.ErrConflict) {
			return failErr("checkpoint: task %s of run %s changed while it was written; nothing was stored", shown(name), shown(runID))
		}
		if errors.Is(err, record.ErrInvalid) {
			return usageErr("checkpoint: %v; nothing was stored", err)
		}
		return jobError(err)
	}
	return nil
}
