package workflow_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/layoverhq/layover/workflow"
)

// designExample is the file of docs/workflows.md, comments included.
const designExample = `name: nightly
on_quota: {action: pause, max_wait: 6h}   # pause (default) | fail
attempts: 3
budget: {runs: 100}
timeout: 12h
tasks:
  fetch:   {run: ./fetch.sh, quota: [github]}
  review:
    needs: [fetch]
    agent: [claude, codex]
    prompt_file: review.md
    resume: continue
    check: ./already-done.sh
    verify: ./verify.sh
  docs:    {run: ./docs.sh}
  publish: {needs: [review, docs], run: ./publish.sh}
`

// designJSON is the same workflow as JSON.
const designJSON = `{
  "name": "nightly",
  "on_quota": {"action": "pause", "max_wait": "6h"},
  "attempts": 3,
  "budget": {"runs": 100},
  "timeout": "12h",
  "tasks": {
    "fetch": {"run": "./fetch.sh", "quota": ["github"]},
    "review": {
      "needs": ["fetch"],
      "agent": ["claude", "codex"],
      "prompt_file": "review.md",
      "resume": "continue",
      "check": "./already-done.sh",
      "verify": "./verify.sh"
    },
    "docs": {"run": "./docs.sh"},
    "publish": {"needs": ["review", "docs"], "run": "./publish.sh"}
  }
}
`

func designDefinition() workflow.Definition {
	return workflow.Definition{
		Name:     "nightly",
		OnQuota:  workflow.OnQuota{Action: workflow.ActionPause, MaxWait: 6 * time.Hour},
		Attempts: 3,
		Budget:   workflow.Budget{Runs: 100},
		Timeout:  12 * time.Hour,
		Tasks: []workflow.Task{
			{Name: "fetch", Run: "./fetch.sh", Quota: []string{"github"}},
			{
				Name: "review", Needs: []string{"fetch"}, Agent: []string{"claude", "codex"},
				Prompt: "Review the night's changes.\n", PromptFile: "review.md", Resume: workflow.ResumeContinue,
				Check: "./already-done.sh", Verify: "./verify.sh",
			},
			{Name: "docs", Run: "./docs.sh"},
			{Name: "publish", Needs: []string{"review", "docs"}, Run: "./publish.sh"},
		},
	}
}

// writeDir writes files into a new directory and returns it.
func writeDir(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func TestParseFileDesignExample(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"nightly.yaml", "nightly.yml", "nightly.json", "nightly.flow", "nightly-json"} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			body := designExample
			if strings.Contains(name, "json") {
				body = designJSON
			}
			dir := writeDir(t, map[string]string{name: body, "review.md": "Review the night's changes.\n"})
			got, err := workflow.ParseFile(filepath.Join(dir, name))
			if err != nil {
				t.Fatal(err)
			}
			if want := designDefinition(); !reflect.DeepEqual(got, want) {
				t.Fatalf("got  %+v\nwant %+v", got, want)
			}
		})
	}
}

func TestParseDefaults(t *testing.T) {
	t.Parallel()
	got, err := workflow.Parse([]byte("name: n\ntasks:\n  a: {agent: kimi, prompt: go}\n  b: {run: 'true'}\n"), "", "yaml")
	if err != nil {
		t.Fatal(err)
	}
	want := workflow.Definition{
		Name: "n", OnQuota: workflow.OnQuota{Action: workflow.ActionPause}, Attempts: 3, Budget: workflow.Budget{Runs: 100},
		Tasks: []workflow.Task{
			{Name: "a", Agent: []string{"kimi"}, Prompt: "go", Resume: workflow.ResumeContinue},
			{Name: "b", Run: "true"},
		},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got  %+v\nwant %+v", got, want)
	}
}

