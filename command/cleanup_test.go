package command_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/layoverhq/layover/command"
)

// cleanupScript is a cleanup for cfg.Cleanup whose runs do outcomes (as
// script's), and counts them.
func cleanupScript(t *testing.T, outcomes ...string) (cmd string, runs func() int) {
	t.Helper()
	argv, runs := script(t, outcomes...)
	return argv[2], runs
}

// counted is the shell command sh, counting its runs.
func counted(t *testing.T, sh string) (cmd string, runs func() int) {
	t.Helper()
	file := filepath.Join(t.TempDir(), "runs")
	return fmt.Sprintf("echo . >> %q; %s", file, sh), func() int { return countLines(t, file) }
}

// Issue 10, 002's Claim cleanup: a Stop during the command's Quota wait
// ends that wait at once; the cleanup then runs, hits the same exhausted
// quota, and waits for its reset although a Stop already came, within the
// one budget; it succeeds, and the Run still ends as the Stop made it (143).
func TestCleanupAfterStopWaitsForTheReset(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	reset := start.Add(20 * time.Minute)
	w.exhaustedFor(reset)
	argv, runs := script(t, "primary", "ok")
	cleanup, cleanups := cleanupScript(t, "primary", "ok")
	cfg := w.config(argv)
	cfg.Cleanup = cleanup
	e := w.drive(cfg, runs, func(i int, next time.Time) {
		switch i {
		case 0:
			w.clk.Advance(time.Minute)
			w.sigs <- syscall.SIGTERM
		default:
			if cleanups() != 1 {
				t.Errorf("wait %d came after %d cleanup runs, want 1", i, cleanups())
			}
			w.clk.Set(next)
		}
	})
	var ie *command.InterruptedError
	if !errors.As(e.err, &ie) || ie.Signal != syscall.SIGTERM {
		t.Fatalf("ended %+v, %v; want the command's wait ended by SIGTERM", e.res, e.err)
	}
	if runs() != 1 || cleanups() != 2 || e.res.CleanupRuns != 2 || e.res.CleanupExitCode != 0 {
		t.Fatalf("command ran %d times, cleanup %d (%+v); want 1 and 2, the cleanup's success", runs(), cleanups(), e.res)
	}
	// The cleanup waited the rest of the reset and the margin: 20m from
	// start, the minute the command's wait took already passed.
	if got := durations(e.waits); len(got) != 2 || got[1] != 20*time.Minute {
		t.Errorf("waits %v; want the command's, then the cleanup's 20m", got)
	}
	if e.res.Waited != 21*time.Minute {
		t.Errorf("waited %s in all, want 21m: the command's minute and the cleanup's 20m", e.res.Waited)
	}
	stderr := w.stderr.String()
	if !strings.Contains(stderr, "layover: running --cleanup: quota wait ended by terminated") ||
		strings.Contains(stderr, "--cleanup failed") || lastLine(stderr) != "Waited 21m0s for the GitHub quota (core)" {
		t.Errorf("stderr:\n%s", stderr)
	}
	// The cleanup's stdout is not the command's output.
	if strings.Contains(w.stdout.String(), "run 2") {
		t.Errorf("stdout %q holds the cleanup's output", w.stdout.String())
	}
}

// A second Stop ends the cleanup's wait at once, and the Run ends by it.
func TestCleanupSecondStopEndsItsWait(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	w.exhaustedFor(start.Add(time.Hour))
	argv, runs := script(t, "primary", "ok")
	cleanup, cleanups := cleanupScript(t, "primary", "ok")
	cfg := w.config(argv)
	cfg.Cleanup = cleanup
	sigs := []os.Signal{syscall.SIGTERM, syscall.SIGINT}
	e := w.drive(cfg, runs, func(i int, next time.Time) { w.sigs <- sigs[i] })
	var ie *command.InterruptedError
	if !errors.As(e.err, &ie) || ie.Signal != syscall.SIGINT {
		t.Fatalf("ended %+v, %v; want the cleanup's wait ended by SIGINT", e.res, e.err)
	}
	if len(e.waits) != 2 || cleanups() != 1 || e.res.CleanupRuns != 1 || e.res.CleanupExitCode != 1 {
		t.Fatalf("waits %v, cleanup runs %d, %+v; want one cleanup run, its wait ended", e.waits, cleanups(), e.res)
	}
	if !strings.Contains(w.stderr.String(), "layover: --cleanup did not finish: Quota wait ended by interrupt") {
		t.Errorf("stderr:\n%s", w.stderr.String())
	}
}

