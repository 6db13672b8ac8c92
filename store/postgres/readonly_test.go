package postgres_test

import (
	"errors"
	"net/url"
	"strings"
	"testing"

	"github.com/layoverhq/layover/store"
	"github.com/layoverhq/layover/store/postgres"
	"github.com/layoverhq/layover/store/postgres/pgtest"
	"github.com/layoverhq/layover/store/storetest"
)

// A read-only Store, opened by a role that may only SELECT, reads
// everything a read-write one wrote and refuses every write; Open as that
// role fails (it would migrate), which is why the reading commands need
// OpenReadOnly.
func TestOpenReadOnly(t *testing.T) {
	t.Parallel()
	dsn := pgtest.Schema(t)
	var roDSN string
	storetest.ReadOnly(t, func(t *testing.T) store.Store { return open(t, dsn) }, func(t *testing.T) store.Store {
		roDSN = pgtest.ReadOnlyRole(t, dsn)
		s, err := postgres.OpenReadOnly(t.Context(), roDSN)
		if err != nil {
			t.Fatalf("OpenReadOnly as a role that may only read: %v", err)
		}
		return s
	})
	if s, err := postgres.Open(t.Context(), roDSN); err == nil {
		s.Close()
		t.Errorf("Open as a role that may only read succeeded; the test's role may write")
	}
}

// A read-only open of a schema without layover's tables, or with an older
// version of them, says the schema is older (store.ErrSchemaOld) and
// creates nothing.
func TestOpenReadOnlyOldSchema(t *testing.T) {
	t.Parallel()
	t.Run("empty schema", func(t *testing.T) {
		t.Parallel()
		dsn := pgtest.Schema(t)
		_, err := postgres.OpenReadOnly(t.Context(), dsn)
		if !errors.Is(err, store.ErrSchemaOld) || !errors.Is(err, store.ErrNoSchema) || !strings.Contains(err.Error(), "schema version 0") {
			t.Fatalf("OpenReadOnly of an empty schema = %v, want store.ErrSchemaOld and ErrNoSchema naming version 0", err)
		}
		if err := pgtest.AdminExec(t.Context(), pgtest.DSN(t), "SELECT 1/(CASE count(*) WHEN 0 THEN 1 ELSE 0 END) FROM information_schema.tables WHERE table_schema = '"+
			schemaOf(t, dsn)+"'"); err != nil {
			t.Errorf("a read-only open created tables: %v", err)
		}
	})
	t.Run("older version", func(t *testing.T) {
		t.Parallel()
		dsn := pgtest.Schema(t)
		s := open(t, dsn)
		if _, err := s.Pool().Exec(t.Context(), `DELETE FROM schema_migrations WHERE version > 1`); err != nil {
			t.Fatal(err)
		}
		_, err := postgres.OpenReadOnly(t.Context(), dsn)
		if !errors.Is(err, store.ErrSchemaOld) || errors.Is(err, store.ErrNoSchema) || !strings.Contains(err.Error(), "schema version 1") {
			t.Fatalf("OpenReadOnly of version 1 = %v, want store.ErrSchemaOld naming version 1", err)
		}
	})
}

func schemaOf(t *testing.T, dsn string) string {
	t.Helper()
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	return u.Query().Get("search_path")
}
