package job_test

import (
	"testing"
	"time"

	"github.com/layoverhq/layover/job"
)

// TestCanMoveAuthWait holds the auth-wait edges of docs/lifecycle.md: only
// a running job starts waiting for credentials, and a wait for credentials
// ends in ready (they work again, or an unblock), failed (the deadline) or
// cancelled; never in a quota state.
func TestCanMoveAuthWait(t *testing.T) {
	t.Parallel()

	for _, from := range job.States {
		if got, want := job.CanMove(from, job.AuthWait), from == job.Running; got != want {
			t.Errorf("CanMove(%s, auth-wait) = %v, want %v", from, got, want)
		}
	}
	allowed := map[job.State]bool{job.Ready: true, job.Failed: true, job.Cancelled: true}
	for _, to := range job.States {
		if got := job.CanMove(job.AuthWait, to); got != allowed[to] {
			t.Errorf("CanMove(auth-wait, %s) = %v, want %v", to, got, allowed[to])
		}
	}
	if !job.AuthWait.Valid() || job.AuthWait.Terminal() {
		t.Error("auth-wait must be a valid, unfinished state")
	}

	// Kept (To ""): a re-check that fails again changes the wake-up only.
	j := job.Job{ID: "j1", State: job.AuthWait}
	ch := job.Change{Now: time.Unix(100, 0), Mutate: func(x *job.Job) { x.RunAt = time.Unix(400, 0) }}
	got, _, err := ch.Apply(j, job.NoFence)
	if err != nil || got.State != job.AuthWait || !got.RunAt.Equal(time.Unix(400, 0)) {
		t.Errorf("keeping auth-wait = %+v, %v", got, err)
	}
}

func TestWithWaits(t *testing.T) {
	t.Parallel()

	t0 := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	at := func(m int) time.Time { return t0.Add(time.Duration(m) * time.Minute) }
	tr := func(from, to job.State, m int) job.Transition {
		return job.Transition{From: from, To: to, At: at(m)}
	}
	att := func(start, end int) job.Attempt {
		a := job.Attempt{ID: "a", StartedAt: at(start), WaitedS: 99}
		if end >= 0 {
			a.EndedAt = at(end)
		}
		return a
	}

	tests := []struct {
		name     string
		attempts []job.Attempt
		trs      []job.Transition
		want     []float64
	}{
		{
			name:     "run at once: no wait",
			attempts: []job.Attempt{att(1, 5)},
			trs:      []job.Transition{tr("", job.Ready, 0), tr(job.Ready, job.Running, 1), tr(job.Running, job.Complete, 5)},
			want:     []float64{0},
		},
		{
			name:     "deferred at submission",
			attempts: []job.Attempt{att(42, 50)},
			trs: []job.Transition{tr("", job.Deferred, 0), tr(job.Deferred, job.Resumable, 40),
				tr(job.Resumable, job.Running, 42), tr(job.Running, job.Complete, 50)},
			want: []float64{42 * 60},
		},
		{
			name:     "a chain of two deferrals",
			attempts: []job.Attempt{att(1, 10), att(75, 80)},
			trs: []job.Transition{tr("", job.Ready, 0), tr(job.Ready, job.Running, 1),
				tr(job.Running, job.Deferred, 10), tr(job.Deferred, job.Resumable, 30),
				tr(job.Resumable, job.Deferred, 31), tr(job.Deferred, job.Resumable, 70),
				tr(job.Resumable, job.Running, 75), tr(job.Running, job.Complete, 80)},
			want: []float64{0, 65 * 60},
		},
		{
			name:     "a backoff in ready and a wait for credentials are no quota wait",
			attempts: []job.Attempt{att(1, 2), att(20, 21), att(40, -1)},
			trs: []job.Transition{tr("", job.Ready, 0), tr(job.Ready, job.Running, 1),
				tr(job.Running, job.Ready, 2), tr(job.Ready, job.Running, 20),
				tr(job.Running, job.AuthWait, 21), tr(job.AuthWait, job.Ready, 35), tr(job.Ready, job.Running, 40)},
			want: []float64{0, 0, 0},
		},
		{
			name:     "only the wait before each attempt counts",
			attempts: []job.Attempt{att(10, 11), att(30, 31)},
			trs: []job.Transition{tr("", job.Deferred, 0), tr(job.Deferred, job.Resumable, 5),
				tr(job.Resumable, job.Running, 10), tr(job.Running, job.Deferred, 11),
				tr(job.Deferred, job.Resumable, 25), tr(job.Resumable, job.Running, 30)},
			want: []float64{600, 19 * 60},
		},
		{
			name:     "no transitions",
			attempts: []job.Attempt{att(1, 2)},
			want:     []float64{0},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()

			h := job.History{Attempts: tt.attempts, Transitions: tt.trs}
			got := h.WithWaits()
			for i, w := range tt.want {
				if got.Attempts[i].WaitedS != w {
					t.Errorf("attempt %d waited %v s, want %v", i, got.Attempts[i].WaitedS, w)
				}
			}
			if tt.attempts[0].WaitedS != 99 {
				t.Error("WithWaits changed the history it was given")
			}
		})
	}
}
