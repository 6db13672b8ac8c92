package command

import (
	"context"
	"fmt"
	"io"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/layoverhq/layover/provider/github"
	"github.com/layoverhq/layover/quota"
	"github.com/layoverhq/layover/store"
	"github.com/layoverhq/layover/textsafe"
)

// PassConfig is what the admission of a pass reads: `layover pass` and a
// schedule's slot under `layover serve` admit their pass the same way
// (AdmitPass).
type PassConfig struct {
	Store store.Store
	// GitHub is the resolved GitHub target; it is asked only when Quota
	// names GitHub (or nothing). nil: no GitHub quota can be resolved.
	GitHub    *GitHub
	Principal string
	Getenv    func(string) string
	Quota     QuotaNames
	Policy    quota.Policy
	Now       func() time.Time
	// Warn receives one line when GitHub's /rate_limit check fails (the
	// pass goes ahead); nil discards it.
	Warn io.Writer
	// SkipScope names the pass in the activity log's skip memory (default
	// PassSkipScope of its keys); LinePrefix starts its skip line.
	SkipScope  string
	LinePrefix string
	// Pace applies the pacing rule after the reserve rule admits
	// (docs/pacing.md): a key whose recent burn would reach its reserve
	// before its reset skips the pass.
	Pace bool
}

// PassAdmission is what AdmitPass decided.
type PassAdmission struct {
	Admit  bool
	Quotas []Quota // the pass's resolved quotas
	// When not admitted: the policy's decision, the activity line it
	// makes, and whether that line was written (a reason new since the
	// scope's last skip).
	Decision quota.Decision
	// Pacing is set when the pacing rule refused (PassConfig.Pace).
	Pacing   *quota.Pacing
	SkipLine string
	Logged   bool
}

// AdmitPass decides whether a pass may start: the ledger first (a skip
// then costs no call), then, for GitHub's quotas, its free /rate_limit,
// whose states it records (a check that fails lets the pass go ahead). A
// refused pass writes one activity line per reason (store.Store.RecordSkip
// under the scope); an admitted one clears the scope's skip memory. Its
// errors are package command's (InputError, StoreError).
func AdmitPass(ctx context.Context, cfg *PassConfig) (PassAdmission, error) {
	now := cfg.Now
	if now == nil {
		now = time.Now
	}
	target := cfg.GitHub
	if !slices.Contains(cfg.Quota.Providers(), github.Provider) {
		target = nil // a pass on an LLM's quota never looks for a GitHub token
	}
	resolve := func() ([]Quota, error) {
		return ResolveQuotas(ctx, &QuotaConfig{Store: cfg.Store, GitHub: target, Principal: cfg.Principal,
			Getenv: cfg.Getenv}, cfg.Quota)
	}
	quotas, err := resolve()
	if err != nil {
		return PassAdmission{}, err
	}
	keys := KeysOf(quotas)
	states, err := cfg.Store.States(ctx, keys)
	if err != nil {
		return PassAdmission{}, &StoreError{Op: "read", Err: err}
	}
	if d := cfg.Policy.Admit(now(), states); !d.Admit {
		return skipPass(ctx, cfg, quotas, d, now())
	}
	if target != nil {
		fresh, err := target.Fresh(ctx)
		if err != nil {
			if cfg.Warn != nil {
				fmt.Fprintf(cfg.Warn, "layover: quota check failed (%s); the pass goes ahead\n", strings.Join(strings.Fields(err.Error()), " "))
			}
		} else {
			if err := cfg.Store.RecordStates(ctx, fresh); err != nil {
				return PassAdmission{}, &StoreError{Op: "write", Err: err}
			}
			if d := cfg.Policy.Admit(now(), StatesOf(fresh, keys)); !d.Admit {
				return skipPass(ctx, cfg, quotas, d, now())
			}
			// A login learned now keys GitHub's quotas from here on.
			before := target.Principal
			if target.LearnLogin(ctx, cfg.Store); target.Principal != before {
				if quotas, err = resolve(); err != nil {
					return PassAdmission{}, err
				}
			}
		}
	}
	if cfg.Pace {
		if adm, refused, err := pacePass(ctx, cfg, quotas, now()); err != nil || refused {
			return adm, err
		}
	}
	// An admitted pass forgets the last skip's reason, so the next skip is
	// logged. Under pacing, admitted and paced passes alternate by design
	// (a skip lowers the burn), so a paced pass keeps it: a pacing skip is
	// logged once per key and reset (docs/pacing.md).
	if !cfg.Pace {
		if err := cfg.Store.ClearSkip(ctx, cfg.scope(quotas)); err != nil {
			return PassAdmission{}, &StoreError{Op: "write", Err: err}
		}
	}
	return PassAdmission{Admit: true, Quotas: quotas}, nil
}

func (cfg *PassConfig) scope(quotas []Quota) string {
	if cfg.SkipScope != "" {
		return cfg.SkipScope
	}
	return PassSkipScope(KeysOf(quotas))
}

// skipPass records a refused pass: one activity line when the reason
// differs from the scope's last skip's.
func skipPass(ctx context.Context, cfg *PassConfig, quotas []Quota, d quota.Decision, now time.Time) (PassAdmission, error) {
	line := cfg.LinePrefix + PassSkipLine(quotas, d)
	logged, err := cfg.Store.RecordSkip(ctx, cfg.scope(quotas), PassSkipReason(d.Blocking),
		store.Activity{At: now, Kind: "skip", Line: line})
	if err != nil {
		return PassAdmission{}, &StoreError{Op: "write", Err: err}
	}
	return PassAdmission{Quotas: quotas, Decision: d, SkipLine: line, Logged: logged}, nil
}

// PassSkipLine is the activity line of a refused pass: "skipped: GitHub
// Quota wait until 14:20 (core: 0 left)", and ", below the reserve of N"
// when the reserve refused it.
func PassSkipLine(quotas []Quota, d quota.Decision) string {
	s := d.Blocking
	line := fmt.Sprintf("skipped: %s Quota wait until %s (%s: %s left)", passProviderLabel(quotas, s.Key),
		HumanTime(s.ResetAt), textsafe.Line(s.Resource, 200), passCount(s.Remaining))
	if d.Cause == quota.CauseBelowReserve {
		line += fmt.Sprintf(", below the reserve of %d", d.Reserve)
	}
	return line
}

// PassSkipReason keys a skip on the resource and the provider's raw reset,
// so neither the remaining count nor the clock makes a new line during one
// wait.
func PassSkipReason(s quota.State) string {
	if s.RawReset != 0 {
		return s.Resource + "@" + strconv.FormatInt(s.RawReset, 10)
	}
	return s.Resource + "@assumed:" + strconv.FormatInt(s.ResetAt.Unix(), 10)
}

// PassSkipScope names the keys of a pass in the activity log's skip
// memory: "pass:" and, per host and principal, "HOST/PRINCIPAL/RES1,RES2",
// the resources sorted, the groups sorted and apart by a space.
func PassSkipScope(keys []quota.Key) string {
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

// passProviderLabel names the provider of a skipping key: "GitHub" for
// GitHub's (whichever API host serves it, as skip lines always said),
// else its provider's label.
func passProviderLabel(quotas []Quota, key quota.Key) string {
	for _, q := range quotas {
		if q.Key == key {
			return q.Provider.Label
		}
	}
	return Label(key.Host)
}

func passCount(n int64) string {
	if n < 0 {
		return "?"
	}
	return strconv.FormatInt(n, 10)
}
