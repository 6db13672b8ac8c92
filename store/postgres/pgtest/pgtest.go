// Package pgtest gives tests a PostgreSQL database to work in: the server
// named by LAYOVER_TEST_POSTGRES, and a fresh schema per test, dropped when
// the test ends. Without the variable a test is skipped, unless CI is set:
// CI starts a server and must not pass by skipping.
package pgtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/url"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

// EnvDSN names the server these tests use. Without it they skip, unless
// CI is set: CI starts a server and must not pass by skipping.
const EnvDSN = "LAYOVER_TEST_POSTGRES"

// DSN returns the test server's DSN, or skips t (fails it under CI).
func DSN(t testing.TB) string {
	t.Helper()
	dsn := os.Getenv(EnvDSN)
	if dsn == "" {
		const how = EnvDSN + " is not set: run these tests against a scratch PostgreSQL server with e.g. " +
			EnvDSN + "='postgres://postgres@127.0.0.1:5432/layover_dev?sslmode=disable' go test ./store/postgres/ " +
			"(each test works in a schema of its own, made and dropped by the test)"
		if os.Getenv("CI") != "" {
			t.Fatal(how)
		}
		t.Skip(how)
	}
	return dsn
}

// RandomHex returns n random bytes in hex.
func RandomHex(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// WithParams returns dsn with the URL parameters in kv (name, value, ...)
// set.
func WithParams(t testing.TB, dsn string, kv ...string) string {
	t.Helper()
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatalf("%s: %v", EnvDSN, err)
	}
	q := u.Query()
	for i := 0; i+1 < len(kv); i += 2 {
		q.Set(kv[i], kv[i+1])
	}
	u.RawQuery = q.Encode()
	return u.String()
}

// admin is a pool on the test server for making and dropping schemas,
// shared by the tests of this process (the server forks a process per
// connection: a connection per test would cost more than the test).
var admin = struct {
	sync.Mutex
	pools map[string]*pgxpool.Pool
}{pools: map[string]*pgxpool.Pool{}}

// AdminExec runs sql on the shared pool for dsn.
func AdminExec(ctx context.Context, dsn, sql string) error {
	admin.Lock()
	p, ok := admin.pools[dsn]
	if !ok {
		cfg, err := pgxpool.ParseConfig(dsn)
		if err != nil {
			admin.Unlock()
			return err
		}
		cfg.MaxConns = 4
		if p, err = pgxpool.NewWithConfig(context.Background(), cfg); err != nil {
			admin.Unlock()
			return err
		}
		admin.pools[dsn] = p
	}
	admin.Unlock()
	_, err := p.Exec(ctx, sql)
	return err
}

// Schema makes an empty schema with a random name, dropped (with
// everything in it) when t ends, and returns the test DSN with its
// search_path set to it: a store opened on it sees only its own tables.
func Schema(t testing.TB) string {
	t.Helper()
	dsn := DSN(t)
	schema := "layover_test_" + RandomHex(6)
	if err := AdminExec(t.Context(), dsn, "CREATE SCHEMA "+schema); err != nil {
		t.Fatalf("create schema %s: %v", schema, err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := AdminExec(ctx, dsn, "DROP SCHEMA "+schema+" CASCADE"); err != nil {
			t.Errorf("drop schema %s: %v", schema, err)
		}
	})
	return WithParams(t, dsn, "search_path", schema)
}

// ReadOnlyRole makes a login role that may only read the tables of the
// schema dsn's search_path names (USAGE on the schema, SELECT on its
// tables as they are now), dropped when t ends, and returns dsn as that
// role.
func ReadOnlyRole(t testing.TB, dsn string) string {
	t.Helper()
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatalf("%s: %v", EnvDSN, err)
	}
	schema := u.Query().Get("search_path")
	role, pw := "layover_ro_"+RandomHex(6), RandomHex(12)
	admin := DSN(t)
	if err := AdminExec(t.Context(), admin, "CREATE ROLE "+role+" LOGIN PASSWORD '"+pw+"'; "+
		"GRANT USAGE ON SCHEMA "+schema+" TO "+role+"; "+
		"GRANT SELECT ON ALL TABLES IN SCHEMA "+schema+" TO "+role); err != nil {
		t.Fatalf("create a role that may only read: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := AdminExec(ctx, admin, "DROP OWNED BY "+role+"; DROP ROLE "+role); err != nil {
			t.Errorf("drop role %s: %v", role, err)
		}
	})
	u.User = url.UserPassword(role, pw)
	return u.String()
}
