// Package record holds the stored records of workflow runs and their tasks
// (docs/workflows.md): what both stores keep of a run, of each of its tasks
// and of each task's history, and the rules a record must keep to be
// written. It is a leaf package: the stores and the workflow engine share
// it without importing each other.
package record

import (
	"encoding/json"
	"errors"
	"time"

	"github.com/layoverhq/layover/job"
)

// ErrConflict is a write that does not apply to the stored record: an
// update whose Version is not the stored one (someone else wrote first:
// read the record again), or a run id reused with another definition. A
// run or task that does not exist is job.ErrNotFound, the stores' one
// not-found error.
var ErrConflict = errors.New("conflicting workflow write")

// RunStatus is where a run stands as a whole.
type RunStatus string

// The statuses of a run. They share their words with task states, so both
// sets carry their type's prefix (RunPaused, TaskPaused).
const (
	RunRunning   RunStatus = "running"   // tasks may still start
	RunPaused    RunStatus = "paused"    // nothing can run before a quota's reset
	RunComplete  RunStatus = "complete"  // every task completed
	RunFailed    RunStatus = "failed"    // a task failed or is blocked
	RunCancelled RunStatus = "cancelled" // flow cancel
)

// Known reports whether s is one of the statuses above.
func (s RunStatus) Known() bool {
	switch s {
	case RunRunning, RunPaused, RunComplete, RunFailed, RunCancelled:
		return true
	}
	return false
}

// TaskState is where one task of a run stands.
type TaskState string

// The states of a task (docs/workflows.md, Task states).
const (
	TaskPending   TaskState = "pending"   // its needs have not all completed
	TaskRunning   TaskState = "running"   // an attempt is under way
	TaskWaiting   TaskState = "waiting"   // a known reset within max_wait is waited out in the process
	TaskPaused    TaskState = "paused"    // a quota stopped it; it runs again after the reset
	TaskAuthWait  TaskState = "auth-wait" // waiting for working credentials
	TaskComplete  TaskState = "complete"  // done and verified; never changes again
	TaskFailed    TaskState = "failed"    // out of attempts, or a failure that does not retry
	TaskBlocked   TaskState = "blocked"   // its check said neither done nor to run; an operator unblocks it
	TaskCancelled TaskState = "cancelled" // flow cancel, or the run's timeout
	TaskSkipped   TaskState = "skipped"   // a dependency failed
)

// Known reports whether s is one of the states above.
func (s TaskState) Known() bool {
	switch s {
	case TaskPending, TaskRunning, TaskWaiting, TaskPaused, TaskAuthWait,
		TaskComplete, TaskFailed, TaskBlocked, TaskCancelled, TaskSkipped:
		return true
	}
	return false
}

// Terminal reports whether a task in state s is done with: complete,
// failed, cancelled or skipped. Blocked is not: an operator may unblock it.
func (s TaskState) Terminal() bool {
	switch s {
	case TaskComplete, TaskFailed, TaskCancelled, TaskSkipped:
		return true
	}
	return false
}

// Run is the stored record of one run of a workflow. ID, Definition and
// CreatedAt never change once stored; Version and UpdatedAt are the
// store's.
type Run struct {
	ID, Name   string
	Definition json.RawMessage // the definition as run, canonical JSON; never changes
	Status     RunStatus
	Durable    bool // flow submit: the durable host owns it
	CreatedAt  time.Time
	UpdatedAt  time.Time
	Deadline   time.Time // the run's timeout; zero: none
	Starts     int       // task starts so far (the budget counts them)
	// Version is 1 when the run is created; every update must carry the
	// stored one (else ErrConflict), and the store increments it.
	Version int64
}

// Quota is the quota that paused a task.
type Quota struct {
	Provider, Resource string
	ResetAt            time.Time // zero: unknown
	Message            string
}

// Task is the stored record of one task of a run. RunID and Name never
// change; Version and UpdatedAt are the store's, as for Run.
type Task struct {
	RunID, Name string
	State       TaskState
	Stage       string
	Attempts    int                  // failures that count (quota pauses never do)
	Starts      int                  // attempts started, quota reruns included
	Candidate   string               // the agent candidate used last
	SessionID   string               // the captured conversation
	Workdir     string               // where the conversation ran
	Quota       *Quota               // the quota that paused it; nil: none
	Limited     map[string]time.Time // candidate -> until when it is skipped
	WaitingOn   string               // the dependency that caused the wait, e.g. "needs review", "quota claude-code/five_hour"
	Checkpoint  *job.Checkpoint      // the last verified checkpoint; nil: none
	JobID       string               // flow submit: the job that runs it
	UpdatedAt   time.Time
	Version     int64
}

// TaskWrite is one task update of a batch (store.Store's UpdateTasks): the
// task as to be written, a compare-and-set on its Version, and the event
// appended with it (nil: none).
type TaskWrite struct {
	Task  Task
	Event *TaskEvent
}

// TaskEvent is one entry of a task's history. A task's history is
// append-only: entries are written with the task's updates and never
// change.
type TaskEvent struct {
	RunID, Task string
	Seq         int // from 1 per task, assigned by the store
	At          time.Time
	// From and To are equal for an event without a move (a waiting
	// notice, a candidate switch).
	From, To  TaskState
	Reason    string
	AttemptID string
	ExitCode  *int   // nil: no exit seen
	Outcome   string // an outcome class, or ""
	Candidate string
}
