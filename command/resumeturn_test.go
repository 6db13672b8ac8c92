package command_test

import (
	"context"
	"testing"
	"time"

	"github.com/layoverhq/layover/command"
	"github.com/layoverhq/layover/quota"
)

// After a quota wait a command takes its turn on the key's resume slots,
// shared through the store with the other waiting commands and the
// durable hosts (docs/lifecycle.md, Resume pacing): when two others took
// the slots at the reset before it, it starts two intervals later, before
// its first run and after a failed one alike, and counts the turn as
// waited.
func TestRunTakesItsResumeTurn(t *testing.T) {
	t.Parallel()
	const interval = time.Second / command.DefaultResumeRate
	for _, name := range []string{"before the start", "after a failure"} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			w := newWorld(t)
			reset := start.Add(4 * time.Minute)
			wake := reset.Add(quota.DefaultResetMargin)
			argv, runs := script(t, "ok")
			cfg := w.config(argv)
			if name == "before the start" {
				if err := w.st.RecordStates(context.Background(), []quota.State{{Key: w.key("core"), Limit: 5000, Remaining: 0,
					ResetAt: reset, ResetKnown: true, ObservedAt: start, Source: quota.SourceRejected, Cause: quota.CauseExhausted}}); err != nil {
					t.Fatal(err)
				}
				cfg.Quota = command.QuotaNames{{Provider: "github", Resource: "core"}}
			} else {
				w.exhaustedFor(reset)
				argv, runs = script(t, "primary", "ok")
				cfg = w.config(argv)
			}
			// Two others resume on the key at the reset, before this one.
			for range 2 {
				if _, err := w.st.TakeResumeSlot(context.Background(), w.key("core"), wake, interval); err != nil {
					t.Fatal(err)
				}
			}
			e := w.drive(cfg, runs, nil)
			if e.err != nil || e.res.ExitCode != 0 {
				t.Fatalf("ended %+v, %v; stderr:\n%s", e.res, e.err, w.stderr.String())
			}
			ds := durations(e.waits)
			if len(ds) != 2 || ds[1] != 2*interval || !w.clk.Now().Equal(wake.Add(2*interval)) {
				t.Fatalf("waits %v ending at %v; want the quota wait to %v, then two turns of %v", ds, w.clk.Now(), wake, interval)
			}
			if want := wake.Add(2 * interval).Sub(start); e.res.Waited != want && name == "before the start" {
				t.Errorf("waited %v; want %v, the turn counted", e.res.Waited, want)
			}
			// The next taker's turn comes after this one's.
			next, err := w.st.TakeResumeSlot(context.Background(), w.key("core"), wake, interval)
			if err != nil || !next.Equal(wake.Add(3*interval)) {
				t.Errorf("the next slot %v, %v; want %v", next, err, wake.Add(3*interval))
			}
		})
	}
}
