package cli_test

import (
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/layoverhq/layover/internal/fake"
	"github.com/layoverhq/layover/store/postgres/pgtest"
)

// Issue 10: a reading command never creates a store. A --store or
// LAYOVER_STORE path with no store is exit 2 "no store at PATH", and no
// folder, file or log appears; the default path with no store yet is an
// empty answer, exit 0 (show: an unknown job), and nothing appears either.
func TestReadingCommandsCreateNoStore(t *testing.T) {
	t.Parallel()
	reads := map[string][]string{
		"status": {"status"}, "status --json": {"status", "--json"}, "activity": {"activity"},
		"jobs": {"jobs"}, "jobs --json": {"jobs", "--json"}, "show": {"show", "some-job"},
		"flow status": {"flow", "status"}, "flow status --json": {"flow", "status", "--json"},
	}
	t.Run("named", func(t *testing.T) {
		t.Parallel()
		b := setup(t, fake.GitHubConfig{})
		for name, args := range reads {
			for _, how := range []string{"env", "flag"} {
				r := b.layover(args...)
				if how == "flag" {
					r = b.layover(append(args, "--store", "sqlite:"+b.store)...)
				}
				if r.code != 2 || !strings.HasPrefix(r.stderr, "layover: no store at "+b.store) {
					t.Errorf("%s (%s): exit %d %q; want 2, no store at %s", name, how, r.code, r.stderr, b.store)
				}
				checkOneLine(t, r.stderr)
			}
		}
		if _, err := os.Stat(filepath.Dir(b.store)); err == nil {
			t.Errorf("the store's folder was created")
		}
	})
	t.Run("default", func(t *testing.T) {
		t.Parallel()
		b := setup(t, fake.GitHubConfig{})
		delete(b.env, "LAYOVER_STORE")
		want := map[string]string{"status": "No quota observed yet.\n", "activity": "", "jobs": "No jobs.\n",
			"jobs --json": "[]\n", "flow status": "No workflow runs.\n", "flow status --json": "{\n  \"runs\": []\n}\n"}
		for name, args := range reads {
			r := b.layover(args...)
			switch {
			case name == "show":
				if r.code != 1 || !strings.Contains(r.stderr, "not found") {
					t.Errorf("show: exit %d %q; want 1, an unknown job", r.code, r.stderr)
				}
			case name == "status --json":
				if r.code != 0 || !strings.Contains(r.stdout, `"quota": []`) || !strings.Contains(r.stdout, `"jobs": {}`) {
					t.Errorf("status --json: exit %d %q %q", r.code, r.stdout, r.stderr)
				}
			case r.code != 0 || r.stdout != want[name]:
				t.Errorf("%s: exit %d, stdout %q, stderr %q; want 0, %q", name, r.code, r.stdout, r.stderr, want[name])
			}
		}
		if entries, _ := os.ReadDir(b.dir); len(entries) != 0 {
			var names []string
			for _, e := range entries {
				names = append(names, e.Name())
			}
			t.Errorf("reading created %v in HOME", names)
		}
	})
}

// noJobs reports whether `jobs --json` found no job: an empty list, or no
// store at all.
func noJobs(r result) bool {
	return r.code == 0 && strings.TrimSpace(r.stdout) == "[]" || r.code == 2 && strings.HasPrefix(r.stderr, "layover: no store at ")
}

// Issue 10: a reading command never migrates a PostgreSQL store: on a
// schema without layover's tables status is exit 2, "no store at …", and
// the schema stays empty (a second status says the same); on an older
// schema it is exit 125, saying what upgrades it, and the schema stays as
// it was. A command that writes creates it.
func TestReadingCommandsNeverMigratePostgres(t *testing.T) {
	t.Parallel()
	b := setup(t, fake.GitHubConfig{})
	dsn := pgtest.Schema(t)
	b.env["LAYOVER_STORE"] = dsn
	for range 2 {
		r := b.layover("status")
		if r.code != 2 || !strings.HasPrefix(r.stderr, "layover: no store at postgres://") {
			t.Fatalf("status on an empty schema: exit %d %q", r.code, r.stderr)
		}
		checkOneLine(t, r.stderr)
	}
	if r := b.layover("pass", "--", "true"); r.code != 0 {
		t.Fatalf("pass: exit %d %q", r.code, r.stderr)
	}
	schema := dsnSchema(t, dsn)
	if err := pgtest.AdminExec(t.Context(), pgtest.DSN(t), "DELETE FROM "+schema+".schema_migrations WHERE version > 1"); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		r := b.layover("status")
		if r.code != 125 || !strings.Contains(r.stderr, "schema version 1,") || !strings.Contains(r.stderr, "a layover command that writes the store") {
			t.Fatalf("status on an older schema: exit %d %q", r.code, r.stderr)
		}
		checkOneLine(t, r.stderr)
	}
	// Nothing was migrated: version 1 is still the newest recorded.
	if err := pgtest.AdminExec(t.Context(), pgtest.DSN(t), "SELECT 1/(CASE max(version) WHEN 1 THEN 1 ELSE 0 END) FROM "+
		schema+".schema_migrations"); err != nil {
		t.Errorf("a reading command migrated the schema: %v", err)
	}
}

// dsnSchema is the schema a pgtest DSN's search_path names.
func dsnSchema(t *testing.T, dsn string) string {
	t.Helper()
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	return u.Query().Get("search_path")
}
