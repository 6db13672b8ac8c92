package cli_test

import (
	"bufio"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/layoverhq/layover/internal/fake"
	"github.com/layoverhq/layover/store/postgres/pgtest"
)

// readmeExitRows reads the code cell of every row of README.md's exit-code
// table ("0", "N", "126 / 127", …), in order.
func readmeExitRows(t *testing.T) []string {
	t.Helper()
	f, err := os.Open(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var rows []string
	in := false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		switch {
		case strings.HasPrefix(line, "## "):
			in = line == "## Exit codes"
		case in && strings.HasPrefix(line, "|"):
			cell := strings.TrimSpace(strings.Split(line, "|")[1])
			if cell != "code" && strings.Trim(cell, "-: ") != "" {
				rows = append(rows, cell)
			}
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if len(rows) == 0 {
		t.Fatal("README.md has no exit-code table under ## Exit codes")
	}
	return rows
}

// rowCodes are the codes a README row names: "126 / 127" is 126 and 127;
// "N" (the command's own) is nil.
func rowCodes(t *testing.T, row string) []int {
	t.Helper()
	if row == "N" {
		return nil
	}
	var codes []int
	for _, f := range strings.Split(row, "/") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil {
			t.Fatalf("README exit-code row %q: %v", row, err)
		}
		codes = append(codes, n)
	}
	return codes
}

// exitCase drives one way layover ends with one code.
type exitCase struct {
	row  string // the README row it covers: its code cell
	name string
	want int
	// store: the case opens the store, and runs on SQLite and on
	// PostgreSQL (which skips without LAYOVER_TEST_POSTGRES).
	store bool
	args  []string // layover's arguments, unless drive is set
	// prep readies the world before; drive runs the case instead of args;
	// check asserts more of what a user would notice.
	prep  func(t *testing.T, b *bundle)
	drive func(t *testing.T, b *bundle) result
	check func(t *testing.T, b *bundle, r result)
}

// marker is the file a command that must not run would create.
func marker(b *bundle) string { return filepath.Join(b.dir, "ran") }

func notRun(t *testing.T, b *bundle, _ result) {
	t.Helper()
	if _, err := os.Stat(marker(b)); err == nil {
		t.Error("the command ran")
	}
}

func ran(t *testing.T, b *bundle, _ result) {
	t.Helper()
	if _, err := os.Stat(marker(b)); err != nil {
		t.Error("the command did not run")
	}
}

// made creates the store by a command that writes it: a reading command
// finds none until then.
func made(t *testing.T, b *bundle) {
	if r := b.layover("run", "--", "true"); r.code != 0 {
		t.Fatalf("run: exit %d %s", r.code, r.stderr)
	}
}

func exhausted(d time.Duration) func(t *testing.T, b *bundle) {
	return func(t *testing.T, b *bundle) { b.gh.SetQuota(testToken, "core", 0, nextSecond(d)) }
}

// signalWait starts a run that waits for an exhausted quota, sends sig once
// the wait shows, and returns how the run ended.
func signalWait(sig syscall.Signal) func(t *testing.T, b *bundle) result {
	return func(t *testing.T, b *bundle) result {
		b.gh.SetQuota(testToken, "core", 0, nextSecond(time.Hour))
		p := b.start(runArgs(nil, "gh", "api", "/repos/octo/demo")...)
		p.waitLine(t, "Quota wait until")
		if err := p.cmd.Process.Signal(sig); err != nil {
			t.Fatal(err)
		}
		return result{code: p.wait(t), stderr: p.stderr()}
	}
}

func exitCases() []exitCase {
	touch := func(b *bundle) []string { return []string{"--", "touch", marker(b)} }
	withTouch := func(args ...string) func(t *testing.T, b *bundle) result {
		return func(t *testing.T, b *bundle) result { return b.layover(append(args, touch(b)...)...) }
	}
	return []exitCase{
		{row: "0", name: "pass admitted, its command succeeds", want: 0, store: true,
			drive: withTouch("pass"), check: ran},
		{row: "0", name: "pass skipped quietly", want: 0, store: true, prep: exhausted(time.Hour),
			drive: withTouch("pass"), check: func(t *testing.T, b *bundle, r result) {
				notRun(t, b, r)
				if r.stdout != "" || r.stderr != "" {
					t.Errorf("a skipped pass printed %q %q", r.stdout, r.stderr)
				}
			}},
		{row: "0", name: "status", want: 0, store: true, prep: made, args: []string{"status"}},
		{row: "0", name: "serve stopped by SIGTERM", want: 0, store: true,
			drive: func(t *testing.T, b *bundle) result {
				p := b.start("serve")
				p.waitLine(t, "layover serve started")
				if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
					t.Fatal(err)
				}
				return result{code: p.wait(t), stderr: p.stderr()}
			}},

		{row: "N", name: "pass passes the command's code", want: 3, store: true, args: []string{"pass", "--", "sh", "-c", "exit 3"}},
		{row: "N", name: "run passes the command's code", want: 4, store: true, args: []string{"run", "--", "sh", "-c", "exit 4"}},
		{row: "N", name: "a command's own 2, told apart by stderr", want: 2, store: true,
			args: []string{"run", "--", "sh", "-c", "echo own >&2; exit 2"},
			check: func(t *testing.T, b *bundle, r result) {
				if r.stderr != "own\n" {
					t.Errorf("stderr %q: want the command's alone, no layover line", r.stderr)
				}
			}},

		{row: "1", name: "receipt not valid", want: 1,
			drive: func(t *testing.T, b *bundle) result {
				return b.layover("receipt", "validate", receiptWrite(t, b, "r.json", []byte(`{"version":"deferred-receipt-v1"}`)))
			}},
		{row: "1", name: "unknown job", want: 1, store: true, prep: made, args: []string{"show", "no-such-job"}},
		{row: "1", name: "refused transition", want: 1, store: true,
			prep: func(t *testing.T, b *bundle) {
				for _, args := range [][]string{{"submit", "--id", "t1", "--", "true"}, {"cancel", "t1"}} {
					if r := b.layover(args...); r.code != 0 {
						t.Fatalf("%v: exit %d %s", args, r.code, r.stderr)
					}
				}
			}, args: []string{"cancel", "t1"}},
		{row: "1", name: "submit --id reused with another spec", want: 1, store: true,
			prep: func(t *testing.T, b *bundle) {
				if r := b.layover("submit", "--id", "s1", "--", "true"); r.code != 0 {
					t.Fatalf("submit: exit %d %s", r.code, r.stderr)
				}
			}, args: []string{"submit", "--id", "s1", "--", "false"}},

		{row: "2", name: "unknown flag", want: 2, args: []string{"pass", "--frob", "--", "true"}},
		{row: "2", name: "unknown provider", want: 2, args: []string{"pass", "--quota", "gitlab", "--", "true"}},
		{row: "2", name: "missing --", want: 2, args: []string{"pass", "true"}},
		{row: "2", name: "unreadable file", want: 2, args: []string{"receipt", "validate", "/nonexistent/receipt.json"}},
		{row: "2", name: "not an HTTP response", want: 2,
			drive: func(t *testing.T, b *bundle) result {
				return b.layover("classify", "--provider", "github", "--http", receiptWrite(t, b, "resp.txt", []byte("hello\n")))
			}},
		{row: "2", name: "store is a directory", want: 2, drive: withTouch("pass", "--store", "/"), check: notRun},
		{row: "2", name: "store URL does not parse", want: 2, args: []string{"status", "--store", "postgres://u:pw@localhost:port/x"}},
		{row: "2", name: "unknown store kind", want: 2, args: []string{"jobs", "--store", "mysql://localhost/x"}},
		{row: "2", name: "no store where status reads", want: 2, store: true, args: []string{"status"}},

		{row: "6", name: "run defers with a receipt", want: 6, store: true, prep: exhausted(3 * time.Hour),
			args: runArgs([]string{"--defer-after", "0s"}, "gh", "api", "/repos/octo/demo"),
			check: func(t *testing.T, b *bundle, r result) {
				lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
				if last := lines[len(lines)-1]; !strings.HasPrefix(last, "{") || !strings.Contains(last, `"deferred-receipt-v`) {
					t.Errorf("the last stdout line is not the receipt: %q", last)
				}
			}},

		{row: "75", name: "run --quota exhausted beyond the cap", want: 75, store: true,
			prep: func(t *testing.T, b *bundle) {
				exhausted(3*time.Hour)(t, b)
				if r := b.layover("pass", "--", "true"); r.code != 0 { // records the exhaustion
					t.Fatalf("pass: exit %d %s", r.code, r.stderr)
				}
			}, drive: withTouch("run", "--quota", "github"), check: notRun},

		// Every command on every kind of unusable store: TestUnusableStoreExits125.
		{row: "125", name: "pass on a file that is not a store", want: 125,
			drive: func(t *testing.T, b *bundle) result {
				b.env["LAYOVER_STORE"] = unusableStores["sqlite not a database"](t, b)
				return withTouch("pass")(t, b)
			}, check: notRun},
		{row: "125", name: "pass on a PostgreSQL server that refuses", want: 125,
			drive: func(t *testing.T, b *bundle) result {
				b.env["LAYOVER_STORE"] = unusableStores["postgres refused"](t, b)
				return withTouch("pass")(t, b)
			}, check: notRun},
		{row: "125", name: "run on a missing PostgreSQL schema", want: 125,
			drive: func(t *testing.T, b *bundle) result {
				b.env["LAYOVER_STORE"] = unusableStores["postgres no schema"](t, b)
				return withTouch("run")(t, b)
			}, check: notRun},

		{row: "126 / 127", name: "command cannot be executed", want: 126, store: true,
			drive: func(t *testing.T, b *bundle) result { return b.layover("run", "--", b.dir) }},
		{row: "126 / 127", name: "run: command not found", want: 127, store: true, args: []string{"run", "--", "no-such-command-xyz"}},
		{row: "126 / 127", name: "pass: command not found", want: 127, store: true, args: []string{"pass", "--", "no-such-command-xyz"}},

		{row: "130 / 143", name: "wait ended by SIGINT", want: 130, store: true, drive: signalWait(syscall.SIGINT)},
		{row: "130 / 143", name: "wait ended by SIGTERM", want: 143, store: true, drive: signalWait(syscall.SIGTERM)},
	}
}

