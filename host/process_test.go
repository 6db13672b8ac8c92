package host_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/layoverhq/layover/host"
	"github.com/layoverhq/layover/host/supervisor"
	"github.com/layoverhq/layover/internal/proctest"
	"github.com/layoverhq/layover/job"
	"github.com/layoverhq/layover/provider"
)

// The test binary doubles as the supervisor program.
func TestMain(m *testing.M) {
	if supervisor.IsSupervisor(os.Args) {
		os.Exit(supervisor.Main(os.Args[2:]))
	}
	os.Exit(m.Run())
}

// syncBuffer is an io.Writer safe for the runner's two output streams.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// classified records what the runner handed its classifier.
type classified struct {
	code           int
	stdout, stderr string
}

func processRunner(supervised bool, out *syncBuffer, seen *classified) *host.ProcessRunner {
	p := &host.ProcessRunner{Output: out, Grace: time.Second,
		Classify: func(code int, stdout, stderr []byte, _ time.Time) provider.Outcome {
			*seen = classified{code, string(stdout), string(stderr)}
			return provider.Unknown("test", provider.ClassPermanent, "exit "+strconv.Itoa(code))
		}}
	if supervised {
		p.Supervisor = os.Args[0]
	}
	return p
}

func attempt(argv ...string) host.Run {
	return host.Run{Job: job.Job{ID: "j"}, Argv: argv, Env: []string{"PATH=" + os.Getenv("PATH")}}
}

func eventually(t *testing.T, cond func() bool, what string) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond(); {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestProcessRunner(t *testing.T) {
	t.Parallel()
	for _, supervised := range []bool{false, true} {
		name := "direct"
		if supervised {
			name = "supervised"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			t.Run("exit 0 is ok, output prefixed with the job id", func(t *testing.T) {
				var out syncBuffer
				var seen classified
				res := processRunner(supervised, &out, &seen).Run(context.Background(), attempt("sh", "-c", "echo hello; echo oops >&2"))
				if res.ExitCode != 0 || res.Outcome.Class != provider.ClassOK {
					t.Fatalf("result %+v", res)
				}
				if got := out.String(); !strings.Contains(got, "[j] hello\n") || !strings.Contains(got, "[j] oops\n") {
					t.Errorf("output %q", got)
				}
			})
			t.Run("a failure is classified from its code and output", func(t *testing.T) {
				var out syncBuffer
				var seen classified
				res := processRunner(supervised, &out, &seen).Run(context.Background(), attempt("sh", "-c", "echo limit; echo reached >&2; exit 3"))
				if res.ExitCode != 3 || res.Outcome.Class != provider.ClassPermanent {
					t.Fatalf("result %+v", res)
				}
				if seen.code != 3 || seen.stdout != "limit\n" || seen.stderr != "reached\n" {
					t.Errorf("classifier saw %+v", seen)
				}
			})
			t.Run("a command that cannot start is permanent", func(t *testing.T) {
				var out syncBuffer
				var seen classified
				res := processRunner(supervised, &out, &seen).Run(context.Background(), attempt("/nonexistent/layover-job"))
				if res.ExitCode != -1 || res.Outcome.Class != provider.ClassPermanent || !strings.Contains(res.Outcome.Reason, "cannot start") {
					t.Fatalf("result %+v", res)
				}
			})
			t.Run("what the job leaves behind does not hold the attempt and is killed", func(t *testing.T) {
				pidFile := filepath.Join(t.TempDir(), "pid")
				var out syncBuffer
				var seen classified
				// The background sleep keeps the job's output open.
				res := processRunner(supervised, &out, &seen).Run(context.Background(),
					attempt("sh", "-c", "sleep 60 & echo $! > "+pidFile+"; echo started"))
				if res.ExitCode != 0 {
					t.Fatalf("result %+v", res)
				}
				raw, _ := os.ReadFile(pidFile)
				pid, err := strconv.Atoi(strings.TrimSpace(string(raw)))
				if err != nil {
					t.Fatalf("pid file %q", raw)
				}
				eventually(t, func() bool { return !proctest.Alive(pid) }, "the job's background process to be killed")
			})
			t.Run("a stopped attempt gets SIGTERM and ends as transient", func(t *testing.T) {
				dir := t.TempDir()
				ready, trapped := filepath.Join(dir, "ready"), filepath.Join(dir, "trapped")
				ctx, cancel := context.WithCancel(context.Background())
				done := make(chan host.Result, 1)
				var out syncBuffer
				var seen classified
				go func() {
					done <- processRunner(supervised, &out, &seen).Run(ctx, attempt("sh", "-c",
						"trap 'touch "+trapped+"; exit 143' TERM; touch "+ready+"; while :; do sleep 0.05; done"))
				}()
				eventually(t, func() bool { _, err := os.Stat(ready); return err == nil }, "the job to start")
				cancel()
				res := <-done
				if res.Outcome.Class != provider.ClassTransient || !strings.Contains(res.Outcome.Reason, "stopped by the host") {
					t.Fatalf("result %+v", res)
				}
				if _, err := os.Stat(trapped); err != nil {
					t.Errorf("the job never saw SIGTERM: %v", err)
				}
			})
		})
	}
}

