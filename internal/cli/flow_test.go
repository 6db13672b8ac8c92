package cli_test

import (
	"bytes"
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/layoverhq/layover/clock"
	"github.com/layoverhq/layover/internal/cli"
	"github.com/layoverhq/layover/workflow"
)

// flowMain runs layover in process at now, with no environment but the
// store's location.
func flowMain(t *testing.T, now time.Time, storePath string, args ...string) result {
	t.Helper()
	var out, errb bytes.Buffer
	env := &cli.Env{Stdout: &out, Stderr: &errb, Clock: clock.NewFake(now), Getenv: func(k string) string {
		if k == "LAYOVER_STORE" {
			return storePath
		}
		return ""
	}}
	code := cli.Main(context.Background(), env, args)
	return result{code: code, stdout: out.String(), stderr: errb.String()}
}

// CI validates the examples: each workflow file under examples/ is read,
// checked and planned by flow run --dry-run, every task named in the plan,
// and nothing is stored.
func TestFlowDryRunValidatesEveryExample(t *testing.T) {
	t.Parallel()
	var files []string
	err := filepath.WalkDir("../../examples", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && d.Name() == "sim" {
			return filepath.SkipDir // simulator scenarios (layover sim fleet), not workflows
		}
		switch filepath.Ext(path) {
		case ".yaml", ".yml", ".json":
			files = append(files, path)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 2 {
		t.Fatalf("examples: %d workflow files, want the nightly review and the triage fan-out", len(files))
	}
	for _, file := range files {
		t.Run(filepath.Base(file), func(t *testing.T) {
			t.Parallel()
			storePath := filepath.Join(t.TempDir(), "layover.db")
			r := flowMain(t, time.Date(2026, 12, 2, 3, 0, 0, 0, time.UTC), storePath, "flow", "run", "--dry-run", file)
			if r.code != 0 {
				t.Fatalf("flow run --dry-run %s: exit %d\n%s%s", file, r.code, r.stdout, r.stderr)
			}
			def, err := workflow.ParseFile(file)
			if err != nil {
				t.Fatal(err)
			}
			for _, task := range def.Tasks {
				if !planNames(r.stdout, task.Name) {
					t.Errorf("the plan does not name task %s:\n%s", task.Name, r.stdout)
				}
			}
			if _, err := os.Stat(storePath); !os.IsNotExist(err) {
				t.Errorf("a dry run made the store (%v)", err)
			}
		})
	}
}

// planNames reports whether a row of the plan's table is task's.
func planNames(plan, task string) bool {
	for _, line := range strings.Split(plan, "\n") {
		if f := strings.Fields(line); len(f) > 1 && f[1] == task {
			return true
		}
	}
	return false
}

// The plan lists the tasks in dependency order (file order among the
// ready ones), each with its needs, quotas and what it runs, under the
// default run id: the file's name and the UTC date.
func TestFlowDryRunPrintsThePlan(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	file := filepath.Join(dir, "nightly.yaml")
	writeTestFile(t, filepath.Join(dir, "review.md"), "review the diff\n")
	writeTestFile(t, file, `name: nightly
on_quota: {action: pause, max_wait: 6h}
timeout: 12h
tasks:
  publish: {needs: [review, docs], run: ./publish.sh}
  review:
    needs: [fetch]
    agent: [claude, codex]
    prompt_file: review.md
    check: ./already-done.sh
  fetch: {run: ./fetch.sh, quota: [github]}
  docs: {run: ./docs.sh}
`)
	// 23:30 on 1 December in UTC-5 is 04:30 on the 2nd in UTC.
	now := time.Date(2026, 12, 1, 23, 30, 0, 0, time.FixedZone("EST", -5*3600))
	r := flowMain(t, now, filepath.Join(dir, "layover.db"), "flow", "run", file, "--dry-run")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	want := []string{
		"workflow nightly, run nightly-20261202 (dry run: nothing runs, nothing is stored)",
		"on quota: pause (resets within 6h waited out); attempts 3 per task; budget 100 task starts; timeout 12h",
		"1  fetch    -             github  run: ./fetch.sh",
		"2  review   fetch         -       agent claude, then codex with review.md; check: ./already-done.sh",
		"3  docs     -             -       run: ./docs.sh",
		"4  publish  review, docs  -       run: ./publish.sh",
	}
	for _, w := range want {
		if !strings.Contains(r.stdout, w+"\n") {
			t.Errorf("plan lacks %q:\n%s", w, r.stdout)
		}
	}
	if strings.Index(r.stdout, "fetch    -") > strings.Index(r.stdout, "review   fetch") {
		t.Errorf("fetch must come before the review that needs it:\n%s", r.stdout)
	}
}

// DefaultRunID: the file's base name without its extension, and the date
// in UTC.
func TestDefaultRunID(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 12, 2, 23, 59, 0, 0, time.UTC)
	for _, tc := range []struct{ file, want string }{
		{"nightly.yaml", "nightly-20261202"},
		{"/etc/flows/triage.json", "triage-20261202"},
		{"ci/release.v2.yml", "release.v2-20261202"},
		{"noext", "noext-20261202"},
	} {
		if got := cli.DefaultRunID(tc.file, at); got != tc.want {
			t.Errorf("DefaultRunID(%q) = %q, want %q", tc.file, got, tc.want)
		}
	}
	if got := cli.DefaultRunID("nightly.yaml", at.In(time.FixedZone("JST", 9*3600))); got != "nightly-20261202" {
		t.Errorf("a local time east of UTC: %q, want the UTC date", got)
	}
}

// Reading commands never create a store: flow status with the default
// store missing lists nothing, and with a store named that does not exist
// says so (exit 2).
func TestFlowStatusCreatesNoStore(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	var out, errb bytes.Buffer
	env := &cli.Env{Stdout: &out, Stderr: &errb, Clock: clock.NewFake(time.Now()), Getenv: func(k string) string {
		if k == "XDG_STATE_HOME" {
			return filepath.Join(dir, "state")
		}
		return ""
	}}
	if code := cli.Main(context.Background(), env, []string{"flow", "status"}); code != 0 || out.String() != "No workflow runs.\n" {
		t.Fatalf("flow status: exit %d %q %s", code, out.String(), errb.String())
	}
	out.Reset()
	if code := cli.Main(context.Background(), env, []string{"flow", "status", "--json"}); code != 0 || strings.TrimSpace(out.String()) != `{
  "runs": []
}` {
		t.Fatalf("flow status --json: exit %d %q %s", code, out.String(), errb.String())
	}
	if code := cli.Main(context.Background(), env, []string{"flow", "status", "some-run"}); code != 1 {
		t.Fatalf("flow status of an unknown run: exit %d, want 1", code)
	}
	if _, err := os.Stat(filepath.Join(dir, "state")); !os.IsNotExist(err) {
		t.Fatalf("flow status made the default store's folder (%v)", err)
	}
	missing := filepath.Join(dir, "nope.db")
	r := flowMain(t, time.Now(), missing, "flow", "status")
	if r.code != 2 || !strings.Contains(r.stderr, "no store at "+missing) {
		t.Fatalf("flow status on a missing store: exit %d %s", r.code, r.stderr)
	}
}

// flow without a subcommand is a usage error; flow help lists the
// subcommands, flow submit among them, which refuses a missing file as
// flow run does (exit 2).
func TestFlowHelp(t *testing.T) {
	t.Parallel()
	r := flowMain(t, time.Now(), "", "flow", "help")
	if r.code != 0 || !strings.Contains(r.stdout, "run ") || !strings.Contains(r.stdout, "status ") ||
		!strings.Contains(r.stdout, "cancel ") || !strings.Contains(r.stdout, "submit ") {
		t.Fatalf("flow help: exit %d\n%s", r.code, r.stdout)
	}
	if r := flowMain(t, time.Now(), "", "flow"); r.code != 2 {
		t.Fatalf("flow: exit %d, want 2", r.code)
	}
	if r := flowMain(t, time.Now(), "", "flow", "submit", "x.yaml"); r.code != 2 || !strings.Contains(r.stderr, "no such file") {
		t.Fatalf("flow submit: exit %d %s", r.code, r.stderr)
	}
	if r := flowMain(t, time.Now(), "", "help"); !strings.Contains(r.stdout, "  flow ") {
		t.Fatalf("layover help does not list flow:\n%s", r.stdout)
	}
}

// The README's workflow file is one flow run accepts.
func TestFlowReadmeFileIsValid(t *testing.T) {
	t.Parallel()
	data, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(data), "\n## Workflows\n")
	_, block, ok2 := strings.Cut(section, "```yaml\n")
	file, _, ok3 := strings.Cut(block, "```\n")
	if !ok || !ok2 || !ok3 {
		t.Fatal("README has no yaml block under ## Workflows")
	}
	dir := t.TempDir()
	writeTestFile(t, filepath.Join(dir, "review.md"), "review the diffs\n")
	writeTestFile(t, filepath.Join(dir, "nightly.yaml"), file)
	r := flowMain(t, time.Now(), filepath.Join(dir, "layover.db"), "flow", "run", "--dry-run", filepath.Join(dir, "nightly.yaml"))
	if r.code != 0 || !planNames(r.stdout, "publish") {
		t.Fatalf("the README's file: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
}

// An event of the whole run names the run, not an empty task: the budget
// spent after one start stops the second task.
func TestFlowRunNamesTheRunInItsOwnEvents(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	file := filepath.Join(dir, "two.yaml")
	writeTestFile(t, file, `name: two
budget: {runs: 1}
tasks:
  first: {run: "true"}
  second: {run: "true", needs: [first]}
`)
	r := flowMain(t, time.Date(2026, 12, 2, 3, 0, 0, 0, time.UTC), filepath.Join(dir, "layover.db"),
		"flow", "run", file, "--run-id", "two-1")
	if r.code == 0 {
		t.Fatalf("exit 0 with a budget of one start for two tasks:\n%s", r.stderr)
	}
	const want = "layover: run two-1: the budget of 1 task starts is spent: nothing more starts\n"
	if !strings.Contains(r.stderr, want) {
		t.Errorf("stderr lacks %q:\n%s", want, r.stderr)
	}
	if strings.Contains(r.stderr, "layover: :") {
		t.Errorf("an event without its run or task:\n%s", r.stderr)
	}
}
