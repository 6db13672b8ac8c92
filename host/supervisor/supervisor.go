// Package supervisor ties a job's processes to the life of the host that
// runs them.
//
// A parent-death signal reaches only a host's direct child; a job whose
// work runs in grandchildren (a shell script's commands, a build's
// compilers) would outlive a host killed with SIGKILL, and could still be
// working when another host claims the job again. So the host runs each
// attempt under a small supervising process:
//
//	host ──socket── supervisor (its own process group) ── job ── grandchildren
//
// The host starts the supervisor in a new process group, with one end of a
// socket pair as file descriptor 3. The supervisor starts the job in the
// same group, reports on the socket that it started (or why it could not),
// and waits for it. When the host dies, however it dies, the kernel closes
// the host's end; the supervisor reads end-of-file and kills its whole
// process group, itself included. The job exits with the job's code, or
// 128+N when a signal N ended it. Signals the host sends the group to stop
// an attempt reach the job directly; the supervisor outlives them to report
// the exit, and dies with the group's SIGKILL.
//
// The link works on every Unix. Where the system has a parent-death signal
// (Linux, FreeBSD) the supervisor also asks it for the job, should the
// supervisor alone be killed; where it has none (macOS, OpenBSD, NetBSD) the
// host kills the group when it sees the supervisor end, so only the host and
// its supervisor dying together leaves the job running. Windows has no
// supervisor: Main and Attach refuse there (see package platform).
//
// A process that leaves the group (setsid, setpgid) escapes; jobs that
// daemonize are outside what layover can stop.
package supervisor

import "strings"

// Arg is the first argument that makes a program act as the supervisor:
// `PROGRAM __supervise -- CMD [ARGS...]`. A program that supervises jobs
// (layover does) calls Main when it sees it.
const Arg = "__supervise"

// linkFD is the descriptor the supervisor finds the host's socket at.
const linkFD = 3

// Command is the argv that runs argv under the supervisor program self.
func Command(self string, argv []string) []string {
	return append([]string{self, Arg, "--"}, argv...)
}

// IsSupervisor reports whether a program's os.Args ask for the supervisor.
func IsSupervisor(args []string) bool {
	return len(args) > 1 && args[1] == Arg
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }
