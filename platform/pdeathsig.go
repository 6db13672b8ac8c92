//go:build linux || freebsd

package platform

import (
	"os/exec"
	"syscall"
)

// ParentDeathSignal reports whether DieWithParent does anything here.
const ParentDeathSignal = true

// DieWithParent asks the kernel to SIGKILL cmd's process when the process
// that started it dies. It reaches that process only, not what it starts.
func DieWithParent(cmd *exec.Cmd) { attr(cmd).Pdeathsig = syscall.SIGKILL }
