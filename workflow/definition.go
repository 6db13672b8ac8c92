package workflow

import (
	"container/heap"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode"

	"github.com/layoverhq/layover/command"
	"github.com/layoverhq/layover/provider/agentcli"
	"github.com/layoverhq/layover/redact"
)

// Definition is a workflow: a named graph of tasks (docs/workflows.md).
//
// A zero field takes its default (WithDefaults): OnQuota pauses with no
// wait in the process, Attempts is DefaultAttempts, Budget.Runs is
// DefaultBudgetRuns, Timeout 0 is none. A Definition is plain data; its
// runs keep their state in the store, never in it.
type Definition struct {
	// Name names the workflow, as a task is named (letters, digits, '.',
	// '_', '-', at most 64 bytes, starting with a letter or digit).
	Name string
	// OnQuota is what a quota hit does to the task that hit it.
	OnQuota OnQuota
	// Attempts is how many failures a task may have, 1 to MaxAttempts
	// (0: DefaultAttempts). A quota pause never counts as a failure.
	Attempts int
	// Budget bounds the task starts of one run.
	Budget Budget
	// Timeout bounds a whole run from its creation, 0 to MaxDuration; 0 is
	// none. When it passes, waits end, attempts under way stop, paused
	// tasks stay paused with their quota record, and the run is failed (a
	// later start of the same run id runs nothing: start a new one).
	Timeout time.Duration
	// Tasks are the tasks in the order written; Order gives a dependency
	// order.
	Tasks []Task
}

// The actions of OnQuota.Action.
const (
	// ActionPause pauses the task that hit a quota (the default).
	ActionPause = "pause"
	// ActionFail fails it, as any other failure.
	ActionFail = "fail"
)

// OnQuota is what a quota hit does.
type OnQuota struct {
	// Action is ActionPause or ActionFail; "" is ActionPause.
	Action string
	// MaxWait is the longest known reset waited out in the process, 0 to
	// MaxDuration. 0: every pause is durable (the run returns paused and a
	// later run, or serve, resumes the task).
	MaxWait time.Duration
}

// Budget bounds the work of one run.
type Budget struct {
	// Runs is how many task starts one run may make, reruns after a quota
	// included (so a flapping quota ends), 1 to MaxBudgetRuns; 0 is
	// DefaultBudgetRuns.
	Runs int
}

// The values of Task.Resume.
const (
	// ResumeContinue continues the captured conversation with a short
	// resume instruction (the default).
	ResumeContinue = "continue"
	// ResumeRestart sends the brief again in a new conversation.
	ResumeRestart = "restart"
)

// Defaults and bounds of a Definition.
const (
	DefaultAttempts   = 3
	MaxAttempts       = 100
	DefaultBudgetRuns = 100
	MaxBudgetRuns     = 100_000
	// MaxDuration bounds Timeout and OnQuota.MaxWait: 30 days.
	MaxDuration = 30 * 24 * time.Hour
	// MaxTasks bounds the tasks of one Definition.
	MaxTasks = 10_000
	// maxName is the longest name of a workflow or a task, in bytes.
	maxName = 64
)

// Task is one step of a workflow. It runs exactly one of: a shell command
// (Run), an agent CLI (Agent, with Prompt) or, from Go only, a function
// (Func).
type Task struct {
	// Name names the task within its workflow, as Definition.Name.
	Name string
	// Needs names the tasks that must complete before this one starts.
	Needs []string
	// Run is a shell command, run with sh -c.
	Run string
	// Agent lists the agent CLI candidates in order, each a name
	// agentcli.AgentNamed knows ("claude", "codex", …): a quota on one
	// switches to the next, and the task pauses only when every one is
	// limited.
	Agent []string
	// Prompt is an agent task's brief. A file's prompt_file is read into
	// it at parse time.
	Prompt string
	// PromptFile is the file the brief was read from, relative to the
	// workflow file's directory; "" for an inline prompt.
	PromptFile string
	// Resume is ResumeContinue or ResumeRestart, for agent tasks only; ""
	// is ResumeContinue.
	Resume string
	// Check is a shell command run before any re-run, to reconcile: exit 0
	// means already done, 1 means run it, any other exit means blocked.
	Check string
	// Verify is a shell command run after the task exits 0: its acceptance.
	Verify string
	// Goal is the requested outcome, in words, for the people who read the
	// run's record.
	Goal string
	// Quota names the quotas the task draws on, as --quota takes them:
	// PROVIDER or PROVIDER:RESOURCE (command.ParseQuotaName).
	Quota []string
	// Env names the environment variables the task needs. It holds names,
	// never values.
	Env []string
	// Func is the task's work as a Go function (the Go API only; a file
	// never sets it). An error from it fails the attempt; a quota fault in
	// it pauses the task.
	Func func(ctx context.Context, t *Attempt) error
}

