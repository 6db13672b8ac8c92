package job_test

import (
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/layoverhq/layover/job"
)

// TestSubmitted holds the submission rule both stores apply: what a new job
// starts as, whatever the submitter put in the fields that are the store's.
func TestSubmitted(t *testing.T) {
	t.Parallel()

	now := time.Date(2026, 11, 10, 15, 4, 5, 123_456_789, time.FixedZone("CET", 3600))
	earlier := now.Add(-time.Hour)
	wake := now.Add(41 * time.Minute)
	cp := &job.Checkpoint{Stage: "tests pass", Data: []byte(`{"commit":"abc"}`), At: earlier}
	// given sets every field: the store's own ones to what a new job
	// cannot have.
	given := func(st job.State) job.Job {
		return job.Job{
			ID: "j1", Spec: job.Spec{Name: "sync", Argv: []string{"gh", "pr", "list"}, Priority: 7},
			State: st, Stage: "Quota wait until 15:45", Ownership: job.Retained,
			CreatedAt: earlier, UpdatedAt: earlier, RunAt: wake, ResumeBy: wake.Add(time.Hour),
			Fence: 9, LeaseOwner: "host-a", LeaseUntil: now.Add(time.Minute), ProgressBy: now.Add(time.Hour),
			Attempts: 1, Probes: 2, Runs: 3, Secondaries: 4, Approved: true, SessionID: "sess-1", Checkpoint: cp,
			Cleanup: job.CleanupDone,
		}
	}
	// kept is given(st) as submitted: the state as wanted, created and
	// updated now, unclaimed, no cleanup (its spec names none), everything
	// else as it was.
	kept := func(st, want job.State) job.Job {
		j := given(st)
		j.State, j.CreatedAt, j.UpdatedAt = want, now, now
		j.Fence, j.LeaseOwner, j.LeaseUntil = 0, "", time.Time{}
		j.Cleanup = job.CleanupNone
		return j
	}

	tests := []struct {
		name  string
		state job.State
		want  job.State // "": refused with ErrTransition
	}{
		{"no state is ready", "", job.Ready},
		{"ready", job.Ready, job.Ready},
		{"deferred", job.Deferred, job.Deferred},
		{"running", job.Running, ""},
		{"resumable", job.Resumable, ""},
		{"auth-wait", job.AuthWait, ""},
		{"blocked", job.Blocked, ""},
		{"complete", job.Complete, ""},
		{"failed", job.Failed, ""},
		{"cancelled", job.Cancelled, ""},
		{"unknown", "paused", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()

			got, err := given(tt.state).Submitted(now)
			if tt.want == "" {
				if !errors.Is(err, job.ErrTransition) {
					t.Fatalf("Submitted as %q = %v, want job.ErrTransition", tt.state, err)
				}
				return
			}
			if err != nil {
				t.Fatalf("Submitted as %q: %v", tt.state, err)
			}
			if want := kept(tt.state, tt.want); !reflect.DeepEqual(got, want) {
				t.Errorf("Submitted as %q =\n %+v\nwant\n %+v", tt.state, got, want)
			}
		})
	}

	t.Run("a cleanup command arms the cleanup", func(t *testing.T) {
		t.Parallel()

		j := given(job.Ready)
		j.Spec.CleanupCmd = "gh issue edit 7 --remove-assignee @me"
		got, err := j.Submitted(now)
		if err != nil || got.Cleanup != job.CleanupArmed {
			t.Errorf("Submitted with a cleanup command: cleanup %q, %v; want %q", got.Cleanup, err, job.CleanupArmed)
		}
	})

	t.Run("an id is needed", func(t *testing.T) {
		t.Parallel()

		if _, err := (job.Job{Spec: job.Spec{Argv: []string{"true"}}}).Submitted(now); err == nil {
			t.Error("Submitted without an id = nil error")
		}
	})
}

// TestCleanupDue: an armed cleanup is due once its job ended cancelled or
// failed, never after a completion, and never twice.
func TestCleanupDue(t *testing.T) {
	t.Parallel()

	for _, st := range job.States {
		for _, c := range []string{job.CleanupNone, job.CleanupArmed, job.CleanupRunning("host-a"), job.CleanupDone,
			job.CleanupFailed("exit 2")} {
			want := c == job.CleanupArmed && (st == job.Cancelled || st == job.Failed)
			if got := (job.Job{State: st, Cleanup: c}).CleanupDue(); got != want {
				t.Errorf("a %s job with cleanup %q: CleanupDue = %v, want %v", st, c, got, want)
			}
		}
	}
}
