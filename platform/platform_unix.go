//go:build unix

package platform

import (
	"errors"
	"os"
	"os/exec"
	"syscall"
)

// Supervises reports whether package supervisor's link works here: a
// socket handed to the child as descriptor 3.
const Supervises = true

// NewProcessGroup makes cmd start in a new process group whose id is its
// pid, so that SignalGroup reaches it and everything it starts.
func NewProcessGroup(cmd *exec.Cmd) { attr(cmd).Setpgid = true }

// SignalGroup sends sig to the process group pid leads. The group may be
// gone (ESRCH).
func SignalGroup(pid int, sig syscall.Signal) error { return syscall.Kill(-pid, sig) }

// Alive reports whether a process with this pid exists (one of another
// user's counts).
func Alive(pid int) bool {
	if pid <= 0 {
		return false
	}
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, os.ErrPermission) || errors.Is(err, syscall.EPERM)
}

// MayWrite reports whether this process may write path (access(2) W_OK).
func MayWrite(path string) bool {
	const wOK = 2
	return syscall.Access(path, wOK) == nil
}
