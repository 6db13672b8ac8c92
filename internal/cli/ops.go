package cli

import (
	"context"
	"fmt"

	"github.com/layoverhq/layover/host"
	"github.com/layoverhq/layover/job"
)

// operatorCommand builds cancel, approve, unblock: each takes a job id and
// prints the job's state afterwards.
func operatorCommand(name, summary string, act func(ctx context.Context, jobs *host.Jobs, id string) (job.Job, error)) func(context.Context, *Env, []string) error {
	return func(ctx context.Context, env *Env, args []string) error {
		fs := newFlagSet(name, name+" ID")
		storeLoc := storeFlag(fs)
		id, err := fs.parseID(env, args)
		if err != nil {
			return err
		}
		st, err := openJobStore(ctx, env, *storeLoc)
		if err != nil {
			return err
		}
		defer st.Close()
		jobs, err := host.NewJobs(host.Config{Store: st, Clock: env.Clock})
		if err != nil {
			return internalErr("%v", err)
		}
		j, err := act(ctx, jobs, id)
		if err != nil {
			return jobError(err)
		}
		fmt.Fprintf(env.Stdout, "%s: %s (%s)\n", j.ID, j.State, j.Stage)
		return nil
	}
}

var (
	runCancel = operatorCommand("cancel", "cancel a job", func(ctx context.Context, jobs *host.Jobs, id string) (job.Job, error) {
		return jobs.Cancel(ctx, id)
	})
	runApprove = operatorCommand("approve", "approve a job's resume", func(ctx context.Context, jobs *host.Jobs, id string) (job.Job, error) {
		return jobs.Approve(ctx, id)
	})
	runUnblock = operatorCommand("unblock", "return a blocked job to ready", func(ctx context.Context, jobs *host.Jobs, id string) (job.Job, error) {
		return jobs.Unblock(ctx, id)
	})
	runAdopt = operatorCommand("adopt", "hand a handoff deferral to the live host", func(ctx context.Context, jobs *host.Jobs, id string) (job.Job, error) {
		j, _, err := jobs.Adopt(ctx, id)
		return j, err
	})
)