// Attempt is what a Go-function task is given: who it is, and a way to
// record its progress. The engine fills it; a zero Attempt has no
// checkpoint store.
type Attempt struct {
	// RunID is the run's id.
	RunID string
	// Task is the task's name.
	Task string
	// AttemptID identifies this attempt: a rerun after a quota is
	// "<run>:<task>:quota:<n>".
	AttemptID string
	// IdempotencyKey is the same for every attempt of the task:
	// "<run>:<task>".
	IdempotencyKey string
	// SessionID is the agent conversation a continued attempt resumes;
	// "" when there is none.
	SessionID string
	// CheckpointFunc records a stage and its data; the engine sets it.
	CheckpointFunc func(stage string, data json.RawMessage) error
}

// ErrNoCheckpoint is Checkpoint's error when the attempt has no
// CheckpointFunc.
var ErrNoCheckpoint = errors.New("workflow: the attempt has no checkpoint store")

// Checkpoint records that the task reached stage, with data (JSON; nil
// for none), as its last verified checkpoint.
func (a *Attempt) Checkpoint(stage string, data json.RawMessage) error {
	if a == nil || a.CheckpointFunc == nil {
		return ErrNoCheckpoint
	}
	return a.CheckpointFunc(stage, data)
}

// WithDefaults returns d with each zero field that has a default set to
// it: OnQuota.Action, Attempts, Budget.Runs and each agent task's Resume.
// Its slices are d's.
func (d Definition) WithDefaults() Definition {
	if d.OnQuota.Action == "" {
		d.OnQuota.Action = ActionPause
	}
	if d.Attempts == 0 {
		d.Attempts = DefaultAttempts
	}
	if d.Budget.Runs == 0 {
		d.Budget.Runs = DefaultBudgetRuns
	}
	if d.hasDefaultlessAgent() {
		d.Tasks = slices.Clone(d.Tasks)
		for i := range d.Tasks {
			if len(d.Tasks[i].Agent) > 0 && d.Tasks[i].Resume == "" {
				d.Tasks[i].Resume = ResumeContinue
			}
		}
	}
	return d
}

func (d Definition) hasDefaultlessAgent() bool {
	return slices.ContainsFunc(d.Tasks, func(t Task) bool { return len(t.Agent) > 0 && t.Resume == "" })
}

// namePattern is what a workflow or task name may be: as a job id, at
// most 64 bytes.
var namePattern = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`)
})

// envPattern is an environment variable's name.
var envPattern = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`) })

// badName is the message for a name namePattern refuses.
func badName(what, name string) string {
	return fmt.Sprintf("%s %q: use letters, digits, '.', '_' and '-', starting with a letter or digit (at most %d)", what, name, maxName)
}

// problem is one thing wrong with a Definition: the field at fault (as a
// file spells it: "tasks.review.needs"), which element of it when it is
// a list (-1: the whole field), and what is wrong.
type problem struct {
	field string
	index int
	msg   string
}

func (p *problem) error() *FileError { return &FileError{Field: p.field, Msg: p.msg} }

// Validate reports the first thing wrong with d, in the order fields are
// written, as a *FileError without Path or Line (Parse adds them): a
// name, a value out of bounds, a task with not exactly one of Run, Agent
// and Func, an unknown agent or quota, a need that names no task or the
// task itself, or a cycle of needs.
func (d Definition) Validate() error {
	if p := d.validate(); p != nil {
		return p.error()
	}
	return nil
}

