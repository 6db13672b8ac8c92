package cli

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/layoverhq/layover/command"
	"github.com/layoverhq/layover/quota"
	"github.com/layoverhq/layover/store"
)

// PassOptions are the flags of layover pass.
type PassOptions struct {
	Quota     command.QuotaNames
	Policy    quota.Policy
	Store     string
	Principal string
	Command   []string
}

func runPass(ctx context.Context, env *Env, args []string) error {
	opts := PassOptions{Policy: quota.DefaultPolicy()}
	fs := newFlagSet("pass", "pass [--quota github[:RESOURCE]]... [policy flags] -- CMD [ARGS...]")
	fs.Var(&opts.Quota, "quota", "quota the pass draws on: github or github:RESOURCE, repeatable (default github: core and graphql)")
	policyFlags(fs, &opts.Policy)
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
	target, err := resolveGitHub(ctx, env, st, o.Principal)
	if err != nil {
		return err
	}
	resources := o.Quota.GitHubResources()
	scope := skipScope(target, resources)

	// The ledger first: when it already says skip, the pass costs no call.
	states, err := st.States(ctx, target.Keys(resources))
	if err != nil {
		return internalErr("read store: %v", err)
	}
	if d := o.Policy.Admit(env.Clock.Now(), states); !d.Admit {
		return o.skip(ctx, env, st, scope, d)
	}

	// Then GitHub's free /rate_limit. A check that fails lets the pass go on.
	fresh, err := target.Fresh(ctx, o.Policy)
	if err != nil {
		fmt.Fprintf(env.Stderr, "layover: quota check failed (%s); the pass goes ahead\n", oneLine(err.Error()))
	} else {
		if err := st.RecordStates(ctx, fresh); err != nil {
			return internalErr("write store: %v", err)
		}
		if d := o.Policy.Admit(env.Clock.Now(), command.StatesOf(fresh, target.Keys(resources))); !d.Admit {
			return o.skip(ctx, env, st, scope, d)
		}
		target.LearnLogin(ctx, st)
		scope = skipScope(target, resources)
	}
	if err := st.ClearSkip(ctx, scope); err != nil {
		return internalErr("write store: %v", err)
	}
	st.Close()
	code, err := command.Exec(ctx, engineConfig(env, o.Command))
	if err != nil {
		return fromEngine(err, "pass: ")
	}
	return exitCode(code)
}

// skip ends a pass that may not start: exit 0, nothing printed, and one
// activity line when the reason differs from the last skip's.
func (o *PassOptions) skip(ctx context.Context, env *Env, st store.Store, scope string, d quota.Decision) error {
	s := d.Blocking
	line := fmt.Sprintf("skipped: GitHub Quota wait until %s (%s: %s left)", command.HumanTime(s.ResetAt), s.Resource, count(s.Remaining))
	if d.Cause == quota.CauseBelowReserve {
		line += fmt.Sprintf(", below the reserve of %d", o.Policy.Reserve.For(s.Resource, s.Limit))
	}
	_, err := st.RecordSkip(ctx, scope, skipReasonKey(s), store.Activity{At: env.Clock.Now(), Kind: "skip", Line: line})
	if err != nil {
		return internalErr("write store: %v", err)
	}
	return nil
}

// skipReasonKey keys a skip on the resource and the provider's raw reset, so
// neither the remaining count nor the clock makes a new line during one wait.
func skipReasonKey(s quota.State) string {
	if s.RawReset != 0 {
		return s.Resource + "@" + strconv.FormatInt(s.RawReset, 10)
	}
	return s.Resource + "@assumed:" + strconv.FormatInt(s.ResetAt.Unix(), 10)
}

func skipScope(t *command.GitHub, resources []string) string {
	r := append([]string(nil), resources...)
	sort.Strings(r)
	return "pass:" + t.Host + "/" + t.Principal + "/" + strings.Join(r, ",")
}

func count(n int64) string {
	if n < 0 {
		return "?"
	}
	return strconv.FormatInt(n, 10)
}
