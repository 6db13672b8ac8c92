package command

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/layoverhq/layover/clock"
	"github.com/layoverhq/layover/provider"
	"github.com/layoverhq/layover/provider/agentcli"
	"github.com/layoverhq/layover/provider/github"
	"github.com/layoverhq/layover/provider/registry"
	"github.com/layoverhq/layover/quota"
	"github.com/layoverhq/layover/redact"
	"github.com/layoverhq/layover/store"
)

// Config is one wrapped command and the world it runs in. A zero field
// means the default stated on it. Error messages about a field name the
// `layover run` flag that sets it.
type Config struct {
	// Command is the argv to run. Required.
	Command []string
	// ResumeCmd, when set, is a shell command (/bin/sh -c) run instead of
	// Command after a wait; {session_id} in it is replaced, shell-quoted,
	// by the agent session named in the failed run's stdout. Without a
	// session there, Command runs again.
	ResumeCmd string
	// Provider names whose signals classify a failed run: a provider with
	// a CLI classifier (registry.CLINames: "github" for gh, an agent CLI)
	// or "auto" (all of them). "" means auto.
	Provider string
	// Cleanup, when set, is a shell command (/bin/sh -c) run once the
	// command has ended on a Stop (SIGINT or SIGTERM, during a wait or
	// while it ran) or a failure: a non-zero exit, a wait the cap refused,
	// a resume command that could not start, a store that failed. It is not
	// run after a success, a deferral (the job is not over), a command that
	// never started, or the end of the context. See cleanup.go.
	Cleanup string
	// Quota names the quotas waited out before the first run while the
	// ledger holds them exhausted (--quota); a deferred job binds them.
	// Empty: nothing is waited for before the start.
	Quota QuotaNames
	// Policy holds the reserve, the reset margin and jitter, the total
	// wait cap, the secondary wait and retries and the assumed unknown
	// reset. nil means quota.DefaultPolicy().
	Policy *quota.Policy

	// Defer ends the run with a receipt (a *DeferredError) instead of a
	// wait longer than DeferAfter, when the provider declared the wait (a
	// reset at most 24 h ahead, or a retry-after).
	Defer bool
	// DeferAfter is the longest wait Defer still waits in process; 0
	// defers every declared wait. From 0 to quota.MaxTotalWaitCap.
	DeferAfter time.Duration
	// Submit implies Defer and also records the deferred job with its
	// receipt for the durable host: ownership retained when a host is
	// live, else handoff.
	Submit bool

	// Store is the ledger, the waiter table and the activity log, and with
	// Submit the jobs. Required; Run never closes it.
	Store store.Store
	// GitHub is the GitHub quota the command draws on. nil means
	// ResolveGitHub with Store, Principal, Getenv, Clock and Hostname.
	GitHub *GitHub
	// Principal is whose quota an agent CLI's is (else LAYOVER_PRINCIPAL,
	// else "local"), and the GitHub principal when GitHub is nil.
	Principal string
	// Secrets are values masked in the command line that `layover status`
	// and the activity log show, and refused in a job Submit would store
	// (docs/secrets.md). The GitHub token is always one of them.
	Secrets []string

	// Stdin, Stdout and Stderr are the command's streams. Stdout also gets
	// the receipt of a deferral, Stderr layover's own lines. nil Stdin: no
	// input; nil Stdout or Stderr: discarded.
	Stdin          io.Reader
	Stdout, Stderr io.Writer
	// Environ is the command's environment; nil means this process's.
	Environ []string
	// Getenv reads LAYOVER_PRINCIPAL (and, with GitHub nil, the GitHub
	// settings). nil means os.Getenv.
	Getenv func(string) string
	// Clock tells the time and makes the wait timers. nil means the system
	// clock.
	Clock clock.Clock
	// Rand is the source of the wait jitter. nil means a source seeded from
	// the runtime.
	Rand quota.Rand
	// Signals delivers SIGINT and SIGTERM: forwarded to a running command,
	// or ending a wait. nil: none arrive.
	Signals <-chan os.Signal
	// HoldStdout passes on to Stdout only the stdout of the run that ends
	// the Run (the last run of the command or its resume command), for a
	// pipeline that must read one body: each run's stdout is held (in
	// memory up to 1 MiB, the rest in a temporary file unlinked at once)
	// until it is known whether another run follows; that of a run another
	// follows goes to Stderr after the line "layover: output of attempt N,
	// which failed (CLASS):". Without it stdout streams as the command
	// writes it. `layover run` holds when its stdout is not a terminal.
	HoldStdout bool
	// Terminal says Stderr is a terminal: waits count down live, and a
	// SIGINT (which the terminal sent the command already) is not sent
	// again.
	Terminal bool
	// Hostname names this machine in observations and the waiter table.
	// "" means os.Hostname().
	Hostname string
	// ResumeRate is how many commands a second may start again per quota
	// key after a quota wait, counted with the durable hosts' resumes on
	// the same store (docs/lifecycle.md, Resume pacing). 0 means
	// DefaultResumeRate; from MinResumeRate to MaxResumeRate.
	ResumeRate float64
}