func (d Definition) validate() *problem {
	if p := d.validateRun(); p != nil {
		return p
	}
	if len(d.Tasks) == 0 {
		return &problem{"tasks", -1, "a workflow needs at least one task"}
	}
	if len(d.Tasks) > MaxTasks {
		return &problem{"tasks", -1, fmt.Sprintf("%d tasks: at most %d", len(d.Tasks), MaxTasks)}
	}
	index := make(map[string]int, len(d.Tasks))
	for i, t := range d.Tasks {
		if !namePattern().MatchString(t.Name) {
			return &problem{fmt.Sprintf("tasks[%d]", i), -1, badName("task name", t.Name)}
		}
		if _, dup := index[t.Name]; dup {
			return &problem{"tasks." + t.Name, -1, fmt.Sprintf("a second task named %q", t.Name)}
		}
		index[t.Name] = i
	}
	prompts := 0
	for _, t := range d.Tasks {
		if p := t.validate(index); p != nil {
			return p
		}
		if prompts += len(t.Prompt); prompts > MaxPromptsBytes {
			return &problem{"tasks." + t.Name + ".prompt", -1, fmt.Sprintf("the briefs add up to over %d bytes", MaxPromptsBytes)}
		}
	}
	if _, stuck := d.order(index); len(stuck) > 0 {
		cycle := d.cycle(index, stuck)
		names := make([]string, len(cycle)+1)
		for i, c := range cycle {
			names[i] = d.Tasks[c].Name
		}
		names[len(cycle)] = names[0]
		return &problem{"tasks." + names[0] + ".needs", -1, "a cycle of needs: " + strings.Join(names, " -> ")}
	}
	return nil
}

// validateRun checks the fields about the whole run.
func (d Definition) validateRun() *problem {
	switch {
	case !namePattern().MatchString(d.Name):
		return &problem{"name", -1, badName("workflow name", d.Name)}
	case d.OnQuota.Action != "" && d.OnQuota.Action != ActionPause && d.OnQuota.Action != ActionFail:
		return &problem{"on_quota.action", -1, fmt.Sprintf("unknown action %q (known: %s, %s)", d.OnQuota.Action, ActionPause, ActionFail)}
	case d.Attempts < 0 || d.Attempts > MaxAttempts:
		return &problem{"attempts", -1, fmt.Sprintf("%d attempts: use 1 to %d", d.Attempts, MaxAttempts)}
	case d.Budget.Runs < 0 || d.Budget.Runs > MaxBudgetRuns:
		return &problem{"budget.runs", -1, fmt.Sprintf("%d runs: use 1 to %d", d.Budget.Runs, MaxBudgetRuns)}
	}
	if msg := checkDuration(d.OnQuota.MaxWait); msg != "" {
		return &problem{"on_quota.max_wait", -1, msg}
	}
	if msg := checkDuration(d.Timeout); msg != "" {
		return &problem{"timeout", -1, msg}
	}
	return nil
}

// checkDuration returns what is wrong with a Timeout or MaxWait, or "".
func checkDuration(v time.Duration) string {
	switch {
	case v < 0:
		return fmt.Sprintf("%v: a duration cannot be negative", v)
	case v > MaxDuration:
		return fmt.Sprintf("%v: at most 30d", v)
	}
	return ""
}

