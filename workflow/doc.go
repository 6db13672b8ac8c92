// Package workflow defines workflows: named graphs of tasks that pause on
// a quota and resume, each task a shell command, an agent CLI with its
// fallback candidates, or a Go function (docs/workflows.md).
//
// # Definitions
//
// A Definition is plain data, built in Go or read from a YAML or JSON file
// with ParseFile. Its tasks name the tasks they need; Order gives them in
// a dependency order and Dependents the tasks that wait on one. Validate
// refuses what no run could carry out: a need that names no task, a cycle
// of needs, an unknown agent or quota, bounds exceeded.
//
//	def := workflow.Definition{
//		Name: "nightly",
//		Tasks: []workflow.Task{
//			{Name: "fetch", Run: "./fetch.sh", Quota: []string{"github"}},
//			{Name: "review", Needs: []string{"fetch"}, Agent: []string{"claude", "codex"}, Prompt: "Review the fetched changes."},
//		},
//	}
//	if err := def.Validate(); err != nil { … }
//
// # Files
//
// A file's keys are exactly those docs/workflows.md lists, each once; a
// fault (an unknown key, a missing need, a cycle, an unknown agent, a
// duration that does not parse) is a *FileError holding the file, the
// line and the field at fault, whose Error is one line.
//
// A Definition holds no run state: a run's state lives in the store,
// under its run id.
//
// # Runs
//
// Start runs a Definition in the process under a run id on a store, and
// returns the run's status (complete, paused or failed) with each task's
// record: its state, attempts, candidate, session and quota record. A
// quota hit never counts as an attempt: the task switches to its next
// candidate, waits out a reset within on_quota.max_wait, or pauses while
// independent tasks go on. Start again with the same run id resumes the
// run: completed tasks never run again, a paused one runs once its reset
// has passed (or at once when its reset is unknown), and its first
// attempt continues the captured conversation. QuotaFault reads the reset
// and message out of a quota error, however wrapped. See ExampleStart and
// docs/workflows.md (Semantics).
package workflow
