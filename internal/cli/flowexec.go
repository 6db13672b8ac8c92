package cli

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/layoverhq/layover/command"
	"github.com/layoverhq/layover/host"
	"github.com/layoverhq/layover/redact"
	"github.com/layoverhq/layover/store"
	"github.com/layoverhq/layover/textsafe"
	"github.com/layoverhq/layover/workflow"
	"github.com/layoverhq/layover/workflow/record"
)

// execute runs def as run runID in this process (workflow.Start) on the
// store, its tasks in dir, and maps how it ended to an exit code.
func (o *FlowRunOptions) execute(ctx context.Context, env *Env, def workflow.Definition, runID, dir string) error {
	st, err := openStore(ctx, env, o.Store)
	if err != nil {
		return err
	}
	defer st.Close()
	known := knownSecrets(env, o.Store)
	opts := workflow.Options{
		RunID: runID, Store: st, Clock: env.Clock, Rand: env.Rand, Policy: o.Policy,
		Dir: dir, Env: env.Environ, StoreLocation: taskStore(cmp.Or(o.Store, env.Getenv("LAYOVER_STORE"))),
		Events: progress(env.Stderr),
	}
	if needsQuotas(def) {
		gh, err := resolveGitHub(ctx, env, st, o.Principal)
		if err != nil {
			return err
		}
		known = knownSecrets(env, o.Store, gh.Token())
		opts.Quotas = &command.HostQuotas{GitHub: gh, Store: st, Principal: o.Principal, Getenv: env.Getenv}
	}
	// The tasks' output goes to stderr, a line at a time with its task's
	// name, masked as serve masks its jobs' (docs/secrets.md); stdout is
	// the run's summary.
	// Each line is made safe for a terminal first (its escape sequences and
	// control characters removed, tabs kept), then masked, so that no
	// sequence removed can join the parts of a secret after masking.
	opts.Runner = &host.ProcessRunner{Classify: classifyAny, Output: safeLines{&redact.Writer{W: env.Stderr, Known: known}},
		Secrets: known, Supervisor: env.Executable, Now: env.Clock.Now}
	runCtx, sig := withSignals(ctx, env)
	res, err := workflow.Start(runCtx, def, opts)
	if s := sig(); s != nil {
		if s == syscall.SIGINT {
			return exitCode(ExitSIGINT)
		}
		return exitCode(ExitSIGTERM)
	}
	if err != nil {
		return flowError(err)
	}
	return finishRun(ctx, env, st, res)
}

// safeLines writes each line of what it is given to W with what a
// terminal would act on removed (textsafe.Line), its tabs kept. The
// process runner writes its lines one per Write.
type safeLines struct{ W io.Writer }

func (s safeLines) Write(p []byte) (int, error) {
	lines := strings.SplitAfter(string(p), "\n")
	var b strings.Builder
	for _, line := range lines {
		text, nl := strings.CutSuffix(line, "\n")
		parts := strings.Split(text, "\t")
		for i, part := range parts {
			// A byte that is not UTF-8 grows to three; nothing is cut.
			parts[i] = textsafe.Line(part, 3*len(part)+1)
		}
		b.WriteString(strings.Join(parts, "\t"))
		if nl {
			b.WriteByte('\n')
		}
	}
	if _, err := io.WriteString(s.W, b.String()); err != nil {
		return 0, err
	}
	return len(p), nil
}

// taskStore is the store location handed to tasks (LAYOVER_STORE): loc,
// a relative SQLite path made absolute, since the tasks run in the
// workflow file's directory; "" (the default store) stays "".
func taskStore(loc string) string {
	path, prefixed := strings.CutPrefix(loc, "sqlite:")
	if loc == "" || strings.Contains(loc, "://") || filepath.IsAbs(path) {
		return loc
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return loc
	}
	if prefixed {
		return "sqlite:" + abs
	}
	return abs
}

// flowError maps an error of workflow.Start to an exit code: a run id
// already used by another definition, a run another process runs or wrote first,
// or a run the durable host owns, is a refused operation (1), a record the store refuses an input error (2),
// else layover failed (125).
func flowError(err error) error {
	switch {
	case errors.Is(err, workflow.ErrBusy):
		return failErr("flow run: %v", err)
	case errors.Is(err, record.ErrConflict):
		// Another definition under the run id, or another process writing
		// the run: the engine's message says which.
		return failErr("flow run: %v (a run id is one definition, run by one process at a time)", err)
	case errors.Is(err, workflow.ErrDurable):
		return failErr("flow run: %v: the durable host runs it", err)
	case errors.Is(err, record.ErrInvalid):
		return usageErr("flow run: %v", err)
	}
	return internalErr("flow run: %v", err)
}

// needsQuotas reports whether a task of def names a quota.
func needsQuotas(def workflow.Definition) bool {
	return slices.ContainsFunc(def.Tasks, func(t workflow.Task) bool { return len(t.Quota) > 0 })
}

