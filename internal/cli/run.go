package cli

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/layoverhq/layover/internal/redact"
	"github.com/layoverhq/layover/provider"
	"github.com/layoverhq/layover/provider/agentcli"
	"github.com/layoverhq/layover/provider/github"
	"github.com/layoverhq/layover/quota"
	"github.com/layoverhq/layover/store"
)

// RunOptions are the flags of layover run.
type RunOptions struct {
	Quota     quotaSpecs
	Policy    quota.Policy
	Store     string
	Principal string
	Command   []string
	// DeferAfter: a wait longer than this is not waited but deferred with a
	// receipt (exit 6). Negative: never defer.
	DeferAfter time.Duration
	// Submit also records the deferred job for the durable host.
	Submit bool
	// Provider names whose signals classify a failure: github, an agent
	// CLI, or auto (try them all).
	Provider string
	// ResumeCmd, when set, runs instead of Command after the first failure,
	// with {session_id} filled in from the failed attempt's output.
	ResumeCmd string
}

func runRun(ctx context.Context, env *Env, args []string) error {
	opts := RunOptions{Policy: quota.DefaultPolicy()}
	fs := newFlagSet("run", "run [--quota github[:RESOURCE]]... [policy flags] -- CMD [ARGS...]")
	fs.Var(&opts.Quota, "quota", "wait out these quotas before starting when the ledger says they are exhausted: github or github:RESOURCE, repeatable")
	policyFlags(fs, &opts.Policy)
	storeLoc := storeFlag(fs)
	fs.StringVar(&opts.Principal, "principal", "", "whose quota it is (default $LAYOVER_PRINCIPAL, else learned from the token)")
	opts.DeferAfter = -1
	fs.durationVar(&opts.DeferAfter, "defer-after", -1, 0, quota.MaxTotalWaitCap, "defer with a receipt (exit 6) instead of waiting longer than this")
	fs.StringVar(&opts.Provider, "provider", "auto", "whose signals classify a failure: "+strings.Join(agentcli.Providers(), ", ")+", or auto")
	fs.StringVar(&opts.ResumeCmd, "resume-cmd", "", "shell command run instead of CMD after a wait; {session_id} is the agent session of the failed run")
	fs.BoolVar(&opts.Submit, "submit", false, "when deferring, also record the job for the durable host (implies --defer-after 0)")
	cmd, err := fs.parseWithCommand(env, args)
	if err != nil {
		return err
	}
	opts.Command, opts.Store = cmd, *storeLoc
	if err := opts.Policy.Validate(); err != nil {
		return usageErr("run: %v", err)
	}
	if _, ok := agentcli.Classifier(opts.Provider); !ok && opts.Provider != agentcli.ProviderAuto {
		return usageErr("run: unknown provider %q (known: %s, auto)", opts.Provider, strings.Join(agentcli.Providers(), ", "))
	}
	if redact.Contains(opts.ResumeCmd) {
		return usageErr("run: --resume-cmd holds what looks like a token")
	}
	if opts.DeferAfter < 0 && opts.Submit {
		opts.DeferAfter = 0
	}
	return opts.run(ctx, env)
}

// runner is one run invocation's state: its wait budget and what it waited
// for.
type runner struct {
	opts        *RunOptions
	env         *Env
	st          store.Store
	target      githubTarget
	budget      *quota.Budget
	commandLine string
	waited      time.Duration
	waitedFor   []string // resources, in the order first waited for
	staleReset  bool     // a failure found its reset passed (or room) since the last reset ahead
	lastOut     []byte   // the tail of the last attempt's stdout
	waitedHost  string   // the quota host first waited for
}

