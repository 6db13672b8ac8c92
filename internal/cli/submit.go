package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/layoverhq/layover/command"
	"github.com/layoverhq/layover/host"
	"github.com/layoverhq/layover/job"
	"github.com/layoverhq/layover/provider/agentcli"
)

// agentNames lists the agents --agent takes, for help and errors.
func agentNames() string {
	var names []string
	for _, a := range agentcli.Agents() {
		names = append(names, a.Name)
	}
	return strings.Join(names, ", ")
}

// SubmitOptions are the flags of layover submit.
type SubmitOptions struct {
	ID        string
	Spec      job.Spec
	Deadline  string
	Store     string
	EnvNames  stringList
	Quota     command.QuotaNames
	Approval  bool
	Progress  time.Duration
	Attempts  int
	Priority  int
	Command   []string
	Resume    string
	Check     string
	Verify    string
	Plan      string
	Name      string
	Provider  string
	Principal string
	Agent     string
	Cleanup   string
	At        string // --at: an RFC 3339 time
	In        string // --in: a duration from now
}

func runSubmit(ctx context.Context, env *Env, args []string) error {
	var o SubmitOptions
	fs := newFlagSet("submit", "submit [--id ID] [--name N] [--quota ...] [--priority P] [--deadline D|TIME] [--resume-cmd ...] [--check-cmd ...] [--verify-cmd ...] [--plan-cmd ...] [--cleanup-cmd ...] [--agent NAME] [--require-fresh-approval] [--max-attempts N] [--progress-timeout D] [--at TIME|--in D] [--env NAME]... -- CMD [ARGS...]")
	fs.StringVar(&o.ID, "id", "", "job id; the same id with the same spec is the same job (default a new id)")
	fs.StringVar(&o.Name, "name", "", fmt.Sprintf("a name for people (at most %d bytes, printable)", job.MaxNameBytes))
	fs.Var(&o.Quota, "quota", "quota the job draws on: PROVIDER or PROVIDER:RESOURCE ("+quotaProviders()+"), repeatable")
	fs.StringVar(&o.Provider, "provider", "github", "whose signals classify the job's failures: github")
	fs.IntVar(&o.Priority, "priority", 0, "higher runs first")
	fs.StringVar(&o.Deadline, "deadline", "", "cancel the job if not done by then: a duration or an RFC 3339 time (default 24h)")
	fs.StringVar(&o.Resume, "resume-cmd", "", "shell command run instead of CMD on a resume; {session_id} is filled in")
	fs.StringVar(&o.Check, "check-cmd", "", "shell command run before a resume: exit 0 done, 1 run, other blocked")
	fs.StringVar(&o.Verify, "verify-cmd", "", "shell command run after exit 0: only its success completes the job")
	fs.StringVar(&o.Plan, "plan-cmd", "", "shell command whose output is the plan a receipt binds")
	fs.StringVar(&o.Cleanup, "cleanup-cmd", "", "shell command the host runs after the job is cancelled or fails, under its quota keys")
	fs.StringVar(&o.Agent, "agent", "", "the agent CLI the job runs ("+agentNames()+"): its built-in resume continues the session, its own status command checks its credentials")
	fs.BoolVar(&o.Approval, "require-fresh-approval", false, "a resume waits for layover approve")
	fs.IntVar(&o.Attempts, "max-attempts", host.DefaultMaxAttempts, "runs allowed for transient failures")
	fs.durationVar(&o.Progress, "progress-timeout", 0, 0, host.MaxDeadline, "take the job back when no checkpoint comes for this long (0: off)")
	fs.Var(&o.EnvNames, "env", "a variable the job needs from the host (`NAME`, repeatable; values are never stored)")
	fs.StringVar(&o.At, "at", "", "start no sooner than this RFC 3339 time (the job waits ready until then)")
	fs.StringVar(&o.In, "in", "", "start no sooner than this long from now (a duration: 90m, 2h)")
	storeLoc := storeFlag(fs)
	cmd, err := fs.parseWithCommand(env, args)
	if err != nil {
		return err
	}
	o.Command, o.Store = cmd, *storeLoc
	known := knownSecrets(env, o.Store, append(envValues(env, o.EnvNames), githubToken(ctx, env))...)
	spec, err := o.spec(env.Clock.Now(), known)
	if errors.Is(err, job.ErrSecret) {
		return usageErr("submit: %v (declare each variable with --env NAME)", err)
	} else if err != nil {
		return usageErr("submit: %v", err)
	}
	runAt, err := o.runAt(env.Clock.Now(), spec.Deadline)
	if err != nil {
		return usageErr("submit: %v", err)
	}
	id := o.ID
	if id == "" {
		id = host.NewID()
	} else if !host.ValidID(id) {
		return usageErr("submit: --id %q: use letters, digits, '.', '_' and '-' (at most 128)", id)
	}
	st, err := openJobStore(ctx, env, o.Store)
	if err != nil {
		return err
	}
	defer st.Close()
	// A default or relative deadline is fixed at the first submission, so a
	// repeated submission of the same job is the same spec.
	if _, absErr := time.Parse(time.RFC3339, o.Deadline); absErr != nil {
		if prev, err := st.Job(ctx, id); err == nil {
			spec.Deadline = prev.Spec.Deadline
		}
	}
	jobs, err := host.NewJobs(host.Config{Store: st, Clock: env.Clock})
	if err != nil {
		return internalErr("%v", err)
	}
	j, created, err := jobs.SubmitAt(ctx, id, spec, runAt)
	if err != nil {
		return jobError(err)
	}
	if !created {
		fmt.Fprintf(env.Stderr, "layover: job %s already submitted with this spec (%s)\n", j.ID, j.State)
	}
	fmt.Fprintln(env.Stdout, j.ID)
	return nil
}

