package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/layoverhq/layover/command"
	"github.com/layoverhq/layover/provider/agentcli"
	"github.com/layoverhq/layover/provider/registry"
	"github.com/layoverhq/layover/quota"
	"github.com/layoverhq/layover/store"
)

// runRun parses layover run's flags into a command.Config, runs the engine
// (package command) and maps how it ended to an exit code.
func runRun(ctx context.Context, env *Env, args []string) error {
	policy := quota.DefaultPolicy()
	cfg := engineConfig(env, nil)
	cfg.Policy = &policy
	fs := newFlagSet("run", "run [--quota PROVIDER[:RESOURCE]]... [--agent NAME] [--cleanup CMD] [--receipt-file PATH] [--resume-rate N] [policy flags] -- CMD [ARGS...]")
	fs.Var(&cfg.Quota, "quota", "wait out these quotas before starting when the ledger says they are exhausted: PROVIDER or PROVIDER:RESOURCE ("+quotaProviders()+"), repeatable")
	policyFlags(fs, &policy)
	storeLoc := storeFlag(fs)
	fs.StringVar(&cfg.Principal, "principal", "", "whose quota it is (default $LAYOVER_PRINCIPAL, else learned from the token)")
	var deferAfter time.Duration // -1: no --defer-after
	fs.durationVar(&deferAfter, "defer-after", -1, 0, quota.MaxTotalWaitCap, "defer with a receipt (exit 6) instead of waiting longer than this")
	fs.StringVar(&cfg.Provider, "provider", "auto", "whose signals classify a failure: "+strings.Join(registry.CLINames(), ", ")+", or "+registry.Auto)
	agentName := fs.String("agent", "", "CMD is this agent CLI ("+agentNames()+
		"): its signals classify a failure (as --provider) and, unless --resume-cmd, its own resume continues the session after a wait")
	fs.Float64Var(&cfg.ResumeRate, "resume-rate", command.DefaultResumeRate, "commands a second, per quota key across the fleet, that start again after a reset (docs/lifecycle.md, Resume pacing)")
	fs.StringVar(&cfg.ResumeCmd, "resume-cmd", "", "shell command run instead of CMD after a wait; {session_id} is the agent session of the failed run")
	fs.BoolVar(&cfg.Submit, "submit", false, "when deferring, also record the job for the durable host (implies --defer-after 0)")
	fs.StringVar(&cfg.Cleanup, "cleanup", "", "shell command run after CMD ends on SIGINT/SIGTERM or a failure (not a success or a deferral), "+
		"its quota waits waited out within the cap even after a stop; a second stop ends them. The exit code stays CMD's; "+
		"a failed cleanup is a stderr line")
	stream := fs.Bool("stream", false, "pass stdout on as CMD writes it even when stdout is not a terminal (a CI log), "+
		"every attempt's; without it, off a terminal only the attempt that ends the run reaches stdout")
	receiptFile := fs.String("receipt-file", "", "when deferring, also write the receipt to this `path` (mode 0600, replaced atomically)")
	cmd, err := fs.parseWithCommand(env, args)
	if err != nil {
		return err
	}
	cfg.Command = cmd
	if r := cfg.ResumeRate; !(r >= command.MinResumeRate && r <= command.MaxResumeRate) { // NaN fails both; 0 is not "the default"
		return usageErr("run: --resume-rate %v: want %g to %g commands per second", r, command.MinResumeRate, command.MaxResumeRate)
	}
	cfg.Defer, cfg.DeferAfter = deferAfter >= 0, max(deferAfter, 0)
	cfg.HoldStdout = !env.StdoutTerminal && !*stream
	if isSet(fs, "agent") {
		if err := useAgent(cfg, *agentName, isSet(fs, "provider"), isSet(fs, "resume-cmd")); err != nil {
			return err
		}
	}
	if err := cfg.Validate(); err != nil {
		return usageErr("run: %v", err)
	}
	if isSet(fs, "receipt-file") {
		if err := checkReceiptFile(*receiptFile); err != nil {
			return usageErr("run: --receipt-file %v", err)
		}
	}
	st, err := openStore(ctx, env, *storeLoc)
	if err != nil {
		return err
	}
	defer st.Close()
	if cfg.GitHub, err = resolveGitHub(ctx, env, st, cfg.Principal); err != nil {
		return err
	}
	cfg.Store, cfg.Secrets = st, knownSecrets(env, *storeLoc)
	res, err := command.Run(ctx, cfg)
	var deferred *command.DeferredError
	if errors.As(err, &deferred) && isSet(fs, "receipt-file") {
		if werr := writeReceiptFile(*receiptFile, deferred.Receipt); werr != nil {
			return internalErr("run: deferred (the receipt is the last line of stdout), but --receipt-file: %v", werr)
		}
	}
	if err != nil {
		return fromEngine(err, "run: ")
	}
	return exitCode(res.ExitCode)
}

