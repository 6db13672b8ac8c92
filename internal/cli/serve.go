package cli

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"syscall"
	"time"

	"github.com/layoverhq/layover/command"
	"github.com/layoverhq/layover/host"
	"github.com/layoverhq/layover/notify"
	"github.com/layoverhq/layover/provider"
	"github.com/layoverhq/layover/provider/agentcli"
	"github.com/layoverhq/layover/quota"
	"github.com/layoverhq/layover/redact"
)

// ServeOptions are the flags of layover serve.
type ServeOptions struct {
	Policy      quota.Policy
	Store       string
	Principal   string
	Lease       time.Duration
	Heartbeat   time.Duration
	ResumeRate  float64
	Concurrency int
	// Pace paces every schedule's passes, as each schedule's own --pace.
	Pace        bool
	AuthRecheck time.Duration
	Backoff     time.Duration
	Notify      stringList // --notify targets: URL or slack:URL
	LogFormat   string
	// DrainTimeout is how long SIGTERM or SIGINT lets running jobs finish.
	DrainTimeout time.Duration

	// metrics is what serve serves at /metrics, set once the host is made.
	metrics http.Handler
	console consoleOptions
}

func runServe(ctx context.Context, env *Env, args []string) error {
	opts := ServeOptions{Policy: quota.DefaultPolicy()}
	fs := newFlagSet("serve", "serve [policy flags] [--lease D] [--heartbeat D] [--resume-rate N] [--concurrency N] [--retry-backoff D] [--auth-recheck D] [--notify URL]... [--log-format text|json] [--drain-timeout D]")
	policyFlags(fs, &opts.Policy)
	storeLoc := storeFlag(fs)
	fs.StringVar(&opts.Principal, "principal", "", "whose quota jobs draw on (default $LAYOVER_PRINCIPAL, else learned from the token)")
	fs.durationVar(&opts.Lease, "lease", host.DefaultLease, time.Second, host.MaxLease, "how long a claim holds without renewal")
	fs.durationVar(&opts.Heartbeat, "heartbeat", host.DefaultHeartbeat, 100*time.Millisecond, host.MaxLease, "how often leases and liveness are renewed (shorter than --lease)")
	fs.Float64Var(&opts.ResumeRate, "resume-rate", host.DefaultResumeRate, "resumes per second per quota key after a reset")
	fs.IntVar(&opts.Concurrency, "concurrency", host.DefaultConcurrency, "jobs running at once")
	fs.BoolVar(&opts.Pace, "pace", false, "pace every schedule's passes, as schedule add --pace does for one (docs/pacing.md)")
	fs.durationVar(&opts.Backoff, "retry-backoff", host.DefaultBackoff, time.Millisecond, host.MaxBackoff,
		"wait before a job runs again after a transient failure, doubled for each one after it")
	fs.durationVar(&opts.AuthRecheck, "auth-recheck", host.DefaultAuthRecheck, time.Second, host.MaxAuthRecheck,
		"first wait before re-checking the credentials of a job in auth-wait (then 5, 15 and 60 times it)")
	fs.Var(&opts.Notify, "notify", "POST lifecycle events to `URL` (slack:URL: Slack's form), repeatable (docs/notifications.md)")
	fs.StringVar(&opts.LogFormat, "log-format", logFormatText, "log lines as text or json (one line per job transition)")
	consoleFlags(fs, &opts.console)
	fs.durationVar(&opts.DrainTimeout, "drain-timeout", host.DefaultDrainTimeout, 0, host.MaxDrainTimeout,
		"on SIGTERM or SIGINT, claim no more jobs and let running ones finish this long before stopping them (a second signal stops at once)")
	if err := fs.parseNoArgs(env, args); err != nil {
		return err
	}
	opts.Store = *storeLoc
	if err := opts.console.check(); err != nil {
		return err
	}
	if err := opts.Policy.Validate(); err != nil {
		return usageErr("serve: %v", err)
	}
	switch {
	case opts.Heartbeat >= opts.Lease:
		return usageErr("serve: --heartbeat (%s) must be shorter than --lease (%s)", opts.Heartbeat, opts.Lease)
	case !(opts.ResumeRate >= host.MinResumeRate && opts.ResumeRate <= host.MaxResumeRate): // NaN fails both
		return usageErr("serve: --resume-rate %v: want %g to %g resumes per second", opts.ResumeRate, host.MinResumeRate, host.MaxResumeRate)
	case opts.Concurrency <= 0:
		return usageErr("serve: --concurrency must be positive")
	case opts.LogFormat != logFormatText && opts.LogFormat != logFormatJSON:
		return usageErr("serve: --log-format %q: want text or json", opts.LogFormat)
	}
	if _, err := notify.New(notify.Config{Targets: opts.Notify}); err != nil {
		return usageErr("serve: --notify: %v", err) // names a target by scheme and host only
	}
	return opts.run(ctx, env)
}

// classifyAny reads a failed job with every provider's signals: GitHub's gh
// and each agent CLI's, structured evidence first.
func classifyAny(exitCode int, stdout, stderr []byte, now time.Time) provider.Outcome {
	return agentcli.ClassifyAuto(exitCode, stdout, stderr, now, time.Local)
}