func (o *RunOptions) run(ctx context.Context, env *Env) error {
	st, err := openStore(ctx, env, o.Store)
	if err != nil {
		return err
	}
	defer st.Close()
	target, err := resolveGitHub(ctx, env, st, o.Principal)
	if err != nil {
		return err
	}
	known := knownSecrets(env, o.Store, target.token())
	if err := o.refuseSubmitSecret(known); err != nil {
		return err
	}
	r := &runner{
		opts: o, env: env, st: st, target: target, budget: quota.NewBudget(o.Policy),
		commandLine: redact.String(strings.Join(o.Command, " "), known...),
	}
	err = r.loop(ctx)
	if r.waited > 0 {
		fmt.Fprintf(env.Stderr, "Waited %s for the %s quota (%s)\n", humanDuration(r.waited), providerLabel(r.waitedHost),
			strings.Join(r.waitedFor, ", "))
	}
	return err
}

func (r *runner) loop(ctx context.Context) error {
	if err := r.waitBeforeStart(ctx); err != nil {
		return err
	}
	secondary := 0
	argv := r.opts.Command
	for {
		res, err := startChild(ctx, r.env, argv, true)
		if err != nil {
			return err
		}
		r.lastOut = res.Stdout
		if res.Code == 0 || res.Signalled != nil {
			return exitCode(res.Code)
		}
		out := agentcli.Classify(r.opts.Provider, res.Code, res.Stdout, res.Stderr, r.env.Clock.Now(), time.Local)
		if out.Class == provider.ClassQuota || out.Class == provider.ClassSecondary {
			argv = r.nextArgv(res.Stdout)
		}
		switch out.Class {
		case provider.ClassQuota:
			state, until, err := r.recordExhaustion(ctx, out)
			if err != nil {
				return err
			}
			if state.ResetKnown {
				if done, err := r.maybeDefer(ctx, state.Key, state.ResetAt, until, false); done {
					return err
				}
			}
			if err := r.wait(ctx, state.Key, quota.RerunAt(r.env.Clock.Now(), until), "Quota wait", res.Code); err != nil {
				return err
			}
		case provider.ClassSecondary:
			secondary++
			if secondary > r.opts.Policy.SecondaryRetries {
				fmt.Fprintf(r.env.Stderr, "layover: %s secondary limit still in force after %d retries; not retrying\n",
					providerLabel(out.Provider), r.opts.Policy.SecondaryRetries)
				return exitCode(res.Code)
			}
			key := r.keyFor(out)
			now := r.env.Clock.Now()
			until := quota.RerunAt(now, quota.AddSat(now, r.opts.Policy.SecondaryDelay(out.RetryAfter)))
			if out.RetryAfter >= 0 {
				if done, err := r.maybeDefer(ctx, key, quota.AddSat(now, out.RetryAfter), until, true); done {
					return err
				}
			}
			if err := r.wait(ctx, key, until, "Secondary limit wait", res.Code); err != nil {
				return err
			}
		default:
			return exitCode(res.Code)
		}
	}
}

// waitBeforeStart waits out any --quota key the ledger says is exhausted,
// so that no call is wasted. A wait past the cap exits 75 without starting.
func (r *runner) waitBeforeStart(ctx context.Context) error {
	if len(r.opts.Quota) == 0 {
		return nil
	}
	keys := r.target.keys(r.opts.Quota.githubResources())
	for {
		states, err := r.st.States(ctx, keys)
		if err != nil {
			return internalErr("read store: %v", err)
		}
		now := r.env.Clock.Now()
		var blocking *quota.State
		for i, s := range states {
			if s.Exhausted(now) && (blocking == nil || s.ResetAt.After(blocking.ResetAt)) {
				blocking = &states[i]
			}
		}
		if blocking == nil {
			return nil
		}
		until := r.opts.Policy.ResumeAt(blocking.ResetAt, r.env.Rand)
		if blocking.ResetKnown {
			if done, err := r.maybeDefer(ctx, blocking.Key, blocking.ResetAt, until, false); done {
				return err
			}
		}
		if err := r.budget.Take(until.Sub(now)); err != nil {
			return &exitError{code: ExitCapExceeded, msg: fmt.Sprintf("not started: the GitHub quota (%s) is exhausted until %s; %v",
				blocking.Resource, humanTime(blocking.ResetAt), err)}
		}
		if err := r.visible(ctx, blocking.Key, until, "Quota wait"); err != nil {
			return err
		}
	}
}