// The resume rate of a run, as serve's --resume-rate (package host).
const (
	DefaultResumeRate = 10
	MinResumeRate     = 1.0 / 3600
	MaxResumeRate     = 1e6
)

// Validate checks the fields that need no store: a command, a valid
// policy, a known provider, a resume command without a token, DeferAfter in
// range. Run calls it first; a caller may call it before opening the store.
// Its errors are *InputError.
func (c *Config) Validate() error {
	if len(c.Command) == 0 {
		return &InputError{Err: errors.New("no command")}
	}
	if c.Policy != nil {
		if err := c.Policy.Validate(); err != nil {
			return &InputError{Err: err}
		}
	}
	if _, ok := registry.CLIClassifier(cmp.Or(c.Provider, registry.Auto)); !ok {
		return &InputError{Err: fmt.Errorf("unknown provider %q (known: %s, %s)", shown(c.Provider),
			strings.Join(registry.CLINames(), ", "), registry.Auto)}
	}
	if redact.Contains(c.ResumeCmd) {
		return &InputError{Err: errors.New("--resume-cmd holds what looks like a token")}
	}
	if strings.TrimSpace(c.Cleanup) == "" && c.Cleanup != "" {
		return &InputError{Err: errors.New("--cleanup is blank")}
	}
	if r := c.ResumeRate; r != 0 && !(r >= MinResumeRate && r <= MaxResumeRate) { // NaN fails both
		return &InputError{Err: fmt.Errorf("resume rate %v: want %g to %g a second", r, MinResumeRate, MaxResumeRate)}
	}
	if c.DeferAfter < 0 || c.DeferAfter > quota.MaxTotalWaitCap {
		return &InputError{Err: fmt.Errorf("--defer-after %s: want a duration from 0s to %s", c.DeferAfter, quota.MaxTotalWaitCap)}
	}
	return nil
}

// withDefaults returns a copy of c with every default filled in but GitHub.
func (c *Config) withDefaults() *Config {
	d := *c
	if d.Policy == nil {
		p := quota.DefaultPolicy()
		d.Policy = &p
	}
	d.Provider = cmp.Or(d.Provider, registry.Auto)
	d.Defer = d.Defer || d.Submit
	d.Stdout = cmp.Or[io.Writer](d.Stdout, io.Discard)
	d.Stderr = cmp.Or[io.Writer](d.Stderr, io.Discard)
	if d.Getenv == nil {
		d.Getenv = os.Getenv
	}
	d.Clock = cmp.Or[clock.Clock](d.Clock, clock.Real{})
	if d.Rand == nil {
		d.Rand = quota.NewRand()
	}
	d.Hostname = cmp.Or(d.Hostname, osHostname())
	d.ResumeRate = cmp.Or(d.ResumeRate, DefaultResumeRate)
	return &d
}

// Result is what a Run did, however it ended.
type Result struct {
	// ExitCode is the exit code of the command's last run (128+N for one
	// killed by signal N); 0 when it never ran.
	ExitCode int
	// Runs counts the starts of the command and of its resume command.
	Runs int
	// Waited is the time waited in process in all, quota and secondary
	// waits alike, never more than Policy.MaxTotalWait.
	Waited time.Duration
	// WaitedFor names what was waited for, each once, in the order first
	// waited for: resources ("core", "five_hour") or "secondary limit".
	WaitedFor []string
	// CleanupRuns counts the starts of Config.Cleanup; 0 when it did not
	// run.
	CleanupRuns int
	// CleanupExitCode is the exit code of the cleanup's last run.
	CleanupExitCode int
}

