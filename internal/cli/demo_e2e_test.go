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
	// The workflow: labels pauses on the spent quota while notes
	// completes and publish waits; run again after the reset, labels
	// resumes and publish runs, and notes does not run twice.
	paused := strings.Index(all, "demo-1: paused (1 complete, 1 paused, 1 pending)")
	labels := strings.Index(all, "layover: labels complete: exit 0")
	publish := strings.Index(all, "layover: publish running")
	if paused < 0 || !strings.Contains(all, "layover: labels paused: paused on ") ||
		!strings.Contains(all, "layover: notes complete: exit 0") || !strings.Contains(all, "needs labels\n") {
		t.Errorf("the workflow's first run: labels paused, notes complete, publish needing labels; got\n%s", all)
	}
	if labels < paused || publish < labels || !strings.Contains(all, "demo-1: complete (3 complete)") {
		t.Errorf("the workflow run again after the reset: labels, then publish, then complete; got\n%s", all)
	}
	if n := strings.Count(all, "[notes] release notes written"); n != 1 {
		t.Errorf("notes ran %d times, want once", n)
	}
	if n := strings.Count(r.stdout, "skipped: GitHub Quota wait until"); n != 1 {
		t.Errorf("activity shows %d skip lines for three skipped passes, want 1", n)
	}
	if n := strings.Count(all, "for the GitHub quota (core)"); n != 2 {
		t.Errorf("%d Waited lines, want 2 (steps 3 and 6)", n)
	}
}
