package cli_test

import (
	"bytes"
	"encoding/json"
	"maps"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/layoverhq/layover/internal/fake"
	"github.com/layoverhq/layover/store/postgres/pgtest"
)

// storeCommands are layover's commands that open the store, each with
// arguments that reach the open (a command among them runs marker's
// creation, which must not happen when the store is unusable; flow run's
// touch.yaml is touchFlow).
func storeCommands(marker string) map[string][]string {
	touch := []string{"--", "touch", marker}
	return map[string][]string{
		"pass":        append([]string{"pass", "--principal", "octocat"}, touch...),
		"run":         append([]string{"run"}, touch...),
		"status":      {"status"},
		"status-json": {"status", "--json"},
		"activity":    {"activity"},
		"jobs":        {"jobs", "--json"},
		"show":        {"show", "some-job", "--json"},
		"submit":      append([]string{"submit", "--id", "j1"}, touch...),
		"cancel":      {"cancel", "some-job"},
		"approve":     {"approve", "some-job"},
		"unblock":     {"unblock", "some-job"},
		"adopt":       {"adopt", "some-job"},
		"checkpoint":  {"checkpoint", "--stage", "s1"},
		"serve":       {"serve"},
		"flow run":    {"flow", "run", "touch.yaml"},
		"flow status": {"flow", "status"},
		"flow cancel": {"flow", "cancel", "some-run"},
	}
}

// touchFlow is a workflow whose one task creates marker.
func touchFlow(marker string) string {
	return "name: touch\ntasks:\n  touch: {run: touch " + marker + "}\n"
}

// storePassword is the password written into the unusable PostgreSQL
// locations; no message may show it.
const storePassword = "Store-pw-s3cret"

// unusableStores are stores that cannot be used, each as a function that
// makes one for b and returns its location. The PostgreSQL ones that need a
// server skip without LAYOVER_TEST_POSTGRES.
var unusableStores = map[string]func(t *testing.T, b *bundle) string{
	"sqlite not a database": func(t *testing.T, b *bundle) string {
		path := filepath.Join(b.dir, "garbage.db")
		if err := os.WriteFile(path, bytes.Repeat([]byte("not a database. "), 512), 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	},
	"postgres refused": func(t *testing.T, b *bundle) string {
		return "postgres://layover:" + storePassword + "@127.0.0.1:1/fleet?connect_timeout=5"
	},
	"postgres no socket": func(t *testing.T, b *bundle) string {
		return "postgres://layover:" + storePassword + "@/fleet?host=" + url.QueryEscape(filepath.Join(b.dir, "no-such-dir"))
	},
	"postgres no schema": func(t *testing.T, b *bundle) string {
		return pgtest.WithParams(t, pgtest.DSN(t), "search_path", "layover_no_such_schema_"+pgtest.RandomHex(4))
	},
	"postgres bad auth": func(t *testing.T, b *bundle) string {
		u, err := url.Parse(pgtest.DSN(t))
		if err != nil {
			t.Fatal(err)
		}
		u.User = url.UserPassword("layover_no_such_role_"+pgtest.RandomHex(4), storePassword)
		return u.String()
	},
}

// Issue 8 finding 6: a store that cannot be used is layover failing, exit
// 125, for every command that opens it, SQLite and PostgreSQL alike: a
// `pass` or `run` never starts its command and never looks like the
// command's own exit 1. The message is one line naming the cause, never the
// password.
func TestUnusableStoreExits125(t *testing.T) {
	t.Parallel()
	for kind, mk := range unusableStores {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			b := setup(t, fake.GitHubConfig{})
			b.env["LAYOVER_STORE"] = mk(t, b)
			b.env["LAYOVER_JOB_ID"], b.env["LAYOVER_FENCE"] = "some-job", "1"
			marker := filepath.Join(b.dir, "ran")
			writeTestFile(t, filepath.Join(b.dir, "touch.yaml"), touchFlow(marker))
			for name, args := range storeCommands(marker) {
				t.Run(name, func(t *testing.T) {
					r := b.layover(args...)
					if r.code != 125 {
						t.Fatalf("exit %d, want 125; stderr %q", r.code, r.stderr)
					}
					checkOneLine(t, r.stderr)
					if strings.Contains(r.stderr, storePassword) {
						t.Errorf("stderr shows the password: %q", r.stderr)
					}
				})
			}
			if _, err := os.Stat(marker); err == nil {
				t.Errorf("a command ran although its store was unusable")
			}
		})
	}
}

