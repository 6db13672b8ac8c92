package command

import (
	"cmp"
	"context"
	"errors"
	"net/http"
	"os"
	"slices"
	"sync"
	"time"

	"github.com/layoverhq/layover/clock"
	"github.com/layoverhq/layover/provider/github"
	"github.com/layoverhq/layover/provider/registry"
	"github.com/layoverhq/layover/quota"
	"github.com/layoverhq/layover/store"
)

// githubTimeout bounds one call to the GitHub API (GET /rate_limit, GET
// /user): a check that cannot answer in time is a check that failed.
const githubTimeout = 10 * time.Second

// GitHubConfig says where ResolveGitHub finds a GitHub quota.
type GitHubConfig struct {
	// Store holds the logins learned for tokens: read, and written when
	// gh's configuration names the token's user. Required.
	Store store.Store
	// Principal, when not empty, is whose quota it is (--principal); else
	// LAYOVER_PRINCIPAL.
	Principal string
	// Getenv reads GITHUB_API_URL, the token variables (GH_TOKEN,
	// GITHUB_TOKEN, …), LAYOVER_PRINCIPAL and gh's configuration. nil means
	// os.Getenv.
	Getenv func(string) string
	// Clock stamps observations and learned logins, and corrects resets
	// for clock skew. nil means the system clock.
	Clock clock.Clock
	// Hostname names this machine as the observer of every state. ""
	// means os.Hostname().
	Hostname string
}

// GitHub is the GitHub quota a command draws on: where the API is, the
// token (kept in memory only: never stored, logged or put in a receipt) and
// whose quota it is. Make one with ResolveGitHub. Its fields are read-only;
// LearnLogin changes Principal and must not run beside other calls.
type GitHub struct {
	// BaseURL is the REST API root (GITHUB_API_URL, default
	// https://api.github.com); Host the quota host of every key.
	BaseURL, Host string
	// Principal is whose quota it is (docs/design.md, Glossary).
	Principal string
	// Learned is true when Principal is given or a login, false when it is
	// a fallback ("tok:" and the token's fingerprint, or anonymous).
	Learned bool
	// Fingerprint is quota.TokenFingerprint of the token; "" without a
	// token, and when Principal was given (the token is then found on
	// first use).
	Fingerprint string
	// TokenSource says where the token came from; zero when Principal was
	// given.
	TokenSource github.TokenSource

	token     string
	lazyToken func() string // finds the token on first use, when Principal was given
	clock     clock.Clock
	hostname  string
}

// ResolveGitHub finds the API, the token and the principal without calling
// the API. The principal is, in order: cfg.Principal, LAYOVER_PRINCIPAL;
// the login the store learned for the token's fingerprint; gh's configured
// user when the token came from `gh auth token` (then learned); else
// quota.TokenPrincipal of the token, or quota.AnonymousPrincipal without
// one. With a principal given, the token is looked for only when first
// needed, so a pass the ledger skips never runs gh.
//
// A GITHUB_API_URL that is no API root, or a token that cannot be read, is
// an *InputError; a store that cannot be read or written a *StoreError.
func ResolveGitHub(ctx context.Context, cfg *GitHubConfig) (*GitHub, error) {
	getenv := cfg.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	base, host, err := github.APIBase(getenv)
	if err != nil {
		return nil, &InputError{Err: err}
	}
	g := &GitHub{BaseURL: base, Host: host, clock: cmp.Or[clock.Clock](cfg.Clock, clock.Real{}),
		hostname: cmp.Or(cfg.Hostname, osHostname())}
	resolve := func() (string, github.TokenSource, error) {
		return github.ResolveToken(ctx, getenv, func(ctx context.Context) (string, error) {
			return github.GHAuthToken(ctx, host)
		})
	}
	if p := cmp.Or(cfg.Principal, getenv("LAYOVER_PRINCIPAL")); p != "" {
		g.Principal, g.Learned = p, true
		g.lazyToken = sync.OnceValue(func() string {
			token, _, _ := resolve()
			return token
		})
		return g, nil
	}
	token, source, err := resolve()
	if err != nil {
		return nil, &InputError{Err: err}
	}
	g.token, g.TokenSource = token, source
	if token == "" {
		g.Principal = quota.AnonymousPrincipal
		return g, nil
	}
	g.Fingerprint = quota.TokenFingerprint(token)
	st := cfg.Store
	login, ok, err := st.Login(ctx, host, g.Fingerprint)
	if err != nil {
		return nil, &StoreError{Op: "read", Err: err}
	}
	if ok {
		g.Principal, g.Learned = login, true
		return g, nil
	}
	if source == github.TokenFromGH {
		if user, ok := github.GHConfigUser(getenv, github.WebHost(host)); ok && github.ValidLogin(user) {
			if err := st.LearnLogin(ctx, host, g.Fingerprint, user, g.clock.Now()); err != nil {
				return nil, &StoreError{Op: "write", Err: err}
			}
			g.Principal, g.Learned = user, true
			return g, nil
		}
	}
	g.Principal = quota.TokenPrincipal(token)
	return g, nil
}

// osHostname is this machine's name, "" when it has none.
func osHostname() string {
	h, _ := os.Hostname()
	return h
}

// Token returns the token, finding it now when it was left for first use;
// "" when there is none.
func (g *GitHub) Token() string {
	if g.token == "" && g.lazyToken != nil {
		return g.lazyToken()
	}
	return g.token
}

// Key is the quota key of resource for this target.
func (g *GitHub) Key(resource string) quota.Key {
	return quota.Key{Host: g.Host, Principal: g.Principal, Resource: resource}
}