// The class "exit-code table test" of issue 8: every row of README.md's
// exit-code table is driven end to end by at least one case, on SQLite and
// on PostgreSQL where a store is involved. The table is read from the
// README, so a row added there without a case here fails, and so does a
// case whose code its row does not name.
func TestExitCodes(t *testing.T) {
	t.Parallel()
	rows := readmeExitRows(t)
	cases := exitCases()
	for _, row := range rows {
		if !slices.ContainsFunc(cases, func(c exitCase) bool { return c.row == row }) {
			t.Errorf("README exit-code row %q has no case in exitCases", row)
		}
	}
	for _, c := range cases {
		if !slices.Contains(rows, c.row) {
			t.Errorf("case %q covers row %q, which README.md's exit-code table does not have", c.name, c.row)
		} else if codes := rowCodes(t, c.row); codes != nil && !slices.Contains(codes, c.want) {
			t.Errorf("case %q wants %d, which its row %q does not name", c.name, c.want, c.row)
		}
	}
	backends := map[string]func(t *testing.T) string{
		"sqlite":   func(t *testing.T) string { return filepath.Join(t.TempDir(), "layover.db") },
		"postgres": func(t *testing.T) string { return pgtest.Schema(t) },
	}
	for _, c := range cases {
		t.Run(c.row+"/"+c.name, func(t *testing.T) {
			t.Parallel()
			if !c.store {
				runExitCase(t, c, nil)
				return
			}
			for name, store := range backends {
				t.Run(name, func(t *testing.T) {
					t.Parallel()
					runExitCase(t, c, store)
				})
			}
		})
	}
}

func runExitCase(t *testing.T, c exitCase, store func(t *testing.T) string) {
	b := setup(t, fake.GitHubConfig{})
	if store != nil {
		b.env["LAYOVER_STORE"] = store(t)
	}
	if c.prep != nil {
		c.prep(t, b)
	}
	var r result
	if c.drive != nil {
		r = c.drive(t, b)
	} else {
		r = b.layover(c.args...)
	}
	if r.code != c.want {
		t.Fatalf("exit %d, want %d (README row %q)\nstdout: %s\nstderr: %s", r.code, c.want, c.row, r.stdout, r.stderr)
	}
	if c.want != 0 && c.row != "N" && c.row != "130 / 143" && c.row != "6" && !strings.HasPrefix(r.stderr, "layover: ") {
		t.Errorf("stderr %q: want layover's own line saying why", r.stderr)
	}
	if c.check != nil {
		c.check(t, b, r)
	}
}