// checkOneLine fails unless stderr is one line of layover's own.
func checkOneLine(t *testing.T, stderr string) {
	t.Helper()
	if !strings.HasPrefix(stderr, "layover: ") || strings.Count(strings.TrimRight(stderr, "\n"), "\n") > 0 {
		t.Errorf("stderr %q: want one line of layover's", stderr)
	}
}

// storeFiles is what a reading command must leave as it was: the names in
// the store's folder, and the bytes and modification times of the file and
// its write-ahead log.
func storeFiles(t *testing.T, path string) string {
	t.Helper()
	entries, err := os.ReadDir(filepath.Dir(path))
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for _, e := range entries {
		b.WriteString(e.Name() + " ")
		if !strings.HasSuffix(e.Name(), "-shm") {
			data, _ := os.ReadFile(filepath.Join(filepath.Dir(path), e.Name()))
			fi, _ := e.Info()
			b.WriteString(fi.ModTime().Format(time.RFC3339Nano) + " " + string(data) + "\n")
		}
	}
	return b.String()
}

// Issue 8 finding 6: a store this user may read but not write (a shared
// SQLite file of another Unix user; the test runs the binary as nobody when
// it runs as root, whom file modes do not stop) is read by status, status
// --json, activity, jobs and show, which leave every byte of it as it was
// and create nothing beside it; a command that writes (submit) fails on the
// same store, exit 125, which shows the store really is read-only here.
func TestReadOnlyStoreReads(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name        string
		dropIndex   bool // remove the -shm and -wal files (a copied store)
		folderWrite bool // the folder is open to writes; the file is not
	}{
		{"as layover leaves it", false, false},
		{"without its WAL index", true, false},
		{"file read-only in a folder others may write", true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t, fake.GitHubConfig{})
			shared := t.TempDir()
			b.store = filepath.Join(shared, "state", "layover.db")
			b.env["LAYOVER_STORE"] = b.store
			b.gh.SetQuota(testToken, "core", 0, nextSecond(time.Hour))
			if r := b.layover("pass", "--", "true"); r.code != 0 {
				t.Fatalf("pass: exit %d %s", r.code, r.stderr)
			}
			if r := b.layover("submit", "--id", "ro-job", "--", "true"); r.code != 0 {
				t.Fatalf("submit: exit %d %s", r.code, r.stderr)
			}
			if tc.dropIndex {
				for _, suffix := range []string{"-shm", "-wal"} {
					if err := os.Remove(b.store + suffix); err != nil {
						t.Fatal(err)
					}
				}
			}
			reader := readOnlyReader(t, b, tc.folderWrite)
			before := storeFiles(t, b.store)

			checks := map[string]func(r result) bool{
				"status":   func(r result) bool { return strings.Contains(r.stdout, "Quota wait until") },
				"activity": func(r result) bool { return strings.Contains(r.stdout, "skipped: GitHub Quota wait until") },
				"jobs":     func(r result) bool { return strings.Contains(r.stdout, "ro-job") },
				"show":     func(r result) bool { return strings.Contains(r.stdout, "Job ro-job") },
				"status --json": func(r result) bool {
					type quotaRow struct {
						InWait bool `json:"in_wait"`
					}
					var s struct {
						Quota []quotaRow     `json:"quota"`
						Jobs  map[string]int `json:"jobs"`
					}
					return json.Unmarshal([]byte(r.stdout), &s) == nil &&
						slices.Contains(s.Quota, quotaRow{InWait: true}) && s.Jobs["ready"] == 1
				},
			}
			for _, name := range slices.Sorted(maps.Keys(checks)) {
				args := strings.Fields(name)
				if name == "show" {
					args = append(args, "ro-job")
				}
				r := reader.layover(args...)
				if r.code != 0 || !checks[name](r) {
					t.Errorf("%s on a read-only store: exit %d\nstdout: %s\nstderr: %s", name, r.code, r.stdout, r.stderr)
				}
			}
			if after := storeFiles(t, b.store); after != before {
				t.Errorf("reading changed the store's files:\nbefore: %s\nafter:  %s", before, after)
			}
			r := reader.layover("submit", "--id", "another", "--", "true")
			if r.code != 125 || !strings.Contains(r.stderr, "readonly") {
				t.Errorf("submit on the read-only store: exit %d %q; want 125, the write refused", r.code, r.stderr)
			}
		})
	}
}