// Run runs cfg.Command under the quota policy (see the package doc) until
// it succeeds, fails for a reason no wait mends, defers, or a wait is
// ended. A run that ends with the command's own exit code returns a nil
// error and that code in Result.ExitCode; every other end is an error of
// this package (errors.go). When it waited, Run says so on Stderr last:
// "Waited 4m2s for the GitHub quota (core)".
func Run(ctx context.Context, cfg *Config) (Result, error) {
	if err := cfg.Validate(); err != nil {
		return Result{}, err
	}
	if cfg.Store == nil {
		return Result{}, &InputError{Err: errors.New("no store")}
	}
	c := cfg.withDefaults()
	if c.GitHub == nil {
		g, err := ResolveGitHub(ctx, &GitHubConfig{Store: c.Store, Principal: c.Principal, Getenv: c.Getenv,
			Clock: c.Clock, Hostname: c.Hostname})
		if err != nil {
			return Result{}, err
		}
		c.GitHub = g
	}
	if tok := strings.TrimSpace(c.GitHub.Token()); tok != "" && !slices.Contains(c.Secrets, tok) {
		c.Secrets = append(slices.Clip(c.Secrets), tok)
	}
	if err := c.refuseSubmitSecret(); err != nil {
		return Result{}, err
	}
	r := &runner{c: c, p: *c.Policy, gh: c.GitHub, budget: quota.NewBudget(*c.Policy),
		commandLine: redact.String(strings.Join(c.Command, " "), c.Secrets...)}
	if len(c.Quota) > 0 {
		quotas, err := ResolveQuotas(ctx, &QuotaConfig{Store: c.Store, GitHub: c.GitHub, Principal: c.Principal, Getenv: c.Getenv}, c.Quota)
		if err != nil {
			return Result{}, err
		}
		r.quotas = quotas
	}
	err := r.loop(ctx)
	r.passOnLast()
	if r.needsCleanup(ctx, err) {
		err = r.cleanup(ctx, err)
	}
	if r.res.Waited > 0 {
		fmt.Fprintf(c.Stderr, "Waited %s for the %s quota (%s)\n", HumanDuration(r.res.Waited), r.waitedLabel,
			strings.Join(r.res.WaitedFor, ", "))
	}
	return r.res, err
}

// runner is one Run's state: its wait budget and what it waited for.
type runner struct {
	c           *Config
	p           quota.Policy
	gh          *GitHub
	budget      *quota.Budget
	commandLine string // the command line, secrets masked
	res         Result
	// staleReset: a failure found its reset passed (or room) since the
	// last reset ahead.
	staleReset  bool
	lastOut     []byte  // the tail of the last run's stdout
	waitedLabel string  // names the provider first waited for
	quotas      []Quota // the keys Quota names, resolved
	// held is the stdout of the last run, while HoldStdout holds it, and
	// heldAttempt the run's number.
	held        *held
	heldAttempt int
	// stopped is the signal forwarded to the last run, which it ended.
	stopped os.Signal
}

// label names the provider of key for people (LabelOf).
func (r *runner) label(key quota.Key) string { return LabelOf(r.quotas, key) }

func (r *runner) loop(ctx context.Context) error {
	if err := r.waitBeforeStart(ctx); err != nil {
		return err
	}
	secondary := 0
	argv := r.c.Command
	var failed provider.Class // how the run before this one failed
	for {
		// A run follows: the one before did not end the Run.
		r.passOnFailed(failed)
		res, err := r.c.start(ctx, argv, r.hold(r.res.Runs+1), true)
		if err != nil {
			return err
		}
		r.res.Runs++
		r.res.ExitCode = res.Code
		r.lastOut, r.stopped = res.Stdout, res.Signalled
		if res.Code == 0 || res.Signalled != nil {
			return nil
		}
		classify, _ := registry.CLIClassifier(r.c.Provider) // Validate found it
		out := classify(res.Code, res.Stdout, res.Stderr, r.c.Clock.Now(), time.Local)
		failed = out.Class
		if out.Class == provider.ClassQuota || out.Class == provider.ClassSecondary {
			argv = r.nextArgv(res.Stdout, res.Stderr)
		}
		switch out.Class {
		case provider.ClassQuota:
			state, resume, err := r.recordExhaustion(ctx, out)
			if err != nil {
				return err
			}
			until := resume.At()
			if state.ResetKnown {
				if done, err := r.maybeDefer(ctx, state.Key, resume, until, false); done {
					return err
				}
			}
			if refused, err := r.wait(ctx, state.Key, quota.RerunAt(r.c.Clock.Now(), until), "Quota wait"); refused || err != nil {
				return err
			}
		case provider.ClassSecondary:
			secondary++
			if secondary > r.p.SecondaryRetries {
				fmt.Fprintf(r.c.Stderr, "layover: %s secondary limit still in force after %d retries; not retrying\n",
					Label(out.Provider), r.p.SecondaryRetries)
				return nil
			}
			key := r.keyFor(out)
			now := r.c.Clock.Now()
			until := quota.RerunAt(now, quota.AddSat(now, r.p.SecondaryDelay(out.RetryAfter)))
			if out.RetryAfter >= 0 {
				// A receipt's window adds the margin and a jitter to the
				// stated wait: drawn here, once, for it.
				resume := r.p.Resume(quota.AddSat(now, out.RetryAfter), r.c.Rand)
				if done, err := r.maybeDefer(ctx, key, resume, until, true); done {
					return err
				}
			}
			if refused, err := r.wait(ctx, key, until, "Secondary limit wait"); refused || err != nil {
				return err
			}
		default:
			return nil
		}
	}
}

