package command

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"

	"github.com/layoverhq/layover/redact"
)

// The cleanup (Config.Cleanup) is the work that must finish even when the
// command did not: releasing a claim, removing an "in progress" label. It
// runs under the command's quota policy (its exhaustion waited out, its
// secondary limits retried, the Quota keys waited out before it starts), its
// waits charged to the same budget as the command's, so the Run's total wait
// stays within Policy.MaxTotalWait. A Stop that ended the command does not
// end the cleanup's waits: the cleanup waits for the reset like any
// command. A second Stop does end them, at once.
//
// What the Run returns stays the command's: its exit code, or how its wait
// was ended. The cleanup's own failure is a line on Stderr. Only a Stop that
// ends the cleanup's wait changes the end: an *InterruptedError for that
// signal, since the cleanup did not finish. The cleanup never defers (its
// waits are waited, under the cap), never runs Config.ResumeCmd, reads no
// stdin, and writes its stdout to Stderr: it is not the command's output.

// needsCleanup reports whether the Run's end (the command's last Result
// and err) calls for the cleanup, and says why on Stderr when it does.
func (r *runner) needsCleanup(ctx context.Context, err error) bool {
	if r.c.Cleanup == "" {
		return false
	}
	var de *DeferredError
	switch {
	case r.res.Runs == 0:
		return false // the command never started: nothing to clean up
	case errors.As(err, &de):
		return false // a deferral: the job is not over
	case err == nil && r.res.ExitCode == 0:
		return false
	case ctx.Err() != nil:
		fmt.Fprintln(r.c.Stderr, "layover: not running --cleanup: the run's context ended")
		return false
	}
	fmt.Fprintf(r.c.Stderr, "layover: running --cleanup: %s\n", r.endedBy(err))
	return true
}

// endedBy says how the command ended, for the line before the cleanup.
func (r *runner) endedBy(err error) string {
	var ie *InterruptedError
	switch {
	case errors.As(err, &ie):
		return strings.ToLower(ie.What[:1]) + ie.What[1:] + " ended by " + fmt.Sprint(ie.Signal)
	case err != nil:
		return "the run failed (" + err.Error() + ")"
	case r.stopped != nil:
		return fmt.Sprintf("the command was stopped by %v (exit %d)", r.stopped, r.res.ExitCode)
	}
	return fmt.Sprintf("the command failed (exit %d)", r.res.ExitCode)
}

// cleanup runs Config.Cleanup after the command ended with err, and returns
// how the Run ends: err, unless a Stop ended one of the cleanup's waits.
func (r *runner) cleanup(ctx context.Context, err error) error {
	c := *r.c
	c.Command = []string{"/bin/sh", "-c", r.c.Cleanup}
	c.ResumeCmd, c.Cleanup = "", ""
	c.Defer, c.Submit, c.DeferAfter = false, false, 0
	// The cleanup's stdout and stderr both go to Stderr, copied by two
	// goroutines: one lock keeps a Stderr that is no file whole.
	out := &lockedWriter{w: r.c.Stderr}
	c.Stdin, c.Stdout, c.Stderr, c.HoldStdout = nil, out, out, false
	cr := &runner{c: &c, p: r.p, gh: r.gh, budget: r.budget, quotas: r.quotas,
		commandLine: redact.String(r.c.Cleanup, r.c.Secrets...), waitedLabel: r.waitedLabel,
		res: Result{Waited: r.res.Waited, WaitedFor: r.res.WaitedFor}}
	cerr := cr.loop(ctx)
	r.res.Waited, r.res.WaitedFor, r.waitedLabel = cr.res.Waited, cr.res.WaitedFor, cr.waitedLabel
	r.res.CleanupRuns, r.res.CleanupExitCode = cr.res.Runs, cr.res.ExitCode
	var ie *InterruptedError
	switch {
	case errors.As(cerr, &ie):
		fmt.Fprintf(r.c.Stderr, "layover: --cleanup did not finish: %v\n", cerr)
		return cerr
	case cerr != nil:
		fmt.Fprintf(r.c.Stderr, "layover: --cleanup did not finish: %v\n", cerr)
	case cr.res.ExitCode != 0:
		fmt.Fprintf(r.c.Stderr, "layover: --cleanup failed (exit %d); the exit code stays the command's\n", cr.res.ExitCode)
	}
	return err
}

// lockedWriter serializes writes to w.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}
