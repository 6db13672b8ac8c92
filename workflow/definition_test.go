package workflow_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/layoverhq/layover/workflow"
)

// names returns the names of tasks.
func names(tasks []workflow.Task) []string {
	out := make([]string, len(tasks))
	for i, t := range tasks {
		out[i] = t.Name
	}
	return out
}

// graph builds a valid definition of run tasks from "name:need,need" specs.
func graph(specs ...string) workflow.Definition {
	d := workflow.Definition{Name: "g"}
	for _, s := range specs {
		name, needs, _ := strings.Cut(s, ":")
		t := workflow.Task{Name: name, Run: "true"}
		if needs != "" {
			t.Needs = strings.Split(needs, ",")
		}
		d.Tasks = append(d.Tasks, t)
	}
	return d
}

func TestOrder(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		specs []string
		want  []string
	}{
		{"file order when independent", []string{"c", "a", "b"}, []string{"c", "a", "b"}},
		{"a need first", []string{"publish:review,docs", "review:fetch", "fetch", "docs"}, []string{"fetch", "review", "docs", "publish"}},
		{"the ready task written first goes first", []string{"a:x", "b", "x", "c"}, []string{"b", "x", "a", "c"}},
		{"diamond", []string{"d:b,c", "c:a", "b:a", "a"}, []string{"a", "c", "b", "d"}},
		{"a task needed by many", []string{"z", "y:z", "x:z", "w:z"}, []string{"z", "y", "x", "w"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			d := graph(tt.specs...)
			if err := d.Validate(); err != nil {
				t.Fatal(err)
			}
			if got := names(d.Order()); !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("Order() = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestOrderLeavesOutWhatCannotBeOrdered(t *testing.T) {
	t.Parallel()
	d := graph("a", "b:c", "c:b", "d:c", "e:missing", "f:a")
	if got, want := names(d.Order()), []string{"a", "f"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("Order() = %v, want %v", got, want)
	}
}

// TestOrderRandomGraphs: on random DAGs, Order holds every task once,
// each after its needs.
func TestOrderRandomGraphs(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(1, 2))
	for range 50 {
		n := 1 + rng.IntN(200)
		perm := rng.Perm(n) // the topological truth: a task needs only earlier ones in perm
		d := workflow.Definition{Name: "r", Tasks: make([]workflow.Task, n)}
		for i := range n {
			d.Tasks[i] = workflow.Task{Name: fmt.Sprintf("t%d", i), Run: "true"}
		}
		for rank := 1; rank < n; rank++ {
			task := &d.Tasks[perm[rank]]
			for range rng.IntN(4) {
				need := fmt.Sprintf("t%d", perm[rng.IntN(rank)])
				if !slices.Contains(task.Needs, need) {
					task.Needs = append(task.Needs, need)
				}
			}
		}
		if err := d.Validate(); err != nil {
			t.Fatal(err)
		}
		order := d.Order()
		if len(order) != n {
			t.Fatalf("Order() has %d tasks, want %d", len(order), n)
		}
		pos := map[string]int{}
		for i, task := range order {
			pos[task.Name] = i
		}
		for _, task := range d.Tasks {
			for _, need := range task.Needs {
				if pos[need] >= pos[task.Name] {
					t.Fatalf("%s before its need %s", task.Name, need)
				}
			}
		}
	}
}

func TestDependents(t *testing.T) {
	t.Parallel()
	d := graph("fetch", "review:fetch", "docs", "publish:review,docs", "notify:fetch,publish")
	for name, want := range map[string][]string{
		"fetch":   {"review", "notify"},
		"review":  {"publish"},
		"docs":    {"publish"},
		"publish": {"notify"},
		"notify":  nil,
		"absent":  nil,
	} {
		if got := d.Dependents(name); !reflect.DeepEqual(got, want) {
			t.Errorf("Dependents(%q) = %v, want %v", name, got, want)
		}
	}
}

// TestValidateGoDefinitions: Validate refuses, with the field at fault, a
// Definition built in Go that no run could carry out, and takes zero
// fields as their defaults.
func TestValidateGoDefinitions(t *testing.T) {
	t.Parallel()
	fn := func(context.Context, *workflow.Attempt) error { return nil }
	ok := workflow.Task{Name: "a", Func: fn}
	tests := []struct {
		name string
		edit func(*workflow.Definition)
		want string // "" for valid
	}{
		{"zero fields take defaults", func(*workflow.Definition) {}, ""},
		{"a Go function task", func(d *workflow.Definition) {
			d.Tasks = append(d.Tasks, workflow.Task{Name: "b", Func: fn, Needs: []string{"a"}})
		}, ""},
		{"no name", func(d *workflow.Definition) { d.Name = "" }, `name: workflow name "": use letters`},
		{"no tasks", func(d *workflow.Definition) { d.Tasks = nil }, "tasks: a workflow needs at least one task"},
		{"too many tasks", func(d *workflow.Definition) {
			d.Tasks = make([]workflow.Task, workflow.MaxTasks+1)
		}, "tasks: 10001 tasks: at most 10000"},
		{"two tasks of a name", func(d *workflow.Definition) { d.Tasks = append(d.Tasks, ok) }, `tasks.a: a second task named "a"`},
		{"bad task name", func(d *workflow.Definition) { d.Tasks = append(d.Tasks, workflow.Task{Name: "-b", Func: fn}) }, `tasks[1]: task name "-b"`},
		{"func and run", func(d *workflow.Definition) { d.Tasks[0].Run = "x" }, "tasks.a: a task with a Go function has neither run nor agent"},
		{"nothing to run", func(d *workflow.Definition) { d.Tasks[0].Func = nil }, "tasks.a: a task needs one of run or agent"},
		{"negative attempts", func(d *workflow.Definition) { d.Attempts = -1 }, "attempts: -1 attempts: use 1 to 100"},
		{"budget over", func(d *workflow.Definition) { d.Budget.Runs = 100_001 }, "budget.runs: 100001 runs: use 1 to 100000"},
		{"action", func(d *workflow.Definition) { d.OnQuota.Action = "retry" }, `on_quota.action: unknown action "retry"`},
		{"max wait over", func(d *workflow.Definition) { d.OnQuota.MaxWait = 31 * 24 * time.Hour }, "on_quota.max_wait: 744h0m0s: at most 30d"},
		{"negative timeout", func(d *workflow.Definition) { d.Timeout = -time.Second }, "timeout: -1s: a duration cannot be negative"},
		{"agent without prompt", func(d *workflow.Definition) { d.Tasks[0] = workflow.Task{Name: "a", Agent: []string{"codex"}} }, "tasks.a: an agent task needs a prompt or a prompt_file"},
		{"agent with a prompt file", func(d *workflow.Definition) {
			d.Tasks[0] = workflow.Task{Name: "a", Agent: []string{"codex", "agy"}, PromptFile: "brief.txt"}
		}, ""},
		{"resume on a function", func(d *workflow.Definition) { d.Tasks[0].Resume = workflow.ResumeRestart }, "tasks.a.resume: resume is for an agent task"},
		{"a NUL in a command", func(d *workflow.Definition) { d.Tasks[0] = workflow.Task{Name: "a", Run: "echo \x00"} }, "tasks.a.run: holds the control character U+0000"},
		{"an escape in a goal", func(d *workflow.Definition) { d.Tasks[0].Goal = "\x1b]0;pwned\x07" }, "tasks.a.goal: holds the control character U+001B"},
		{"a need twice", func(d *workflow.Definition) {
			d.Tasks = append(d.Tasks, workflow.Task{Name: "b", Func: fn, Needs: []string{"a", "a"}})
		}, `tasks.b.needs: "a" is named twice`},
		{"a quota twice", func(d *workflow.Definition) { d.Tasks[0].Quota = []string{"github", "github"} }, `tasks.a.quota: "github" is named twice`},
		{"a quota resource", func(d *workflow.Definition) { d.Tasks[0].Quota = []string{"github:core", "anthropic"} }, ""},
		{"an env name", func(d *workflow.Definition) { d.Tasks[0].Env = []string{"GITHUB_TOKEN", "9X"} }, `tasks.a.env: "9X" is not a variable name`},
		{"a brief too long for one argument", func(d *workflow.Definition) {
			d.Tasks[0] = workflow.Task{Name: "a", Agent: []string{"claude"}, Prompt: strings.Repeat("x", workflow.MaxPromptBytes+1)}
		}, "tasks.a.prompt: a brief of 102401 bytes: at most 102400"},
		{"briefs too long together", func(d *workflow.Definition) {
			d.Tasks = nil
			for i := range workflow.MaxPromptsBytes/workflow.MaxPromptBytes + 1 {
				d.Tasks = append(d.Tasks, workflow.Task{Name: fmt.Sprint("t", i), Agent: []string{"claude"}, Prompt: strings.Repeat("x", workflow.MaxPromptBytes)})
			}
		}, "tasks.t5.prompt: the briefs add up to over 524288 bytes"},
		{"a token in a brief", func(d *workflow.Definition) {
			d.Tasks[0] = workflow.Task{Name: "a", Agent: []string{"claude"}, Prompt: "use ghp_" + strings.Repeat("a1B2", 9) + " to push"}
		}, "tasks.a.prompt: holds what looks like a secret"},
		{"a token in a command", func(d *workflow.Definition) {
			d.Tasks[0] = workflow.Task{Name: "a", Run: "curl -H 'Authorization: Bearer sk-ant-api03-" + strings.Repeat("Ab9", 20) + "'"}
		},
			"tasks.a.run: holds what looks like a secret"},
		{"a cycle", func(d *workflow.Definition) {
			d.Tasks[0].Needs = []string{"c"}
			d.Tasks = append(d.Tasks, workflow.Task{Name: "b", Func: fn, Needs: []string{"a"}}, workflow.Task{Name: "c", Func: fn, Needs: []string{"b"}})
		}, "tasks.a.needs: a cycle of needs: a -> c -> b -> a"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			d := workflow.Definition{Name: "go", Tasks: []workflow.Task{ok}}
			tt.edit(&d)
			err := d.Validate()
			if tt.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			fe, isFE := errors.AsType[*workflow.FileError](err)
			if !isFE || fe.Line != 0 || fe.Path != "" {
				t.Fatalf("error %T %+v, want a *FileError without a place", err, err)
			}
			if !strings.HasPrefix(err.Error(), tt.want) {
				t.Fatalf("got  %v\nwant %s…", err, tt.want)
			}
		})
	}
}

func TestWithDefaults(t *testing.T) {
	t.Parallel()
	d := workflow.Definition{Name: "d", Tasks: []workflow.Task{{Name: "a", Agent: []string{"claude"}, Prompt: "p"}, {Name: "b", Run: "x"}}}
	got := d.WithDefaults()
	if got.OnQuota.Action != workflow.ActionPause || got.Attempts != 3 || got.Budget.Runs != 100 || got.Timeout != 0 || got.OnQuota.MaxWait != 0 {
		t.Fatalf("got %+v", got)
	}
	if got.Tasks[0].Resume != workflow.ResumeContinue || got.Tasks[1].Resume != "" {
		t.Fatalf("tasks %+v", got.Tasks)
	}
	if d.Tasks[0].Resume != "" {
		t.Fatal("WithDefaults changed the definition it was called on")
	}
	set := workflow.Definition{OnQuota: workflow.OnQuota{Action: workflow.ActionFail}, Attempts: 1, Budget: workflow.Budget{Runs: 7}}.WithDefaults()
	if set.OnQuota.Action != workflow.ActionFail || set.Attempts != 1 || set.Budget.Runs != 7 {
		t.Fatalf("set values changed: %+v", set)
	}
}

func TestAttemptCheckpoint(t *testing.T) {
	t.Parallel()
	var a workflow.Attempt
	if err := a.Checkpoint("review", nil); !errors.Is(err, workflow.ErrNoCheckpoint) {
		t.Fatalf("zero Attempt: %v", err)
	}
	var got []string
	a.CheckpointFunc = func(stage string, data json.RawMessage) error {
		got = append(got, stage+" "+string(data))
		return nil
	}
	if err := a.Checkpoint("drafted", json.RawMessage(`{"pr":7}`)); err != nil {
		t.Fatal(err)
	}
	if want := []string{`drafted {"pr":7}`}; !reflect.DeepEqual(got, want) {
		t.Fatalf("got %v", got)
	}
}