// readOnlyReader makes b's store readable but not writable to a reader and
// returns b as that reader: another Unix user (nobody) when the test runs
// as root, else this user with the write bits taken away (given back when
// the test ends). folderWrite leaves the store's folder open to the
// reader's writes: only the file is read-only.
func readOnlyReader(t *testing.T, b *bundle, folderWrite bool) *bundle {
	t.Helper()
	folder := filepath.Dir(b.store)
	files, _ := filepath.Glob(b.store + "*")
	folderMode := os.FileMode(0o555)
	if folderWrite {
		folderMode = 0o777
	}
	if os.Geteuid() != 0 {
		chmod(t, 0o444, files...)
		chmod(t, folderMode, folder)
		t.Cleanup(func() { chmod(t, 0o700, folder) })
		return b
	}
	asNobody := asNobodyAttr(t)
	probe := exec.Command(filepath.Join(binDir, "layover"), "help")
	probe.SysProcAttr = asNobody
	chmod(t, 0o755, binDir)
	if out, err := probe.CombinedOutput(); err != nil {
		t.Skipf("cannot run a process as another user (nobody) here: %v %s", err, out)
	}
	// nobody must reach the binary, its working directory and the store.
	reader := *b
	reader.env = maps.Clone(b.env)
	reader.dir = t.TempDir()
	reader.env["HOME"] = reader.dir
	reader.sysProc = asNobody
	chmod(t, 0o755, reader.dir, filepath.Dir(reader.dir), filepath.Dir(folder), filepath.Dir(filepath.Dir(folder)))
	chmod(t, 0o444, files...)
	chmod(t, folderMode, folder)
	return &reader
}

func chmod(t *testing.T, mode os.FileMode, paths ...string) {
	t.Helper()
	for _, p := range paths {
		if err := os.Chmod(p, mode); err != nil {
			t.Fatal(err)
		}
	}
}

// Issue 8 finding 6, PostgreSQL: a role that may only SELECT runs status,
// status --json, activity, jobs and show on a fleet's store (they wrote
// nothing: each would fail in a read-only transaction), and a command that
// writes fails, exit 125.
func TestReadOnlyPostgresRoleReads(t *testing.T) {
	t.Parallel()
	b := setup(t, fake.GitHubConfig{})
	dsn := pgtest.Schema(t)
	b.env["LAYOVER_STORE"] = dsn
	b.gh.SetQuota(testToken, "core", 0, nextSecond(time.Hour))
	if r := b.layover("pass", "--", "true"); r.code != 0 {
		t.Fatalf("pass: exit %d %s", r.code, r.stderr)
	}
	if r := b.layover("submit", "--id", "ro-job", "--", "true"); r.code != 0 {
		t.Fatalf("submit: exit %d %s", r.code, r.stderr)
	}
	b.env["LAYOVER_STORE"] = pgtest.ReadOnlyRole(t, dsn)
	for cmd, want := range map[string]string{"status": "Quota wait until", "status --json": `"in_wait": true`,
		"activity": "skipped:", "jobs": "ro-job", "show ro-job": "Job ro-job"} {
		if r := b.layover(strings.Fields(cmd)...); r.code != 0 || !strings.Contains(r.stdout, want) {
			t.Errorf("%s as a role that may only read: exit %d\nstdout: %s\nstderr: %s", cmd, r.code, r.stdout, r.stderr)
		}
	}
	if r := b.layover("submit", "--id", "another", "--", "true"); r.code != 125 {
		t.Errorf("submit as a role that may only read: exit %d %q, want 125", r.code, r.stderr)
	}
}

// A reading command on a store whose schema a read-only open cannot read
// (here an empty file, as a first open that died leaves) upgrades it when
// this user may write it, as any command would, and otherwise says in one
// line what would, exit 125.
func TestReadOnlyStoreOlderSchema(t *testing.T) {
	t.Parallel()
	b := setup(t, fake.GitHubConfig{})
	b.store = filepath.Join(t.TempDir(), "state", "layover.db")
	b.env["LAYOVER_STORE"] = b.store
	if err := os.MkdirAll(filepath.Dir(b.store), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(b.store, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	reader := readOnlyReader(t, b, false)
	r := reader.layover("status")
	if r.code != 125 || !strings.Contains(r.stderr, "older than this layover reads") ||
		!strings.Contains(r.stderr, "who may write the store upgrades it") {
		t.Errorf("status on an old store it may not write: exit %d %q", r.code, r.stderr)
	}
	checkOneLine(t, r.stderr)
	chmod(t, 0o700, filepath.Dir(b.store))
	chmod(t, 0o600, b.store)
	if r := b.layover("status"); r.code != 0 || !strings.Contains(r.stdout, "No quota observed yet.") {
		t.Errorf("status on an old store it may write: exit %d %q %q", r.code, r.stdout, r.stderr)
	}
}