func (o *ServeOptions) run(ctx context.Context, env *Env) error {
	// The console's address is bound first: one in use ends serve before
	// it opens the store, let alone claims a job.
	ln, err := o.console.listen()
	if err != nil {
		return err
	}
	if ln != nil {
		defer ln.Close() // closed by the console's stop too; this covers an early return
	}
	st, err := openJobStore(ctx, env, o.Store)
	if err != nil {
		return err
	}
	defer st.Close()
	target, err := resolveGitHub(ctx, env, st, o.Principal)
	if err != nil {
		return err
	}
	// Every line serve logs, its jobs' output included, is masked: the
	// token it resolved, its store's password, the secret variables of its
	// environment, recognisable tokens, and (by the runner) the values of
	// the variables each job declared (docs/secrets.md).
	known := knownSecrets(env, o.Store, append(notifyURLs(o.Notify), target.Token())...)
	logOut := &redact.Writer{W: env.Stderr, Known: known}
	logger := slog.New(logHandler(o.LogFormat, logOut))
	loc := o.Store
	if loc == "" {
		loc = env.Getenv("LAYOVER_STORE")
	}
	runner := &host.ProcessRunner{Classify: classifyAny, Output: logOut, Secrets: known, Supervisor: env.Executable}
	if o.LogFormat == logFormatJSON {
		runner.OutputLine = func(id, line string) { logger.Info("job output", "job", id, "line", line) }
	}
	quotas := &command.HostQuotas{GitHub: target, Store: st, Principal: o.Principal, Getenv: env.Getenv}
	h, err := host.New(host.Config{
		Store:  st,
		Runner: runner,
		Quotas: quotas, Credentials: quotas, AuthRecheck: o.AuthRecheck, RetryBackoff: o.Backoff,
		Policy: o.Policy, Clock: env.Clock, Rand: env.Rand,
		Lease: o.Lease, Heartbeat: o.Heartbeat, ResumeRate: o.ResumeRate, Concurrency: o.Concurrency,
		Env: env.Environ, StoreLocation: loc, Hostname: env.Hostname, Logger: logger,
	})
	if err != nil {
		return usageErr("serve: %v", err)
	}
	notifier, err := notify.New(notify.Config{Targets: o.Notify, Clock: env.Clock, Rand: env.Rand, Logger: logger})
	if err != nil {
		return usageErr("serve: --notify: %v", err)
	}
	notifier.Start(ctx)
	defer notifier.Close()
	sub, notifySub := h.Subscribe(0), h.Subscribe(notifyEventBuffer)
	msub := h.Subscribe(metricsEventBuffer)
	if err := h.Start(ctx); err != nil {
		return internalErr("serve: %v", err)
	}
	forwardDone := make(chan struct{})
	go func() { defer close(forwardDone); forwardJobEvents(ctx, st, notifySub, notifier, logger) }()
	defer func() { notifySub.Close(); <-forwardDone }()
	var stopMetrics func()
	notifyDropped := notifyLost(notifier, notifySub)
	o.metrics, stopMetrics = startMetrics(ctx, env, st, msub, notifyDropped, logger)
	defer stopMetrics()
	stopConsole, err := o.console.startConsole(ctx, env, ln, st, h, o.Policy, o.metrics, logger)
	if err != nil {
		h.Stop()
		return err
	}
	defer stopConsole()
	coordCtx, stopCoord := context.WithCancel(ctx)
	coordDone := make(chan struct{})
	go func() {
		defer close(coordDone)
		coordinate(coordCtx, env, st, h, sub, o.Heartbeat, logger, notifier)
	}()
	defer func() { stopCoord(); <-coordDone }()
	stopClaimingSlots, stopSchedules := o.startSchedules(ctx, env, st, target, h.ID(), logOut, logger)
	defer stopSchedules()
	logger.Info("layover serve started", "host", h.ID(), "lease", o.Lease.String(), "heartbeat", o.Heartbeat.String())
	// The first SIGTERM or SIGINT drains the host (docs/lifecycle.md,
	// Draining); a second one, or ctx ending, ends the drain at once.
	var drained chan struct{} // closed when the drain is over; nil before
	drainCtx, stopDrain := context.WithCancel(ctx)
	defer stopDrain()
	for {
		select {
		case sig := <-env.Signals:
			switch {
			case sig != syscall.SIGINT && sig != syscall.SIGTERM:
			case drained != nil:
				logger.Info("stopping at once", "signal", fmt.Sprint(sig))
				stopDrain()
			default:
				logger.Info("stopping", "signal", fmt.Sprint(sig))
				stopClaimingSlots()
				drained = make(chan struct{})
				go func() { defer close(drained); h.Drain(drainCtx, o.DrainTimeout) }()
			}
		case <-drained:
			return nil
		case <-ctx.Done():
			if drained != nil {
				<-drained // its context has ended too
			}
			h.Stop()
			return nil
		}
	}
}
