package cli_test

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/layoverhq/layover/internal/fake"
)

// A task's output reaches the terminal as text: its escape sequences and
// control characters are removed, its tabs kept.
func TestFlowRunTaskOutputIsSafe(t *testing.T) {
	t.Parallel()
	onEachStore(t, fake.GitHubConfig{}, func(t *testing.T, b *bundle) {
		writeTestFile(t, filepath.Join(b.dir, "f.yaml"),
			"name: f\ntasks:\n  say: {run: \"printf '\\\\033[2J\\\\033]0;owned\\\\007red\\\\tcol\\\\bx\\\\n'\"}\n")
		r := b.layover("flow", "run", "f.yaml", "--run-id", "s-1")
		if r.code != 0 {
			t.Fatalf("flow run: exit %d\n%s%s", r.code, r.stdout, r.stderr)
		}
		if !strings.Contains(r.stderr, "[say] red\tcolx\n") {
			t.Errorf("the task's line is not shown as text: %q", r.stderr)
		}
		if strings.ContainsAny(r.stderr, "\x1b\x07\b") {
			t.Errorf("control characters reached the terminal: %q", r.stderr)
		}
	})
}

// A second flow run of a run id that another process runs is refused,
// exit 1, and runs nothing; the first one goes on.
func TestFlowRunRefusesARunAnotherProcessRuns(t *testing.T) {
	t.Parallel()
	b := setup(t, fake.GitHubConfig{})
	writeTestFile(t, filepath.Join(b.dir, "w.yaml"), `name: w
tasks:
  slow: {run: "echo ran >> slow.out; while [ ! -e go ]; do sleep 0.05; done"}
`)
	p := b.start("flow", "run", "w.yaml", "--run-id", "w1")
	p.waitLine(t, "layover: slow running")
	r := b.layover("flow", "run", "w.yaml", "--run-id", "w1")
	if r.code != 1 || !strings.Contains(r.stderr, "flow run: workflow: another process runs the run: run w1 is running, written") {
		t.Errorf("a second flow run: exit %d\n%s", r.code, r.stderr)
	}
	writeTestFile(t, filepath.Join(b.dir, "go"), "")
	if code := p.wait(t); code != 0 {
		t.Fatalf("the first flow run: exit %d\n%s", code, p.stderr())
	}
	if b.lines("slow.out") != 1 {
		t.Errorf("slow ran %d times, want once", b.lines("slow.out"))
	}
}