// A failure no wait mends runs the cleanup; the Run's exit code stays the
// command's whether the cleanup succeeds or fails, and a failed cleanup
// says so on stderr. A success, a deferral and a command that never
// started run no cleanup.
func TestCleanupRunsOnFailureOnly(t *testing.T) {
	t.Parallel()
	for name, c := range map[string]struct {
		command, cleanup string // shell commands
		deferAll         bool
		wantCode         int
		wantRuns         int
		wantStderr       string
	}{
		"failure":         {"echo nope >&2; exit 3", "exit 0", false, 3, 1, "running --cleanup: the command failed (exit 3)"},
		"failed cleanup":  {"exit 4", "exit 9", false, 4, 1, "--cleanup failed (exit 9); the exit code stays the command's"},
		"success":         {"exit 0", "exit 0", false, 0, 0, ""},
		"deferral":        {"echo '" + primaryMsg + "' >&2; exit 1", "exit 0", true, 1, 0, "deferred until"},
		"never started":   {"", "exit 0", false, 0, 0, ""},
		"cap refused":     {"echo '" + primaryMsg + "' >&2; exit 1", "exit 0", false, 1, 1, "not waiting for the GitHub ("},
		"cleanup's quota": {"exit 5", "echo '" + primaryMsg + "' >&2; exit 1", false, 5, 1, "--cleanup failed (exit 1)"},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			w := newWorld(t)
			w.exhaustedFor(start.Add(3 * time.Hour)) // past the 2 h cap
			argv := []string{"sh", "-c", c.command}
			if c.command == "" {
				argv = []string{"no-such-command-for-cleanup"}
			}
			cleanup, cleanups := counted(t, c.cleanup)
			cfg := w.config(argv)
			cfg.Cleanup = cleanup
			cfg.Defer = c.deferAll
			e := w.drive(cfg, func() int { return 0 }, nil)
			if e.res.ExitCode != c.wantCode || cleanups() != c.wantRuns || e.res.CleanupRuns != c.wantRuns {
				t.Fatalf("ended %+v, %v, cleanup ran %d times; want exit %d, %d cleanup runs\n%s",
					e.res, e.err, cleanups(), c.wantCode, c.wantRuns, w.stderr.String())
			}
			if !strings.Contains(w.stderr.String(), c.wantStderr) {
				t.Errorf("stderr lacks %q:\n%s", c.wantStderr, w.stderr.String())
			}
			if c.wantRuns == 0 && strings.Contains(w.stderr.String(), "--cleanup") {
				t.Errorf("stderr speaks of a cleanup that did not run:\n%s", w.stderr.String())
			}
		})
	}
}

// The cleanup's waits share the Run's budget: with most of the cap spent
// by the command, a cleanup wait past the rest is refused and the cleanup
// fails as its own command would.
func TestCleanupWaitsWithinTheTotalCap(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	w.exhaustedFor(start.Add(90 * time.Minute))
	argv, runs := script(t, "primary", "ok")
	cleanup, cleanups := cleanupScript(t, "primary", "ok")
	cfg := w.config(argv)
	cfg.Cleanup = cleanup
	e := w.drive(cfg, runs, func(i int, next time.Time) {
		if i == 0 {
			// The command waits 80 of its 91 minutes, then is stopped; the
			// quota now resets 3 h from the start: the cleanup's 101
			// minutes would fit the 2 h cap alone, but not the 40 left.
			w.clk.Advance(80 * time.Minute)
			w.exhaustedFor(start.Add(3 * time.Hour))
			w.sigs <- syscall.SIGTERM
			return
		}
		w.clk.Set(next)
	})
	if len(e.waits) != 1 || cleanups() != 1 || e.res.CleanupExitCode != 1 || e.res.Waited != 80*time.Minute {
		t.Fatalf("waits %v, cleanup runs %d, %+v, %v", e.waits, cleanups(), e.res, e.err)
	}
	if !strings.Contains(w.stderr.String(), "past the 2h0m0s cap") {
		t.Errorf("stderr:\n%s", w.stderr.String())
	}
}
