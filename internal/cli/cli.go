// Package cli is layover's command line: flags, output and exit codes. Each
// command lives in its own file with an Options struct (run's is a
// command.Config: its engine is package command) and a run function; Main
// dispatches. Everything a command touches of the outside world (streams,
// environment, clock, random source, signals) comes in through Env, so
// tests run commands in process.
package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/layoverhq/layover/clock"
	"github.com/layoverhq/layover/platform"
	"github.com/layoverhq/layover/quota"
	"github.com/layoverhq/layover/textsafe"
)

// Exit codes of docs/design.md (Exit codes).
const (
	ExitOK          = 0
	ExitFailed      = 1   // a layover operation failed
	ExitUsage       = 2   // usage or input error
	ExitDeferred    = 6   // deferred: a receipt is the last stdout line
	ExitCapExceeded = 75  // run did not start: the wait would pass the cap
	ExitInternal    = 125 // layover itself failed
	ExitCannotExec  = 126
	ExitNotFound    = 127
	ExitSIGINT      = 130
	ExitSIGTERM     = 143
)

// Env is the outside world as a command sees it.
type Env struct {
	Stdin  io.Reader
	Stdout io.Writer
	Stderr io.Writer
	Getenv func(string) string
	// Environ is the environment handed to child processes.
	Environ []string
	Clock   clock.Clock
	Rand    quota.Rand
	// Signals delivers SIGINT and SIGTERM; nil means none arrive.
	Signals <-chan os.Signal
	// Hostname names this machine in observations and waiter records.
	Hostname string
	// Terminal reports whether Stderr is a terminal (live countdowns).
	Terminal bool
	// StdoutTerminal reports whether Stdout is a terminal; when it is not,
	// run passes on only the stdout of the attempt that ends the run.
	StdoutTerminal bool
	// Executable is the path of the running layover binary (for demo).
	Executable string

	// collectFlags, when set, receives the flag set of a command run with
	// -h instead of its usage being printed (completion reads them so).
	collectFlags func(*flagSet)
}

// exitError carries an exit code and a one-line message to Main.
type exitError struct {
	code int
	msg  string
}

func (e *exitError) Error() string { return e.msg }

func usageErr(format string, a ...any) error {
	return &exitError{code: ExitUsage, msg: fmt.Sprintf(format, a...)}
}

func failErr(format string, a ...any) error {
	return &exitError{code: ExitFailed, msg: fmt.Sprintf(format, a...)}
}

func internalErr(format string, a ...any) error {
	return &exitError{code: ExitInternal, msg: fmt.Sprintf(format, a...)}
}

// exitCode ends a command with a code and no message of layover's own.
type exitCode int

func (c exitCode) Error() string { return fmt.Sprintf("exit %d", int(c)) }

// subcommand is a command Main (or a command group) dispatches to; its
// summary, examples and exit codes are its helpTable entry (help.go).
type subcommand struct {
	name string
	run  func(ctx context.Context, env *Env, args []string) error
}

func commands() []subcommand {
	return []subcommand{
		{"pass", runPass},
		{"run", runRun},
		{"status", runStatus},
		{"activity", runActivity},
		{"classify", runClassify},
		{"receipt", runReceipt},
		{"serve", runServe},
		{"gateway", runGateway},
		{"submit", runSubmit},
		{"schedule", runSchedule},
		{"jobs", runJobs},
		{"show", runShow},
		{"cancel", runCancel},
		{"approve", runApprove},
		{"unblock", runUnblock},
		{"adopt", runAdopt},
		{"flow", runFlow},
		{"checkpoint", runCheckpoint},
		{"sim", runSim},
		{"demo", runDemo},
		{"version", runVersion},
		{"completion", runCompletion},
	}
}

const usageHead = `layover makes automation survive provider quotas.

Usage: layover <command> [flags] [-- CMD [ARGS...]]

Commands:
`

func usage(w io.Writer) {
	// Writing the usage to stdout or stderr: when that fails there is
	// nowhere left to say so (as with fmt.Fprintf below).
	_, _ = io.WriteString(w, usageHead)
	for _, c := range commands() {
		fmt.Fprintf(w, "  %-10s %s\n", c.name, helpTable[c.name].summary)
	}
	_, _ = io.WriteString(w, "\nRun 'layover help <command>' (or 'layover <command> -h') for a command's flags, examples and exit codes.\n")
}

// Main runs layover with args (without the program name) and returns the
// process exit code.
func Main(ctx context.Context, env *Env, args []string) int {
	if env.Clock == nil {
		env.Clock = clock.Real{}
	}
	if env.Rand == nil {
		env.Rand = quota.NewRand()
	}
	if env.Getenv == nil {
		env.Getenv = func(string) string { return "" }
	}
	if len(args) == 0 {
		usage(env.Stderr)
		return ExitUsage
	}
	name := args[0]
	if name == "-h" || name == "--help" || name == "help" {
		if name == "help" && len(args) > 1 {
			return helpTopic(ctx, env, args[1:])
		}
		usage(env.Stdout)
		return ExitOK
	}
	if name == "--version" || name == "-version" {
		name = "version"
	}
	if name == "serve" && !platform.Supervises {
		fmt.Fprintln(env.Stderr, "layover: serve is not available on Windows, which cannot tie a job's processes to the host; run the host on Linux, macOS or a BSD")
		return ExitUsage
	}
	for _, c := range commands() {
		if c.name == name {
			return finish(env, c.run(ctx, env, args[1:]))
		}
	}
	fmt.Fprintf(env.Stderr, "layover: unknown command %q (run 'layover help')\n", name)
	return ExitUsage
}

func finish(env *Env, err error) int {
	if err == nil {
		return ExitOK
	}
	var code exitCode
	if errors.As(err, &code) {
		return int(code)
	}
	var ee *exitError
	if errors.As(err, &ee) {
		if ee.msg != "" {
			fmt.Fprintf(env.Stderr, "layover: %s\n", message(ee.msg))
		}
		return ee.code
	}
	fmt.Fprintf(env.Stderr, "layover: %s\n", message(err.Error()))
	return ExitInternal
}

// oneLine folds a message onto one line.
func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}

// Bounds, in bytes, of text from outside layover shown to a person.
const (
	// maxShown bounds one field: a login, a stage, a reason, a host name.
	maxShown = 200
	// maxMessage bounds an error message, which may quote a provider or a
	// store server.
	maxMessage = 2000
)

// shown is text layover did not write itself (a provider's, or a row of
// the store, which any host of a fleet may have written) as a terminal may
// print it: one line of at most maxShown bytes, without control characters
// or escape sequences (textsafe). JSON output needs none of this:
// encoding/json escapes control characters.
func shown(s string) string { return textsafe.Line(s, maxShown) }

// message is an error message as Main prints it: one line of at most
// maxMessage bytes, without control characters or escape sequences.
func message(s string) string { return textsafe.Line(oneLine(s), maxMessage) }

// jsonTime renders t as RFC 3339 UTC, or nil for the zero time.
func jsonTime(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return t.UTC().Format(time.RFC3339)
}
