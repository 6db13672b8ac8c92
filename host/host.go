package host

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"slices"
	"sync"
	"time"

	"github.com/layoverhq/layover/clock"
	"github.com/layoverhq/layover/job"
	"github.com/layoverhq/layover/quota"
	"github.com/layoverhq/layover/store"
)

// Store is what a host needs of its store: all of it (store.Store).
type Store = store.Store

// Quotas resolves a job's quota names and reads their state.
type Quotas interface {
	// Keys resolves quota names (PROVIDER[:RESOURCE], as --quota takes
	// them) to keys.
	Keys(ctx context.Context, names []string) ([]quota.Key, error)
	// Fresh reads the current state of keys from the provider (for GitHub
	// its free /rate_limit), records it in the ledger and returns it. An
	// error means the check itself failed; the host then trusts the ledger.
	Fresh(ctx context.Context, keys []quota.Key) ([]quota.State, error)
}

// Defaults of docs/design.md (Defaults).
const (
	DefaultLease     = 30 * time.Second
	DefaultHeartbeat = 10 * time.Second
	// MaxLease bounds Config.Lease: a host that died holds its jobs no
	// longer than this.
	MaxLease = time.Hour
	// DefaultDeadline is a job's deadline after its submission when it
	// names none; MaxDeadline bounds how far ahead a deadline (and a
	// progress timeout) may be.
	DefaultDeadline   = job.DefaultDeadline
	MaxDeadline       = 30 * 24 * time.Hour
	DefaultResumeRate = 10 // resumes per second per key
	// MinResumeRate and MaxResumeRate bound Config.ResumeRate (resumes per
	// second per key): slower than one an hour or faster than a million a
	// second is a mistake, and outside them the pacing interval overflows.
	MinResumeRate      = 1.0 / 3600
	MaxResumeRate      = 1e6
	DefaultConcurrency = 16
	DefaultMaxAttempts = 3
	DefaultBackoff     = 10 * time.Second
	// MaxBackoff caps the backoff after transient failures, and
	// MaxAttemptsLimit bounds Spec.MaxAttempts.
	MaxBackoff       = time.Hour
	MaxAttemptsLimit = 100
	// DefaultGrace is how long a stopped attempt has to end before it is
	// killed, when the lease leaves that much time (see Host.grace).
	DefaultGrace = 5 * time.Second
	// DefaultDrainTimeout is how long a drain (Drain) lets running jobs
	// finish by default; MaxDrainTimeout bounds it.
	DefaultDrainTimeout = 30 * time.Second
	MaxDrainTimeout     = 24 * time.Hour
)

// stuckRetry is how soon, in wall time, the scheduler looks again when work
// is due but a pass could move none of it (another transaction holds it).
const stuckRetry = 50 * time.Millisecond

// probeWait is the wait before probing again, after n probes in a row, a
// quota whose reset is unknown: the policy's UnknownReset doubled each
// time, at most 8 times it (by default 15, 30, 60, then 120 minutes).
func (h *Host) probeWait(n int) time.Duration {
	u := h.cfg.Policy.UnknownReset
	return clock.Exponential(u, 8*u).Next(n)
}

// MaxProbes bounds the deferrals in a row without a declared reset: the
// next one fails the job. Twelve probes on the default backoff span about
// 20 hours, within the default deadline.
const MaxProbes = 12

// DefaultAuthRecheck is the first wait of a job in auth-wait before its
// credentials are checked; the later ones are authSteps times it (1, 5,
// 15, then every 60 minutes; docs/lifecycle.md, Waiting for credentials).
const DefaultAuthRecheck = time.Minute

// MaxAuthRecheck bounds Config.AuthRecheck.
const MaxAuthRecheck = time.Hour

var authSteps = []time.Duration{1, 5, 15, 60}

// authWaitAfter is the wait before the credentials check that follows n
// failed ones.
func (h *Host) authWaitAfter(n int) time.Duration {
	return h.cfg.AuthRecheck * authSteps[min(max(n, 0), len(authSteps)-1)]
}

