// Package platform is what layover asks of the operating system about
// processes and files, one implementation per system: a process group of a
// command's own, a signal to that group, a parent-death signal where the
// system has one, whether a process lives, whether a path may be written.
//
// On Linux and FreeBSD a child can ask the kernel to kill it when its parent
// dies (ParentDeathSignal). macOS, OpenBSD and NetBSD have no such signal:
// there a host's jobs are tied to it by package supervisor's link alone (the
// supervisor watches a socket from the host and kills its process group when
// the socket closes), which works on every Unix. Windows has neither process
// groups that can be signalled nor the supervisor's descriptor passing: a
// group's signal ends the leader only, and layover serve is not offered
// there.
package platform

import (
	"os/exec"
	"syscall"
)

// attr is cmd's SysProcAttr, created when it has none.
func attr(cmd *exec.Cmd) *syscall.SysProcAttr {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	return cmd.SysProcAttr
}
