package store

import (
	"context"

	"github.com/layoverhq/layover/job"
)

// Changes is implemented by a store that can tell a durable host, soon
// after the write, that a job may have work for its scheduler: a job
// submitted or made due by another process (`layover submit`, `unblock`,
// `approve`) or another store handle. A host without it finds such a job
// at its next heartbeat; with it, at once (docs/lifecycle.md, Prompt start).
type Changes interface {
	// WatchJobs returns a channel that receives after writes, by any
	// handle or process on the same store, that may have made a job due
	// (see DueWork). Receives coalesce: the channel has a buffer of one,
	// and a receive may stand for many writes, or for none (a write the
	// backend cannot tell apart), so the receiver reads the store to learn
	// what changed. Watching never blocks nor slows a writer. The channel
	// is closed when ctx ends or the store is closed. A backend that loses
	// its means of watching for a while (a dropped connection) sends once
	// it has it back, since a write in between went unseen.
	WatchJobs(ctx context.Context) (<-chan struct{}, error)
}

// DueWork reports whether j, as a write left it, gives some host's
// scheduler work now or later: an unclaimed ready or resumable job, a
// deferral a host retains (its wake-up), an auth-wait job with a credentials
// check scheduled, or an ended job whose cleanup is due. A backend that
// signals watchers only for some writes signals those whose job this
// holds for.
func DueWork(j job.Job) bool {
	switch {
	case j.CleanupDue():
		return true
	case j.LeaseOwner != "":
		return false
	}
	switch j.State {
	case job.Ready, job.Resumable:
		return true
	case job.Deferred:
		return j.Ownership == job.Retained
	case job.AuthWait:
		return !j.RunAt.IsZero()
	}
	return false
}

// Signal sends on c without waiting: a receive already pending stands for
// this one too.
func Signal(c chan<- struct{}) {
	select {
	case c <- struct{}{}:
	default:
	}
}