// validate checks one task, index naming every task of its workflow.
func (t Task) validate(index map[string]int) *problem {
	at := func(field string, i int, format string, args ...any) *problem {
		return &problem{"tasks." + t.Name + field, i, fmt.Sprintf(format, args...)}
	}
	kinds := 0
	for _, has := range []bool{t.Run != "", len(t.Agent) > 0, t.Func != nil} {
		if has {
			kinds++
		}
	}
	switch {
	case kinds == 0:
		return at("", -1, "a task needs one of run or agent")
	case kinds > 1 && t.Func != nil:
		return at("", -1, "a task with a Go function has neither run nor agent")
	case kinds > 1:
		return at("", -1, "a task has one of run or agent, not both")
	}
	if len(t.Agent) > 0 {
		if p := t.validateAgent(at); p != nil {
			return p
		}
	} else {
		switch {
		case t.Prompt != "":
			return at(".prompt", -1, "a prompt is for an agent task")
		case t.PromptFile != "":
			return at(".prompt_file", -1, "a prompt file is for an agent task")
		case t.Resume != "":
			return at(".resume", -1, "resume is for an agent task")
		}
	}
	repeat := firstRepeat(t.Needs)
	for i, n := range t.Needs {
		switch {
		case n == t.Name:
			return at(".needs", i, "a task cannot need itself")
		case i == repeat:
			return at(".needs", i, "%q is named twice", n)
		}
		if _, ok := index[n]; !ok {
			return at(".needs", i, "no task %q (known: %s)", n, knownTasks(index))
		}
	}
	repeat = firstRepeat(t.Quota)
	for i, q := range t.Quota {
		if _, err := command.ParseQuotaName(q); err != nil {
			return at(".quota", i, "%v", err)
		}
		if i == repeat {
			return at(".quota", i, "%q is named twice", q)
		}
	}
	repeat = firstRepeat(t.Env)
	for i, e := range t.Env {
		switch {
		case strings.Contains(e, "="):
			return at(".env", i, "%q: name variables, never their values", strings.SplitN(e, "=", 2)[0]+"=…")
		case !envPattern().MatchString(e):
			return at(".env", i, "%q is not a variable name (letters, digits and '_', not starting with a digit)", e)
		case i == repeat:
			return at(".env", i, "%q is named twice", e)
		}
	}
	if len(t.Prompt) > MaxPromptBytes {
		// The brief is one argument of the agent's command line, which
		// the system bounds (128 KiB on Linux).
		return at(".prompt", -1, "a brief of %d bytes: at most %d", len(t.Prompt), MaxPromptBytes)
	}
	for _, f := range []struct{ field, v string }{
		{".run", t.Run}, {".prompt", t.Prompt}, {".prompt_file", t.PromptFile},
		{".check", t.Check}, {".verify", t.Verify}, {".goal", t.Goal},
	} {
		if r, bad := control(f.v); bad {
			return at(f.field, -1, "holds the control character %U", r)
		}
		// The store keeps the definition and shows it: a secret in it
		// would be kept and shown (docs/secrets.md).
		if redact.Contains(f.v) {
			return at(f.field, -1, "holds what looks like a secret (a token or key); pass secrets through the environment (env)")
		}
	}
	return nil
}

// MaxPromptBytes bounds one agent task's brief, which its agent gets as
// one command-line argument; MaxPromptsBytes bounds a workflow's briefs
// together, so the definition the store keeps stays within its bound.
const (
	MaxPromptBytes  = 100 << 10
	MaxPromptsBytes = 512 << 10
)

// validateAgent checks an agent task's candidates, brief and resume.
func (t Task) validateAgent(at func(string, int, string, ...any) *problem) *problem {
	var seen []string
	for i, a := range t.Agent {
		ag, ok := agentcli.AgentNamed(a)
		if !ok {
			return at(".agent", i, "unknown agent %q (known: %s)", a, knownAgents())
		}
		if slices.Contains(seen, ag.Name) {
			return at(".agent", i, "%q is a candidate twice", a)
		}
		seen = append(seen, ag.Name)
	}
	switch {
	case t.Prompt == "" && t.PromptFile == "":
		return at("", -1, "an agent task needs a prompt or a prompt_file")
	case t.Resume != "" && t.Resume != ResumeContinue && t.Resume != ResumeRestart:
		return at(".resume", -1, "unknown resume %q (known: %s, %s)", t.Resume, ResumeContinue, ResumeRestart)
	}
	return nil
}

// control returns the first control character of s other than tab, line
// feed and carriage return: a command, brief or goal holding one would
// act on the terminal that shows it, or fail to run (NUL).
func control(s string) (rune, bool) {
	for _, r := range s {
		if unicode.IsControl(r) && r != '\t' && r != '\n' && r != '\r' {
			return r, true
		}
	}
	return 0, false
}

// firstRepeat returns the position of the first entry of list that an
// earlier one equals, or -1.
func firstRepeat(list []string) int {
	if len(list) < 2 {
		return -1
	}
	seen := make(map[string]bool, len(list))
	for i, s := range list {
		if seen[s] {
			return i
		}
		seen[s] = true
	}
	return -1
}

// knownAgents lists the agent names a task may give.
func knownAgents() string {
	var names []string
	for _, a := range agentcli.Agents() {
		names = append(names, a.Name)
	}
	return strings.Join(names, ", ")
}

