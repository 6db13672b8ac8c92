package cli

import (
	"context"
	"io"
	"log/slog"
	"slices"
	"strconv"
	"time"

	"github.com/layoverhq/layover/command"
	"github.com/layoverhq/layover/schedule"
	"github.com/layoverhq/layover/store"
)

// startSchedules runs the store's schedules (docs/schedules.md) until the
// returned stop is called: each slot this host claims runs its pass under
// `layover pass`'s admission (command.AdmitPass) with serve's policy and
// the schedule's own flags over it, its output to out (serve's masked log).
// stopClaiming ends the claims (a drain); stop also ends the passes under
// way and waits for them.
func (o *ServeOptions) startSchedules(ctx context.Context, env *Env, st store.Store, target *command.GitHub,
	hostID string, out io.Writer, logger *slog.Logger) (stopClaiming, stop func()) {
	pass := func(ctx context.Context, sc store.Schedule, slot time.Time) (store.SlotResult, string) {
		policy, pace, err := schedulePolicy(o.Policy, o.Pace, sc)
		if err != nil {
			return store.SlotFailed, err.Error()
		}
		var names command.QuotaNames
		for _, q := range sc.Quota {
			if err := names.Set(q); err != nil {
				return store.SlotFailed, err.Error()
			}
		}
		// Each pass learns a login on a copy of serve's target: AdmitPass
		// may change its Principal, and passes run beside each other and
		// beside the jobs that read the target.
		own := *target
		adm, err := command.AdmitPass(ctx, &command.PassConfig{Store: st, GitHub: &own, Principal: o.Principal,
			Getenv: env.Getenv, Quota: names, Policy: policy, Now: env.Clock.Now, Warn: out,
			Pace: pace, SkipScope: "schedule:" + sc.Name, LinePrefix: "schedule " + sc.Name + ": "})
		if err != nil {
			return store.SlotFailed, err.Error()
		}
		if !adm.Admit {
			return store.SlotSkipped, adm.SkipLine
		}
		cfg := &command.Config{Command: sc.Argv, Stdout: out, Stderr: out,
			Environ: append(slices.Clip(env.Environ), "LAYOVER_SCHEDULE="+sc.Name, "LAYOVER_SLOT="+slot.UTC().Format(time.RFC3339)),
			Getenv:  env.Getenv, Clock: env.Clock, Rand: env.Rand, Hostname: env.Hostname}
		code, err := command.Exec(ctx, cfg)
		if err != nil {
			return store.SlotFailed, err.Error()
		}
		return store.SlotRan, "exit " + strconv.Itoa(code)
	}
	r := schedule.New(schedule.Config{Store: st, Clock: env.Clock, HostID: hostID, Pass: pass, Logger: logger})
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); r.Run(ctx) }()
	return r.StopClaiming, func() { cancel(); <-done }
}
