package view

import "github.com/layoverhq/layover/workflow/record"

// FlowRuns is flow status --json without a run: every run, oldest first.
type FlowRuns struct {
	Runs []FlowRun `json:"runs"`
}

// FlowRunDetail is flow status RUN --json: the run and its tasks.
type FlowRunDetail struct {
	Run   FlowRun    `json:"run"`
	Tasks []FlowTask `json:"tasks"`
}

// FlowRun is a run in flow status --json (docs/workflows.md, Commands);
// Tasks counts its tasks by state.
type FlowRun struct {
	ID        string         `json:"id"`
	Name      string         `json:"name"`
	Status    string         `json:"status"`
	Durable   bool           `json:"durable"`
	CreatedAt any            `json:"created_at"`
	UpdatedAt any            `json:"updated_at"`
	Deadline  any            `json:"deadline"`
	Starts    int            `json:"starts"`
	Tasks     map[string]int `json:"tasks"`
}

// NewFlowRun builds run r whose tasks are tasks.
func NewFlowRun(r record.Run, tasks []record.Task) FlowRun {
	counts := map[string]int{}
	for _, t := range tasks {
		counts[string(t.State)]++
	}
	return FlowRun{ID: r.ID, Name: r.Name, Status: string(r.Status), Durable: r.Durable,
		CreatedAt: Time(r.CreatedAt), UpdatedAt: Time(r.UpdatedAt), Deadline: Time(r.Deadline),
		Starts: r.Starts, Tasks: counts}
}

// FlowTask is a task in flow status RUN --json, its history oldest first.
// Limited maps a candidate to the time until which it is skipped.
type FlowTask struct {
	Name       string         `json:"name"`
	State      string         `json:"state"`
	Stage      string         `json:"stage"`
	Attempts   int            `json:"attempts"`
	Starts     int            `json:"starts"`
	Candidate  any            `json:"candidate"`
	SessionID  any            `json:"session_id"`
	Workdir    any            `json:"workdir"`
	Quota      *FlowQuota     `json:"quota"`
	Limited    map[string]any `json:"limited"`
	WaitingOn  any            `json:"waiting_on"`
	Checkpoint any            `json:"checkpoint"`
	JobID      any            `json:"job_id"`
	UpdatedAt  any            `json:"updated_at"`
	Events     []FlowEvent    `json:"events"`
}

// FlowQuota is the quota that paused a task; reset_at is null when unknown.
type FlowQuota struct {
	Provider string `json:"provider"`
	Resource any    `json:"resource"`
	ResetAt  any    `json:"reset_at"`
	Message  string `json:"message"`
}

// FlowEvent is one entry of a task's history.
type FlowEvent struct {
	Seq       int    `json:"seq"`
	At        any    `json:"at"`
	From      string `json:"from"`
	To        string `json:"to"`
	Reason    string `json:"reason"`
	AttemptID any    `json:"attempt_id"`
	ExitCode  *int   `json:"exit_code"`
	Outcome   any    `json:"outcome"`
	Candidate any    `json:"candidate"`
}

// NewFlowTask builds task t with its history evs.
func NewFlowTask(t record.Task, evs []record.TaskEvent) FlowTask {
	out := FlowTask{Name: t.Name, State: string(t.State), Stage: t.Stage, Attempts: t.Attempts, Starts: t.Starts,
		Candidate: Nullable(t.Candidate), SessionID: Nullable(t.SessionID), Workdir: Nullable(t.Workdir),
		Limited: map[string]any{}, WaitingOn: Nullable(t.WaitingOn), JobID: Nullable(t.JobID),
		UpdatedAt: Time(t.UpdatedAt), Events: []FlowEvent{}}
	if q := t.Quota; q != nil {
		out.Quota = &FlowQuota{Provider: q.Provider, Resource: Nullable(q.Resource), ResetAt: Time(q.ResetAt), Message: q.Message}
	}
	for c, until := range t.Limited {
		out.Limited[c] = Time(until)
	}
	if cp := t.Checkpoint; cp != nil {
		out.Checkpoint = map[string]any{"stage": cp.Stage, "data": cp.Data, "at": Time(cp.At)}
	}
	for _, ev := range evs {
		out.Events = append(out.Events, FlowEvent{Seq: ev.Seq, At: Time(ev.At), From: string(ev.From), To: string(ev.To),
			Reason: ev.Reason, AttemptID: Nullable(ev.AttemptID), ExitCode: ev.ExitCode, Outcome: Nullable(ev.Outcome),
			Candidate: Nullable(ev.Candidate)})
	}
	return out
}