// waitBeforeStart waits out any Quota key the ledger says is exhausted, so
// that no call is wasted. A wait past the cap, or a resume turn after it
// past the cap (takeTurn), is a *NotStartedError.
func (r *runner) waitBeforeStart(ctx context.Context) error {
	if len(r.c.Quota) == 0 {
		return nil
	}
	keys := KeysOf(r.quotas)
	for {
		states, err := r.c.Store.States(ctx, keys)
		if err != nil {
			return &StoreError{Op: "read", Err: err}
		}
		now := r.c.Clock.Now()
		b, held := r.p.Blocking(now, states, quota.Running)
		if !held {
			return nil
		}
		blocking := &b.State
		resume := r.p.Resume(blocking.ResetAt, r.c.Rand)
		until := resume.At()
		if blocking.ResetKnown {
			if done, err := r.maybeDefer(ctx, blocking.Key, resume, until, false); done {
				return err
			}
		}
		if err := r.budget.Take(until.Sub(now)); err != nil {
			var ce *quota.CapError
			if !errors.As(err, &ce) {
				return err
			}
			return &NotStartedError{Key: blocking.Key, ResetAt: blocking.ResetAt, Err: ce}
		}
		if err := r.visible(ctx, blocking.Key, until, "Quota wait"); err != nil {
			if te := (*turnCapError)(nil); errors.As(err, &te) {
				fmt.Fprintf(r.c.Stderr, "layover: %s quota (%s): %v\n", r.label(blocking.Key), blocking.Resource, te)
				return &NotStartedError{Key: blocking.Key, ResetAt: blocking.ResetAt, Err: te.Err}
			}
			return err
		}
	}
}

// wait charges a wait until `until` to the budget and waits. When the cap
// refuses it, refused is true: the command's failure stands, and Stderr
// says why; so it is when the cap refuses the resume turn that follows a
// quota wait (takeTurn).
func (r *runner) wait(ctx context.Context, key quota.Key, until time.Time, what string) (refused bool, err error) {
	if err := r.budget.Take(until.Sub(r.c.Clock.Now())); err != nil {
		var ce *quota.CapError
		if !errors.As(err, &ce) {
			return false, err
		}
		fmt.Fprintf(r.c.Stderr, "layover: not waiting for the %s quota (%s) until %s: %v\n", r.label(key), key.Resource, HumanTime(until), err)
		return true, nil
	}
	err = r.visible(ctx, key, until, what)
	if te := (*turnCapError)(nil); errors.As(err, &te) {
		// As a wait past the cap: the command's failure stands.
		fmt.Fprintf(r.c.Stderr, "layover: %s quota (%s): %v\n", r.label(key), key.Resource, te)
		return true, nil
	}
	return false, err
}

