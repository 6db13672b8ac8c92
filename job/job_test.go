package job_test

import (
	"testing"
	"time"

	"github.com/layoverhq/layover/job"
)

func TestSpecEqual(t *testing.T) {
	t.Parallel()

	deadline := time.Date(2026, 11, 11, 16, 0, 0, 0, time.FixedZone("CET", 3600))
	base := job.Spec{
		Name: "triage", Argv: []string{"gh", "issue", "list"}, EnvNames: []string{"GH_TOKEN"},
		Quota: []string{"github"}, Deadline: deadline, MaxAttempts: 3,
	}
	tests := []struct {
		name   string
		change func(*job.Spec)
		want   bool
	}{
		{"identical", func(*job.Spec) {}, true},
		{"deadline in another zone", func(s *job.Spec) { s.Deadline = deadline.UTC() }, true},
		{"no quota", func(s *job.Spec) { s.Quota = nil }, false},
		{"deadline a nanosecond later", func(s *job.Spec) { s.Deadline = deadline.Add(1) }, false},
		{"argv", func(s *job.Spec) { s.Argv = []string{"gh", "issue"} }, false},
		{"priority", func(s *job.Spec) { s.Priority = 1 }, false},
		{"progress timeout", func(s *job.Spec) { s.ProgressTimeout = time.Minute }, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()

			other := base
			tt.change(&other)
			if got := base.Equal(other); got != tt.want {
				t.Errorf("Equal = %v, want %v", got, tt.want)
			}
			if got := other.Equal(base); got != tt.want {
				t.Errorf("Equal, the other way = %v, want %v", got, tt.want)
			}
		})
	}

	t.Run("nil and empty lists", func(t *testing.T) {
		t.Parallel()

		a := job.Spec{Argv: []string{"true"}}
		b := job.Spec{Argv: []string{"true"}, EnvNames: []string{}, Quota: []string{}}
		if !a.Equal(b) || !b.Equal(a) {
			t.Error("a spec with empty lists is not Equal to one with nil lists")
		}
	})
}