// TestParseBadFiles: each rule of a file, broken, is refused with the
// line and field at fault, as one line, in YAML and (where the rule is
// not YAML's own) in JSON.
func TestParseBadFiles(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		yaml string
		json string // "" when the case is YAML's own
		want string // the error, its line prefixed "line N: "
	}{
		{
			"unknown top key", "name: n\ntask:\n  a: {run: x}\n",
			`{"name": "n",` + "\n" + `"task": {"a": {"run": "x"}}}`,
			`line 2: unknown key "task" (known: name, on_quota, attempts, budget, timeout, tasks)`,
		},
		{
			"unknown task key", "name: n\ntasks:\n  a:\n    run: x\n    need: [b]\n",
			`{"name": "n", "tasks": {"a": {"run": "x",` + "\n\n\n\n" + `"need": ["b"]}}}`,
			`line 5: tasks.a: unknown key "need" (known: needs, run, agent, prompt, prompt_file, resume, check, verify, goal, quota, env)`,
		},
		{
			"unknown on_quota key", "name: n\non_quota:\n  action: pause\n  maxwait: 1h\ntasks: {a: {run: x}}\n",
			"{\"name\": \"n\", \"on_quota\": {\"action\": \"pause\",\n\n\n \"maxwait\": \"1h\"}, \"tasks\": {\"a\": {\"run\": \"x\"}}}",
			`line 4: on_quota: unknown key "maxwait" (known: action, max_wait)`,
		},
		{
			"missing need", "name: n\ntasks:\n  fetch: {run: x}\n  review:\n    run: y\n    needs:\n      - fetch\n      - fecth\n",
			"{\"name\": \"n\", \"tasks\": {\"fetch\": {\"run\": \"x\"}, \"review\": {\"run\": \"y\", \"needs\": [\n\"fetch\",\n\n\n\n\n\n\"fecth\"]}}}",
			`line 8: tasks.review.needs: no task "fecth" (known: fetch, review)`,
		},
		{
			"needs itself", "name: n\ntasks:\n  a: {run: x, needs: [a]}\n",
			`{"name": "n", "tasks":` + "\n\n" + `{"a": {"run": "x", "needs": ["a"]}}}`,
			`line 3: tasks.a.needs: a task cannot need itself`,
		},
		{
			"cycle", "name: n\ntasks:\n  z: {run: x}\n  a: {run: x, needs: [c]}\n  b: {run: x, needs: [a, z]}\n  c: {run: x, needs: [b]}\n",
			"{\"name\": \"n\", \"tasks\": {\"z\": {\"run\": \"x\"},\n\n\n\"a\": {\"run\": \"x\", \"needs\": [\"c\"]}, \"b\": {\"run\": \"x\", \"needs\": [\"a\", \"z\"]}, \"c\": {\"run\": \"x\", \"needs\": [\"b\"]}}}",
			`line 4: tasks.a.needs: a cycle of needs: a -> c -> b -> a`,
		},
		{
			"cycle found from a task behind it", "name: n\ntasks:\n  d: {run: x, needs: [b]}\n  a: {run: x, needs: [b]}\n  b: {run: x, needs: [a]}\n", "",
			`line 4: tasks.a.needs: a cycle of needs: a -> b -> a`,
		},
		{
			"run and agent", "name: n\ntasks:\n  a: {run: x, agent: claude, prompt: p}\n",
			`{"name": "n", "tasks": {` + "\n\n" + `"a": {"run": "x", "agent": "claude", "prompt": "p"}}}`,
			`line 3: tasks.a: a task has one of run or agent, not both`,
		},
		{
			"neither run nor agent", "name: n\ntasks:\n  a: {needs: []}\n",
			`{"name": "n", "tasks": {` + "\n\n" + `"a": {}}}`,
			`line 3: tasks.a: a task needs one of run or agent`,
		},
		{
			"prompt and prompt_file", "name: n\ntasks:\n  a:\n    agent: claude\n    prompt: p\n    prompt_file: p.txt\n", "",
			`line 6: tasks.a: an agent task has one of prompt or prompt_file, not both`,
		},
		{
			"agent without a prompt", "name: n\ntasks:\n  a: {agent: [claude]}\n", "",
			`line 3: tasks.a: an agent task needs a prompt or a prompt_file`,
		},
		{
			"prompt on a run task", "name: n\ntasks:\n  a:\n    run: x\n    prompt: p\n", "",
			`line 5: tasks.a.prompt: a prompt is for an agent task`,
		},
		{
			"unknown agent", "name: n\ntasks:\n  a:\n    agent: [claude, claud]\n    prompt: p\n",
			"{\"name\": \"n\", \"tasks\": {\"a\": {\"prompt\": \"p\", \"agent\": [\"claude\",\n\n\n\"claud\"]}}}",
			`line 4: tasks.a.agent: unknown agent "claud" (known: claude, codex, copilot, kimi, gemini, antigravity)`,
		},
		{
			"an agent twice", "name: n\ntasks:\n  a:\n    agent: [claude, claude-code]\n    prompt: p\n", "",
			`line 4: tasks.a.agent: "claude-code" is a candidate twice`,
		},
		{
			"no agent", "name: n\ntasks:\n  a:\n    agent: []\n    prompt: p\n", "",
			`line 4: tasks.a.agent: name at least one agent (known: claude, codex, copilot, kimi, gemini, antigravity)`,
		},
		{
			"unknown resume", "name: n\ntasks:\n  a:\n    agent: codex\n    prompt: p\n    resume: again\n", "",
			`line 6: tasks.a.resume: unknown resume "again" (known: continue, restart)`,
		},
		{
			"unknown quota", "name: n\ntasks:\n  a:\n    run: x\n    quota: [github, gitlab]\n",
			"{\"name\": \"n\", \"tasks\": {\"a\": {\"run\": \"x\",\n\n\n\n\"quota\": [\"github\", \"gitlab\"]}}}",
			`line 5: tasks.a.quota: unknown quota provider "gitlab" (known: `,
		},
		{
			"env value", "name: n\ntasks:\n  a:\n    run: x\n    env: [TOKEN=abc]\n", "",
			`line 5: tasks.a.env: "TOKEN=…": name variables, never their values`,
		},
		{
			"bad duration", "name: n\ntimeout: 12 hours\ntasks: {a: {run: x}}\n",
			"{\"name\": \"n\",\n\"timeout\": \"12 hours\", \"tasks\": {\"a\": {\"run\": \"x\"}}}",
			`line 2: timeout: "12 hours" is not a duration: use a number and a unit, as 90s, 6h or 2d (units d, h, m, s, ms)`,
		},
		{
			"duration without a unit", "name: n\ntimeout: 30\ntasks: {a: {run: x}}\n",
			"{\"name\": \"n\",\n\"timeout\": 30, \"tasks\": {\"a\": {\"run\": \"x\"}}}",
			`line 2: timeout: "30" is not a duration: use a number and a unit, as 90s, 6h or 2d (units d, h, m, s, ms)`,
		},
		{
			"negative duration", "name: n\non_quota:\n  max_wait: -1h\ntasks: {a: {run: x}}\n", "",
			`line 3: on_quota.max_wait: -1h0m0s: a duration cannot be negative`,
		},
		{
			"duration over 30 days", "name: n\ntimeout: 30d1s\ntasks: {a: {run: x}}\n", "",
			`line 2: timeout: 720h0m1s: at most 30d`,
		},
		{
			"attempts 0", "name: n\nattempts: 0\ntasks: {a: {run: x}}\n",
			"{\"name\": \"n\",\n\"attempts\": 0, \"tasks\": {\"a\": {\"run\": \"x\"}}}",
			`line 2: attempts: 0: use 1 to 100`,
		},
		{
			"attempts 101", "name: n\nattempts: 101\ntasks: {a: {run: x}}\n", "",
			`line 2: attempts: 101: use 1 to 100`,
		},
		{
			"attempts not a number", "name: n\nattempts: three\ntasks: {a: {run: x}}\n",
			"{\"name\": \"n\",\n\"attempts\": 2.5, \"tasks\": {\"a\": {\"run\": \"x\"}}}",
			`line 2: attempts: want a whole number from 1 to 100, not `,
		},
		{
			"budget over", "name: n\nbudget:\n  runs: 100001\ntasks: {a: {run: x}}\n", "",
			`line 3: budget.runs: 100001: use 1 to 100000`,
		},
		{
			"budget 0", "name: n\nbudget: {runs: 0}\ntasks: {a: {run: x}}\n", "",
			`line 2: budget.runs: 0: use 1 to 100000`,
		},
		{
			"unknown action", "name: n\non_quota: {action: wait}\ntasks: {a: {run: x}}\n", "",
			`line 2: on_quota.action: unknown action "wait" (known: pause, fail)`,
		},
		{
			"duplicate top key", "name: n\ntasks: {a: {run: x}}\nname: m\n",
			"{\"name\": \"n\", \"tasks\": {\"a\": {\"run\": \"x\"}},\n\n\"name\": \"m\"}",
			`line 3: key "name" appears twice (first on line 1)`,
		},
		{
			"duplicate task", "name: n\ntasks:\n  a: {run: x}\n  a: {run: y}\n",
			"{\"name\": \"n\", \"tasks\": {\n\n\"a\": {\"run\": \"x\"},\n\"a\": {\"run\": \"y\"}}}",
			`line 4: tasks: key "a" appears twice (first on line 3)`,
		},
		{
			"duplicate task key", "name: n\ntasks:\n  a:\n    run: x\n    run: y\n", "",
			`line 5: tasks.a: key "run" appears twice (first on line 4)`,
		},
		{
			"bad task name", "name: n\ntasks:\n  fetch data: {run: x}\n",
			"{\"name\": \"n\", \"tasks\": {\n\n\"fetch data\": {\"run\": \"x\"}}}",
			`line 3: tasks: task name "fetch data": use letters, digits, '.', '_' and '-', starting with a letter or digit (at most 64)`,
		},
		{
			"task name too long", "name: n\ntasks:\n  " + strings.Repeat("a", 65) + ": {run: x}\n", "",
			`line 3: tasks: task name "` + strings.Repeat("a", 65) + `": use letters`,
		},
		{
			"no name", "tasks:\n  a: {run: x}\n", `{"tasks": {"a": {"run": "x"}}}`,
			`line 1: no "name": a workflow needs a name and tasks`,
		},
		{
			"no tasks", "name: n\ntasks: {}\n", `{"name": "n",` + "\n" + `"tasks": {}}`,
			`line 2: tasks: a workflow needs at least one task`,
		},
		{
			"a key without a value", "name: n\ntasks:\n  a:\n    run:\n", "",
			`line 4: tasks.a.run: no value: give one, or leave the key out`,
		},
		{
			"null in JSON", "", "{\"name\": \"n\", \"tasks\": {\"a\": {\n\"run\": null}}}",
			`line 2: tasks.a.run: no value: give one, or leave the key out`,
		},
		{
			"a number for a string", "name: n\ntasks:\n  a: {run: 42}\n", "{\"name\": \"n\", \"tasks\": {\n\n\"a\": {\"run\": 42}}}",
			`line 3: tasks.a.run: want a string, not the number 42`,
		},
		{
			"a list for a mapping", "name: n\ntasks: [a, b]\n", `{"name": "n",` + "\n" + `"tasks": ["a", "b"]}`,
			`line 2: tasks: tasks is a mapping of task names to tasks, not a list`,
		},
		{
			"a string for a task", "name: n\ntasks:\n  a: ./a.sh\n", "",
			`line 3: tasks.a: a task is a mapping of keys (run or agent, needs, …), not the string "./a.sh"`,
		},
		{
			"an alias", "name: n\ntasks:\n  a: &t {run: x}\n  b: *t\n", "",
			`line 4: tasks.b: an alias (*t): write the value out`,
		},
		{
			"a merge key", "name: n\ntasks:\n  a: &t {run: x}\n  b:\n    <<: *t\n", "",
			`line 5: tasks.b: unknown key "<<"`,
		},
		{
			"not a mapping", "- a\n- b\n", `["a"]`,
			`line 1: a workflow is a mapping of keys (name, on_quota, attempts, budget, timeout, tasks), not a list`,
		},
		{
			"empty", "", "",
			`line 1: the file is empty`,
		},
		{
			"two documents", "name: n\ntasks: {a: {run: x}}\n---\nname: m\n", "",
			`line 3: a second YAML document: a file holds one workflow`,
		},
		{
			"YAML syntax", "name: n\ntasks:\n  a: {run: x\n", "",
			`line 3: YAML: did not find expected ',' or '}'`,
		},
		{
			"JSON syntax", "", "{\"name\": \"n\",\n\"tasks\": {\"a\": {\"run\": \"x\"}},}",
			`line 2: JSON: invalid character '}' looking for beginning of object key string`,
		},
		{
			"JSON ends early", "", "{\"name\": \"n\",\n\"tasks\": {\"a\":",
			`line 2: JSON: the file ends inside a value`,
		},
		{
			"JSON after JSON", "", "{\"name\": \"n\", \"tasks\": {\"a\": {\"run\": \"x\"}}}\n{}",
			`line 2: JSON: a second value after the workflow`,
		},
		{
			"a control character", "name: n\ntasks:\n  a: {run: \"x\x1b[2J\"}\n", "",
			`line 3: the control character U+001B`,
		},
		{
			"an escaped control character", "name: n\ntasks:\n  a: {run: \"x\\e[2J\"}\n",
			"{\"name\": \"n\", \"tasks\": {\"a\": {\n\"run\": \"x\\u001b[2J\"}}}",
			`tasks.a.run: holds the control character U+001B`,
		},
		{
			"not UTF-8", "name: n\ntasks:\n  a: {run: \"x\xff\"}\n", "",
			`line 3: byte 0xff is not UTF-8 text`,
		},
	}
	for _, tt := range tests {
		for _, format := range []string{"yaml", "json"} {
			data := tt.yaml
			if format == "json" {
				data = tt.json
				if data == "" && tt.name != "empty" {
					continue
				}
			} else if data == "" && tt.json != "" {
				continue
			}
			t.Run(tt.name+"/"+format, func(t *testing.T) {
				t.Parallel()
				_, err := workflow.Parse([]byte(data), t.TempDir(), format)
				fe, ok := errors.AsType[*workflow.FileError](err)
				if !ok {
					t.Fatalf("error %T %v, want a *FileError", err, err)
				}
				got := err.Error()
				if strings.ContainsAny(got, "\n\r") {
					t.Errorf("error of more than one line: %q", got)
				}
				if fe.Line < 1 {
					t.Errorf("no line: %+v", fe)
				}
				want := tt.want
				if !strings.HasPrefix(want, "line ") {
					if !strings.Contains(got, want) || !strings.HasPrefix(got, "line ") {
						t.Fatalf("got  %s\nwant line N: …%s", got, want)
					}
					return
				}
				if !strings.HasPrefix(got, want) {
					t.Fatalf("got  %s\nwant %s", got, want)
				}
			})
		}
	}
}