// useAgent sets cfg for the agent CLI name (--agent): its provider, and its
// built-in resume unless the user gave --resume-cmd. An unknown name, or a
// --provider that names another CLI's signals, is a usage error.
func useAgent(cfg *command.Config, name string, providerSet, resumeSet bool) error {
	a, ok := agentcli.AgentNamed(name)
	if !ok {
		return usageErr("run: unknown agent %q (known: %s)", shown(name), agentNames())
	}
	if providerSet && cfg.Provider != a.Provider {
		return usageErr("run: --agent %s classifies with %s's signals; --provider %s says otherwise", a.Name, a.Provider, shown(cfg.Provider))
	}
	cfg.Provider = a.Provider
	if !resumeSet {
		cfg.ResumeCmd = a.ResumeCmd
	}
	return nil
}

// isSet reports whether the flag name was given.
func isSet(fs *flagSet, name string) bool {
	set := false
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}

// checkReceiptFile refuses, before anything runs, a --receipt-file path
// the receipt could not be written to: empty, a directory, or in a folder
// that is missing or where this user may not make a file (tried).
func checkReceiptFile(path string) error {
	if path == "" {
		return errors.New("is empty")
	}
	if fi, err := os.Stat(path); err == nil && fi.IsDir() {
		return fmt.Errorf("%s: is a directory", path)
	}
	f, err := os.CreateTemp(filepath.Dir(path), ".layover-receipt-*")
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	name := f.Name()
	f.Close()
	if err := os.Remove(name); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}

// writeReceiptFile writes the receipt, one line, to path atomically: a
// temporary file beside it, mode 0600, synced, renamed over path.
func writeReceiptFile(path string, rc []byte) error {
	f, err := os.CreateTemp(filepath.Dir(path), ".layover-receipt-*")
	if err != nil {
		return err
	}
	name := f.Name()
	err = f.Chmod(0o600)
	if err == nil {
		_, err = f.Write(append(slices.Clip(rc), '\n'))
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(name, path)
	}
	if err != nil {
		// The temporary file is ours; when it is gone already there is
		// nothing to remove.
		_ = os.Remove(name)
		return err
	}
	return nil
}

// quotaProviders lists the providers --quota names.
func quotaProviders() string { return strings.Join(registry.Names(), ", ") }

// engineConfig is a command.Config for argv in env's world: its streams,
// environment, clock, random source, signals and host name.
func engineConfig(env *Env, argv []string) *command.Config {
	return &command.Config{Command: argv, Stdin: env.Stdin, Stdout: env.Stdout, Stderr: env.Stderr,
		Environ: env.Environ, Getenv: env.Getenv, Clock: env.Clock, Rand: env.Rand, Signals: env.Signals,
		Terminal: env.Terminal, Hostname: env.Hostname}
}

// resolveGitHub is command.ResolveGitHub in env's world, its errors as exit
// codes.
func resolveGitHub(ctx context.Context, env *Env, st store.Store, principal string) (*command.GitHub, error) {
	g, err := command.ResolveGitHub(ctx, &command.GitHubConfig{Store: st, Principal: principal, Getenv: env.Getenv,
		Clock: env.Clock, Hostname: env.Hostname})
	return g, fromEngine(err, "")
}

// fromEngine maps an error of package command to its exit code and message
// (docs/design.md, Exit codes); prefix starts an input error's message. An
// error it does not know is layover's failure (125).
func fromEngine(err error, prefix string) error {
	var (
		input       *command.InputError
		storeErr    *command.StoreError
		start       *command.StartError
		notStarted  *command.NotStartedError
		deferred    *command.DeferredError
		interrupted *command.InterruptedError
		submit      *command.SubmitError
	)
	switch {
	case err == nil:
		return nil
	case errors.As(err, &input):
		return usageErr("%s%v", prefix, input)
	case errors.As(err, &storeErr):
		return internalErr("%v", storeErr)
	case errors.As(err, &start):
		if start.NotFound {
			return &exitError{code: ExitNotFound, msg: start.Error()}
		}
		return &exitError{code: ExitCannotExec, msg: start.Error()}
	case errors.As(err, &notStarted):
		return &exitError{code: ExitCapExceeded, msg: notStarted.Error()}
	case errors.As(err, &deferred):
		return exitCode(ExitDeferred)
	case errors.As(err, &interrupted):
		// The wait said on stderr what ended it.
		if interrupted.Signal == nil || interrupted.Signal == syscall.SIGTERM {
			return exitCode(ExitSIGTERM)
		}
		return exitCode(ExitSIGINT)
	case errors.As(err, &submit):
		return jobError(submit.Err)
	}
	return err
}