// spec validates the flags into a job spec. A spec whose name or commands
// hold a secret (a recognisable one, or one of known) is refused: the store
// would keep it and show it (docs/secrets.md).
func (o *SubmitOptions) spec(now time.Time, known []string) (job.Spec, error) {
	if o.Provider != "github" {
		return job.Spec{}, fmt.Errorf("unknown provider %q (known: github)", o.Provider)
	}
	provider, resume := o.Provider, o.Resume
	if o.Agent != "" {
		a, ok := agentcli.AgentNamed(o.Agent)
		if !ok {
			return job.Spec{}, fmt.Errorf("--agent %q: unknown agent (known: %s)", o.Agent, agentNames())
		}
		o.Agent, provider = a.Name, a.Provider
		if resume == "" {
			resume = a.ResumeCmd
		}
	}
	if o.Attempts < 1 || o.Attempts > host.MaxAttemptsLimit {
		return job.Spec{}, fmt.Errorf("--max-attempts %d: want 1 to %d", o.Attempts, host.MaxAttemptsLimit)
	}
	if o.Progress < 0 {
		return job.Spec{}, fmt.Errorf("--progress-timeout must not be negative")
	}
	deadline, err := parseDeadline(o.Deadline, now)
	if err != nil {
		return job.Spec{}, err
	}
	wd, err := os.Getwd()
	if err != nil {
		return job.Spec{}, err
	}
	var quotas []string
	for _, q := range o.Quota {
		quotas = append(quotas, q.String())
	}
	spec := job.Spec{Name: o.Name, Argv: o.Command, Workdir: wd, EnvNames: o.EnvNames, Quota: quotas,
		Provider: provider, Priority: o.Priority, Deadline: deadline.UTC().Truncate(time.Millisecond),
		ResumeCmd: resume, CheckCmd: o.Check, VerifyCmd: o.Verify, PlanCmd: o.Plan, CleanupCmd: o.Cleanup, Agent: o.Agent,
		FreshApprovalRequired: o.Approval, MaxAttempts: o.Attempts, ProgressTimeout: o.Progress}
	if err := spec.Validate(known...); err != nil {
		return job.Spec{}, err
	}
	return spec, nil
}

// runAt reads --at and --in: when the job may first start (zero: now). It
// must be in the future and before the job's deadline.
func (o *SubmitOptions) runAt(now, deadline time.Time) (time.Time, error) {
	var at time.Time
	switch {
	case o.At != "" && o.In != "":
		return time.Time{}, errors.New("--at and --in: give one")
	case o.At != "":
		t, err := time.Parse(time.RFC3339, o.At)
		if err != nil {
			return time.Time{}, fmt.Errorf("--at %q: want an RFC 3339 time (2026-12-02T15:04:05Z)", o.At)
		}
		if !t.After(now) {
			return time.Time{}, fmt.Errorf("--at %s is in the past", o.At)
		}
		at = t
	case o.In != "":
		d, err := time.ParseDuration(o.In)
		if err != nil {
			return time.Time{}, fmt.Errorf("--in %q: want a duration (90m, 2h)", o.In)
		}
		if d <= 0 {
			return time.Time{}, fmt.Errorf("--in %s is not in the future", o.In)
		}
		at = now.Add(d)
	default:
		return time.Time{}, nil
	}
	if !at.Before(deadline) {
		return time.Time{}, fmt.Errorf("the start (%s) is not before the job's deadline (%s): give a later --deadline",
			command.HumanTime(at), command.HumanTime(deadline))
	}
	return at, nil
}
