package cli

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/layoverhq/layover/command"
	"github.com/layoverhq/layover/host"
	"github.com/layoverhq/layover/internal/view"
	"github.com/layoverhq/layover/job"
	"github.com/layoverhq/layover/store"
	"github.com/layoverhq/layover/workflow"
	"github.com/layoverhq/layover/workflow/record"
)

// FlowStatusOptions are the flags of layover flow status.
type FlowStatusOptions struct {
	Run   string // "": every run
	JSON  bool
	Store string
}

func runFlowStatus(ctx context.Context, env *Env, args []string) error {
	var o FlowStatusOptions
	fs := newFlagSet("flow status", "flow status [RUN] [--json]")
	fs.BoolVar(&o.JSON, "json", false, `print JSON: {"runs":[…]}, or with RUN {"run":{…},"tasks":[…]}`)
	storeLoc := storeFlag(fs)
	if err := fs.parse(env, args); err != nil {
		return err
	}
	switch fs.NArg() {
	case 0:
	case 1:
		o.Run = fs.Arg(0)
	default:
		return usageErr("flow status: unexpected argument %q", shown(fs.Arg(1)))
	}
	o.Store = *storeLoc
	return o.run(ctx, env)
}

func (o *FlowStatusOptions) run(ctx context.Context, env *Env) error {
	st, err := openJobStoreReadOnly(ctx, env, o.Store)
	if err != nil {
		return err
	}
	defer st.Close()
	if o.Run == "" {
		return o.runs(ctx, env, st)
	}
	r, err := st.Run(ctx, o.Run)
	if errors.Is(err, job.ErrNotFound) {
		return failErr("flow status: no run %q", shown(o.Run))
	}
	if err != nil {
		return internalErr("read store: %v", err)
	}
	tasks, err := st.RunTasks(ctx, r.ID)
	if err != nil {
		return internalErr("read store: %v", err)
	}
	if o.JSON {
		out := view.FlowRunDetail{Run: view.NewFlowRun(r, tasks), Tasks: []view.FlowTask{}}
		for _, t := range tasks {
			evs, err := st.TaskEvents(ctx, r.ID, t.Name)
			if err != nil {
				return internalErr("read store: %v", err)
			}
			out.Tasks = append(out.Tasks, view.NewFlowTask(t, evs))
		}
		return writeJSON(env, out)
	}
	fmt.Fprintf(env.Stdout, "run %s (%s): %s, %s; %d task starts; updated %s\n", shown(r.ID), shown(r.Name), r.Status,
		taskCounts(tasks), r.Starts, command.HumanTime(r.UpdatedAt))
	tw := tabwriter.NewWriter(env.Stdout, 2, 8, 2, ' ', 0)
	fmt.Fprintln(tw, "TASK\tSTATE\tSTAGE\tATTEMPTS\tSTARTS\tCANDIDATE\tQUOTA\tWAITING ON")
	for _, t := range tasks {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%d\t%s\t%s\t%s\n", shown(t.Name), t.State, stageCell(t), t.Attempts, t.Starts,
			orDash(t.Candidate), quotaCell(t.Quota), orDash(t.WaitingOn))
	}
	return tw.Flush()
}

// runs lists every run, oldest first, with its tasks counted by state.
func (o *FlowStatusOptions) runs(ctx context.Context, env *Env, st store.Store) error {
	runs, err := st.Runs(ctx)
	if err != nil {
		return internalErr("read store: %v", err)
	}
	all := make([][]record.Task, len(runs))
	for i, r := range runs {
		if all[i], err = st.RunTasks(ctx, r.ID); err != nil {
			return internalErr("read store: %v", err)
		}
	}
	if o.JSON {
		out := view.FlowRuns{Runs: []view.FlowRun{}}
		for i, r := range runs {
			out.Runs = append(out.Runs, view.NewFlowRun(r, all[i]))
		}
		return writeJSON(env, out)
	}
	if len(runs) == 0 {
		fmt.Fprintln(env.Stdout, "No workflow runs.")
		return nil
	}
	tw := tabwriter.NewWriter(env.Stdout, 2, 8, 2, ' ', 0)
	fmt.Fprintln(tw, "RUN\tNAME\tSTATUS\tUPDATED\tTASKS")
	for i, r := range runs {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", shown(r.ID), shown(r.Name), r.Status, command.HumanTime(r.UpdatedAt), taskCounts(all[i]))
	}
	return tw.Flush()
}

