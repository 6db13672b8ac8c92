package command

import (
	"cmp"
	"context"
	"os"

	"github.com/layoverhq/layover/provider/github"
	"github.com/layoverhq/layover/provider/registry"
	"github.com/layoverhq/layover/quota"
	"github.com/layoverhq/layover/store"
)

// Quota is one quota a command draws on: its provider and its key.
type Quota struct {
	Provider *registry.Provider
	Key      quota.Key
}

// QuotaConfig says how ResolveQuotas finds the keys of quota names.
type QuotaConfig struct {
	// Store holds the principals learned for keys' fingerprints. Required
	// for an API other than GitHub's.
	Store store.Store
	// GitHub is the GitHub target. Required when a name is GitHub's.
	GitHub *GitHub
	// Principal, when not empty, is whose quota every key is (--principal);
	// else LAYOVER_PRINCIPAL.
	Principal string
	// Getenv reads LAYOVER_PRINCIPAL and the APIs' base-URL and key
	// variables. nil means os.Getenv.
	Getenv func(string) string
}

// ResolveQuotas resolves names to quotas, each key once, by provider in
// the order first named (an empty list: GitHub's defaults). The key of a resource is
// (docs/design.md, Glossary: Quota key, Principal):
//   - GitHub's: the target's API host and principal (ResolveGitHub).
//   - another API's (Anthropic, OpenAI, Gemini) the one the transport
//     records: the host of the API's base-URL variable (ANTHROPIC_BASE_URL,
//     …; else its public host) and the principal --principal or
//     LAYOVER_PRINCIPAL names, else the one the store learned for the
//     fingerprint of the key its key variable holds (ANTHROPIC_API_KEY, …:
//     the organisation a response to that key named), else "tok:" and
//     that fingerprint, else quota.AnonymousPrincipal without a key.
//   - an agent CLI's: host the CLI's name, the principal --principal or
//     LAYOVER_PRINCIPAL names, else "local", as `run` records them.
//
// A base-URL variable that is no API root is an *InputError; a store that
// cannot be read a *StoreError.
func ResolveQuotas(ctx context.Context, cfg *QuotaConfig, names QuotaNames) ([]Quota, error) {
	getenv := cfg.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	given := cmp.Or(cfg.Principal, getenv("LAYOVER_PRINCIPAL"))
	var out []Quota
	for _, name := range names.Providers() {
		p, ok := registry.Lookup(name)
		if !ok {
			continue // ParseQuotaName admits none
		}
		var host, principal string
		switch {
		case name == github.Provider:
			host, principal = cfg.GitHub.Host, cfg.GitHub.Principal
		case p.API == nil:
			host, principal = p.Name, cmp.Or(given, agentPrincipal)
		default:
			var err error
			if host, principal, err = apiKeyOf(ctx, cfg.Store, p.API, given, getenv); err != nil {
				return nil, err
			}
		}
		for _, r := range names.Resources(name) {
			out = append(out, Quota{Provider: p, Key: quota.Key{Host: host, Principal: principal, Resource: r}})
		}
	}
	return out, nil
}

// agentPrincipal is whose an agent CLI's quota is when no principal is
// given: this machine's user.
const agentPrincipal = "local"

// apiKeyOf is the host and principal of an API's keys (ResolveQuotas).
func apiKeyOf(ctx context.Context, st store.Store, a *registry.API, given string, getenv func(string) string) (host, principal string, err error) {
	if _, host, err = a.Base(getenv); err != nil {
		return "", "", &InputError{Err: err}
	}
	if given != "" {
		return host, given, nil
	}
	key := a.Key(getenv)
	if key == "" {
		return host, quota.AnonymousPrincipal, nil
	}
	fp := quota.TokenFingerprint(key)
	learned, ok, err := st.Login(ctx, host, fp)
	if err != nil {
		return "", "", &StoreError{Op: "read", Err: err}
	}
	if ok && learned != "" {
		return host, learned, nil
	}
	return host, quota.TokenPrincipal(key), nil
}

// KeysOf returns the keys of quotas, in their order.
func KeysOf(quotas []Quota) []quota.Key {
	out := make([]quota.Key, len(quotas))
	for i, q := range quotas {
		out[i] = q.Key
	}
	return out
}

// LabelOf names the provider of key among quotas for people: its label
// (for GitHub, Label of the key's host, so GitHub Enterprise shows its
// host), else Label of the key's host.
func LabelOf(quotas []Quota, key quota.Key) string {
	for _, q := range quotas {
		if q.Key == key && q.Provider.Name != github.Provider {
			return q.Provider.Label
		}
	}
	return Label(key.Host)
}

// defaultResource is the resource a limit of the provider name is recorded
// under when its evidence names none (registry's DefaultResource); "usage"
// for a name the registry does not know.
func defaultResource(name string) string {
	if p, ok := registry.Lookup(name); ok {
		return p.DefaultResource
	}
	return "usage"
}
