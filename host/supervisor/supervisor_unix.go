//go:build unix

package supervisor

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"syscall"

	"github.com/layoverhq/layover/platform"
)

// Main is the supervising process: args are what follows Arg ("--" and the
// job's argv). It returns the process's exit code.
func Main(args []string) int {
	if len(args) > 0 && args[0] == "--" {
		args = args[1:]
	}
	var st syscall.Stat_t
	if len(args) == 0 || syscall.Fstat(linkFD, &st) != nil || st.Mode&syscall.S_IFMT != syscall.S_IFSOCK {
		fmt.Fprintln(os.Stderr, "layover: "+Arg+" runs only under a host, with its link as descriptor 3: "+Arg+" -- CMD [ARGS...]")
		return 2
	}
	link := os.NewFile(linkFD, "layover-host")
	// The job must not inherit the link: the host's death has to reach
	// this process alone.
	syscall.CloseOnExec(linkFD)
	// Stop signals are for the job, which gets them as a member of the
	// group; this process stays to report its exit. Caught, not ignored,
	// so the job starts with the default dispositions.
	signal.Notify(make(chan os.Signal, 1), syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)

	cmd := exec.Command(args[0], args[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	// Should this process die by other means, its job dies too where the
	// system has a parent-death signal; where it has none, the host kills
	// the group when it sees this process end.
	platform.DieWithParent(cmd)
	if err := cmd.Start(); err != nil {
		fmt.Fprintf(link, "error %s\n", oneLine(err.Error()))
		return 127
	}
	fmt.Fprintf(link, "ok %d\n", cmd.Process.Pid)
	go func() {
		// Nothing more is written on the link: a read returns only when the
		// host's end closed, that is when the host died.
		// Either way the link is done, so its error tells nothing more.
		_, _ = io.Copy(io.Discard, link)
		// SIGKILL to its own group: this process dies with it, so there is
		// no one left to handle a failure.
		_ = syscall.Kill(0, syscall.SIGKILL)
	}()
	err := cmd.Wait()
	if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	if err != nil && cmd.ProcessState == nil {
		return 125
	}
	return cmd.ProcessState.ExitCode()
}

// Link is the host's end of a supervisor's socket.
type Link struct {
	host, child *os.File
}

// Attach prepares cmd, which must run the supervisor (see Command), with a
// new link as its descriptor 3, in a new process group. Call Started after
// cmd.Start, and Close once cmd has ended.
func Attach(cmd *exec.Cmd) (*Link, error) {
	fds, err := socketpair()
	if err != nil {
		return nil, fmt.Errorf("supervisor link: %w", err)
	}
	l := &Link{host: os.NewFile(uintptr(fds[0]), "layover-supervisor"), child: os.NewFile(uintptr(fds[1]), "layover-host")}
	if len(cmd.ExtraFiles) != 0 {
		l.Close()
		return nil, errors.New("supervisor link: the command already has extra files")
	}
	cmd.ExtraFiles = []*os.File{l.child}
	platform.NewProcessGroup(cmd)
	return l, nil
}

// socketpair makes a connected pair of Unix stream sockets, both
// close-on-exec. Not every system takes SOCK_CLOEXEC in socketpair(2)
// (macOS does not), so the flag is set after, under the fork lock, that no
// process started meanwhile inherits them.
func socketpair() ([2]int, error) {
	syscall.ForkLock.RLock()
	defer syscall.ForkLock.RUnlock()
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM, 0)
	if err != nil {
		return fds, err
	}
	syscall.CloseOnExec(fds[0])
	syscall.CloseOnExec(fds[1])
	return fds, nil
}

// Started waits for the supervisor's report and returns the job's pid, or
// why the job could not start. Call it after cmd.Start succeeded.
func (l *Link) Started() (int, error) {
	// The child's copy now lives in the supervisor; the host keeps only
	// its own end, so that its death is the link's end.
	l.child.Close()
	line, err := bufio.NewReader(l.host).ReadString('\n')
	if err != nil {
		return 0, errors.New("the supervisor ended before starting the job")
	}
	word, rest, _ := strings.Cut(strings.TrimSuffix(line, "\n"), " ")
	switch word {
	case "ok":
		var pid int
		if _, err := fmt.Sscan(rest, &pid); err != nil {
			return 0, fmt.Errorf("the supervisor's report %q", line)
		}
		return pid, nil
	case "error":
		return 0, errors.New(rest)
	}
	return 0, fmt.Errorf("the supervisor's report %q", line)
}

// Close closes the host's end; a supervisor still running kills its group.
func (l *Link) Close() error {
	l.child.Close()
	return l.host.Close()
}
