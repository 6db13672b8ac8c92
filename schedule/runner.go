package schedule

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/layoverhq/layover/clock"
	"github.com/layoverhq/layover/command"
	"github.com/layoverhq/layover/store"
)

// Store is what the runner reads and writes of the store.
type Store interface {
	Schedules(ctx context.Context) ([]store.Schedule, error)
	ClaimSlot(ctx context.Context, sl store.Slot) (bool, error)
	FinishSlot(ctx context.Context, schedule string, at time.Time, result store.SlotResult, detail string) error
	LastSlot(ctx context.Context, schedule string) (store.Slot, bool, error)
	AppendActivity(ctx context.Context, a store.Activity) error
}

// Pass runs one claimed slot's pass: its admission, then its command. It
// returns the slot's result (store.SlotRan, store.SlotSkipped or
// store.SlotFailed) and its detail ("exit 0", the skip line, the error).
type Pass func(ctx context.Context, sc store.Schedule, slot time.Time) (store.SlotResult, string)

// Defaults of Config.
const (
	// DefaultGrace is how late a slot may be claimed and still be on time
	// (at most its interval): later, it was missed.
	DefaultGrace = time.Minute
	// DefaultRescan is the longest the runner sleeps without reading the
	// schedules again, so that one added while serve runs is seen.
	DefaultRescan = time.Minute
)

// Config configures a Runner.
type Config struct {
	Store  Store
	Clock  clock.Clock
	HostID string // the claims' owner
	Pass   Pass
	Logger *slog.Logger
	Grace  time.Duration // default DefaultGrace
	Rescan time.Duration // default DefaultRescan
}

// Runner runs the store's schedules: Run loops, Tick is one look.
type Runner struct {
	cfg     Config
	wg      sync.WaitGroup
	mu      sync.Mutex
	invalid map[string]string // schedule name -> the expression already logged as unreadable
	stopped bool              // StopClaiming was called
}

// StopClaiming makes the runner claim no slot from now on (serve's drain);
// passes already started go on.
func (r *Runner) StopClaiming() {
	r.mu.Lock()
	r.stopped = true
	r.mu.Unlock()
}

