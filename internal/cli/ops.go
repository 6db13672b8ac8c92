package cli

import (
	"context"
	"fmt"

	"github.com/layoverhq/layover/host"
	"github.com/layoverhq/layover/job"
)

// operatorCommand builds cancel, approve, unblock: each takes a job id and
// prints the job's state afterwards.
func operatorCommand(name, summary string, act func(ctx context.Context, st host.Store, id string, env *Env) (job.Job, error)) func(context.Context, *Env, []string) error {
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
		j, err := act(ctx, st, id, env)
		if err != nil {
			return jobError(err)
		}
		fmt.Fprintf(env.Stdout, "%s: %s (%s)\n", j.ID, j.State, j.Stage)
		return nil
	}
}

var (
	runCancel = operatorCommand("cancel", "cancel a job", func(ctx context.Context, st host.Store, id string, env *Env) (job.Job, error) {
		return host.Cancel(ctx, st, id, env.Clock.Now())
	})
	runApprove = operatorCommand("approve", "approve a job's resume", func(ctx context.Context, st host.Store, id string, env *Env) (job.Job, error) {
		return host.Approve(ctx, st, id, env.Clock.Now())
	})
	runUnblock = operatorCommand("unblock", "return a blocked job to ready", func(ctx context.Context, st host.Store, id string, env *Env) (job.Job, error) {
		return host.Unblock(ctx, st, id, env.Clock.Now())
	})
	runAdopt = operatorCommand("adopt", "hand a handoff deferral to the live host", func(ctx context.Context, st host.Store, id string, env *Env) (job.Job, error) {
		j, _, err := host.Adopt(ctx, st, id, env.Clock.Now())
		return j, err
	})
)