// Config configures a Host. Store and Runner are required.
type Config struct {
	Store  Store
	Runner Runner
	// Quotas resolves quota names; nil means jobs' quotas are not checked.
	Quotas Quotas
	// Credentials re-checks the credentials of jobs in auth-wait; nil
	// leaves such jobs (but agent jobs, whose CLI checks itself) to
	// `layover unblock`. AuthRecheck is the first wait before a check
	// (default DefaultAuthRecheck, at most MaxAuthRecheck).
	Credentials Credentials
	AuthRecheck time.Duration
	// RetryBackoff is the wait before the run after a job's first
	// transient failure, doubled for each one after it, at most MaxBackoff
	// (default DefaultBackoff).
	RetryBackoff time.Duration
	Policy       quota.Policy
	Clock        clock.Clock
	Rand         quota.Rand
	// Lease is how long a claim holds without renewal; Heartbeat how often
	// the host renews its leases and its liveness. Heartbeat < Lease.
	Lease, Heartbeat time.Duration
	// ResumeRate is how many resumes per second may start per quota key.
	ResumeRate float64
	// Concurrency is how many jobs may run at once.
	Concurrency int
	// Env is the environment jobs inherit (default os.Environ()).
	Env []string
	// StoreLocation is handed to jobs as LAYOVER_STORE, so `layover
	// checkpoint` inside a job finds the host's store.
	StoreLocation string
	// CheckpointDir holds the files LAYOVER_CHECKPOINT points at (default
	// a temporary directory).
	CheckpointDir string
	// Shell runs the *-cmd hooks (default /bin/sh).
	Shell string
	// ID names the host in the store (default a random id); Hostname is
	// shown by status.
	ID, Hostname string
	Logger       *slog.Logger
}

// Host is a durable host. Start it once; Stop may be called any number of
// times, before or after Start. Safe for concurrent use.
type Host struct {
	// Jobs is the host's front door, with the host's Config: a job it
	// submits or makes due wakes this host's scheduler, however it is
	// called (h.Submit or h.Jobs.Submit).
	*Jobs
	// grace bounds how long a stopped attempt may take to end:
	// min(DefaultGrace, (Lease-Heartbeat)/2). A lease taken back by a sweep
	// or left unrenewed while the host stops still has Lease-Heartbeat to
	// run, so the attempt is over before another claim can start it.
	grace time.Duration

	mu      sync.Mutex
	active  map[string]*active // job id -> running attempt
	lastRes map[quota.Key]time.Time
	started bool
	stopped bool
	// draining is set by Drain: the scheduler claims nothing more. Drain
	// sets it holding claimMu too, which the scheduler holds while it
	// claims and starts jobs, so no claim starts after Drain has begun.
	draining bool
	claimMu  sync.Mutex
	cancel   context.CancelFunc
	loops    sync.WaitGroup // the scheduler, the heartbeat, the store's watcher
	jobs     sync.WaitGroup // attempts in flight
	wake     chan struct{}
	// ended receives (coalesced) when an attempt has ended, for Drain.
	ended chan struct{}
	// watch tells the heartbeat of a new attempt to watch.
	watch chan struct{}
	// sleepUntil is when the scheduler loop next wakes by itself; zero
	// while it is awake, about to read the store again.
	sleepUntil time.Time
	// authLook is when the scheduler next lists the jobs in auth-wait for
	// their credentials checks: the earliest check this host knows of, at
	// most a heartbeat away (another host's jobs). authBusy is set while a
	// round of checks runs. Both guarded by mu.
	authLook time.Time
	authBusy bool
	// cleanups are the rounds of cleanup commands (cleanup.go); guarded by
	// mu.
	cleanups cleanupState
	// still is what Still reports (still.go); guarded by mu but stilled.
	still stillness
}

// active is a job this host holds.
type active struct {
	fence  int64
	cancel context.CancelFunc
	done   chan struct{} // closed when the attempt has ended
	// leaseUntil is the end of the lease as the store last confirmed it
	// (the claim, then each renewal); guarded by Host.mu.
	leaseUntil time.Time
	// stopping is set once the attempt was told to stop; guarded by Host.mu.
	stopping bool
}

