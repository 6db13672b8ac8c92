package cli

import (
	"cmp"
	"context"
	"errors"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/layoverhq/layover/provider/github"
	"github.com/layoverhq/layover/quota"
	"github.com/layoverhq/layover/store"
	"github.com/layoverhq/layover/store/postgres"
	"github.com/layoverhq/layover/store/sqlite"
)

// storeFlag registers --store on fs.
func storeFlag(fs *flagSet) *string {
	return fs.String("store", "", "store location: a path or sqlite:PATH (default $LAYOVER_STORE, else $XDG_STATE_HOME/layover/layover.db)")
}

// openStore opens the store named by --store, else LAYOVER_STORE, else the
// default path. A location that cannot be used is a usage error (exit 2); a
// store that cannot be read is layover's failure (exit 125).
func openStore(ctx context.Context, env *Env, flagValue string) (store.Store, error) {
	loc := flagValue
	if loc == "" {
		loc = env.Getenv("LAYOVER_STORE")
	}
	var path string
	switch {
	case loc == "":
		p, err := sqlite.DefaultPath(env.Getenv)
		if err != nil {
			return nil, usageErr("%v", err)
		}
		path = p
	case strings.HasPrefix(loc, "sqlite:"):
		path = strings.TrimPrefix(loc, "sqlite:")
		path = strings.TrimPrefix(path, "//")
	case strings.HasPrefix(loc, "postgres://"), strings.HasPrefix(loc, "postgresql://"):
		st, err := postgres.Open(ctx, loc)
		if err != nil {
			var de *postgres.DSNError
			if errors.As(err, &de) {
				return nil, usageErr("%v", err)
			}
			return nil, failErr("%v", err)
		}
		return st, nil
	case strings.Contains(loc, "://"):
		return nil, usageErr("store %q: unknown kind; use a path, sqlite:PATH or postgres://…", postgres.Redact(loc))
	default:
		path = loc
	}
	st, err := sqlite.Open(ctx, path)
	if err != nil {
		var pe *sqlite.PathError
		if errors.As(err, &pe) {
			return nil, usageErr("%v", err)
		}
		return nil, internalErr("%v", err)
	}
	return st, nil
}

// githubTarget is the GitHub quota a command draws on: where the API is, the
// token (kept in memory only) and whose quota it is.
type githubTarget struct {
	BaseURL     string
	Host        string
	Token       string
	TokenSource github.TokenSource
	Principal   string
	// Fingerprint is the token's fingerprint; "" without a token.
	Fingerprint string
	// Learned is true when Principal is a login rather than a fallback.
	Learned bool
	// lazyToken finds the token on first use when Token was not resolved
	// up front.
	lazyToken func() string
}

// token returns the token, resolving it now when it was left for later.
func (t githubTarget) token() string {
	if t.Token == "" && t.lazyToken != nil {
		return t.lazyToken()
	}
	return t.Token
}

// resolveGitHub finds the API, the token and the principal without calling
// the API: the principal comes from --principal / LAYOVER_PRINCIPAL, the
// login the store learned for the token, gh's configured user when the token
// came from gh, else the token's fingerprint.
func resolveGitHub(ctx context.Context, env *Env, st store.Store, principalFlag string) (githubTarget, error) {
	base, host, err := github.APIBase(env.Getenv)
	if err != nil {
		return githubTarget{}, usageErr("%v", err)
	}
	t := githubTarget{BaseURL: base, Host: host}
	resolve := func() (string, github.TokenSource, error) {
		return github.ResolveToken(ctx, env.Getenv, func(ctx context.Context) (string, error) {
			return github.GHAuthToken(ctx, host)
		})
	}
	if p := cmp.Or(principalFlag, env.Getenv("LAYOVER_PRINCIPAL")); p != "" {
		// The principal is given: the token is needed only for a call, so
		// a pass that the ledger skips never runs `gh auth token`.
		t.Principal, t.Learned = p, true
		t.lazyToken = sync.OnceValue(func() string {
			token, _, _ := resolve()
			return token
		})
		return t, nil
	}
	token, source, err := resolve()
	if err != nil {
		return githubTarget{}, usageErr("%v", err)
	}
	t.Token, t.TokenSource = token, source
	if token != "" {
		t.Fingerprint = quota.TokenFingerprint(token)
	}
	if token == "" {
		t.Principal = quota.AnonymousPrincipal
		return t, nil
	}
	login, ok, err := st.Login(ctx, host, t.Fingerprint)
	if err != nil {
		return githubTarget{}, internalErr("read store: %v", err)
	}
	if ok {
		t.Principal, t.Learned = login, true
		return t, nil
	}
	if source == github.TokenFromGH {
		if user, ok := github.GHConfigUser(env.Getenv, github.WebHost(host)); ok {
			if err := st.LearnLogin(ctx, host, t.Fingerprint, user, env.Clock.Now()); err != nil {
				return githubTarget{}, internalErr("write store: %v", err)
			}
			t.Principal, t.Learned = user, true
			return t, nil
		}
	}
	t.Principal = quota.TokenPrincipal(token)
	return t, nil
}

func (t githubTarget) key(resource string) quota.Key {
	return quota.Key{Host: t.Host, Principal: t.Principal, Resource: resource}
}

func (t githubTarget) keys(resources []string) []quota.Key {
	out := make([]quota.Key, len(resources))
	for i, r := range resources {
		out[i] = t.key(r)
	}
	return out
}

func (t githubTarget) client() *github.Client {
	return &github.Client{BaseURL: t.BaseURL, Token: t.token(), HTTP: &http.Client{Timeout: 10 * time.Second}, UserAgent: "layover"}
}

// learnLogin asks GET /user once for a token whose login is not yet known,
// and merges its quota rows into the login's. Failures are ignored: the
// fingerprint principal still works.
func (t *githubTarget) learnLogin(ctx context.Context, env *Env, st store.Store) {
	if t.Learned || t.Token == "" {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	login, err := t.client().Login(ctx)
	if err != nil || login == "" {
		return
	}
	if err := st.LearnLogin(ctx, t.Host, t.Fingerprint, login, env.Clock.Now()); err != nil {
		return
	}
	t.Principal, t.Learned = login, true
}

// observe fills in the key and origin of a provider's observations for this
// target and computes each one's cause against the policy's reserve.
func (t githubTarget) observe(env *Env, p quota.Policy, obs []quota.State) []quota.State {
	now := env.Clock.Now()
	out := make([]quota.State, 0, len(obs))
	for _, o := range obs {
		o.Host, o.Principal = t.Host, t.Principal
		if o.ObservedAt.IsZero() {
			o.ObservedAt = now
		}
		o.ObservedBy = env.Hostname
		if o.Cause == quota.CauseNone {
			o.Cause = o.CauseAt(now, p.Reserve.For(o.Resource, o.Limit))
		}
		out = append(out, o)
	}
	return out
}
