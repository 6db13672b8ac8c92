package cli

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/layoverhq/layover/command"
	"github.com/layoverhq/layover/provider/github"
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
	fs := newFlagSet("pass", "pass [--quota PROVIDER[:RESOURCE]]... [policy flags] -- CMD [ARGS...]")
	fs.Var(&opts.Quota, "quota", "quota the pass draws on: PROVIDER or PROVIDER:RESOURCE ("+quotaProviders()+"), repeatable (default github: core and graphql)")
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
	// GitHub's target only when a GitHub quota is named (or none is): a
	// pass on an LLM's quota never looks for a GitHub token.
	var target *command.GitHub
	if slices.Contains(o.Quota.Providers(), github.Provider) {
		if target, err = resolveGitHub(ctx, env, st, o.Principal); err != nil {
			return err
		}
	}
	quotas, err := o.resolve(ctx, env, st, target)
	if err != nil {
		return err
	}
	keys := command.KeysOf(quotas)

	// The ledger first: when it already says skip, the pass costs no call.
	states, err := st.States(ctx, keys)
	if err != nil {
		return internalErr("read store: %v", err)
	}
	if d := o.Policy.Admit(env.Clock.Now(), states); !d.Admit {
		return o.skip(ctx, env, st, quotas, d)
	}

	// Then GitHub's free /rate_limit; the other providers have no free
	// endpoint, their ledger states are all there is. A check that fails
	// lets the pass go on.
	if target != nil {
		fresh, err := target.Fresh(ctx)
		if err != nil {
			fmt.Fprintf(env.Stderr, "layover: quota check failed (%s); the pass goes ahead\n", oneLine(err.Error()))
		} else {
			if err := st.RecordStates(ctx, fresh); err != nil {
				return internalErr("write store: %v", err)
			}
			if d := o.Policy.Admit(env.Clock.Now(), command.StatesOf(fresh, keys)); !d.Admit {
				return o.skip(ctx, env, st, quotas, d)
			}
			// A login learned now keys GitHub's quotas from here on.
			before := target.Principal
			if target.LearnLogin(ctx, st); target.Principal != before {
				if quotas, err = o.resolve(ctx, env, st, target); err != nil {
					return err
				}
			}
		}
	}
	if err := st.ClearSkip(ctx, skipScope(command.KeysOf(quotas))); err != nil {
		return internalErr("write store: %v", err)
	}
	st.Close()
	code, err := command.Exec(ctx, engineConfig(env, o.Command))
	if err != nil {
		return fromEngine(err, "pass: ")
	}
	return exitCode(code)
}

// resolve resolves the pass's quota names to keys (command.ResolveQuotas).
func (o *PassOptions) resolve(ctx context.Context, env *Env, st store.Store, target *command.GitHub) ([]command.Quota, error) {
	quotas, err := command.ResolveQuotas(ctx, &command.QuotaConfig{Store: st, GitHub: target, Principal: o.Principal,
		Getenv: env.Getenv}, o.Quota)
	return quotas, fromEngine(err, "pass: ")
}

// skip ends a pass that may not start: exit 0, nothing printed, and one
// activity line when the reason differs from the last skip's.
func (o *PassOptions) skip(ctx context.Context, env *Env, st store.Store, quotas []command.Quota, d quota.Decision) error {
	s := d.Blocking
	scope := skipScope(command.KeysOf(quotas))
	line := fmt.Sprintf("skipped: %s Quota wait until %s (%s: %s left)", providerLabel(quotas, s.Key),
		command.HumanTime(s.ResetAt), shown(s.Resource), count(s.Remaining))
	if d.Cause == quota.CauseBelowReserve {
		line += fmt.Sprintf(", below the reserve of %d", d.Reserve)
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

// skipScope names the keys of a pass in the activity log's skip memory:
// "pass:" and, per host and principal, "HOST/PRINCIPAL/RES1,RES2", the
// resources sorted, the groups sorted and apart by a space.
func skipScope(keys []quota.Key) string {
	groups := map[string][]string{}
	for _, k := range keys {
		g := k.Host + "/" + k.Principal
		groups[g] = append(groups[g], k.Resource)
	}
	parts := make([]string, 0, len(groups))
	for g, res := range groups {
		sort.Strings(res)
		parts = append(parts, g+"/"+strings.Join(res, ","))
	}
	sort.Strings(parts)
	return "pass:" + strings.Join(parts, " ")
}

// providerLabel names the provider of a skipping key: "GitHub" for
// GitHub's (whichever API host serves it, as skip lines always said),
// else its provider's label.
func providerLabel(quotas []command.Quota, key quota.Key) string {
	for _, q := range quotas {
		if q.Key == key {
			return q.Provider.Label
		}
	}
	return command.Label(key.Host)
}

func count(n int64) string {
	if n < 0 {
		return "?"
	}
	return strconv.FormatInt(n, 10)
}