// wait charges a wait until `until` to the budget and waits. When the cap
// refuses it, the command fails as it did, with code, saying why.
func (r *runner) wait(ctx context.Context, key quota.Key, until time.Time, what string, code int) error {
	d := until.Sub(r.env.Clock.Now())
	if err := r.budget.Take(d); err != nil {
		var ce *quota.CapError
		if errors.As(err, &ce) {
			fmt.Fprintf(r.env.Stderr, "layover: not waiting for the %s quota (%s) until %s: %v\n", providerLabel(key.Host), key.Resource, humanTime(until), err)
			return exitCode(code)
		}
		return err
	}
	return r.visible(ctx, key, until, what)
}

func (r *runner) visible(ctx context.Context, key quota.Key, until time.Time, what string) error {
	if err := r.st.AppendActivity(ctx, store.Activity{At: r.env.Clock.Now(), Kind: "wait",
		Line: fmt.Sprintf("run: %s until %s (%s): %s", what, humanTime(until), key.Resource, r.commandLine)}); err != nil {
		return internalErr("write store: %v", err)
	}
	planned := until.Sub(r.env.Clock.Now())
	d, err := visibleWait(ctx, r.env, r.st, waitSpec{Key: key, Until: until, What: what, Command: r.commandLine})
	r.budget.Refund(planned - d)
	r.waited = quota.SumSat(r.waited, d)
	name := key.Resource
	if what != "Quota wait" {
		name = "secondary limit"
	}
	if r.waitedHost == "" {
		r.waitedHost = key.Host
		if key.Host == r.target.Host {
			r.waitedHost = "github" // GitHub, whichever API host serves it
		}
	}
	if !slices.Contains(r.waitedFor, name) {
		r.waitedFor = append(r.waitedFor, name)
	}
	return err
}

// recordExhaustion learns when the exhausted quota resets, from the failure
// itself or GitHub's free /rate_limit, records the Quota wait in the ledger
// and returns the key and when to run again. A reset it cannot learn is
// assumed Policy.UnknownReset ahead.
func (r *runner) recordExhaustion(ctx context.Context, out provider.Outcome) (quota.State, time.Time, error) {
	p := r.opts.Policy
	if out.Provider != github.Provider {
		return r.recordAgentExhaustion(ctx, out)
	}
	resource := cmp.Or(out.Resource, "core")
	state := quota.State{Limit: out.Limit, Remaining: 0, Source: quota.SourceRejected, Cause: quota.CauseExhausted}
	if !out.ResetAt.IsZero() {
		state.ResetAt, state.ResetKnown = out.ResetAt, true
		for _, o := range out.Observations {
			if o.Resource == resource {
				state.RawReset = o.RawReset
			}
		}
	} else {
		cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		fresh, err := r.target.client().RateLimit(cctx)
		cancel()
		if err == nil {
			fresh = r.target.observe(r.env, p, fresh)
			var room bool
			for _, s := range fresh {
				if s.Resource == resource {
					state.Limit = s.Limit
					if s.Remaining == 0 {
						state.ResetAt, state.ResetKnown, state.RawReset = s.ResetAt, true, s.RawReset
					} else {
						room = true
					}
				}
			}
			if err := r.st.RecordStates(ctx, fresh); err != nil {
				return quota.State{}, time.Time{}, internalErr("write store: %v", err)
			}
			// The quota already has room: the reset came between the
			// failure and the check. Run again after the margin, once; a
			// second such failure in a row waits the assumed reset.
			if room && state.ResetAt.IsZero() && !r.staleReset {
				r.staleReset = true
				return quota.State{Key: r.target.key(resource)}, p.ResumeAt(r.env.Clock.Now(), r.env.Rand), nil
			}
		} else {
			fmt.Fprintf(r.env.Stderr, "layover: could not read the GitHub quota (%s); assuming it resets in %s\n",
				oneLine(err.Error()), p.UnknownReset)
		}
	}
	now := r.env.Clock.Now()
	switch {
	case state.ResetAt.IsZero():
		state.ResetAt, state.ResetKnown, state.RawReset = p.AssumedReset(now), false, 0
	case state.ResetAt.After(now):
		r.staleReset = false // a reset ahead: the provider's word holds again
	case !r.staleReset:
		// The stated reset has just passed: resume after the margin, once.
		state.ResetAt = now
		r.staleReset = true
	default:
		// Again a reset that has passed (or room right after a failure):
		// the provider's reset is stale, so every later failure waits the
		// assumed reset instead of re-running the command every margin.
		state.ResetAt, state.ResetKnown, state.RawReset = p.AssumedReset(now), false, 0
	}
	state.Key = r.target.key(resource)
	state.ObservedAt, state.ObservedBy = now, r.env.Hostname
	if err := r.st.RecordStates(ctx, []quota.State{state}); err != nil {
		return quota.State{}, time.Time{}, internalErr("write store: %v", err)
	}
	return state, p.ResumeAt(state.ResetAt, r.env.Rand), nil
}

