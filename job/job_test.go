package job_test

import (
	"errors"
	"strings"
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

// Issue 8 findings 5 and 8: a spec the store would keep with a secret in it,
// or with an unbounded or unprintable name, is refused.
func TestSpecValidate(t *testing.T) {
	t.Parallel()
	const hex40 = "0123456789abcdef0123456789abcdef01234567"
	ok := job.Spec{Name: "nightly sync ✓", Argv: []string{"git", "checkout", hex40}, EnvNames: []string{"DEPLOY_KEY"},
		ResumeCmd: `curl -H "Authorization: token $GH_TOKEN" https://api.github.com/user`}
	if err := ok.Validate(); err != nil {
		t.Fatalf("a clean spec: %v", err)
	}
	tests := []struct {
		name   string
		change func(*job.Spec)
		known  []string
		secret bool
	}{
		{"no command", func(s *job.Spec) { s.Argv = nil }, nil, false},
		{"token in argv", func(s *job.Spec) {
			s.Argv = []string{"gh", "api", "-H", "Authorization: Bearer ghp_abcdefghijklmnopqrstuvwxyz0123456789"}
		}, nil, true},
		{"40-hex as GH_TOKEN=", func(s *job.Spec) { s.Argv = []string{"env", "GH_TOKEN=" + hex40, "gh", "api", "/user"} }, nil, true},
		{"known 40-hex", func(s *job.Spec) {}, []string{hex40}, true},
		{"known plain value", func(s *job.Spec) { s.CheckCmd = "test -f /x || deploy hunter2hunter2" }, []string{"hunter2hunter2"}, true},
		{"token in resume", func(s *job.Spec) { s.ResumeCmd = "gh api --token=gho_abcdefghijklmnopqrstuvwxyz0123456789" }, nil, true},
		{"token in verify", func(s *job.Spec) { s.VerifyCmd = "check sk-ant-api03-abcdefghijklmnopqrstuv" }, nil, true},
		{"token in plan", func(s *job.Spec) { s.PlanCmd = "plan AIzaSyA1234567890abcdefghijklmnopqrstu" }, nil, true},
		{"token in name", func(s *job.Spec) { s.Name = "sync ghs_16C7e42F292c6912E7710c838347Ae178B4a" }, nil, true},
		{"name too long", func(s *job.Spec) { s.Name = strings.Repeat("n", job.MaxNameBytes+1) }, nil, false},
		{"name with escape", func(s *job.Spec) { s.Name = "red \x1b[31mname" }, nil, false},
		{"name with newline", func(s *job.Spec) { s.Name = "two\nlines" }, nil, false},
		{"name not UTF-8", func(s *job.Spec) { s.Name = "bad \xff" }, nil, false},
		{"bad env name", func(s *job.Spec) { s.EnvNames = []string{"1X"} }, nil, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s := ok
			tt.change(&s)
			err := s.Validate(tt.known...)
			if err == nil {
				t.Fatal("accepted")
			}
			if errors.Is(err, job.ErrSecret) != tt.secret {
				t.Errorf("error %q: secret %v, want %v", err, !tt.secret, tt.secret)
			}
			if strings.Contains(err.Error(), hex40) || strings.Contains(err.Error(), "hunter2") || strings.Contains(err.Error(), "_abcdefghij") {
				t.Errorf("the error quotes the secret: %v", err)
			}
		})
	}
	long := ok
	long.Name = strings.Repeat("é", job.MaxNameBytes/2)
	if err := long.Validate(); err != nil {
		t.Errorf("a name of exactly %d bytes: %v", job.MaxNameBytes, err)
	}
}

func TestHostLive(t *testing.T) {
	t.Parallel()

	seen := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		name  string
		lease time.Duration
		after time.Duration
		want  bool
	}{
		{"within its lease", 30 * time.Second, 29 * time.Second, true},
		{"at its lease's end", 30 * time.Second, 30 * time.Second, true},
		{"past its lease", 30 * time.Second, 31 * time.Second, false},
		{"a long lease keeps it live", 10 * time.Minute, 5 * time.Minute, true},
		{"a short lease ends sooner", 5 * time.Second, 6 * time.Second, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			h := job.Host{ID: "h", LastSeen: seen, Lease: tt.lease}
			if got := h.Live(seen.Add(tt.after)); got != tt.want {
				t.Errorf("Live %s after a heartbeat with a %s lease = %v, want %v", tt.after, tt.lease, got, tt.want)
			}
		})
	}
}
