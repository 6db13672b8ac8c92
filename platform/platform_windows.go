//go:build windows

package platform

import (
	"os"
	"os/exec"
	"syscall"
)

// Supervises reports whether package supervisor's link works here: Windows
// cannot hand a child a descriptor 3, so it does not.
const Supervises = false

// NewProcessGroup starts cmd in a new console process group, which keeps
// the console's Ctrl-C from reaching it directly.
func NewProcessGroup(cmd *exec.Cmd) {
	attr(cmd).CreationFlags |= syscall.CREATE_NEW_PROCESS_GROUP
}

// SignalGroup ends the process pid: Windows delivers no signal but a kill,
// and what the process started is not reached.
func SignalGroup(pid int, _ syscall.Signal) error {
	p, err := os.FindProcess(pid)
	if err != nil {
		return err
	}
	return p.Kill()
}

// stillActive is the exit code GetExitCodeProcess reports for a process
// that has not exited.
const stillActive = 259

// Alive reports whether a process with this pid runs.
func Alive(pid int) bool {
	if pid <= 0 {
		return false
	}
	h, err := syscall.OpenProcess(syscall.PROCESS_QUERY_INFORMATION, false, uint32(pid))
	if err != nil {
		// Access denied means a process exists that this user may not open.
		return err == syscall.ERROR_ACCESS_DENIED
	}
	defer syscall.CloseHandle(h)
	var code uint32
	return syscall.GetExitCodeProcess(h, &code) == nil && code == stillActive
}

// MayWrite reports whether path is not read-only.
func MayWrite(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.Mode().Perm()&0o200 != 0
}
