package cli_test

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/layoverhq/layover/internal/fake"
)

// Issue 10, 002's Claim cleanup: SIGTERM during the command's Quota wait
// ends that wait at once; --cleanup then runs, hits the exhausted quota
// itself, waits for the reset although a Stop already came, and succeeds.
// run exits 143, as the Stop made it.
func TestRunCleanupAfterStopWaitsForTheReset(t *testing.T) {
	t.Parallel()
	b := setup(t, fake.GitHubConfig{})
	b.gh.SetQuota(testToken, "core", 0, nextSecond(time.Hour))
	const label = "/repos/octo/demo/issues/1/labels/in-progress"
	p := b.start(runArgs([]string{"--cleanup", "gh api -X DELETE " + label}, "gh", "api", "/repos/octo/demo/issues/1")...)
	p.waitLine(t, "Quota wait until")
	// The reset comes a few seconds after the Stop: the cleanup's call
	// meets the quota still exhausted and must wait for it.
	b.gh.SetQuota(testToken, "core", 0, nextSecond(3*time.Second))
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	p.waitLine(t, "layover: running --cleanup: quota wait ended by terminated")
	p.waitLine(t, "Quota wait until")
	if code := p.wait(t); code != 143 {
		t.Fatalf("exit %d, want 143 (the Stop's); stderr:\n%s", code, p.stderr())
	}
	var deletes []int
	for _, r := range b.gh.Requests() {
		if r.Method == "DELETE" && r.Path == label {
			deletes = append(deletes, r.Status)
		}
	}
	if len(deletes) != 2 || deletes[0] != 403 || deletes[1] != 200 {
		t.Errorf("the cleanup's calls answered %v; want 403 (exhausted), then 200 after the reset", deletes)
	}
	if strings.Contains(p.stderr(), "did not finish") || strings.Contains(p.stderr(), "--cleanup failed") {
		t.Errorf("stderr:\n%s", p.stderr())
	}
}

// Issue 10, run in pipelines: with stdout a pipe (as `layover run … | jq`
// has it), a first attempt that hits the fake's limit and a second that
// succeeds leave exactly one body on stdout, the second's; the first's is on
// stderr under the line that names it.
func TestRunOnAPipePassesOnOneBody(t *testing.T) {
	t.Parallel()
	b := setup(t, fake.GitHubConfig{})
	b.gh.SetQuota(testToken, "core", 0, nextSecond(3*time.Second))
	r := b.layover(runArgs(nil, "gh", "api", "/repos/octo/demo/issues")...)
	if r.code != 0 || b.ghRuns() != 2 {
		t.Fatalf("exit %d after %d gh runs; stderr:\n%s", r.code, b.ghRuns(), r.stderr)
	}
	if want := `{"method":"GET","path":"/repos/octo/demo/issues"}`; r.stdout != want {
		t.Errorf("stdout %q, want exactly the successful call's body %q", r.stdout, want)
	}
	_, failed, ok := strings.Cut(r.stderr, "layover: output of attempt 1, which failed (quota):\n")
	if !ok || !strings.HasPrefix(failed, `{"message":"API rate limit exceeded`) {
		t.Errorf("stderr does not hold the failed attempt's body under its line:\n%s", r.stderr)
	}

	// --stream passes every attempt's stdout on as it comes.
	b.gh.SetQuota(testToken, "core", 0, nextSecond(3*time.Second))
	r = b.layover(runArgs([]string{"--stream"}, "gh", "api", "/repos/octo/demo/issues")...)
	if r.code != 0 || !strings.HasPrefix(r.stdout, `{"message":"API rate limit exceeded`) ||
		!strings.HasSuffix(r.stdout, `{"method":"GET","path":"/repos/octo/demo/issues"}`) || strings.Contains(r.stderr, "output of attempt") {
		t.Errorf("--stream: exit %d, stdout %q, stderr:\n%s", r.code, r.stdout, r.stderr)
	}
}

// --receipt-file writes the receipt there too, mode 0600, one line equal
// to stdout's last; a path it could not write is exit 2 before anything
// runs.
func TestRunReceiptFile(t *testing.T) {
	t.Parallel()
	t.Run("written", func(t *testing.T) {
		t.Parallel()
		b := setup(t, fake.GitHubConfig{})
		b.gh.SetQuota(testToken, "core", 0, nextSecond(time.Hour))
		path := filepath.Join(b.dir, "receipt.json")
		if err := os.WriteFile(path, []byte("an older receipt\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		r := b.layover(runArgs([]string{"--defer-after", "0s", "--receipt-file", path}, "gh", "api", "/repos/octo/demo")...)
		if r.code != 6 {
			t.Fatalf("exit %d, want 6; stderr:\n%s", r.code, r.stderr)
		}
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(strings.TrimRight(r.stdout, "\n"), "\n")
		if string(data) != lines[len(lines)-1]+"\n" || !strings.Contains(string(data), `"deferred-receipt-v1"`) {
			t.Errorf("file %q; want stdout's last line %q", data, lines[len(lines)-1])
		}
		if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 {
			t.Errorf("mode %v %v, want 0600", fi.Mode(), err)
		}
		if left, _ := filepath.Glob(filepath.Join(b.dir, ".layover-receipt-*")); len(left) != 0 {
			t.Errorf("temporary files left: %v", left)
		}
	})
	for name, path := range map[string]func(dir string) string{
		"missing folder": func(dir string) string { return filepath.Join(dir, "no-such-dir", "r.json") },
		"a directory":    func(dir string) string { return dir },
		"empty":          func(string) string { return "" },
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			b := setup(t, fake.GitHubConfig{})
			marker := filepath.Join(b.dir, "ran")
			r := b.layover("run", "--receipt-file", path(b.dir), "--", "touch", marker)
			if r.code != 2 || !strings.Contains(r.stderr, "--receipt-file") {
				t.Errorf("exit %d %q; want 2, naming --receipt-file", r.code, r.stderr)
			}
			checkOneLine(t, r.stderr)
			if _, err := os.Stat(marker); err == nil {
				t.Error("the command ran")
			}
			if _, err := os.Stat(b.store); err == nil {
				t.Error("the store was created")
			}
		})
	}
}