// New validates cfg and returns a host.
func New(cfg Config) (*Host, error) {
	if cfg.Store == nil || cfg.Runner == nil {
		return nil, errors.New("host: Store and Runner are required")
	}
	front, err := NewJobs(cfg)
	if err != nil {
		return nil, err
	}
	c := &front.cfg
	c.Lease = orDuration(c.Lease, DefaultLease)
	c.Heartbeat = orDuration(c.Heartbeat, DefaultHeartbeat)
	if c.Lease < 0 || c.Lease > MaxLease || c.Heartbeat < 0 {
		return nil, fmt.Errorf("host: lease %s and heartbeat %s: want a lease up to %s and a shorter heartbeat", c.Lease, c.Heartbeat, MaxLease)
	}
	if c.Heartbeat >= c.Lease {
		return nil, fmt.Errorf("host: heartbeat %s must be shorter than the lease %s", c.Heartbeat, c.Lease)
	}
	c.RetryBackoff = orDuration(c.RetryBackoff, DefaultBackoff)
	if c.RetryBackoff < 0 || c.RetryBackoff > MaxBackoff {
		return nil, fmt.Errorf("host: retry backoff %s: want up to %s", c.RetryBackoff, MaxBackoff)
	}
	c.AuthRecheck = orDuration(c.AuthRecheck, DefaultAuthRecheck)
	if c.AuthRecheck < 0 || c.AuthRecheck > MaxAuthRecheck {
		return nil, fmt.Errorf("host: credentials recheck %s: want up to %s", c.AuthRecheck, MaxAuthRecheck)
	}
	if c.ResumeRate == 0 {
		c.ResumeRate = DefaultResumeRate
	}
	if !(c.ResumeRate >= MinResumeRate && c.ResumeRate <= MaxResumeRate) { // NaN fails both
		return nil, fmt.Errorf("host: resume rate %v: want %g to %g per second", c.ResumeRate, MinResumeRate, MaxResumeRate)
	}
	if c.Concurrency <= 0 {
		c.Concurrency = DefaultConcurrency
	}
	if c.ID == "" {
		c.ID = "host-" + randomHex(8)
	}
	if c.Hostname == "" {
		c.Hostname, _ = os.Hostname()
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	h := &Host{Jobs: front, grace: min(DefaultGrace, (c.Lease-c.Heartbeat)/2),
		active: map[string]*active{}, lastRes: map[quota.Key]time.Time{}, wake: make(chan struct{}, 1), watch: make(chan struct{}, 1), ended: make(chan struct{}, 1),
		still: stillness{stilled: make(chan struct{}, 1)}}
	front.live, front.wake = h.live, h.nudgeIfSooner
	return h, nil
}

// live reports whether the host is running: a deferral it records now is
// retained.
func (h *Host) live() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.started && !h.stopped
}

func orDuration(d, def time.Duration) time.Duration {
	if d <= 0 {
		return def
	}
	return d
}

func randomHex(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// ID is the host's id in the store.
func (h *Host) ID() string { return h.cfg.ID }

// Start registers the host and starts its scheduler and heartbeat. It
// returns once the host is registered, so a deferral recorded after Start
// is retained.
func (h *Host) Start(ctx context.Context) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.started || h.stopped {
		return errors.New("host: already started or stopped")
	}
	now := h.cfg.Clock.Now()
	if h.cfg.CheckpointDir == "" {
		dir, err := os.MkdirTemp("", "layover-checkpoints-")
		if err != nil {
			return fmt.Errorf("host: %w", err)
		}
		h.cfg.CheckpointDir = dir
	}
	if err := h.st.RegisterHost(ctx, job.Host{ID: h.cfg.ID, Hostname: h.cfg.Hostname, PID: os.Getpid(),
		StartedAt: now, LastSeen: now, Lease: h.cfg.Lease}); err != nil {
		return fmt.Errorf("host: register: %w", err)
	}
	ctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	h.cancel, h.started = cancel, true
	h.loops.Add(2)
	go h.loop(ctx)
	go h.heartbeat(ctx)
	if w, ok := h.st.(store.Changes); ok {
		if changes, err := w.WatchJobs(ctx); err != nil {
			h.cfg.Logger.Warn("cannot watch the store for new jobs; looking every heartbeat", "err", err)
		} else {
			h.loops.Add(1)
			go h.followStore(ctx, changes)
		}
	}
	return nil
}