func TestParseFilePath(t *testing.T) {
	t.Parallel()
	dir := writeDir(t, map[string]string{"nightly.yaml": "name: n\ntasks:\n  a: {agent: claude, prompt_file: missing.txt}\n"})
	path := filepath.Join(dir, "nightly.yaml")
	_, err := workflow.ParseFile(path)
	fe, ok := errors.AsType[*workflow.FileError](err)
	if !ok {
		t.Fatalf("error %v, want a *FileError", err)
	}
	if fe.Path != path || fe.Line != 3 || fe.Field != "tasks.a.prompt_file" {
		t.Fatalf("got %+v", fe)
	}
	if want := path + ":3: tasks.a.prompt_file: "; !strings.HasPrefix(err.Error(), want) || !strings.Contains(err.Error(), "missing.txt") {
		t.Fatalf("got %q, want %q…", err, want)
	}
	if _, err := workflow.ParseFile(filepath.Join(dir, "absent.yaml")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("missing file: %v", err)
	}
}

func TestPromptFile(t *testing.T) {
	t.Parallel()
	dir := writeDir(t, map[string]string{"empty.txt": " \n", "bad.txt": "\xff"})
	if err := os.Mkdir(filepath.Join(dir, "briefs"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "briefs", "r.txt"), []byte("Review."), 0o600); err != nil {
		t.Fatal(err)
	}
	file := func(name string) []byte {
		return fmt.Appendf(nil, "name: n\ntasks:\n  a:\n    agent: claude\n    prompt_file: %s\n", name)
	}
	d, err := workflow.Parse(file("briefs/r.txt"), dir, "yaml")
	if err != nil {
		t.Fatal(err)
	}
	if d.Tasks[0].Prompt != "Review." || d.Tasks[0].PromptFile != "briefs/r.txt" {
		t.Fatalf("got %+v", d.Tasks[0])
	}
	for name, want := range map[string]string{
		"empty.txt": `line 5: tasks.a.prompt_file: "empty.txt" is empty`,
		"bad.txt":   `line 5: tasks.a.prompt_file: "bad.txt" is not UTF-8 text`,
		"briefs":    `line 5: tasks.a.prompt_file: "briefs" is not a regular file`,
	} {
		if _, err := workflow.Parse(file(name), dir, "yaml"); err == nil || err.Error() != want {
			t.Errorf("%s: got %v, want %s", name, err, want)
		}
	}
}