// withSignals returns ctx cancelled when SIGINT or SIGTERM arrives, and a
// function that ends it and tells which signal did, nil for none.
func withSignals(ctx context.Context, env *Env) (context.Context, func() os.Signal) {
	ctx, cancel := context.WithCancel(ctx)
	var (
		mu  sync.Mutex
		got os.Signal
	)
	if env.Signals != nil {
		go func() {
			select {
			case s := <-env.Signals:
				mu.Lock()
				got = s
				mu.Unlock()
				cancel()
			case <-ctx.Done():
			}
		}()
	}
	return ctx, func() os.Signal {
		mu.Lock()
		defer mu.Unlock()
		s := got
		cancel()
		return s
	}
}

// progress returns the engine's event sink: one stderr line per task move
// or waiting notice, "layover: review paused: claude-code five_hour until
// 2026-12-02T05:00:00Z".
func progress(w io.Writer) func(workflow.Event) {
	var mu sync.Mutex
	return func(ev workflow.Event) {
		mu.Lock()
		defer mu.Unlock()
		fmt.Fprintln(w, progressLine(ev))
	}
}

// progressLine is one event's line; an event of the whole run (no task)
// names the run: "layover: run nightly-20261202: the budget of 5 task
// starts is spent: nothing more starts".
func progressLine(ev workflow.Event) string {
	var b strings.Builder
	if ev.Task == "" {
		b.WriteString("layover: run " + shown(ev.RunID))
	} else {
		b.WriteString("layover: " + shown(ev.Task))
	}
	if ev.From != ev.To {
		b.WriteString(" " + string(ev.To))
	}
	if ev.Reason != "" {
		b.WriteString(": " + shown(ev.Reason))
	}
	if !ev.Until.IsZero() {
		b.WriteString(" until " + ev.Until.UTC().Format(time.RFC3339))
	}
	return b.String()
}

// finishRun says how the run ended, on stdout its status and the count of
// its tasks by state, on stderr what stopped it, and returns the exit code
// of docs/design.md: 0 every task complete, 6 paused (the earliest reset
// first), 1 a task failed or is blocked, or the run was cancelled.
func finishRun(ctx context.Context, env *Env, st store.Store, res workflow.Result) error {
	fmt.Fprintf(env.Stdout, "%s: %s (%s)\n", res.RunID, res.Status, taskCounts(res.Tasks))
	switch res.Status {
	case record.RunComplete:
		return nil
	case record.RunPaused:
		for _, t := range pausedByReset(res.Tasks) {
			fmt.Fprintln(env.Stderr, "layover: "+pausedLine(t))
		}
		return exitCode(ExitDeferred)
	case record.RunCancelled:
		return failErr("flow run: run %s was cancelled (flow cancel); give another --run-id to run it again", res.RunID)
	}
	for _, t := range res.Tasks {
		switch t.State {
		case record.TaskFailed, record.TaskBlocked, record.TaskAuthWait:
			line := fmt.Sprintf("layover: %s %s", shown(t.Name), t.State)
			if why := lastReason(ctx, st, t); why != "" {
				line += ": " + shown(why)
			}
			fmt.Fprintln(env.Stderr, line)
		}
	}
	if res.Reason != "" {
		return failErr("flow run: run %s failed: %s", res.RunID, res.Reason)
	}
	return failErr("flow run: run %s failed", res.RunID)
}

// pausedByReset are the paused tasks, the earliest known reset first and
// unknown resets last.
func pausedByReset(tasks []record.Task) []record.Task {
	var out []record.Task
	for _, t := range tasks {
		if t.State == record.TaskPaused || t.State == record.TaskWaiting {
			out = append(out, t)
		}
	}
	slices.SortStableFunc(out, func(a, b record.Task) int {
		ra, rb := resetOf(a), resetOf(b)
		switch {
		case ra.IsZero() && rb.IsZero():
			return 0
		case ra.IsZero():
			return 1
		case rb.IsZero():
			return -1
		}
		return ra.Compare(rb)
	})
	return out
}

func resetOf(t record.Task) time.Time {
	if t.Quota == nil {
		return time.Time{}
	}
	return t.Quota.ResetAt
}

// pausedLine is "paused until <time>: <task> (<provider> <resource>)".
func pausedLine(t record.Task) string {
	until := "an unknown reset"
	if r := resetOf(t); !r.IsZero() {
		until = r.UTC().Format(time.RFC3339)
	}
	line := fmt.Sprintf("paused until %s: %s", until, shown(t.Name))
	if q := quotaText(t.Quota); q != "" {
		line += " (" + q + ")"
	}
	return line
}

// lastReason is the reason of a task's last event, "" when it has none or
// the history cannot be read (the state alone is then said).
func lastReason(ctx context.Context, st store.Store, t record.Task) string {
	evs, err := st.TaskEvents(ctx, t.RunID, t.Name)
	if err != nil || len(evs) == 0 {
		return ""
	}
	return evs[len(evs)-1].Reason
}
