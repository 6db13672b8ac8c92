//go:build unix

package supervisor_test

import (
	"bufio"
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/layoverhq/layover/host/supervisor"
	"github.com/layoverhq/layover/internal/proctest"
)

// The test binary is its own supervisor program, and, with hostEnv set, a
// host that runs one job under it and then waits to be killed.
const hostEnv = "LAYOVER_SUPERVISOR_TEST_HOST"

func TestMain(m *testing.M) {
	if supervisor.IsSupervisor(os.Args) {
		os.Exit(supervisor.Main(os.Args[2:]))
	}
	if script := os.Getenv(hostEnv); script != "" {
		os.Exit(actAsHost(script))
	}
	os.Exit(m.Run())
}

// actAsHost starts script under the supervisor, says "started" on stdout,
// and blocks until it is killed.
func actAsHost(script string) int {
	cmd := exec.Command(os.Args[0], supervisor.Arg, "--", "sh", "-c", script)
	cmd.Env = os.Environ()
	link, err := supervisor.Attach(cmd)
	if err == nil {
		err = cmd.Start()
	}
	if err == nil {
		_, err = link.Started()
	}
	if err != nil {
		os.Stdout.WriteString("error " + err.Error() + "\n")
		return 1
	}
	os.Stdout.WriteString("started\n")
	time.Sleep(time.Hour) // until the test kills this process
	return 0
}

// supervise starts argv under the supervisor as a host would.
func supervise(t *testing.T, argv ...string) (*exec.Cmd, *supervisor.Link, int, error) {
	t.Helper()
	cmd := exec.Command(os.Args[0], append([]string{supervisor.Arg, "--"}, argv...)...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	link, err := supervisor.Attach(cmd)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { link.Close() })
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pid, err := link.Started()
	return cmd, link, pid, err
}

func exitStatus(t *testing.T, cmd *exec.Cmd) int {
	t.Helper()
	err := cmd.Wait()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		t.Fatal(err)
	}
	return cmd.ProcessState.ExitCode()
}

func TestTheJobsExitCodeIsTheSupervisors(t *testing.T) {
	t.Parallel()
	cmd, _, pid, err := supervise(t, "sh", "-c", "exit 7")
	if err != nil || pid <= 0 {
		t.Fatalf("started: pid %d, %v", pid, err)
	}
	if code := exitStatus(t, cmd); code != 7 {
		t.Fatalf("exit %d, want the job's 7", code)
	}
}

func TestAJobThatCannotStartIsReported(t *testing.T) {
	t.Parallel()
	cmd, _, _, err := supervise(t, "/nonexistent/layover-job")
	if err == nil || !strings.Contains(err.Error(), "no such file") {
		t.Fatalf("start error %v; want the reason the job could not start", err)
	}
	if code := exitStatus(t, cmd); code != 127 {
		t.Fatalf("exit %d, want 127", code)
	}
}

// A stop signal sent to the group reaches the job; the supervisor outlives
// it and reports the job's death by that signal as 128+N.
func TestAStopSignalEndsTheJobAndIsReported(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ready := filepath.Join(dir, "ready")
	cmd, _, _, err := supervise(t, "sh", "-c", "touch "+ready+"; exec sleep 60")
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool { _, err := os.Stat(ready); return err == nil }, "the job to start")
	if err := syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if code := exitStatus(t, cmd); code != 128+int(syscall.SIGTERM) {
		t.Fatalf("exit %d, want %d", code, 128+int(syscall.SIGTERM))
	}
}

// When the host dies by SIGKILL, nothing of the job survives it: not its
// shell, not what the shell started in the background.
func TestTheJobsGroupDiesWithItsHost(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	pids := filepath.Join(dir, "pids")
	script := "sleep 60 & echo $$ $! > " + pids + ".tmp; mv " + pids + ".tmp " + pids + "; wait"
	host := exec.Command(os.Args[0])
	host.Env = append(os.Environ(), hostEnv+"="+script)
	stdout, err := host.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := host.Start(); err != nil {
		t.Fatal(err)
	}
	line, _ := bufio.NewReader(stdout).ReadString('\n')
	if line != "started\n" {
		// Best-effort cleanup before failing: the host may have exited, and
		// its exit after a kill says nothing.
		_ = host.Process.Kill()
		_ = host.Wait()
		t.Fatalf("host: %q", line)
	}
	waitFor(t, func() bool { _, err := os.Stat(pids); return err == nil }, "the job's pids")
	procs := readPids(t, pids)
	if !proctest.Alive(procs[0]) || !proctest.Alive(procs[1]) {
		t.Fatalf("the job's shell and its background sleep should run: %v", procs)
	}
	// The host is still running (its job waits on the sleep): killing it is
	// the test's action.
	if err := host.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	// Its exit after a kill is "signal: killed", nothing to check.
	_ = host.Wait()
	waitFor(t, func() bool { return !proctest.Alive(procs[0]) && !proctest.Alive(procs[1]) }, "the job's shell and grandchild to die with the host")
}

// The link is what ties the job to its host on every Unix, whether or not
// the system has a parent-death signal: when the host's end closes (the
// host lives on here, and closes it), the supervisor kills its whole group,
// the job's shell and what it started in the background, and itself.
func TestClosingTheLinkKillsTheJobsGroup(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	pids := filepath.Join(dir, "pids")
	cmd, link, _, err := supervise(t, "sh", "-c", "sleep 60 & echo $$ $! > "+pids+".tmp; mv "+pids+".tmp "+pids+"; wait")
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool { _, err := os.Stat(pids); return err == nil }, "the job's pids")
	procs := readPids(t, pids)
	if !proctest.Alive(procs[0]) || !proctest.Alive(procs[1]) {
		t.Fatalf("the job's shell and its background sleep should run: %v", procs)
	}
	if err := link.Close(); err != nil {
		t.Fatal(err)
	}
	// The supervisor dies by its own group's SIGKILL, not with the job's
	// exit code: nothing was left to report it.
	_ = cmd.Wait()
	if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
		t.Fatalf("the supervisor ended %v; want killed by SIGKILL", cmd.ProcessState)
	}
	waitFor(t, func() bool { return !proctest.Alive(procs[0]) && !proctest.Alive(procs[1]) }, "the job's shell and grandchild to die with the link")
}

// readPids reads the two pids a job's script wrote.
func readPids(t *testing.T, path string) []int {
	t.Helper()
	raw, _ := os.ReadFile(path)
	var procs []int
	for _, f := range strings.Fields(string(raw)) {
		pid, err := strconv.Atoi(f)
		if err != nil {
			t.Fatalf("pids file %q", raw)
		}
		procs = append(procs, pid)
	}
	if len(procs) != 2 {
		t.Fatalf("pids file %q: want the shell's and the sleep's", raw)
	}
	return procs
}

// Run by hand, without a host's link, the supervisor refuses with a clear
// line.
func TestTheSupervisorNeedsAHost(t *testing.T) {
	t.Parallel()
	cmd := exec.Command(os.Args[0], supervisor.Arg, "--", "true")
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 2 || !strings.Contains(string(out), "runs only under a host") {
		t.Fatalf("exit %v, output %q", err, out)
	}
}

// waitFor polls cond: the processes under test move by themselves.
func waitFor(t *testing.T, cond func() bool, what string) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond(); {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