func TestParseBounds(t *testing.T) {
	t.Parallel()
	t.Run("file over 1 MiB", func(t *testing.T) {
		t.Parallel()
		big := "name: n\ntasks: {a: {run: x}}\n#" + strings.Repeat("x", workflow.MaxFileSize)
		dir := writeDir(t, map[string]string{"big.yaml": big})
		_, err := workflow.ParseFile(filepath.Join(dir, "big.yaml"))
		if err == nil || !strings.Contains(err.Error(), "larger than 1048576 bytes") {
			t.Fatalf("got %v", err)
		}
	})
	tasks := func(n int) []byte {
		var b strings.Builder
		b.WriteString("name: n\ntasks:\n")
		for i := range n {
			fmt.Fprintf(&b, "  t%d: {run: x}\n", i)
		}
		return []byte(b.String())
	}
	t.Run("10,000 tasks", func(t *testing.T) {
		t.Parallel()
		d, err := workflow.Parse(tasks(workflow.MaxTasks), "", "yaml")
		if err != nil || len(d.Tasks) != workflow.MaxTasks {
			t.Fatalf("got %d tasks, %v", len(d.Tasks), err)
		}
	})
	t.Run("10,001 tasks", func(t *testing.T) {
		t.Parallel()
		_, err := workflow.Parse(tasks(workflow.MaxTasks+1), "", "yaml")
		if err == nil || err.Error() != "line 3: tasks: 10001 tasks: at most 10000" {
			t.Fatalf("got %v", err)
		}
	})
	t.Run("JSON nested too deep", func(t *testing.T) {
		t.Parallel()
		_, err := workflow.Parse([]byte(`{"name": "n", "tasks": `+strings.Repeat("[", 100)), "", "json")
		if err == nil || !strings.HasPrefix(err.Error(), "line 1: JSON: nested deeper than 32") {
			t.Fatalf("got %v", err)
		}
	})
}

