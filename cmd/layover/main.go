// Command layover makes automation survive provider quotas. See README.md.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"golang.org/x/term"

	"github.com/layoverhq/layover/host/supervisor"
	"github.com/layoverhq/layover/internal/cli"
)

func main() {
	if supervisor.IsSupervisor(os.Args) {
		os.Exit(supervisor.Main(os.Args[2:]))
	}
	if cli.IsDemoGH(os.Args, os.Getenv) {
		os.Exit(cli.DemoGH(os.Args[1:]))
	}
	sigs := make(chan os.Signal, 4)
	// Registering costs most of a millisecond; a skipped pass never needs
	// it, so it happens beside the command's own start. Commands that wait
	// or run a child read sigs long after it is in place.
	go signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
	host, _ := os.Hostname()
	exe, _ := os.Executable()
	env := &cli.Env{
		Stdin:          os.Stdin,
		Stdout:         os.Stdout,
		Stderr:         os.Stderr,
		Getenv:         os.Getenv,
		Environ:        os.Environ(),
		Signals:        sigs,
		Hostname:       host,
		Terminal:       isTerminal(os.Stderr),
		StdoutTerminal: isTerminal(os.Stdout),
		Executable:     exe,
	}
	os.Exit(cli.Main(context.Background(), env, os.Args[1:]))
}

// isTerminal reports whether f is a terminal.
func isTerminal(f *os.File) bool { return term.IsTerminal(int(f.Fd())) }
