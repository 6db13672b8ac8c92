package cli

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"strings"

	"github.com/layoverhq/layover/platform"
	"github.com/layoverhq/layover/store"
	"github.com/layoverhq/layover/store/postgres"
	"github.com/layoverhq/layover/store/sqlite"
)

// storeFlag registers --store on fs.
// storeUsage is every --store flag's help.
const storeUsage = "store location: a SQLite path or sqlite:PATH, or postgres://USER@HOST/DB for a fleet (default $LAYOVER_STORE, else $XDG_STATE_HOME/layover/layover.db)"

func storeFlag(fs *flagSet) *string {
	return fs.String("store", "", storeUsage)
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
// another Unix user, a PostgreSQL role that may only SELECT), and it never
// creates a store. A SQLite store named by --store or LAYOVER_STORE that
// does not exist is a usage error, "no store at PATH" (a mistyped path),
// and the default store not existing yet reads as an empty store; neither
// creates a file or a folder. A SQLite file whose schema is older than
// this layover's is upgraded by a read-write open when this user may write
// it, as any command would; a PostgreSQL schema is never upgraded by a
// reading command (a fleet's schema changes when a command that writes
// runs): a schema with no layover tables is "no store at …" (exit 2) as a
// missing SQLite file is, and an older one layover's failure (exit 125),
// saying what upgrades it.
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
		st, err := openSQLite(ctx, p, readOnly)
		if errors.Is(err, errNoSuchStore) {
			return noStore{}, nil
		}
		return storeOpened(st, err)
	case strings.HasPrefix(loc, "sqlite:"):
		path = strings.TrimPrefix(loc, "sqlite:")
		path = strings.TrimPrefix(path, "//")
	case strings.HasPrefix(loc, "postgres://"), strings.HasPrefix(loc, "postgresql://"):
		st, err := openPostgres(ctx, loc, readOnly)
		if errors.Is(err, store.ErrNoSchema) {
			return nil, usageErr("no store at %s (no layover schema there); a command that writes the store (pass, run, submit, serve) creates it",
				postgres.Redact(loc))
		}
		return storeOpened(st, err)
	case strings.Contains(loc, "://"):
		return nil, usageErr("store %q: unknown kind; use a path, sqlite:PATH or postgres://…", postgres.Redact(loc))
	default:
		path = loc
	}
	st, err := openSQLite(ctx, path, readOnly)
	if errors.Is(err, errNoSuchStore) {
		return nil, usageErr("no store at %s; a command that writes the store (pass, run, submit, serve) creates it", shown(path))
	}
	return storeOpened(st, err)
}

// errNoSuchStore: a read-only open found no store file.
var errNoSuchStore = errors.New("no store")

// openPostgres opens a PostgreSQL store, read-only when asked. A read-only
// open never migrates: a schema it cannot read is an error saying what
// upgrades it.
func openPostgres(ctx context.Context, dsn string, readOnly bool) (store.Store, error) {
	if !readOnly {
		return postgres.Open(ctx, dsn)
	}
	st, err := postgres.OpenReadOnly(ctx, dsn)
	if errors.Is(err, store.ErrSchemaOld) {
		return nil, fmt.Errorf("%w; a reading command never changes a PostgreSQL store's schema: "+
			"a layover command that writes the store (serve, submit, run, pass) upgrades it", err)
	}
	return st, err
}

// openSQLite opens a SQLite store, read-only when asked. Read-only, a file
// that does not exist is errNoSuchStore, and nothing is created; one whose
// schema is older is upgraded by a read-write open, only when this user
// may write it.
func openSQLite(ctx context.Context, path string, readOnly bool) (store.Store, error) {
	if !readOnly {
		return sqlite.Open(ctx, path)
	}
	st, err := sqlite.OpenReadOnly(ctx, path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, errNoSuchStore
	case errors.Is(err, store.ErrSchemaOld):
		if !platform.MayWrite(path) || !platform.MayWrite(filepath.Dir(path)) {
			return nil, fmt.Errorf("%w; a layover command run by a user who may write the store upgrades it", err)
		}
		return sqlite.Open(ctx, path)
	}
	return st, err
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
