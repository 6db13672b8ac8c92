package command_test

import (
	"context"
	"errors"
	"github.com/layoverhq/layover/store"
	"os"
	"strings"
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
				w.ledgerExhausted(reset)
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

// The resume turn is a wait like the quota wait before it: listed in
// status and named on Stderr while it lasts, ended by SIGINT, and refused
// by the cap as a quota wait past it is: the command does not start early
// (not started before its first run; after a failure, the failure stands).
func TestRunResumeTurnIsAVisibleBoundedWait(t *testing.T) {
	t.Parallel()
	const interval = time.Second / command.DefaultResumeRate
	for _, name := range []string{"visible", "interrupted", "capped before the start", "capped after a failure"} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			w := newWorld(t)
			reset := start.Add(4 * time.Minute)
			wake := reset.Add(quota.DefaultResetMargin)
			argv, runs := script(t, "ok")
			cfg := w.config(argv)
			if name == "capped after a failure" {
				w.exhaustedFor(reset)
				argv, runs = script(t, "primary", "ok")
				cfg = w.config(argv)
			} else {
				w.ledgerExhausted(reset)
				cfg.Quota = command.QuotaNames{{Provider: "github", Resource: "core"}}
			}
			if strings.HasPrefix(name, "capped") {
				// The quota wait and one turn fit; the two turns it gets do not.
				cfg.Policy.MaxTotalWait = wake.Sub(start) + interval
			}
			for range 2 {
				if _, err := w.st.TakeResumeSlot(context.Background(), w.key("core"), wake, interval); err != nil {
					t.Fatal(err)
				}
			}
			turn := "waiting for its resume turn until " + wake.Add(2*interval).Local().Format("15:04:05")
			var listed []store.Waiter
			e := w.drive(cfg, runs, func(i int, next time.Time) {
				if i == 1 {
					listed, _ = w.st.Waiters(context.Background())
					if name == "interrupted" {
						w.sigs <- os.Interrupt
						return
					}
				}
				w.clk.Set(next)
			})
			var ie *command.InterruptedError
			var ns *command.NotStartedError
			switch name {
			case "visible":
				if e.err != nil || len(listed) != 1 || listed[0].Stage != turn || !strings.Contains(w.stderr.String(), "layover: "+turn) {
					t.Errorf("ended %v; waiters during the turn %+v; want one at %q, on stderr too:\n%s", e.err, listed, turn, w.stderr.String())
				}
			case "interrupted":
				if !errors.As(e.err, &ie) || runs() != 0 {
					t.Errorf("ended %v after %d runs; want interrupted in its turn, not run", e.err, runs())
				}
			case "capped before the start":
				if !errors.As(e.err, &ns) || runs() != 0 || len(e.waits) != 1 {
					t.Errorf("ended %v after %d runs, waits %v; want not started, no turn waited:\n%s", e.err, runs(), e.waits, w.stderr.String())
				}
			default:
				if e.err != nil || runs() != 1 || e.res.ExitCode == 0 || !strings.Contains(w.stderr.String(), "not waiting for its resume turn") {
					t.Errorf("ended %+v, %v after %d runs; want the failure to stand:\n%s", e.res, e.err, runs(), w.stderr.String())
				}
			}
		})
	}
}