// followStore wakes the scheduler when the store says a job may have
// become due (store.Changes) sooner than the scheduler would look by
// itself: a job another process submitted, unblocked or approved starts
// now rather than at the next heartbeat (docs/lifecycle.md, Prompt start).
func (h *Host) followStore(ctx context.Context, changes <-chan struct{}) {
	defer h.loops.Done()
	for range changes {
		if ctx.Err() != nil {
			return
		}
		h.mu.Lock()
		wake, draining := h.sleepUntil, h.draining
		h.mu.Unlock()
		switch {
		case draining:
			continue
		case wake.IsZero():
			// The scheduler is awake and may have read the store before
			// the write: it looks again.
			h.Nudge()
			continue
		}
		// A signal may stand for a write that made nothing due sooner
		// (the store cannot always tell): wake the scheduler only for work
		// due before it would wake by itself.
		at, ok, err := h.st.NextJobDue(ctx)
		if err != nil || (ok && at.Before(wake)) {
			h.Nudge()
		}
	}
}

// Drain stops the host gracefully: it claims no more jobs (not even due
// ones), lets the attempts running end by themselves, and Stops once none
// runs, once timeout has passed on the host's clock, or once ctx ends
// (a second signal), whichever comes first. Stop then stops the attempts
// still running and gives their jobs back as it always does. While it
// drains, the host renews its leases and sweeps, but starts no cleanup
// command and re-checks no credentials. It logs the drain's start and
// returns how many attempts were still running when it stopped them.
// Drain of a host not started, or stopped, just Stops.
func (h *Host) Drain(ctx context.Context, timeout time.Duration) (stopped int) {
	h.claimMu.Lock()
	h.mu.Lock()
	if !h.started || h.stopped {
		h.mu.Unlock()
		h.claimMu.Unlock()
		h.Stop()
		return 0
	}
	h.draining = true
	n := len(h.active)
	h.mu.Unlock()
	h.claimMu.Unlock()
	deadline := h.cfg.Clock.After(timeout)
	h.cfg.Logger.Info("draining", "running", n, "up_to", timeout.String())
wait:
	for h.running() > 0 {
		select {
		case <-h.ended:
		case <-deadline:
			break wait
		case <-ctx.Done():
			break wait
		}
	}
	stopped = h.running()
	if stopped > 0 {
		h.cfg.Logger.Warn("drain over; stopping the attempts still running", "running", stopped)
	}
	h.Stop()
	return stopped
}

func (h *Host) isDraining() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.draining
}

// Stop ends the scheduler, stops every running attempt and gives its job
// back (ready, no attempt counted), and unregisters the host.
func (h *Host) Stop() {
	defer h.hub.closeAll() // after the last attempt's events
	h.mu.Lock()
	if h.stopped || !h.started {
		h.stopped = true
		h.mu.Unlock()
		return
	}
	h.stopped = true
	h.cancel()
	h.mu.Unlock()
	h.loops.Wait()
	h.jobs.Wait()
	if err := h.st.UnregisterHost(context.Background(), h.cfg.ID); err != nil {
		h.cfg.Logger.Error("unregister host", "err", err)
	}
}

// Nudge asks the scheduler to look for due work now, as after a submit.
func (h *Host) Nudge() {
	h.mu.Lock()
	defer h.mu.Unlock()
	select {
	case h.wake <- struct{}{}:
		h.still.nudged = true
	default:
	}
}