// knownTasks lists the task names of index, sorted, at most ten of them.
func knownTasks(index map[string]int) string {
	names := make([]string, 0, len(index))
	for n := range index {
		names = append(names, n)
	}
	slices.Sort(names)
	if len(names) > 10 {
		return strings.Join(names[:10], ", ") + fmt.Sprintf(", … %d more", len(names)-10)
	}
	return strings.Join(names, ", ")
}

// Order returns the tasks in a dependency order: each after every task it
// needs, and among the tasks ready at once, the one written first. A task
// that cannot be ordered (on a cycle, behind one, or needing a task that
// does not exist) is left out, so a Definition that Validate accepts has
// all its tasks in Order.
func (d Definition) Order() []Task {
	ordered, _ := d.order(d.index())
	out := make([]Task, len(ordered))
	for i, j := range ordered {
		out[i] = d.Tasks[j]
	}
	return out
}

// Dependents returns the names of the tasks that need the task name
// directly, in the order written; nil when none does.
func (d Definition) Dependents(name string) []string {
	var out []string
	for _, t := range d.Tasks {
		if slices.Contains(t.Needs, name) {
			out = append(out, t.Name)
		}
	}
	return out
}

// index maps each task name to the position of its first task.
func (d Definition) index() map[string]int {
	index := make(map[string]int, len(d.Tasks))
	for i, t := range d.Tasks {
		if _, dup := index[t.Name]; !dup {
			index[t.Name] = i
		}
	}
	return index
}

// order sorts the tasks topologically (Kahn's algorithm, the ready task
// written first going first) and returns the positions ordered and, in
// the order written, those it could not order. A duplicate task name is
// one task, at its first position.
func (d Definition) order(index map[string]int) (ordered, stuck []int) {
	waiting := make([]int, len(d.Tasks)) // needs not yet ordered; -1: unorderable
	dependents := make([][]int, len(d.Tasks))
	counted := make([]int, len(d.Tasks)) // the task + 1 whose needs last counted each task
	for i, t := range d.Tasks {
		if index[t.Name] != i {
			waiting[i] = -1
			continue
		}
		for _, n := range t.Needs {
			k, ok := index[n]
			switch {
			case !ok:
				waiting[i] = -1
			case counted[k] == i+1: // a need written twice counts once
			default:
				counted[k] = i + 1
				dependents[k] = append(dependents[k], i)
				if waiting[i] >= 0 {
					waiting[i]++
				}
			}
		}
	}
	ready := &intHeap{}
	for i, w := range waiting {
		if w == 0 {
			heap.Push(ready, i)
		}
	}
	done := make([]bool, len(d.Tasks))
	for ready.Len() > 0 {
		i := heap.Pop(ready).(int)
		ordered = append(ordered, i)
		done[i] = true
		for _, k := range dependents[i] {
			if waiting[k] > 0 {
				waiting[k]--
				if waiting[k] == 0 {
					heap.Push(ready, k)
				}
			}
		}
	}
	for i := range d.Tasks {
		if !done[i] && index[d.Tasks[i].Name] == i {
			stuck = append(stuck, i)
		}
	}
	return ordered, stuck
}

// cycle returns a cycle of needs among stuck, the tasks order could not
// order when every need names a task: each stuck task needs another stuck
// one, so following first stuck needs from any of them comes back to a
// task already seen. The cycle starts at its task written first, and each
// entry needs the next.
func (d Definition) cycle(index map[string]int, stuck []int) []int {
	isStuck := make(map[int]bool, len(stuck))
	for _, i := range stuck {
		isStuck[i] = true
	}
	seenAt := map[int]int{}
	var path []int
	for i := stuck[0]; ; {
		if at, seen := seenAt[i]; seen {
			path = path[at:]
			break
		}
		seenAt[i] = len(path)
		path = append(path, i)
		next := -1
		for _, n := range d.Tasks[i].Needs {
			if k, ok := index[n]; ok && isStuck[k] {
				next = k
				break
			}
		}
		if next < 0 { // not a cycle: a need names no task
			return path[:1]
		}
		i = next
	}
	first := slices.Index(path, slices.Min(path))
	return append(path[first:], path[:first]...)
}

// intHeap is a min-heap of task positions.
type intHeap []int

func (h intHeap) Len() int           { return len(h) }
func (h intHeap) Less(i, j int) bool { return h[i] < h[j] }
func (h intHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *intHeap) Push(x any)        { *h = append(*h, x.(int)) }
func (h *intHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}
