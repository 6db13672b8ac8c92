package cli

import (
	"context"
	"errors"
	"time"

	"github.com/layoverhq/layover/job"
	"github.com/layoverhq/layover/quota"
	"github.com/layoverhq/layover/store"
	"github.com/layoverhq/layover/workflow/record"
)

// errNoStore is every write to noStore.
var errNoStore = errors.New("no store: a reading command writes nothing")

// noStore is what a reading command (status, activity, jobs, show) reads
// when the default store does not exist yet: a store that holds nothing,
// so the answer is empty and nothing is created. Its writes fail.
type noStore struct{}

var _ store.Store = noStore{}

func (noStore) RecordStates(context.Context, []quota.State) error { return errNoStore }
func (noStore) States(context.Context, []quota.Key) ([]quota.State, error) {
	return nil, nil
}
func (noStore) AllStates(context.Context) ([]quota.State, error) { return nil, nil }
func (noStore) Observations(context.Context, quota.Key, time.Time, int) ([]store.Observation, error) {
	return nil, nil
}
func (noStore) Login(context.Context, string, string) (string, bool, error) {
	return "", false, nil
}
func (noStore) LearnLogin(context.Context, string, string, string, time.Time) error {
	return errNoStore
}
func (noStore) RecordSkip(context.Context, string, string, store.Activity) (bool, error) {
	return false, errNoStore
}
func (noStore) ClearSkip(context.Context, string) error                     { return errNoStore }
func (noStore) AppendActivity(context.Context, store.Activity) error        { return errNoStore }
func (noStore) Activity(context.Context, int) ([]store.Activity, error)     { return nil, nil }
func (noStore) RegisterWaiter(context.Context, store.Waiter) (int64, error) { return 0, errNoStore }
func (noStore) RemoveWaiter(context.Context, int64) error                   { return errNoStore }
func (noStore) Waiters(context.Context) ([]store.Waiter, error)             { return nil, nil }
func (noStore) SubmitJob(context.Context, job.Job, *job.Receipt, time.Time) (job.Job, bool, error) {
	return job.Job{}, false, errNoStore
}
func (noStore) Job(context.Context, string) (job.Job, error) { return job.Job{}, job.ErrNotFound }
func (noStore) JobsByID(context.Context, []string) (map[string]job.Job, error) {
	return map[string]job.Job{}, nil
}
func (noStore) ListJobs(context.Context, job.State) ([]job.Job, error) {
	return nil, nil
}
func (noStore) JobHistory(context.Context, string) (job.History, error) {
	return job.History{}, job.ErrNotFound
}
func (noStore) PendingCleanups(context.Context, int) ([]job.Job, error) { return nil, nil }
func (noStore) CountJobs(context.Context) (map[job.State]int, error) {
	return map[job.State]int{}, nil
}
func (noStore) ApplyJob(context.Context, string, int64, job.Change) (job.Job, error) {
	return job.Job{}, errNoStore
}
func (noStore) ClaimJobs(context.Context, string, time.Time, time.Duration, int) ([]job.Job, error) {
	return nil, errNoStore
}
func (noStore) RenewLeases(context.Context, string, map[string]int64, time.Time, time.Duration) ([]string, error) {
	return nil, errNoStore
}
func (noStore) SweepJobs(context.Context, time.Time) (store.SweepResult, error) {
	return store.SweepResult{}, errNoStore
}
func (noStore) NextJobDue(context.Context) (time.Time, bool, error) { return time.Time{}, false, nil }
func (noStore) RegisterHost(context.Context, job.Host) error        { return errNoStore }
func (noStore) HostHeartbeat(context.Context, string, time.Time) error {
	return errNoStore
}
func (noStore) UnregisterHost(context.Context, string) error { return errNoStore }
func (noStore) Hosts(context.Context) ([]job.Host, error)    { return nil, nil }
func (noStore) CreateRun(context.Context, record.Run, []record.Task, time.Time) (record.Run, bool, error) {
	return record.Run{}, false, errNoStore
}
func (noStore) Run(context.Context, string) (record.Run, error) { return record.Run{}, job.ErrNotFound }
func (noStore) Runs(context.Context) ([]record.Run, error)      { return nil, nil }
func (noStore) RunTasks(context.Context, string) ([]record.Task, error) {
	return nil, job.ErrNotFound
}
func (noStore) UpdateRun(context.Context, record.Run, time.Time) (record.Run, error) {
	return record.Run{}, errNoStore
}
func (noStore) UpdateTask(context.Context, record.Task, *record.TaskEvent, time.Time) (record.Task, error) {
	return record.Task{}, errNoStore
}
func (noStore) UpdateTasks(context.Context, []record.TaskWrite, time.Time) ([]record.Task, error) {
	return nil, errNoStore
}
func (noStore) TaskEvents(context.Context, string, string) ([]record.TaskEvent, error) {
	return nil, job.ErrNotFound
}
func (noStore) CountRuns(context.Context) (map[record.RunStatus]int, error) {
	return map[record.RunStatus]int{}, nil
}
func (noStore) Close() error                                            { return nil }
func (noStore) AddSchedule(context.Context, store.Schedule, bool) error { return errNoStore }
func (noStore) Schedules(context.Context) ([]store.Schedule, error)     { return nil, nil }
func (noStore) RemoveSchedule(context.Context, string) error            { return errNoStore }
func (noStore) ClaimSlot(context.Context, store.Slot) (bool, error)     { return false, errNoStore }
func (noStore) FinishSlot(context.Context, string, time.Time, store.SlotResult, string) error {
	return errNoStore
}
func (noStore) LastSlot(context.Context, string) (store.Slot, bool, error) {
	return store.Slot{}, false, nil
}
func (noStore) TakeResumeSlot(context.Context, quota.Key, time.Time, time.Duration) (time.Time, error) {
	return time.Time{}, errNoStore
}