// keyFor is the quota key a failure names: the GitHub target's for gh, else
// the agent CLI's own quota on this machine.
func (r *runner) keyFor(out provider.Outcome) quota.Key {
	if out.Provider == github.Provider || out.Provider == "" || out.Provider == agentcli.ProviderAuto {
		return r.target.key(cmp.Or(out.Resource, "core"))
	}
	principal := cmp.Or(r.opts.Principal, r.env.Getenv("LAYOVER_PRINCIPAL"), "local")
	return quota.Key{Host: out.Provider, Principal: principal, Resource: cmp.Or(out.Resource, "usage")}
}

// recordAgentExhaustion records an agent CLI's exhaustion from what its
// output declared; an unknown reset is assumed Policy.UnknownReset ahead.
func (r *runner) recordAgentExhaustion(ctx context.Context, out provider.Outcome) (quota.State, time.Time, error) {
	p := r.opts.Policy
	now := r.env.Clock.Now()
	state := quota.State{Key: r.keyFor(out), Limit: out.Limit, Remaining: 0, Source: quota.SourceRejected,
		Cause: quota.CauseExhausted, ObservedAt: now, ObservedBy: r.env.Hostname}
	switch {
	case out.ResetAt.IsZero():
		state.ResetAt = p.AssumedReset(now)
		fmt.Fprintf(r.env.Stderr, "layover: %s gave no reset; assuming it in %s, then trying again\n", providerLabel(out.Provider), p.UnknownReset)
	case !out.ResetAt.After(now):
		state.ResetAt, state.ResetKnown = now, true
	default:
		state.ResetAt, state.ResetKnown = out.ResetAt, true
		state.RawReset = out.ResetAt.Unix()
	}
	if err := r.st.RecordStates(ctx, []quota.State{state}); err != nil {
		return quota.State{}, time.Time{}, internalErr("write store: %v", err)
	}
	return state, p.ResumeAt(state.ResetAt, r.env.Rand), nil
}

// nextArgv is what runs after a wait: the resume command with the failed
// run's session filled in, when one is set and the session is known (or not
// needed), else the command itself.
func (r *runner) nextArgv(stdout []byte) []string {
	rc := r.opts.ResumeCmd
	if rc == "" {
		return r.opts.Command
	}
	if strings.Contains(rc, "{session_id}") {
		id := agentcli.SessionID(stdout)
		if id == "" {
			fmt.Fprintln(r.env.Stderr, "layover: no session id in the failed run's output; running the command again instead of --resume-cmd")
			return r.opts.Command
		}
		rc = strings.ReplaceAll(rc, "{session_id}", "'"+strings.ReplaceAll(id, "'", `'\''`)+"'")
	}
	return []string{"/bin/sh", "-c", rc}
}