// loop sweeps, claims and starts due jobs, then sleeps until the next due
// time or a nudge.
func (h *Host) loop(ctx context.Context) {
	defer h.loops.Done()
	for ctx.Err() == nil {
		h.setSleepUntil(time.Time{})
		draining := h.isDraining()
		now := h.cfg.Clock.Now()
		swept, err := h.st.SweepJobs(ctx, now)
		if err != nil && ctx.Err() == nil {
			h.cfg.Logger.Error("sweep", "err", err)
		}
		if !draining {
			h.maybeRecheckCredentials(ctx, now)
			h.maybeCleanup(ctx, now, swept.PastDue+swept.Expired > 0)
		}
		if swept.Moved() {
			// The store moves these jobs in bulk and names none of them:
			// one line gives the counts of the transitions it made.
			h.cfg.Logger.Info("jobs swept", "woken", swept.Woken, "expired", swept.Expired,
				"past_due", swept.PastDue, "reclaimed", swept.Reclaimed, "failed", swept.Failed)
			h.publish(Event{At: now, Swept: swept})
		}
		if swept.Reclaimed > 0 && h.running() > 0 {
			// The sweep may have taken back a job this host runs (its
			// progress deadline passed): stop it now, not at the next
			// heartbeat.
			held := h.held()
			if lost, err := h.st.RenewLeases(ctx, h.cfg.ID, held, now, h.cfg.Lease); err == nil {
				h.renewed(held, lost, now)
			}
		}
		full := false
		progress := swept.Moved()
		h.claimMu.Lock()
		if free := h.cfg.Concurrency - h.running(); free > 0 && !h.isDraining() {
			claimed, err := h.st.ClaimJobs(ctx, h.cfg.ID, now, h.cfg.Lease, free)
			if err != nil && ctx.Err() == nil {
				h.cfg.Logger.Error("claim", "err", err)
			}
			for _, j := range claimed {
				h.startJob(ctx, j)
			}
			full = len(claimed) == free
			progress = progress || len(claimed) > 0
		}
		h.claimMu.Unlock()
		sleep := h.cfg.Heartbeat
		// next is the due work the sleep is for, read before the clock.
		var next time.Time
		// stuck is due work this pass could move none of: another
		// transaction holds it (a fleet store skips locked rows).
		stuck := false
		if !full && !draining { // a drain sweeps each heartbeat, and claims nothing
			if at, ok, err := h.st.NextJobDue(ctx); err == nil && ok {
				next = at
				if !at.After(now) && !progress {
					stuck, next = true, time.Time{}
				}
			}
		}
		// The wake-up is a time, from one reading of the clock, and the
		// timer is armed for that time (timerAt) before Still can report
		// it: a driver of a fake clock that moves it once the host is
		// still, even before the timer is armed, finds the scheduler
		// waking at the wake-up Still reported, not late by the move.
		later := h.cfg.Clock.Now()
		if !next.IsZero() {
			sleep = min(sleep, max(next.Sub(later), 0))
		}
		if full && h.running() < h.cfg.Concurrency {
			sleep = 0
		}
		if d, ok := h.cleanupIn(later); ok && !draining {
			sleep = min(sleep, d)
		}
		until := later.Add(sleep)
		timer := h.timerAt(until)
		// Stuck, it looks again stuckRetry later in wall time, not on the
		// host's clock: the other transaction ends in wall time, whatever
		// a fake clock does, and a host waiting for it is not still (it
		// reports no wake-up), since it will act without the clock moving.
		var retry <-chan time.Time
		if stuck {
			retry = time.After(stuckRetry)
		} else {
			h.setSleepUntil(until)
		}
		select {
		case <-ctx.Done():
		case <-h.wake:
			h.nudged()
		case <-timer:
		case <-retry:
		}
	}
}

func (h *Host) setSleepUntil(t time.Time) {
	h.mu.Lock()
	h.sleepUntil = t
	h.still.woke(t.IsZero())
	h.mu.Unlock()
	if !t.IsZero() {
		store.Signal(h.still.stilled)
	}
}