// Keys are the quota keys of resources, in their order.
func (g *GitHub) Keys(resources []string) []quota.Key {
	out := make([]quota.Key, len(resources))
	for i, r := range resources {
		out[i] = g.Key(r)
	}
	return out
}

// Client is an API client for this target, each call bounded by 10 s.
func (g *GitHub) Client() *github.Client {
	return &github.Client{BaseURL: g.BaseURL, Token: g.Token(), HTTP: &http.Client{Timeout: githubTimeout},
		UserAgent: "layover", Now: g.clock.Now}
}

// LearnLogin asks GET /user once for a token whose login is not yet known,
// records the login for the token's fingerprint (which merges the
// fingerprint's quota rows into the login's) and makes it the principal.
// Failures are ignored: the fingerprint principal still works.
func (g *GitHub) LearnLogin(ctx context.Context, st store.Store) {
	if g.Learned || g.token == "" {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, githubTimeout)
	defer cancel()
	login, err := g.Client().Login(ctx)
	if err != nil || login == "" {
		return
	}
	if err := st.LearnLogin(ctx, g.Host, g.Fingerprint, login, g.clock.Now()); err != nil {
		return
	}
	g.Principal, g.Learned = login, true
}

// Observe fills in the key and origin of a provider's observations for this
// target (an unstamped one is observed now). An observation keeps the
// cause the provider gave it: below the reserve is no observation but a
// reader's decision (quota.Policy.Blocks).
func (g *GitHub) Observe(obs []quota.State) []quota.State {
	now := g.clock.Now()
	out := make([]quota.State, 0, len(obs))
	for _, o := range obs {
		o.Host, o.Principal = g.Host, g.Principal
		if o.ObservedAt.IsZero() {
			o.ObservedAt = now
		}
		o.ObservedBy = g.hostname
		out = append(out, o)
	}
	return out
}

// Fresh reads every resource's state from GitHub's GET /rate_limit (which
// costs no quota), within 10 s, observed for this target (Observe). It
// records nothing.
func (g *GitHub) Fresh(ctx context.Context) ([]quota.State, error) {
	ctx, cancel := context.WithTimeout(ctx, githubTimeout)
	defer cancel()
	gh, _ := registry.Lookup(github.Provider)
	fresh, err := gh.API.Fresh(ctx, registry.Endpoint{BaseURL: g.BaseURL, Token: g.Token(),
		HTTP: &http.Client{Timeout: githubTimeout}, Now: g.clock.Now})
	if err != nil {
		return nil, err
	}
	return g.Observe(fresh), nil
}

// StatesOf returns the states of keys among states, in the order of states.
func StatesOf(states []quota.State, keys []quota.Key) []quota.State {
	var out []quota.State
	for _, s := range states {
		for _, k := range keys {
			if s.Key == k {
				out = append(out, s)
			}
		}
	}
	return out
}

// HostQuotas is the host.Quotas of `layover serve`: it resolves a job's
// quota names (ResolveQuotas) and reads their fresh state: GitHub's from
// its free GET /rate_limit, recorded in Store; the other providers' from
// the ledger, as none has a free endpoint for it (provider/registry).
type HostQuotas struct {
	GitHub *GitHub
	Store  store.Store
	// Principal and Getenv resolve the other providers' keys, as
	// QuotaConfig's do.
	Principal string
	Getenv    func(string) string
}

// Keys resolves names ("github", "github:core", "anthropic:tokens";
// ParseQuotaName) to keys.
func (q *HostQuotas) Keys(ctx context.Context, names []string) ([]quota.Key, error) {
	var n QuotaNames
	for _, s := range names {
		if err := n.Set(s); err != nil {
			return nil, err
		}
	}
	quotas, err := ResolveQuotas(ctx, &QuotaConfig{Store: q.Store, GitHub: q.GitHub, Principal: q.Principal, Getenv: q.Getenv}, n)
	if err != nil {
		return nil, err
	}
	return KeysOf(quotas), nil
}

// Fresh returns the current states of keys: for GitHub's, read from
// GitHub (every resource's, all recorded); for the others', the ledger's.
func (q *HostQuotas) Fresh(ctx context.Context, keys []quota.Key) ([]quota.State, error) {
	var out []quota.State
	var ledger []quota.Key
	for _, k := range keys {
		if k.Host != q.GitHub.Host {
			ledger = append(ledger, k)
		}
	}
	if len(ledger) < len(keys) {
		fresh, err := q.GitHub.Fresh(ctx)
		if err != nil {
			return nil, err
		}
		if err := q.Store.RecordStates(ctx, fresh); err != nil {
			return nil, err
		}
		out = StatesOf(fresh, keys)
	}
	if len(ledger) > 0 {
		states, err := q.Store.States(ctx, ledger)
		if err != nil {
			return nil, err
		}
		out = append(out, states...)
	}
	return out, nil
}

// CheckCredentials implements host.Credentials for GitHub's keys: GET /user
// with the host's token, which costs one call only when it works (a 401
// costs none). Keys of other providers have no such check here (known
// false). A 401 is credentials that do not work; any other failure is err.
func (q *HostQuotas) CheckCredentials(ctx context.Context, keys []quota.Key) (ok, known bool, err error) {
	if !slices.ContainsFunc(keys, func(k quota.Key) bool { return k.Host == q.GitHub.Host }) {
		return false, false, nil
	}
	ctx, cancel := context.WithTimeout(ctx, githubTimeout)
	defer cancel()
	_, err = q.GitHub.Client().Login(ctx)
	var se *github.StatusError
	if errors.As(err, &se) && se.StatusCode == http.StatusUnauthorized {
		return false, true, nil
	}
	return err == nil, true, err
}
