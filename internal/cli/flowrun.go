package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/layoverhq/layover/host"
	"github.com/layoverhq/layover/quota"
	"github.com/layoverhq/layover/workflow"
)

// FlowRunOptions are the flags of layover flow run.
type FlowRunOptions struct {
	File   string
	RunID  string // "": DefaultRunID
	DryRun bool
	Store  string
	Policy quota.Policy
	// Principal is whose GitHub quota the tasks' quota names mean.
	Principal string
}

func runFlowRun(ctx context.Context, env *Env, args []string) error {
	o := FlowRunOptions{Policy: quota.DefaultPolicy()}
	fs := newFlagSet("flow run", "flow run FILE [--run-id ID] [--dry-run] [--store S] [policy flags]")
	fs.StringVar(&o.RunID, "run-id", "", "the run's id: running an id again resumes that run (default: the file's name without its extension, '-', the UTC date as YYYYMMDD)")
	fs.BoolVar(&o.DryRun, "dry-run", false, "read and check the file and print the plan (tasks in dependency order, their needs, candidates, quotas and what each runs); run and store nothing")
	fs.StringVar(&o.Principal, "principal", "", "whose quota it is (default $LAYOVER_PRINCIPAL, else learned from the token)")
	policyFlags(fs, &o.Policy)
	storeLoc := storeFlag(fs)
	file, err := fs.parseArg(env, args, "workflow file")
	if err != nil {
		return err
	}
	o.File, o.Store = file, *storeLoc
	return o.run(ctx, env)
}

// DefaultRunID is a run's id when --run-id is not given: the file's base
// name without its extension, "-", and the UTC date of now as YYYYMMDD
// ("nightly.yaml" on 2 December 2026 is "nightly-20261202"), so a run
// started again the same day resumes it and the next day's is a new run.
func DefaultRunID(file string, now time.Time) string {
	base := filepath.Base(file)
	base = strings.TrimSuffix(base, filepath.Ext(base))
	return base + "-" + now.UTC().Format("20060102")
}

func (o *FlowRunOptions) run(ctx context.Context, env *Env) error {
	if err := o.Policy.Validate(); err != nil {
		return usageErr("flow run: %v", err)
	}
	def, runID, dir, err := readFlowFile(env, "flow run", o.File, o.RunID)
	if err != nil {
		return err
	}
	if o.DryRun {
		return printPlan(env.Stdout, def, runID)
	}
	return o.execute(ctx, env, def, runID, dir)
}

// readFlowFile reads the workflow file of command cmd (flow run, flow
// submit): its definition, the run id (runID, else DefaultRunID) and the
// file's directory, where the tasks run. A bad file, run id or path is an
// input error (exit 2).
func readFlowFile(env *Env, cmd, file, runID string) (workflow.Definition, string, string, error) {
	def, err := workflow.ParseFile(file)
	if err != nil {
		return def, "", "", fileErr(cmd, file, err)
	}
	if runID == "" {
		runID = DefaultRunID(file, env.Clock.Now())
	}
	if !host.ValidID(runID) {
		return def, "", "", usageErr("%s: run id %q: letters, digits, '.', '_' and '-', at most 128, starting with a letter or digit (give --run-id)", cmd, shown(runID))
	}
	dir, err := filepath.Abs(filepath.Dir(file))
	if err != nil {
		return def, "", "", usageErr("%s: %s: %v", cmd, shown(file), err)
	}
	return def, runID, dir, nil
}

// fileErr is a workflow file that cannot be used: a bad file (its
// FileError's one line: path, line, field) or one that cannot be read,
// both input errors (exit 2).
func fileErr(cmd, path string, err error) error {
	if fe, ok := errors.AsType[*workflow.FileError](err); ok {
		return usageErr("%s", fe.Error())
	}
	if errors.Is(err, fs.ErrNotExist) {
		return usageErr("%s: %s: no such file", cmd, shown(path))
	}
	return usageErr("%s: %v", cmd, err)
}

// printPlan prints what flow run would do with def as run runID, without
// doing it: its settings, then its tasks in dependency order, each with
// its needs, quotas and what it runs.
func printPlan(w io.Writer, def workflow.Definition, runID string) error {
	fmt.Fprintf(w, "workflow %s, run %s (dry run: nothing runs, nothing is stored)\n", def.Name, runID)
	wait := "every pause durable"
	if def.OnQuota.MaxWait > 0 {
		wait = "resets within " + shortDuration(def.OnQuota.MaxWait) + " waited out"
	}
	timeout := "no timeout"
	if def.Timeout > 0 {
		timeout = "timeout " + shortDuration(def.Timeout)
	}
	fmt.Fprintf(w, "on quota: %s (%s); attempts %d per task; budget %d task starts; %s\n\n",
		def.OnQuota.Action, wait, def.Attempts, def.Budget.Runs, timeout)
	tw := tabwriter.NewWriter(w, 2, 8, 2, ' ', 0)
	fmt.Fprintln(tw, "#\tTASK\tNEEDS\tQUOTA\tRUNS")
	for i, t := range def.Order() {
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\n", i+1, t.Name, listOrDash(t.Needs), listOrDash(t.Quota), shown(planRuns(t)))
	}
	return tw.Flush()
}

// planRuns says what a task runs: its command, or its agent candidates in
// order and its brief, with its check and verify.
func planRuns(t workflow.Task) string {
	var s string
	switch {
	case len(t.Agent) > 0:
		s = "agent " + strings.Join(t.Agent, ", then ")
		if t.PromptFile != "" {
			s += " with " + t.PromptFile
		} else {
			s += fmt.Sprintf(" with a %d-byte prompt", len(t.Prompt))
		}
		if t.Resume == workflow.ResumeRestart {
			s += ", restarting after a pause"
		}
	case t.Run != "":
		s = "run: " + t.Run
	default:
		s = "a Go function"
	}
	if t.Check != "" {
		s += "; check: " + t.Check
	}
	if t.Verify != "" {
		s += "; verify: " + t.Verify
	}
	return s
}

func listOrDash(l []string) string {
	if len(l) == 0 {
		return "-"
	}
	return shown(strings.Join(l, ", "))
}