// visible waits a wait already charged to the budget, refunding what it
// did not use, and notes it in the activity log and the Result.
func (r *runner) visible(ctx context.Context, key quota.Key, until time.Time, what string) error {
	if err := r.c.Store.AppendActivity(ctx, store.Activity{At: r.c.Clock.Now(), Kind: "wait",
		Line: fmt.Sprintf("run: %s until %s (%s): %s", what, HumanTime(until), key.Resource, r.commandLine)}); err != nil {
		return &StoreError{Op: "write", Err: err}
	}
	planned := until.Sub(r.c.Clock.Now())
	d, err := r.c.wait(ctx, waitSpec{Key: key, Label: r.label(key), Until: until, What: what, Command: r.commandLine})
	r.budget.Refund(planned - d)
	if err == nil && what == "Quota wait" {
		var turn time.Duration
		turn, err = r.takeTurn(ctx, key)
		d = quota.SumSat(d, turn)
	}
	r.res.Waited = quota.SumSat(r.res.Waited, d)
	name := key.Resource
	if what != "Quota wait" {
		name = "secondary limit"
	}
	if r.waitedLabel == "" {
		r.waitedLabel = r.label(key)
		if key.Host == r.gh.Host {
			r.waitedLabel = Label(github.Provider) // whichever API host serves it
		}
	}
	if !slices.Contains(r.res.WaitedFor, name) {
		r.res.WaitedFor = append(r.res.WaitedFor, name)
	}
	return err
}

// takeTurn waits, once a quota wait is over, for the key's next resume
// slot, which the waiting commands and the durable hosts sharing the store
// take in turn (store.Store.TakeResumeSlot; docs/lifecycle.md, Resume
// pacing): the commands one reset releases start no faster than
// Config.ResumeRate a second, beyond their jitter. The turn is a wait like
// any other: listed in status and shown on Stderr ("waiting for its resume
// turn until 14:20:31"), charged to the cap and ended by a signal. A turn
// the cap refuses is a *turnCapError: the command does not start on it
// (the slot it took goes unused), as for a quota wait past the cap. A store
// that gives no slot lets the command go at once. It returns how long it
// waited.
func (r *runner) takeTurn(ctx context.Context, key quota.Key) (time.Duration, error) {
	now := r.c.Clock.Now()
	slot, err := r.c.Store.TakeResumeSlot(ctx, key, now, time.Duration(float64(time.Second)/r.c.ResumeRate))
	d := slot.Sub(now)
	if err != nil || d <= 0 {
		return 0, nil
	}
	if err := r.budget.Take(d); err != nil {
		var ce *quota.CapError
		if !errors.As(err, &ce) {
			return 0, err
		}
		return 0, &turnCapError{Slot: slot, Err: ce}
	}
	waited, err := r.c.wait(ctx, waitSpec{Key: key, Label: r.label(key), Until: slot, What: "Quota wait",
		Stage: "waiting for its resume turn until " + slot.Local().Format("15:04:05"), Command: r.commandLine})
	waited = min(waited, d)
	r.budget.Refund(d - waited)
	return waited, err
}

// turnCapError is a resume turn (takeTurn) the cap refused.
type turnCapError struct {
	Slot time.Time
	Err  *quota.CapError
}

func (e *turnCapError) Error() string {
	return "not waiting for its resume turn until " + HumanTime(e.Slot) + ": " + e.Err.Error()
}
func (e *turnCapError) Unwrap() error { return e.Err }

// recordExhaustion learns when the exhausted quota resets, from the failure
// itself or GitHub's free /rate_limit, records the Quota wait in the ledger
// and returns the state and when to run again, its jitter drawn once. A
// reset it cannot learn is assumed Policy.UnknownReset ahead.
//
// The room-again rule: a stated reset that has already passed, or a quota
// that has room right after a failure, is run again after the margin, once;
// found again before a reset ahead is seen, the provider's reset is stale
// and every later failure waits the assumed reset instead of re-running
// the command every margin.
func (r *runner) recordExhaustion(ctx context.Context, out provider.Outcome) (quota.State, quota.Resume, error) {
	if out.Provider != github.Provider {
		return r.recordAgentExhaustion(ctx, out)
	}
	p := r.p
	resource := cmp.Or(out.Resource, defaultResource(github.Provider))
	state := quota.State{Limit: out.Limit, Remaining: 0, Source: quota.SourceRejected, Cause: quota.CauseExhausted}
	if !out.ResetAt.IsZero() {
		state.ResetAt, state.ResetKnown = out.ResetAt, true
		for _, o := range out.Observations {
			if o.Resource == resource {
				state.RawReset = o.RawReset
			}
		}
	} else if fresh, err := r.gh.Fresh(ctx); err != nil {
		fmt.Fprintf(r.c.Stderr, "layover: could not read the GitHub quota (%s); assuming it resets in %s\n",
			strings.Join(strings.Fields(err.Error()), " "), p.UnknownReset)
	} else {
		var room bool
		for _, s := range fresh {
			if s.Resource == resource {
				state.Limit = s.Limit
				if s.Depleted() {
					state.ResetAt, state.ResetKnown, state.RawReset = s.ResetAt, true, s.RawReset
				} else if s.HasRoom() {
					room = true
				}
			}
		}
		if err := r.c.Store.RecordStates(ctx, fresh); err != nil {
			return quota.State{}, quota.Resume{}, &StoreError{Op: "write", Err: err}
		}
		// The quota already has room: the reset came between the failure
		// and the check. Run again after the margin, once.
		if room && state.ResetAt.IsZero() && !r.staleReset {
			r.staleReset = true
			return quota.State{Key: r.gh.Key(resource)}, p.Resume(r.c.Clock.Now(), r.c.Rand), nil
		}
	}
	now := r.c.Clock.Now()
	switch {
	case state.ResetAt.IsZero():
		state.ResetAt, state.ResetKnown, state.RawReset = p.AssumedReset(now), false, 0
	case state.ResetAt.After(now):
		r.staleReset = false // a reset ahead: the provider's word holds again
	case !r.staleReset:
		// The stated reset has just passed: resume after the margin, once.
		state.ResetAt = now
		r.staleReset = true
	default:
		// Again a reset that has passed (or room right after a failure):
		// the provider's reset is stale.
		state.ResetAt, state.ResetKnown, state.RawReset = p.AssumedReset(now), false, 0
	}
	state.Key = r.gh.Key(resource)
	state.ObservedAt, state.ObservedBy = now, r.c.Hostname
	if err := r.c.Store.RecordStates(ctx, []quota.State{state}); err != nil {
		return quota.State{}, quota.Resume{}, &StoreError{Op: "write", Err: err}
	}
	return state, p.Resume(state.ResetAt, r.c.Rand), nil
}

