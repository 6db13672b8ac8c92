package cli

import (
	"context"
	"slices"
	"strconv"

	"github.com/layoverhq/layover/command"
	"github.com/layoverhq/layover/provider/github"
	"github.com/layoverhq/layover/quota"
)

// PassOptions are the flags of layover pass.
type PassOptions struct {
	Quota     command.QuotaNames
	Policy    quota.Policy
	Store     string
	Principal string
	Command   []string
	// Pace skips a pass whose recent burn would run the key out before
	// the reset (docs/pacing.md).
	Pace bool
}

func runPass(ctx context.Context, env *Env, args []string) error {
	opts := PassOptions{Policy: quota.DefaultPolicy()}
	fs := newFlagSet("pass", "pass [--quota PROVIDER[:RESOURCE]]... [--pace] [policy flags] -- CMD [ARGS...]")
	fs.Var(&opts.Quota, "quota", "quota the pass draws on: PROVIDER or PROVIDER:RESOURCE ("+quotaProviders()+"), repeatable (default github: core and graphql)")
	policyFlags(fs, &opts.Policy)
	fs.BoolVar(&opts.Pace, "pace", false, "also skip when the quota's recent burn would run it out before the reset (docs/pacing.md)")
	storeLoc := storeFlag(fs)
	fs.StringVar(&opts.Principal, "principal", "", "whose quota it is (default $LAYOVER_PRINCIPAL, else learned from the token)")
	cmd, err := fs.parseWithCommand(env, args)
	if err != nil {
		return err
	}
	opts.Command, opts.Store = cmd, *storeLoc
	if err := opts.Policy.Validate(); err != nil {
		return usageErr("pass: %v", err)
	}
	return opts.run(ctx, env)
}

func (o *PassOptions) run(ctx context.Context, env *Env) error {
	st, err := openStore(ctx, env, o.Store)
	if err != nil {
		return err
	}
	defer st.Close()
	// GitHub's target only when a GitHub quota is named (or none is): a
	// pass on an LLM's quota never looks for a GitHub token.
	var target *command.GitHub
	if slices.Contains(o.Quota.Providers(), github.Provider) {
		if target, err = resolveGitHub(ctx, env, st, o.Principal); err != nil {
			return err
		}
	}
	adm, err := command.AdmitPass(ctx, &command.PassConfig{Store: st, GitHub: target, Principal: o.Principal,
		Getenv: env.Getenv, Quota: o.Quota, Policy: o.Policy, Now: env.Clock.Now, Warn: env.Stderr, Pace: o.Pace})
	if err != nil {
		return fromEngine(err, "pass: ")
	}
	if !adm.Admit {
		return nil // skipped: exit 0, nothing printed, the activity line written once per reason
	}
	st.Close()
	code, err := command.Exec(ctx, engineConfig(env, o.Command))
	if err != nil {
		return fromEngine(err, "pass: ")
	}
	return exitCode(code)
}

func count(n int64) string {
	if n < 0 {
		return "?"
	}
	return strconv.FormatInt(n, 10)
}