func TestParseDuration(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]time.Duration{
		"0": 0, "90s": 90 * time.Second, "6h": 6 * time.Hour, "2d": 48 * time.Hour,
		"1d12h": 36 * time.Hour, "1.5d": 36 * time.Hour, "12h1d": 36 * time.Hour, "30d": workflow.MaxDuration,
		"-1d": -24 * time.Hour, "+1d": 24 * time.Hour, "1h30m": 90 * time.Minute,
	} {
		got, err := workflow.ParseDuration(in)
		if err != nil || got != want {
			t.Errorf("ParseDuration(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, in := range []string{"", "d", "1", "1dd", "1 d", "d1", "1x", "1d-1h", "31d", "99999999999d", "1d99999999999h", "9223372036854775807ns1d"} {
		if got, err := workflow.ParseDuration(in); err == nil && got <= workflow.MaxDuration {
			t.Errorf("ParseDuration(%q) = %v, want an error", in, got)
		}
	}
}

func TestPromptFileOutsideTheDirectory(t *testing.T) {
	t.Parallel()
	outside := writeDir(t, map[string]string{"secret.txt": "a key"})
	dir := writeDir(t, nil)
	if err := os.Symlink(filepath.Join(outside, "secret.txt"), filepath.Join(dir, "link.txt")); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{filepath.Join(outside, "secret.txt"), "../" + filepath.Base(outside) + "/secret.txt", "link.txt"} {
		data := fmt.Appendf(nil, "name: n\ntasks:\n  a:\n    agent: claude\n    prompt_file: %q\n", name)
		_, err := workflow.Parse(data, dir, "yaml")
		if err == nil || !strings.HasPrefix(err.Error(), "line 5: tasks.a.prompt_file: ") {
			t.Errorf("%s: got %v, want it refused", name, err)
		}
	}
}

// TestDocsExample: the example file of docs/workflows.md is a valid
// workflow, read as the doc says.
func TestDocsExample(t *testing.T) {
	t.Parallel()
	doc, err := os.ReadFile("../docs/workflows.md")
	if err != nil {
		t.Fatal(err)
	}
	_, rest, _ := strings.Cut(string(doc), "```yaml\n")
	example, _, ok := strings.Cut(rest, "```")
	if !ok {
		t.Fatal("no YAML example in docs/workflows.md")
	}
	dir := writeDir(t, map[string]string{"nightly.yaml": example, "review.md": "Review."})
	d, err := workflow.ParseFile(filepath.Join(dir, "nightly.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	review := d.Tasks[1]
	if review.Goal == "" || !reflect.DeepEqual(review.Env, []string{"GITHUB_TOKEN"}) || review.Prompt != "Review." {
		t.Fatalf("review: %+v", review)
	}
	if got := names(d.Order()); !reflect.DeepEqual(got, []string{"fetch", "review", "docs", "publish"}) {
		t.Fatalf("Order() = %v", got)
	}
}

func TestParseValues(t *testing.T) {
	t.Parallel()
	d, err := workflow.Parse([]byte(`name: v
on_quota: {action: fail, max_wait: 0}
attempts: 0x0a
timeout: 1d12h
tasks:
  "1": {run: one}
  two:
    needs: [1]
    agent: agy
    prompt: |
      Line one.
      Line two.
    resume: restart
    quota: [github:graphql, anthropic]
    env: [GITHUB_TOKEN, ANTHROPIC_API_KEY]
`), "", "yaml")
	if err != nil {
		t.Fatal(err)
	}
	if d.OnQuota != (workflow.OnQuota{Action: workflow.ActionFail}) || d.Attempts != 10 || d.Timeout != 36*time.Hour {
		t.Fatalf("got %+v", d)
	}
	want := workflow.Task{
		Name: "two", Needs: []string{"1"}, Agent: []string{"agy"}, Prompt: "Line one.\nLine two.\n", Resume: workflow.ResumeRestart,
		Quota: []string{"github:graphql", "anthropic"}, Env: []string{"GITHUB_TOKEN", "ANTHROPIC_API_KEY"},
	}
	if !reflect.DeepEqual(d.Tasks[1], want) {
		t.Fatalf("got  %+v\nwant %+v", d.Tasks[1], want)
	}
	_, err = workflow.Parse([]byte("name: v\ntasks:\n  a: {run: x, needs: [b]}\n"), "", "yaml")
	if fe, ok := errors.AsType[*workflow.FileError](err); !ok || fe.Line != 3 || fe.Column != 23 {
		t.Fatalf("got %+v, want line 3 column 23 (the need)", err)
	}
}