// nudgeIfSooner wakes the loop when j, as this host just wrote it, has work
// due (a wake-up, a retry, an expiry) before the loop would look at the
// store again by itself. The loop never sleeps longer than a heartbeat, and
// reads the store after it last became awake, so only what is due within a
// heartbeat and before its wake-up needs a nudge.
func (h *Host) nudgeIfSooner(j job.Job) {
	if j.CleanupDue() {
		// This host ended the job: its cleanup runs now.
		h.cleanupSoon()
	}
	at, ok := h.dueAt(j)
	if !ok || !at.Before(h.cfg.Clock.Now().Add(h.cfg.Heartbeat)) {
		return
	}
	h.mu.Lock()
	wake := h.sleepUntil
	h.mu.Unlock()
	if wake.IsZero() || at.Before(wake) {
		h.Nudge()
	}
}

// dueAt is the earliest time j gives the sweep or the claim work, as the
// store's NextJobDue counts it, leaving out this host's own leases, which
// its heartbeat renews.
func (h *Host) dueAt(j job.Job) (time.Time, bool) {
	var at time.Time
	ok := false
	add := func(t time.Time) {
		if !ok || t.Before(at) {
			at, ok = t, true
		}
	}
	claimed := j.LeaseOwner != ""
	switch j.State {
	case job.Ready, job.Resumable:
		if !claimed {
			add(j.RunAt)
		}
	case job.Deferred:
		if j.Ownership == job.Retained {
			add(j.RunAt)
		}
	case job.AuthWait:
		if !j.RunAt.IsZero() {
			add(j.RunAt)
		}
	case job.Running:
		if !j.ProgressBy.IsZero() {
			add(j.ProgressBy.Add(time.Millisecond))
		}
	}
	if claimed && j.LeaseOwner != h.cfg.ID {
		add(j.LeaseUntil)
	}
	if (j.State == job.Deferred || j.State == job.Resumable) && !j.ResumeBy.IsZero() {
		add(j.ResumeBy.Add(time.Millisecond))
	}
	if !j.State.Terminal() && !j.Spec.Deadline.IsZero() {
		add(j.Spec.Deadline.Add(time.Millisecond))
	}
	return at, ok
}

func (h *Host) running() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.active)
}

func (h *Host) startJob(ctx context.Context, j job.Job) {
	jctx, cancel := context.WithCancel(ctx)
	a := &active{fence: j.Fence, cancel: cancel, done: make(chan struct{}), leaseUntil: j.LeaseUntil}
	h.mu.Lock()
	// This host may claim a job again while the attempt whose lease it
	// lost is still ending (a late heartbeat, a sweep): the new attempt
	// takes over the job's entry, and waits for the old one to end.
	prev := h.active[j.ID]
	h.active[j.ID] = a
	h.mu.Unlock()
	select {
	case h.watch <- struct{}{}:
	default:
	}
	h.jobs.Add(1)
	h.workStarted()
	go func() {
		defer h.jobs.Done()
		defer h.workEnded()
		defer func() {
			cancel()
			h.mu.Lock()
			full := len(h.active) >= h.cfg.Concurrency
			if h.active[j.ID] == a {
				delete(h.active, j.ID)
			}
			h.mu.Unlock()
			close(a.done)
			store.Signal(h.ended)
			// A freed slot matters only when the loop could not claim
			// everything due; what this job's writes made due nudged the
			// loop then (apply).
			if full {
				h.Nudge()
			}
		}()
		if prev != nil {
			prev.cancel()
			<-prev.done
		}
		h.execute(jctx, j)
	}()
}