// keyFor is the quota key a failure names: the GitHub target's for gh, else
// the agent CLI's own quota on this machine.
func (r *runner) keyFor(out provider.Outcome) quota.Key {
	if out.Provider == github.Provider || out.Provider == "" || out.Provider == registry.Auto {
		return r.gh.Key(cmp.Or(out.Resource, defaultResource(github.Provider)))
	}
	principal := cmp.Or(r.c.Principal, r.c.Getenv("LAYOVER_PRINCIPAL"), agentPrincipal)
	return quota.Key{Host: out.Provider, Principal: principal, Resource: cmp.Or(out.Resource, defaultResource(out.Provider))}
}

// recordAgentExhaustion records an agent CLI's exhaustion from what its
// output declared; an unknown reset is assumed Policy.UnknownReset ahead.
func (r *runner) recordAgentExhaustion(ctx context.Context, out provider.Outcome) (quota.State, quota.Resume, error) {
	p := r.p
	now := r.c.Clock.Now()
	state := quota.State{Key: r.keyFor(out), Limit: out.Limit, Remaining: 0, Source: quota.SourceRejected,
		Cause: quota.CauseExhausted, ObservedAt: now, ObservedBy: r.c.Hostname}
	switch {
	case out.ResetAt.IsZero():
		state.ResetAt = p.AssumedReset(now)
		fmt.Fprintf(r.c.Stderr, "layover: %s gave no reset; assuming it in %s, then trying again\n", Label(out.Provider), p.UnknownReset)
	case !out.ResetAt.After(now):
		state.ResetAt, state.ResetKnown = now, true
	default:
		state.ResetAt, state.ResetKnown = out.ResetAt, true
		state.RawReset = out.ResetAt.Unix()
	}
	if err := r.c.Store.RecordStates(ctx, []quota.State{state}); err != nil {
		return quota.State{}, quota.Resume{}, &StoreError{Op: "write", Err: err}
	}
	return state, p.Resume(state.ResetAt, r.c.Rand), nil
}

// nextArgv is what runs after a wait: the resume command with the failed
// run's session filled in, when one is set and the session is known (or not
// needed), else the command itself.
func (r *runner) nextArgv(stdout, stderr []byte) []string {
	rc := r.c.ResumeCmd
	if rc == "" {
		return r.c.Command
	}
	if strings.Contains(rc, "{session_id}") {
		id := agentcli.SessionID(stdout, stderr)
		if id == "" {
			fmt.Fprintln(r.c.Stderr, "layover: no session id in the failed run's output; running the command again instead of --resume-cmd")
			return r.c.Command
		}
		rc = strings.ReplaceAll(rc, "{session_id}", "'"+strings.ReplaceAll(id, "'", `'\''`)+"'")
	}
	return []string{"/bin/sh", "-c", rc}
}
