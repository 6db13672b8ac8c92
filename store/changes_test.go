package store_test

import (
	"testing"
	"time"

	"github.com/layoverhq/layover/job"
	"github.com/layoverhq/layover/store"
)

func TestDueWork(t *testing.T) {
	now := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		name string
		j    job.Job
		want bool
	}{
		{"ready", job.Job{State: job.Ready, RunAt: now}, true},
		{"ready later", job.Job{State: job.Ready, RunAt: now.Add(time.Hour)}, true},
		{"ready claimed", job.Job{State: job.Ready, LeaseOwner: "h"}, false},
		{"resumable", job.Job{State: job.Resumable}, true},
		{"running", job.Job{State: job.Running, LeaseOwner: "h"}, false},
		{"deferred retained", job.Job{State: job.Deferred, Ownership: job.Retained, RunAt: now}, true},
		{"deferred handed off", job.Job{State: job.Deferred, Ownership: job.Handoff, RunAt: now}, false},
		{"auth-wait with a check", job.Job{State: job.AuthWait, RunAt: now}, true},
		{"auth-wait for unblock", job.Job{State: job.AuthWait}, false},
		{"blocked", job.Job{State: job.Blocked}, false},
		{"complete", job.Job{State: job.Complete, Cleanup: job.CleanupArmed}, false},
		{"cancelled with cleanup", job.Job{State: job.Cancelled, Cleanup: job.CleanupArmed}, true},
		{"failed", job.Job{State: job.Failed}, false},
	} {
		if got := store.DueWork(c.j); got != c.want {
			t.Errorf("%s: DueWork = %v, want %v", c.name, got, c.want)
		}
	}
}