// stageCell is a task's stage in a table: "-" when it only repeats the
// state ("paused" while paused), so a stage that says more (check,
// "waiting until …", a checkpoint's) stands out.
func stageCell(t record.Task) string {
	if t.Stage == string(t.State) {
		return "-"
	}
	return orDash(t.Stage)
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return shown(s)
}

// quotaCell is a task's quota record in a table: "claude-code five_hour
// until 2026-12-02T05:00:00Z", "… reset unknown", or "-".
func quotaCell(q *record.Quota) string {
	if q == nil {
		return "-"
	}
	if q.ResetAt.IsZero() {
		return quotaText(q) + ", reset unknown"
	}
	return quotaText(q) + " until " + q.ResetAt.UTC().Format(time.RFC3339)
}

// FlowCancelOptions are the flags of layover flow cancel.
type FlowCancelOptions struct {
	Run   string
	Store string
}

func runFlowCancel(ctx context.Context, env *Env, args []string) error {
	var o FlowCancelOptions
	fs := newFlagSet("flow cancel", "flow cancel RUN")
	storeLoc := storeFlag(fs)
	id, err := fs.parseArg(env, args, "run id")
	if err != nil {
		return err
	}
	o.Run, o.Store = id, *storeLoc
	return o.run(ctx, env)
}

func (o *FlowCancelOptions) run(ctx context.Context, env *Env) error {
	st, err := openStore(ctx, env, o.Store)
	if err != nil {
		return err
	}
	defer st.Close()
	// A durable run's tasks are jobs: they stop too.
	jobs, err := host.NewJobs(host.Config{Store: st, Clock: env.Clock})
	if err != nil {
		return internalErr("flow cancel: %v", err)
	}
	n, err := workflow.Cancel(ctx, st, jobs, o.Run, env.Clock.Now())
	switch {
	case err == nil:
		fmt.Fprintf(env.Stdout, "%s: cancelled (%d unfinished tasks cancelled)\n", shown(o.Run), n)
		return nil
	case errors.Is(err, job.ErrNotFound):
		return failErr("flow cancel: no run %q", shown(o.Run))
	case errors.Is(err, workflow.ErrCancelRefused), errors.Is(err, record.ErrConflict):
		return failErr("flow cancel: %v", err)
	}
	return internalErr("flow cancel: %v", err)
}

// taskCounts is "3 complete, 1 paused": the tasks by state, in the order
// of record's states.
func taskCounts(tasks []record.Task) string {
	n := map[record.TaskState]int{}
	for _, t := range tasks {
		n[t.State]++
	}
	var parts []string
	for _, s := range taskStates {
		if n[s] > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", n[s], s))
		}
	}
	if len(parts) == 0 {
		return "no tasks"
	}
	return strings.Join(parts, ", ")
}

// taskStates are the task states in the order they are listed.
var taskStates = []record.TaskState{record.TaskComplete, record.TaskRunning, record.TaskWaiting, record.TaskPaused,
	record.TaskAuthWait, record.TaskPending, record.TaskBlocked, record.TaskFailed, record.TaskSkipped, record.TaskCancelled}

// quotaText names a quota record's provider and resource, "" for none.
func quotaText(q *record.Quota) string {
	if q == nil {
		return ""
	}
	return shown(strings.TrimSpace(q.Provider + " " + q.Resource))
}
