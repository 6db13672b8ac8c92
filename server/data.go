package server

import (
	"context"
	"encoding/json"
	"errors"
	"html/template"
	"sort"
	"strings"
	"time"

	"github.com/layoverhq/layover/internal/view"
	"github.com/layoverhq/layover/job"
	"github.com/layoverhq/layover/quota"
	"github.com/layoverhq/layover/schedule"
	"github.com/layoverhq/layover/store"
	"github.com/layoverhq/layover/workflow/record"
)

// chartWindow is how far back the burn chart reaches, and chartPoints the
// most observations it draws per key.
const (
	chartWindow = 6 * time.Hour
	chartPoints = 512
)

// quotaRow is a quota key on the console: its view object, the reserve the
// policy keeps of it (in the resource's units) and its burn chart.
type quotaRow struct {
	view.Quota
	State   quota.State
	Reserve int64
	Chart   template.HTML
	Points  int
}

// quotas are the stored keys at now, ordered by key, with their view
// objects; with charts, each with its reserve and burn chart too.
func (s *Server) quotas(ctx context.Context, now time.Time, charts bool) ([]quotaRow, []view.Quota, error) {
	states, err := s.cfg.Store.AllStates(ctx)
	if err != nil {
		return nil, nil, err
	}
	views := view.Quotas(states, s.cfg.Policy, now)
	rows := make([]quotaRow, len(states))
	for i, st := range states {
		rows[i] = quotaRow{Quota: views[i], State: st, Reserve: -1}
		if st.Limit >= 0 {
			rows[i].Reserve = s.cfg.Policy.Reserve.For(st.Resource, st.Limit)
		}
		since, limit := now.Add(-quota.BurnSpan), 0
		if charts {
			since, limit = now.Add(-chartWindow), chartPoints
		}
		obs, err := s.cfg.Store.Observations(ctx, st.Key, since, limit)
		if err != nil {
			return nil, nil, err
		}
		views[i].SetBurn(st, store.Samples(obs), now)
		rows[i].Quota = views[i]
		if !charts {
			continue
		}
		rows[i].Points = len(obs)
		rows[i].Chart = burnChart(obs, st, rows[i].Reserve, now)
	}
	return rows, views, nil
}

// waits are the Quota waits: the deferred jobs, soonest wake-up first, and
// the waiting commands.
type waits struct {
	// Keys are the quota keys whose scheduled work waits at now: in a
	// Quota wait, or held below their reserve until a known reset.
	Keys     []quotaRow
	Deferred []job.Job
	Waiting  []store.Waiter
}

func (s *Server) waits(ctx context.Context, now time.Time) (waits, error) {
	rows, _, err := s.quotas(ctx, now, false)
	if err != nil {
		return waits{}, err
	}
	var keys []quotaRow
	for _, q := range rows {
		if q.WaitUntil != nil {
			keys = append(keys, q)
		}
	}
	deferred, err := s.cfg.Store.ListJobs(ctx, job.Deferred)
	if err != nil {
		return waits{}, err
	}
	sort.SliceStable(deferred, func(i, j int) bool { return deferred[i].RunAt.Before(deferred[j].RunAt) })
	all, err := s.cfg.Store.Waiters(ctx)
	if err != nil {
		return waits{}, err
	}
	var live []store.Waiter
	for _, w := range all {
		if s.cfg.WaiterAlive == nil || s.cfg.WaiterAlive(w) {
			live = append(live, w)
		}
	}
	return waits{Keys: keys, Deferred: deferred, Waiting: live}, nil
}

// jobPage is one page of the jobs listing.
type jobPage struct {
	Query jobQuery
	Jobs  []job.Job
	Total int // jobs that match, over every page
	Pages int
}

func (s *Server) listJobs(ctx context.Context, q jobQuery) (jobPage, error) {
	all, err := s.cfg.Store.ListJobs(ctx, q.State)
	if err != nil {
		return jobPage{}, err
	}
	var match []job.Job
	for _, j := range all {
		if q.Q == "" || strings.Contains(strings.ToLower(j.ID), strings.ToLower(q.Q)) {
			match = append(match, j)
		}
	}
	p := jobPage{Query: q, Total: len(match), Pages: max(1, (len(match)+PageSize-1)/PageSize)}
	if from := (q.Page - 1) * PageSize; from < len(match) {
		p.Jobs = match[from:min(from+PageSize, len(match))]
	}
	return p, nil
}

// runDetail is a workflow run with its tasks and their needs.
type runDetail struct {
	Run   record.Run
	Tasks []taskRow
	View  view.FlowRunDetail
	// CanCancel: the run is neither complete nor cancelled.
	CanCancel bool
}

