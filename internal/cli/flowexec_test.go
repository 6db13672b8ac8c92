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
