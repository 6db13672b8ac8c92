package cli

import (
	"context"
	"strconv"

	"github.com/layoverhq/layover/host"
	"github.com/layoverhq/layover/job"
)

func runCheckpoint(ctx context.Context, env *Env, args []string) error {
	fs := newFlagSet("checkpoint", "checkpoint --stage S [--data JSON]  (inside a job)")
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
	if id == "" || fenceText == "" {
		return usageErr("checkpoint: not inside a job (LAYOVER_JOB_ID and LAYOVER_FENCE are unset)")
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