// taskRow is a task on the run's page: its record and the tasks it needs.
type taskRow struct {
	record.Task
	Needs []string
}

// storedTasks is the part of a run's stored definition (record.Run.Definition)
// the console draws: each task's needs.
type storedTasks struct {
	Tasks []struct {
		Name  string   `json:"name"`
		Needs []string `json:"needs"`
	} `json:"tasks"`
}

func (s *Server) run(ctx context.Context, id string) (runDetail, error) {
	r, err := s.cfg.Store.Run(ctx, id)
	if err != nil {
		return runDetail{}, err
	}
	tasks, err := s.cfg.Store.RunTasks(ctx, id)
	if err != nil {
		return runDetail{}, err
	}
	needs := map[string][]string{}
	var def storedTasks
	if json.Unmarshal(r.Definition, &def) == nil { // an unreadable definition draws no needs
		for _, t := range def.Tasks {
			needs[t.Name] = t.Needs
		}
	}
	d := runDetail{Run: r, CanCancel: r.Status != record.RunComplete && r.Status != record.RunCancelled, View: view.FlowRunDetail{Run: view.NewFlowRun(r, tasks), Tasks: []view.FlowTask{}}}
	for _, t := range tasks {
		evs, err := s.cfg.Store.TaskEvents(ctx, id, t.Name)
		if err != nil {
			return runDetail{}, err
		}
		d.View.Tasks = append(d.View.Tasks, view.NewFlowTask(t, evs))
		d.Tasks = append(d.Tasks, taskRow{Task: t, Needs: needs[t.Name]})
	}
	return d, nil
}

// runRow is a run in the runs listing.
type runRow struct {
	Run   record.Run
	Tasks []record.Task
}

func (s *Server) runs(ctx context.Context) ([]runRow, view.FlowRuns, error) {
	runs, err := s.cfg.Store.Runs(ctx)
	if err != nil {
		return nil, view.FlowRuns{}, err
	}
	out := view.FlowRuns{Runs: []view.FlowRun{}}
	rows := make([]runRow, len(runs))
	for i, r := range runs {
		tasks, err := s.cfg.Store.RunTasks(ctx, r.ID)
		if err != nil {
			return nil, view.FlowRuns{}, err
		}
		rows[i] = runRow{Run: r, Tasks: tasks}
		out.Runs = append(out.Runs, view.NewFlowRun(r, tasks))
	}
	return rows, out, nil
}

// hostRow is a durable host with the leases it holds.
type hostRow struct {
	job.Host
	Live   bool
	Leased []job.Job
}

func (s *Server) hosts(ctx context.Context, now time.Time) ([]hostRow, error) {
	hs, err := s.cfg.Store.Hosts(ctx)
	if err != nil {
		return nil, err
	}
	running, err := s.cfg.Store.ListJobs(ctx, job.Running)
	if err != nil {
		return nil, err
	}
	rows := make([]hostRow, len(hs))
	for i, h := range hs {
		rows[i] = hostRow{Host: h, Live: h.Live(now)}
		for _, j := range running {
			if j.LeaseOwner == h.ID {
				rows[i].Leased = append(rows[i].Leased, j)
			}
		}
	}
	return rows, nil
}

// status is the HTTP status of a store error: 404 for what does not exist.
func status(err error) int {
	switch {
	case errors.Is(err, job.ErrNotFound):
		return 404
	case errors.Is(err, job.ErrTransition):
		return 409
	}
	return 500
}

// scheduleRow is a schedule with its next slot and its last claimed one.
type scheduleRow struct {
	store.Schedule
	Next    time.Time // zero: none comes, or the expression cannot be read (Error)
	Error   string
	Last    store.Slot
	HasLast bool
}

func (s *Server) schedules(ctx context.Context, now time.Time) ([]scheduleRow, error) {
	scheds, err := s.cfg.Store.Schedules(ctx)
	if err != nil {
		return nil, err
	}
	hosts, err := s.cfg.Store.Hosts(ctx)
	if err != nil {
		return nil, err
	}
	rows := make([]scheduleRow, len(scheds))
	for i, sc := range scheds {
		rows[i].Schedule = sc
		if e, err := schedule.Parse(sc.Cron, sc.TZ); err != nil {
			rows[i].Error = err.Error()
		} else {
			rows[i].Next = e.Next(now)
		}
		if rows[i].Last, rows[i].HasLast, err = s.cfg.Store.LastSlot(ctx, sc.Name); err != nil {
			return nil, err
		}
		rows[i].Last = schedule.Shown(rows[i].Last, hosts, now)
	}
	return rows, nil
}
