//go:build unix

package platform_test

import (
	"bufio"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/layoverhq/layover/internal/proctest"
	"github.com/layoverhq/layover/platform"
)

// A signal to a command's new group reaches what the command started in
// the background, not only the command.
func TestSignalGroupReachesTheBackground(t *testing.T) {
	cmd := exec.Command("sh", "-c", "sleep 60 & echo $!; wait")
	platform.NewProcessGroup(cmd)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, _ := bufio.NewReader(out).ReadString('\n')
	sleep, err := strconv.Atoi(strings.TrimSpace(line))
	if err != nil {
		t.Fatalf("the shell printed %q", line)
	}
	if !platform.Alive(sleep) {
		t.Fatalf("the background sleep %d should run", sleep)
	}
	if err := platform.SignalGroup(cmd.Process.Pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait() // killed: its status says so and nothing more
	// The sleep was reparented when the shell died; it dies of the same
	// signal, on its own schedule (a zombie counts as dead: proctest).
	for deadline := time.Now().Add(10 * time.Second); proctest.Alive(sleep); {
		if time.Now().After(deadline) {
			t.Fatalf("the background sleep %d outlived its group's SIGKILL", sleep)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestAlive(t *testing.T) {
	if !platform.Alive(os.Getpid()) {
		t.Fatal("this process is not alive")
	}
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	if platform.Alive(cmd.Process.Pid) {
		t.Fatalf("process %d exited and was reaped, yet is alive", cmd.Process.Pid)
	}
	if platform.Alive(0) || platform.Alive(-1) {
		t.Fatal("pids 0 and -1 name no single process")
	}
}
