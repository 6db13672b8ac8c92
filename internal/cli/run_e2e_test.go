package cli_test

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/layoverhq/layover/internal/fake"
)

// The rules of run's engine (the cap, secondary retries, --quota before the
// start, the stale reset, deferral) are tested in process on a fake clock
// in package command (command/run_test.go). The tests here prove the
// binary's wiring: flags, the fake gh's real output, stderr lines, exit
// codes and what status shows of a waiting process.

var quick = []string{"--reset-margin", "0s", "--jitter", "0s"}

func runArgs(extra []string, cmd ...string) []string {
	args := append([]string{"run"}, quick...)
	args = append(args, extra...)
	return append(append(args, "--"), cmd...)
}

// A command that hits primary exhaustion waits for the reset GitHub reports,
// runs again as a fresh process, and says how long it waited.
func TestRunWaitsOutExhaustion(t *testing.T) {
	t.Parallel()
	b := setup(t, fake.GitHubConfig{})
	b.gh.SetQuota(testToken, "core", 0, nextSecond(4*time.Second))

	r := b.layover(runArgs(nil, "gh", "api", "/repos/octo/demo/issues")...)
	if r.code != 0 {
		t.Fatalf("exit %d, stderr:\n%s", r.code, r.stderr)
	}
	if !strings.Contains(r.stderr, "Quota wait until") {
		t.Errorf("stderr does not show the wait:\n%s", r.stderr)
	}
	lines := strings.Split(strings.TrimSpace(r.stderr), "\n")
	last := lines[len(lines)-1]
	if !strings.HasPrefix(last, "Waited ") || !strings.HasSuffix(last, " for the GitHub quota (core)") {
		t.Errorf("last stderr line %q; want Waited <d> for the GitHub quota (core)", last)
	}
	if n := b.ghRuns(); n != 2 {
		t.Errorf("gh ran %d times, want 2 (the failure, then the fresh run)", n)
	}
	if !strings.Contains(r.stdout, `"path"`) {
		t.Errorf("stdout lacks the successful call's output: %q", r.stdout)
	}
}

// GraphQL exhaustion inside an HTTP 200 is a quota wait on graphql.
func TestRunWaitsOutGraphQLExhaustion(t *testing.T) {
	t.Parallel()
	b := setup(t, fake.GitHubConfig{})
	b.gh.SetQuota(testToken, "graphql", 0, nextSecond(4*time.Second))
	r := b.layover(runArgs(nil, "gh", "pr", "list")...)
	if r.code != 0 || !strings.Contains(r.stderr, "for the GitHub quota (graphql)") {
		t.Fatalf("exit %d, stderr:\n%s", r.code, r.stderr)
	}
}

// Auth failures and permanent errors are never waited out.
func TestRunNeverWaitsOutAuthOrPermanent(t *testing.T) {
	t.Parallel()
	for name, cfg := range map[string]struct {
		gh     fake.GitHubConfig
		script []fake.Response
	}{
		"bad credentials": {gh: fake.GitHubConfig{Tokens: []string{"another-token"}}},
		"permission":      {script: []fake.Response{fake.PermissionDenied()}},
		"saml":            {script: []fake.Response{fake.SAMLEnforced()}},
		"server error":    {script: []fake.Response{fake.ServerError(502)}},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			b := setup(t, cfg.gh)
			if cfg.script != nil {
				b.gh.Script("/repos/octo/demo", cfg.script...)
			}
			r := b.layover(runArgs(nil, "gh", "api", "/repos/octo/demo")...)
			if r.code != 1 || b.ghRuns() != 1 || strings.Contains(r.stderr, "wait") {
				t.Fatalf("exit %d, gh runs %d; want gh's failure at once. stderr:\n%s", r.code, b.ghRuns(), r.stderr)
			}
		})
	}
}

// SIGINT and SIGTERM end a wait at once with 130 and 143; status lists the
// waiting command while it waits.
func TestRunWaitIsVisibleAndInterruptible(t *testing.T) {
	t.Parallel()
	for sig, want := range map[syscall.Signal]int{syscall.SIGINT: 130, syscall.SIGTERM: 143} {
		t.Run(sig.String(), func(t *testing.T) {
			t.Parallel()
			b := setup(t, fake.GitHubConfig{})
			b.gh.SetQuota(testToken, "core", 0, nextSecond(time.Hour))
			p := b.start(runArgs(nil, "gh", "api", "/repos/octo/demo")...)
			p.waitLine(t, "Quota wait until")

			st := b.layover("status", "--json")
			var s struct {
				Waiting []struct {
					PID       int    `json:"pid"`
					Command   string `json:"command"`
					Key       string `json:"key"`
					Stage     string `json:"stage"`
					WaitUntil string `json:"wait_until"`
				} `json:"waiting"`
			}
			if err := json.Unmarshal([]byte(st.stdout), &s); err != nil {
				t.Fatalf("%v\n%s", err, st.stdout)
			}
			if len(s.Waiting) != 1 || s.Waiting[0].PID != p.cmd.Process.Pid ||
				!strings.HasPrefix(s.Waiting[0].Stage, "Quota wait until ") ||
				s.Waiting[0].Command != "gh api /repos/octo/demo" || !strings.HasSuffix(s.Waiting[0].Key, "/core") {
				t.Fatalf("status waiting: %+v", s.Waiting)
			}
			text := b.layover("status")
			if !strings.Contains(text.stdout, "Quota wait until") || !strings.Contains(text.stdout, "pid ") {
				t.Errorf("status text:\n%s", text.stdout)
			}

			if err := p.cmd.Process.Signal(sig); err != nil {
				t.Fatal(err)
			}
			if code := p.wait(t); code != want {
				t.Fatalf("exit %d, want %d; stderr:\n%s", code, want, p.stderr())
			}
			st = b.layover("status", "--json")
			if strings.Contains(st.stdout, `"pid"`) {
				t.Errorf("the ended wait is still listed:\n%s", st.stdout)
			}
		})
	}
}

// A command that cannot be found or executed exits 127 or 126.
func TestRunCannotStart(t *testing.T) {
	t.Parallel()
	b := setup(t, fake.GitHubConfig{})
	if r := b.layover("run", "--", "no-such-command-xyz"); r.code != 127 || !strings.Contains(r.stderr, "not found") {
		t.Errorf("missing command: exit %d stderr %q", r.code, r.stderr)
	}
	if r := b.layover("run", "--", filepath.Join(b.dir)); r.code != 126 {
		t.Errorf("a directory as command: exit %d stderr %q", r.code, r.stderr)
	}
}

// A zero exit is ok whatever the command printed.
func TestRunZeroExitIsOK(t *testing.T) {
	t.Parallel()
	b := setup(t, fake.GitHubConfig{})
	r := b.layover("run", "--", "sh", "-c", "echo 'API rate limit exceeded for user ID 1.' >&2")
	if r.code != 0 || strings.Contains(r.stderr, "wait") {
		t.Fatalf("exit %d stderr %q", r.code, r.stderr)
	}
}
