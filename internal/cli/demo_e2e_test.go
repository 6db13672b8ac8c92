package cli_test

import (
	"strings"
	"testing"

	"github.com/layoverhq/layover/internal/fake"
)

// The README's first command shows every part of the story.
func TestDemo(t *testing.T) {
	t.Parallel()
	b := setup(t, fake.GitHubConfig{})
	r := b.layover("demo", "--window", "15s")
	if r.code != 0 {
		t.Fatalf("demo exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	all := r.stdout + r.stderr
	for _, want := range []string{
		"1. A scheduled pass", `"path":"/repos/octo/demo"`, // the pass ran its command
		"API rate limit exceeded",                // the quota ran out
		"Quota wait until",                       // the command waits, visibly
		"skipped: GitHub Quota wait until",       // passes during the wait are skipped
		"Waiting commands:",                      // status lists the waiting command
		"Waited ", "for the GitHub quota (core)", // both commands finish after the reset
		"deferred as job ", "retained by the live durable host", // a long wait defers
		"valid deferred-receipt-v1 (rest-reserve, retained)",            // with a valid receipt
		"deferred -> resumable  wake-up", "running -> complete  exit 0", // the host runs it fresh
	} {
		if !strings.Contains(all, want) {
			t.Errorf("demo output lacks %q\n%s", want, all)
		}
	}
	if n := strings.Count(r.stdout, "skipped: GitHub Quota wait until"); n != 1 {
		t.Errorf("activity shows %d skip lines for three skipped passes, want 1", n)
	}
	if n := strings.Count(all, "for the GitHub quota (core)"); n != 2 {
		t.Errorf("%d Waited lines, want 2 (steps 3 and 6)", n)
	}
}
