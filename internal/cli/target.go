package cli

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
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
// default path, for a command that writes it. A location that cannot be
// used is a usage error (exit 2); a store that cannot be opened or read
// (a server that refuses or cannot be reached, a schema missing, a file
// that is not a store) is layover's failure (exit 125), which a `pass` or
// `run` never confuses with its command's own exit code.
func openStore(ctx context.Context, env *Env, flagValue string) (store.Store, error) {
	return openStoreAs(ctx, env, flagValue, false)
}

// openStoreReadOnly opens the store as openStore does, for a command that
// only reads it (status, activity, jobs, show): it writes nothing, so it
// works on a store this user may read but not write (a shared file of
// another Unix user, a PostgreSQL role that may only SELECT). A store that
// does not exist yet, or whose schema is older than this layover's, is
// opened read-write instead (created or upgraded, as any command would)
// when this user may write it.
func openStoreReadOnly(ctx context.Context, env *Env, flagValue string) (store.Store, error) {
	return openStoreAs(ctx, env, flagValue, true)
}

func openStoreAs(ctx context.Context, env *Env, flagValue string, readOnly bool) (store.Store, error) {
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
		return storeOpened(openPostgres(ctx, loc, readOnly))
	case strings.Contains(loc, "://"):
		return nil, usageErr("store %q: unknown kind; use a path, sqlite:PATH or postgres://…", postgres.Redact(loc))
	default:
		path = loc
	}
	return storeOpened(openSQLite(ctx, path, readOnly))
}

// openPostgres opens a PostgreSQL store, read-only when asked; a schema a
// read-only open cannot read is opened read-write, which upgrades it when
// this role may.
func openPostgres(ctx context.Context, dsn string, readOnly bool) (store.Store, error) {
	if !readOnly {
		return postgres.Open(ctx, dsn)
	}
	st, err := postgres.OpenReadOnly(ctx, dsn)
	if !errors.Is(err, store.ErrSchemaOld) {
		return st, err
	}
	st, rwErr := postgres.Open(ctx, dsn)
	if rwErr != nil {
		return nil, fmt.Errorf("%w; upgrading it failed: %w", err, rwErr)
	}
	return st, nil
}

// openSQLite opens a SQLite store, read-only when asked; a file that does
// not exist yet is created, and one whose schema is older upgraded, by a
// read-write open, only when this user may write it.
func openSQLite(ctx context.Context, path string, readOnly bool) (store.Store, error) {
	if !readOnly {
		return sqlite.Open(ctx, path)
	}
	st, err := sqlite.OpenReadOnly(ctx, path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return sqlite.Open(ctx, path)
	case errors.Is(err, store.ErrSchemaOld):
		if !mayWrite(path) || !mayWrite(filepath.Dir(path)) {
			return nil, fmt.Errorf("%w; a layover command run by a user who may write the store upgrades it", err)
		}
		return sqlite.Open(ctx, path)
	}
	return st, err
}

// mayWrite reports whether this process may write path (access(2) W_OK).
func mayWrite(path string) bool {
	const wOK = 2
	return syscall.Access(path, wOK) == nil
}

// storeOpened maps the error of opening a store to an exit code: the
// location is wrong (2), else the store is unusable (125).
func storeOpened(st store.Store, err error) (store.Store, error) {
	if err == nil {
		return st, nil
	}
	var pe *sqlite.PathError
	var de *postgres.DSNError
	if errors.As(err, &pe) || errors.As(err, &de) {
		return nil, usageErr("%v", err)
	}
	return nil, internalErr("%v", err)
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
	// now is the process clock (Env.Clock): observations are stamped and
	// their resets skew-corrected with it.
	now func() time.Time
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
	t := githubTarget{BaseURL: base, Host: host, now: env.Clock.Now}
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
		if user, ok := github.GHConfigUser(env.Getenv, github.WebHost(host)); ok && github.ValidLogin(user) {
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
	return &github.Client{BaseURL: t.BaseURL, Token: t.token(), HTTP: &http.Client{Timeout: 10 * time.Second}, UserAgent: "layover", Now: t.now}
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
