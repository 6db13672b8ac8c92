package cli_test

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/layoverhq/layover/internal/fake"
	"github.com/layoverhq/layover/internal/proctest"
)

// binDir holds the layover binary and the fake gh, built once by TestMain.
var binDir string

func TestMain(m *testing.M) {
	proctest.Main(m, &binDir, raceEnabled, map[string]string{
		"../../cmd/layover": "layover", "../fake/cmd/gh": "gh", "../fake/cmd/agent": "claude"})
}

const testToken = "test-token-1"

// bundle is one end-to-end test's world: a fake GitHub, a store, and the
// environment the layover binary runs in.
type bundle struct {
	t     *testing.T
	gh    *fake.GitHub
	base  string
	dir   string
	store string
	ghLog string
	env   map[string]string
	// sysProc starts the binary (e.g. as another user); nil: as this
	// process's user.
	sysProc *syscall.SysProcAttr
}

func setup(t *testing.T, cfg fake.GitHubConfig) *bundle {
	t.Helper()
	gh := fake.NewGitHub(cfg)
	base, err := gh.Start("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { gh.Close() })
	dir := t.TempDir()
	b := &bundle{t: t, gh: gh, base: base, dir: dir, store: filepath.Join(dir, "state", "layover.db"),
		ghLog: filepath.Join(dir, "gh.log")}
	b.env = map[string]string{
		"PATH":           binDir + ":/usr/bin:/bin",
		"HOME":           dir,
		"GH_TOKEN":       testToken,
		"GITHUB_API_URL": base,
		"LAYOVER_STORE":  b.store,
		"FAKE_GH_LOG":    b.ghLog,
		"GH_REPO":        "octo/demo",
		"TZ":             "UTC",
	}
	return b
}

func (b *bundle) environ() []string {
	var out []string
	for k, v := range b.env {
		out = append(out, k+"="+v)
	}
	return out
}

type result struct {
	code   int
	stdout string
	stderr string
}

// layover runs the binary to completion. The timeout only guards against a
// hang: CI runs packages side by side on two cores, and the demo alone
// takes most of a minute.
func (b *bundle) layover(args ...string) result {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 150*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(binDir, "layover"), args...)
	cmd.Env = b.environ()
	cmd.Dir = b.dir
	cmd.SysProcAttr = b.sysProc
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	if ctx.Err() != nil {
		b.t.Fatalf("layover %v timed out; stderr:\n%s", args, errb.String())
	}
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			code = 128 + int(ws.Signal())
		}
	} else if err != nil {
		b.t.Fatalf("layover %v: %v", args, err)
	}
	return result{code: code, stdout: out.String(), stderr: errb.String()}
}

// ghRuns counts how many times the fake gh ran.
func (b *bundle) ghRuns() int {
	data, err := os.ReadFile(b.ghLog)
	if err != nil {
		return 0
	}
	return strings.Count(string(data), "\n")
}

// proc is a layover process running in the background whose stderr is read
// line by line.
type proc struct {
	cmd    *exec.Cmd
	mu     sync.Mutex
	lines  []string
	stdout bytes.Buffer
	seen   chan string
	done   chan struct{}
}

func (b *bundle) start(args ...string) *proc {
	b.t.Helper()
	cmd := exec.Command(filepath.Join(binDir, "layover"), args...)
	cmd.Env = b.environ()
	cmd.Dir = b.dir
	p := &proc{cmd: cmd, seen: make(chan string, 1024), done: make(chan struct{})}
	cmd.Stdout = &p.stdout
	pipe, err := cmd.StderrPipe()
	if err != nil {
		b.t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.t.Fatal(err)
	}
	go func() {
		sc := bufio.NewScanner(pipe)
		for sc.Scan() {
			p.mu.Lock()
			p.lines = append(p.lines, sc.Text())
			p.mu.Unlock()
			p.seen <- sc.Text()
		}
		// Drain what follows a line too long to scan, so the process never
		// blocks on a full pipe; that text is thrown away, and so is any
		// error reading it.
		_, _ = io.Copy(io.Discard, pipe)
		// wait reads the exit status from cmd.ProcessState.
		_ = cmd.Wait()
		close(p.done)
	}()
	b.t.Cleanup(func() {
		// Most often the process has exited already (os.ErrProcessDone).
		_ = cmd.Process.Kill()
		<-p.done
	})
	return p
}

// waitLine blocks until a stderr line contains s (the process's own signal
// that it reached a state), failing after a generous bound.
func (p *proc) waitLine(t *testing.T, s string) string {
	t.Helper()
	timeout := time.After(30 * time.Second)
	for {
		select {
		case l := <-p.seen:
			if strings.Contains(l, s) {
				return l
			}
		case <-p.done:
			t.Fatalf("process ended before printing %q; stderr:\n%s", s, p.stderr())
		case <-timeout:
			t.Fatalf("no stderr line containing %q; stderr:\n%s", s, p.stderr())
		}
	}
}

func (p *proc) wait(t *testing.T) int {
	t.Helper()
	select {
	case <-p.done:
	case <-time.After(60 * time.Second):
		t.Fatalf("process did not end; stderr:\n%s", p.stderr())
	}
	return p.cmd.ProcessState.ExitCode()
}

func (p *proc) stderr() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return strings.Join(p.lines, "\n")
}

// nextSecond is a whole second at least d ahead: GitHub's resets are whole
// epoch seconds.
func nextSecond(d time.Duration) time.Time {
	return time.Now().Add(d).Truncate(time.Second).Add(time.Second)
}
