package workflow_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/layoverhq/layover/internal/fuzzbound"
	"github.com/layoverhq/layover/workflow"
)

// FuzzParse: no file makes Parse panic; every error is one line and,
// when it is about the file's content, names a line; an accepted
// definition validates and orders every task (its needs are acyclic).
func FuzzParse(f *testing.F) {
	for _, s := range []string{
		designExample, designJSON,
		"name: n\ntasks:\n  a: {run: x}\n  b: {run: y, needs: [a]}\n",
		"name: n\ntasks:\n  a: {run: x, needs: [b]}\n  b: {run: y, needs: [a]}\n",
		"name: n\ntasks:\n  a: {agent: [claude, codex], prompt_file: brief.txt, resume: restart}\n",
		"name: n\ntimeout: 1d12h\non_quota: {max_wait: 0}\ntasks: {1: {run: x}, 2: {run: y, needs: [1]}}\n",
		"name: n\ntasks:\n  a: &a {run: x}\n  b: *a\n",
		`{"name": "n", "tasks": {"a": {"run": "x", "env": ["TOKEN"], "quota": ["github:core"]}}}`,
		`{"name": "n", "tasks": {"a": {"run": "x"}, "a": {"run": "y"}}}`,
		"", "{}", "[]", "null", "---\n---\n", "\xff", "name: [",
	} {
		f.Add([]byte(s), strings.HasPrefix(s, "{"))
	}
	dir := f.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "brief.txt"), []byte("Review."), 0o600); err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, data []byte, asJSON bool) {
		fuzzbound.Run(t, func() {
			format := "yaml"
			if asJSON {
				format = "json"
			}
			d, err := workflow.Parse(data, dir, format)
			if err != nil {
				if msg := err.Error(); strings.ContainsAny(msg, "\n\r") {
					t.Fatalf("error of more than one line: %q", msg)
				}
				fe, ok := errors.AsType[*workflow.FileError](err)
				if !ok {
					t.Fatalf("error %T %v, want a *FileError", err, err)
				}
				if fe.Line < 1 && len(data) <= workflow.MaxFileSize {
					t.Fatalf("error without a line: %v", err)
				}
				return
			}
			if err := d.Validate(); err != nil {
				t.Fatalf("Parse accepted what Validate refuses: %v", err)
			}
			order := d.Order()
			if len(order) != len(d.Tasks) {
				t.Fatalf("Order() has %d of %d tasks: needs are not acyclic", len(order), len(d.Tasks))
			}
			done := map[string]bool{}
			for _, task := range order {
				for _, need := range task.Needs {
					if !done[need] {
						t.Fatalf("%s ordered before its need %s", task.Name, need)
					}
				}
				done[task.Name] = true
			}
		})
	})
}