// Issue 8 finding 5: the job's output that the runner copies to the host's
// log, the output its classifier reads and the outcome reason the store
// keeps hold none of the job's secrets, whole or cut short: the values of
// the variables it declared, the runner's Secrets, and tokens of known
// shapes.
func TestProcessRunnerMasksSecrets(t *testing.T) {
	t.Parallel()
	const declared, hostToken = "plain-deploy-value-1", "0123456789abcdef0123456789abcdef01234567"
	var out syncBuffer
	var seen classified
	p := &host.ProcessRunner{Output: &out, Secrets: []string{hostToken},
		Classify: func(code int, stdout, stderr []byte, _ time.Time) provider.Outcome {
			seen = classified{code, string(stdout), string(stderr)}
			// A classifier quotes a message cut short.
			return provider.Unknown("test", provider.ClassPermanent, "exit "+strconv.Itoa(code)+": "+string(stderr[:min(len(stderr), 24)]))
		}}
	// More than the 64 KiB tail: the kept tail starts inside the token on
	// stdout's first line.
	big := filepath.Join(t.TempDir(), "big")
	if err := os.WriteFile(big, []byte(strings.Repeat("a", 10)+hostToken+"\n"+strings.Repeat("b", 64<<10-20)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	r := attempt("sh", "-c", `echo "key $DEPLOY_KEY"; printf 'token %s ghp_abcdefghijklmnopqrstuvwxyz0123456789' "$HOST_TOKEN" >&2; cat `+big+`; exit 1`)
	r.Job.Spec.EnvNames = []string{"DEPLOY_KEY"}
	r.Env = append(r.Env, "DEPLOY_KEY="+declared, "HOST_TOKEN="+hostToken)
	res := p.Run(context.Background(), r)
	if res.ExitCode != 1 {
		t.Fatalf("result %+v", res)
	}
	log := out.String()
	if !strings.Contains(log, "[j] key [redacted]\n") || !strings.Contains(log, "[j] token [redacted] [redacted]") {
		t.Errorf("output %.200q: want each secret masked", log)
	}
	if want := "exit 1: token [redacted] [redact"; res.Outcome.Reason != want {
		t.Errorf("reason %q, want %q", res.Outcome.Reason, want)
	}
	if !strings.HasPrefix(seen.stdout, "bbbb") || seen.stderr != "token [redacted] [redacted]" {
		t.Errorf("classifier saw stdout %.40q… and stderr %q: want whole lines, masked", seen.stdout, seen.stderr)
	}
	for _, s := range []string{declared, hostToken[:16], hostToken[24:], "ghp_"} {
		if strings.Contains(log, s) || strings.Contains(res.Outcome.Reason, s) || strings.Contains(seen.stdout+seen.stderr, s) {
			t.Errorf("%q reached the log, the classifier or the reason", s)
		}
	}
}
