// Package command runs a wrapped command under the quota policy: the engine
// of `layover run`, for a command (gh, a script, an AI coding agent CLI)
// that is already running when a quota runs out. It waits instead of
// failing, visibly and interruptibly, within a total cap, or defers with a
// receipt when asked to.
//
//	res, err := command.Run(ctx, &command.Config{
//		Command: []string{"gh", "api", "/repos/octo/demo/issues"},
//		Store:   st, Stdout: os.Stdout, Stderr: os.Stderr,
//	})
//
// docs/design.md states the defaults, the exit codes `layover run` maps
// this package's errors to (errors.go) and the safety rules; docs/receipt.md
// the receipt.
//
// # Before the start
//
// With Config.Quota (any provider's resources: "github", "github:core",
// "anthropic:tokens", "claude-code:five_hour"; ParseQuotaName), every key
// of those names (ResolveQuotas: the keys the transport and the engine
// record) that the ledger holds as exhausted is waited out before the
// command first runs, so that no call is wasted: until Policy.ResumeAt of
// the reset (the reset plus the margin plus jitter). A wait that would pass
// the cap is refused at once, and the command is not started
// (*NotStartedError).
//
// # After a failed run
//
// A run that exits 0 ends the Run, whatever it printed. A failed run's
// output (the last 64 KiB of each stream) is classified with
// Config.Provider's signals:
//   - quota (primary exhaustion): the exhaustion is recorded in the ledger
//     with its reset: the failure's own, else the one GitHub's free GET
//     /rate_limit reports, else assumed Policy.UnknownReset ahead. The
//     command runs again, a fresh process, after Policy.ResumeAt of it.
//   - the room-again rule: a reset that has already passed, or a quota that
//     has room right after the failure, runs the command again after the
//     margin, once; seen again before a reset ahead is, the reset is stale
//     and each later failure waits the assumed reset.
//   - secondary (a short throttle): run again after its retry-after, else
//     Policy.SecondaryWait, at most Policy.SecondaryRetries times.
//   - anything else (auth, transient, permanent): the Run ends with the
//     command's exit code. A quota wait never fixes credentials.
//
// Every re-run comes at least quota.MinRerunWait after the failure before
// it. After a wait, Config.ResumeCmd runs instead of the command when set,
// with {session_id} filled in from the failed run's agent session.
//
// # The wait budget
//
// The waits of one Run, before the start and after failures alike, are
// charged to a quota.Budget of Policy.MaxTotalWait. A wait that would pass
// it is not started: the failure stands (Result.ExitCode) and Stderr says
// why. A wait ended early refunds what it did not use.
//
// # Deferral
//
// With Config.Defer, a wait the provider declared (a reset at most 24 h
// ahead, or a retry-after) that is longer than DeferAfter is not waited:
// Run prints a deferred receipt as the last line of Stdout and returns a
// *DeferredError. With Submit the job is also recorded, with its receipt
// and wake-up, for the durable host (package host). A reset further than
// 24 h gets no receipt and is waited, under the cap.
//
// # Cleanup
//
// Config.Cleanup runs after the command ended on a Stop or a failure (not
// after a success, a deferral, or a command that never started), under the
// same policy and the same budget: its quota waits are waited out even
// though a Stop already came, and a second Stop ends them at once. The
// Run's end stays the command's; the cleanup's failure is a line on Stderr
// (cleanup.go).
//
// # One body on a pipe
//
// With Config.HoldStdout, only the stdout of the run that ends the Run
// reaches Stdout; a run followed by another has its stdout written to
// Stderr under "layover: output of attempt N, which failed (CLASS):". Each
// run's stdout is held in memory up to 1 MiB, past that in an unlinked
// temporary file (hold.go).
//
// # Visible, interruptible
//
// While it waits, the process is listed in the store's waiter table (so
// `layover status` shows it), the wait is a line of the activity log and
// of Stderr (a countdown on a terminal). SIGINT or SIGTERM on
// Config.Signals, or the end of the context, ends a wait at once
// (*InterruptedError). A signal while the command runs is forwarded to it
// (SIGINT only off a terminal, whose ^C reached it already), and a command
// so stopped is not run again.
//
// Time comes from Config.Clock and jitter from Config.Rand, so tests run
// the engine in process on a fake clock.
package command