// New returns a Runner.
func New(cfg Config) *Runner {
	if cfg.Grace <= 0 {
		cfg.Grace = DefaultGrace
	}
	if cfg.Rescan <= 0 {
		cfg.Rescan = DefaultRescan
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	return &Runner{cfg: cfg, invalid: map[string]string{}}
}

// Run looks at the schedules (Tick) and sleeps until the next slot (or
// Rescan, when sooner), until ctx ends; then it waits for the passes it
// started, which end with ctx.
func (r *Runner) Run(ctx context.Context) {
	defer r.wg.Wait()
	for {
		next := r.Tick(ctx)
		now := r.cfg.Clock.Now()
		wait := r.cfg.Rescan
		if !next.IsZero() && next.Sub(now) < wait {
			wait = max(next.Sub(now), 0)
		}
		select {
		case <-ctx.Done():
			return
		case <-r.cfg.Clock.After(wait):
		}
	}
}

// Tick claims each schedule's due slot, when it has one, and starts its
// pass (in its own goroutine, under ctx); it returns the earliest slot to
// come (zero: none).
func (r *Runner) Tick(ctx context.Context) time.Time {
	r.mu.Lock()
	stopped := r.stopped
	r.mu.Unlock()
	if stopped {
		return time.Time{}
	}
	scheds, err := r.cfg.Store.Schedules(ctx)
	if err != nil {
		if ctx.Err() == nil {
			r.cfg.Logger.Error("schedules: read store", "err", err.Error())
		}
		return time.Time{}
	}
	var next time.Time
	for _, sc := range scheds {
		n := r.tickOne(ctx, sc)
		if !n.IsZero() && (next.IsZero() || n.Before(next)) {
			next = n
		}
	}
	return next
}

// tickOne looks at one schedule and returns its next slot.
func (r *Runner) tickOne(ctx context.Context, sc store.Schedule) time.Time {
	e, err := Parse(sc.Cron, sc.TZ)
	if err != nil {
		r.mu.Lock()
		seen := r.invalid[sc.Name] == sc.Cron+"\x00"+sc.TZ
		r.invalid[sc.Name] = sc.Cron + "\x00" + sc.TZ
		r.mu.Unlock()
		if !seen {
			r.cfg.Logger.Error("schedule not run", "schedule", sc.Name, "err", err.Error())
		}
		return time.Time{}
	}
	now := r.cfg.Clock.Now()
	// A slot before the schedule was added is none of its own.
	after := sc.CreatedAt.Add(-time.Nanosecond)
	last, ok, err := r.cfg.Store.LastSlot(ctx, sc.Name)
	if err != nil {
		if ctx.Err() == nil {
			r.cfg.Logger.Error("schedule: read store", "schedule", sc.Name, "err", err.Error())
		}
		return time.Time{}
	}
	if ok && !last.At.Before(after) {
		after = last.At
	}
	if slot, due := e.Latest(after, now); due {
		r.claim(ctx, sc, e, slot, now)
	}
	return e.Next(now)
}

// Late reports whether a slot claimed at now was missed: claimed grace or
// more after it (or its interval, when shorter).
func Late(e Expr, slot, now time.Time, grace time.Duration) bool {
	if n := e.Next(slot); !n.IsZero() && n.Sub(slot) < grace {
		grace = n.Sub(slot)
	}
	return now.Sub(slot) >= grace
}

// claim claims slot for this host and, when it wins, runs the pass or, for
// a missed slot the schedule skips, records it.
func (r *Runner) claim(ctx context.Context, sc store.Schedule, e Expr, slot, now time.Time) {
	late := Late(e, slot, now, r.cfg.Grace)
	sl := store.Slot{Schedule: sc.Name, At: slot, HostID: r.cfg.HostID, ClaimedAt: now, Result: store.SlotRunning, Late: late}
	skipMissed := late && sc.Missed == store.SlotMissed
	if skipMissed {
		sl.Result, sl.Detail = store.SlotMissed, "missed: no host was up at "+command.HumanTime(slot)
	}
	won, err := r.cfg.Store.ClaimSlot(ctx, sl)
	if err != nil {
		if ctx.Err() == nil {
			r.cfg.Logger.Error("schedule: claim slot", "schedule", sc.Name, "slot", slot.Format(time.RFC3339), "err", err.Error())
		}
		return
	}
	if !won {
		return // another host has it
	}
	if late {
		what := "running it once now"
		if skipMissed {
			what = "not run (--missed skip)"
		}
		line := fmt.Sprintf("schedule %s: missed the slot at %s (no host was up); %s", sc.Name, command.HumanTime(slot), what)
		if err := r.cfg.Store.AppendActivity(ctx, store.Activity{At: now, Kind: "schedule", Line: line}); err != nil && ctx.Err() == nil {
			r.cfg.Logger.Error("schedule: write store", "schedule", sc.Name, "err", err.Error())
		}
		r.cfg.Logger.Info("schedule slot missed", "schedule", sc.Name, "slot", slot.Format(time.RFC3339), "run", !skipMissed)
	}
	if skipMissed {
		return
	}
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		r.cfg.Logger.Info("schedule slot claimed", "schedule", sc.Name, "slot", slot.Format(time.RFC3339), "host", r.cfg.HostID)
		result, detail := r.cfg.Pass(ctx, sc, slot)
		// The result is written even as serve stops: the pass is over.
		if err := r.cfg.Store.FinishSlot(context.WithoutCancel(ctx), sc.Name, slot, result, detail); err != nil {
			r.cfg.Logger.Error("schedule: write store", "schedule", sc.Name, "err", err.Error())
		}
		r.cfg.Logger.Info("schedule slot done", "schedule", sc.Name, "slot", slot.Format(time.RFC3339), "result", string(result), "detail", detail)
	}()
}

// Wait waits for the passes Tick started.
func (r *Runner) Wait() { r.wg.Wait() }