// heartbeat renews the host's liveness and its leases every Heartbeat. A
// lease it cannot renew is lost: the attempt is stopped at once. Beside it
// runs a watchdog: an attempt whose lease, as last confirmed by the store,
// would run out within the grace is stopped then, whether the renewal in
// flight has failed, hangs, or will succeed too late, so the attempt is
// over before any other host could claim the job.
func (h *Host) heartbeat(ctx context.Context) {
	defer h.loops.Done()
	type renewal struct {
		held  map[string]int64
		at    time.Time // the now the leases were renewed from
		lost  []string
		err   error
		reply chan renewal
	}
	next := h.cfg.Clock.Now().Add(h.cfg.Heartbeat)
	var inflight chan renewal // nil while no renewal is in flight
	for {
		now := h.cfg.Clock.Now()
		h.stopLapsing(now)
		var tick, lapse <-chan time.Time
		if inflight == nil {
			tick = h.timerAt(next)
		}
		if at, ok := h.nextLapse(); ok {
			lapse = h.timerAt(at)
		}
		select {
		case <-ctx.Done():
			return
		case <-lapse:
		case <-h.watch:
			// A new attempt: its lease joins the watch.
		case <-tick:
			// The time the leases are renewed from is read now, after the
			// wait: leases run from it.
			r := renewal{held: h.held(), at: h.cfg.Clock.Now(), reply: make(chan renewal, 1)}
			inflight = r.reply
			go func() {
				r.err = h.st.HostHeartbeat(ctx, h.cfg.ID, r.at)
				if r.err == nil {
					r.lost, r.err = h.st.RenewLeases(ctx, h.cfg.ID, r.held, r.at, h.cfg.Lease)
				}
				r.reply <- r
			}()
		case r := <-inflight:
			inflight = nil
			next = r.at.Add(h.cfg.Heartbeat)
			if r.err != nil {
				if ctx.Err() != nil {
					return
				}
				h.cfg.Logger.Error("heartbeat", "err", r.err)
				continue
			}
			h.renewed(r.held, r.lost, r.at)
		}
	}
}

// timerAt returns a channel that receives once the host's clock reaches t
// (clock.At): at once when it has. A fake clock a test moves between a
// reading of the clock and the arming of a timer for a duration would leave
// that timer late by the move; one for the time cannot be.
func (h *Host) timerAt(t time.Time) <-chan time.Time {
	return clock.At(h.cfg.Clock, t)
}

// renewed records a renewal made at now: the leases in held and not in
// lost run until now+Lease; those lost are stopped.
func (h *Host) renewed(held map[string]int64, lost []string, now time.Time) {
	for _, id := range lost {
		h.lose(id, held[id])
	}
	until := now.Add(h.cfg.Lease)
	h.mu.Lock()
	defer h.mu.Unlock()
	for id, fence := range held {
		if a := h.active[id]; a != nil && a.fence == fence && !slices.Contains(lost, id) && until.After(a.leaseUntil) {
			a.leaseUntil = until
		}
	}
}

// nextLapse is the earliest time a running attempt must be stopped because
// its lease, as last confirmed, runs out a grace later.
func (h *Host) nextLapse() (time.Time, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	var at time.Time
	ok := false
	for _, a := range h.active {
		if a.stopping {
			continue
		}
		if t := a.leaseUntil.Add(-h.grace); !ok || t.Before(at) {
			at, ok = t, true
		}
	}
	return at, ok
}

// stopLapsing stops the attempts whose confirmed lease ends within the
// grace of now.
func (h *Host) stopLapsing(now time.Time) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for id, a := range h.active {
		if !a.stopping && !now.Before(a.leaseUntil.Add(-h.grace)) {
			h.cfg.Logger.Warn("lease not renewed in time; stopping the attempt", "job", id, "lease_until", a.leaseUntil)
			a.stopping = true
			a.cancel()
		}
	}
}

func (h *Host) held() map[string]int64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	m := make(map[string]int64, len(h.active))
	for id, a := range h.active {
		m[id] = a.fence
	}
	return m
}

// lose stops the attempt of a job whose lease (the claim with this fence)
// this host lost; a newer claim of the job keeps running.
func (h *Host) lose(id string, fence int64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if a := h.active[id]; a != nil && a.fence == fence {
		h.cfg.Logger.Warn("lease lost; stopping the attempt", "job", id)
		a.stopping = true
		a.cancel()
	}
}
