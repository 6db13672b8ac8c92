package command_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/layoverhq/layover/command"
	"github.com/layoverhq/layover/job"
	"github.com/layoverhq/layover/receipt"
)

// A failure that GitHub's /rate_limit says is exhausted until a known reset
// is recorded in the ledger and waited out (reset + margin), visibly; then
// the command runs again as a fresh process and its success ends the run.
func TestRunWaitsOutAKnownResetThenRunsAgain(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	reset := start.Add(10 * time.Minute)
	w.exhaustedFor(reset)
	argv, runs := script(t, "primary", "ok")
	e := w.drive(w.config(argv), runs, func(_ int, next time.Time) {
		// While it waits, status lists it and the ledger holds the wait.
		ws, err := w.st.Waiters(context.Background())
		if err != nil || len(ws) != 1 || ws[0].Key != w.key("core") || !strings.HasPrefix(ws[0].Stage, "Quota wait until ") ||
			!strings.HasPrefix(ws[0].Command, "sh -c") || ws[0].Hostname != "h1" {
			t.Errorf("waiters during the wait: %+v %v", ws, err)
		}
		if s := w.state("core"); s.Remaining != 0 || !s.ResetAt.Equal(reset) || !s.ResetKnown || !s.Exhausted(w.clk.Now()) {
			t.Errorf("ledger during the wait: %+v", s)
		}
		w.clk.Set(next)
	})
	if e.err != nil || e.res.ExitCode != 0 || e.res.Runs != 2 || runs() != 2 {
		t.Fatalf("ended %+v, %v after %d runs; want the second run's success\n%s", e.res, e.err, runs(), w.stderr.String())
	}
	if len(e.waits) != 1 || e.waits[0].d != 11*time.Minute || e.waits[0].runs != 1 {
		t.Fatalf("waits %+v; want one of 11m (the reset and the 60 s margin) after the first run", e.waits)
	}
	if e.res.Waited != 11*time.Minute || !slices.Equal(e.res.WaitedFor, []string{"core"}) {
		t.Errorf("Result waited %s for %v", e.res.Waited, e.res.WaitedFor)
	}
	if got := lastLine(w.stderr.String()); got != "Waited 11m0s for the GitHub quota (core)" {
		t.Errorf("last stderr line %q", got)
	}
	if !strings.Contains(w.stdout.String(), "run 1\n") || !strings.Contains(w.stdout.String(), "run 2\n") {
		t.Errorf("stdout %q: want both runs' output", w.stdout.String())
	}
	if ws, _ := w.st.Waiters(context.Background()); len(ws) != 0 {
		t.Errorf("waiters after the run: %+v", ws)
	}
	acts, err := w.st.Activity(context.Background(), 0)
	if err != nil || len(acts) != 1 || acts[0].Kind != "wait" || !strings.HasPrefix(acts[0].Line, "run: Quota wait until ") {
		t.Errorf("activity %+v %v; want one wait line", acts, err)
	}
}

// The room-again rule: a failure whose reset has already passed, or whose
// quota has room again, runs again after the margin, once; seen again
// before a reset ahead is, the reset is stale and each failure waits the
// assumed reset. A reset ahead restores the provider's word.
func TestRunStaleResetRule(t *testing.T) {
	t.Parallel()
	// The assumed reset is waited out with its margin too.
	const margin, unknown = 30 * time.Second, 15 * time.Minute
	const assumed = unknown + margin
	past := func(n int, now time.Time) (int64, time.Time) { return 0, now.Add(-time.Hour) }
	room := func(n int, now time.Time) (int64, time.Time) { return 17, now.Add(time.Hour) }
	for name, c := range map[string]struct {
		coreAt func(n int, now time.Time) (int64, time.Time)
		want   []time.Duration
	}{
		"reset passed": {past, []time.Duration{margin, assumed, assumed}},
		"room again":   {room, []time.Duration{margin, assumed, assumed}},
		"a reset ahead between": {func(n int, now time.Time) (int64, time.Time) {
			if n == 1 {
				return 0, now.Add(5 * time.Minute)
			}
			return past(n, now)
		}, []time.Duration{margin, 5*time.Minute + margin, margin}},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			w := newWorld(t)
			w.coreAt = c.coreAt
			argv, runs := script(t, "primary", "primary", "primary", "ok")
			cfg := w.config(argv)
			cfg.Policy.ResetMargin, cfg.Policy.UnknownReset = margin, unknown
			e := w.drive(cfg, runs, nil)
			if e.err != nil || e.res.ExitCode != 0 || runs() != 4 {
				t.Fatalf("ended %+v, %v after %d runs\n%s", e.res, e.err, runs(), w.stderr.String())
			}
			if got := durations(e.waits); !slices.Equal(got, c.want) {
				t.Fatalf("waits %v, want %v\n%s", got, c.want, w.stderr.String())
			}
		})
	}
}

// A wait that would take the run past its cap is not started: the command's
// own failure stands, and stderr says why. The exhaustion is still
// recorded, so a run with --quota then refuses to start at all.
func TestRunCapRefusesAWait(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	reset := start.Add(3 * time.Hour)
	w.exhaustedFor(reset)
	argv, runs := script(t, "primary")
	e := w.drive(w.config(argv), runs, nil)
	if e.err != nil || e.res.ExitCode != 1 || runs() != 1 || len(e.waits) != 0 {
		t.Fatalf("ended %+v, %v, %d runs, waits %v; want the command's 1 at once", e.res, e.err, runs(), e.waits)
	}
	if !strings.Contains(w.stderr.String(), "past the 2h0m0s cap") {
		t.Errorf("stderr does not say why:\n%s", w.stderr.String())
	}
	if s := w.state("core"); !s.ResetAt.Equal(reset) || !s.Exhausted(w.clk.Now()) {
		t.Errorf("ledger %+v: want the exhaustion recorded", s)
	}

	cfg := w.config(argv)
	cfg.Quota = command.QuotaNames{{Provider: "github"}}
	e = w.drive(cfg, runs, nil)
	var ns *command.NotStartedError
	if !errors.As(e.err, &ns) || ns.Key != w.key("core") || !ns.ResetAt.Equal(reset) || e.res.Runs != 0 || runs() != 1 {
		t.Fatalf("--quota run: %+v, %v, %d runs; want a NotStartedError and no run", e.res, e.err, runs())
	}
	if !strings.Contains(ns.Error(), "not started: the GitHub quota (core) is exhausted until ") {
		t.Errorf("message %q", ns.Error())
	}
}

// The cap bounds the waits of a run in all: each is charged, and the one
// that would pass the total is refused.
func TestRunCapBoundsTheTotal(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	w.coreAt = func(_ int, now time.Time) (int64, time.Time) { return 0, now.Add(10 * time.Minute) }
	argv, runs := script(t, "primary")
	cfg := w.config(argv)
	cfg.Policy.MaxTotalWait = 25 * time.Minute
	e := w.drive(cfg, runs, nil)
	if e.err != nil || e.res.ExitCode != 1 || runs() != 3 {
		t.Fatalf("ended %+v, %v after %d runs; want the third failure to stand", e.res, e.err, runs())
	}
	if got := durations(e.waits); !slices.Equal(got, []time.Duration{11 * time.Minute, 11 * time.Minute}) || e.res.Waited != 22*time.Minute {
		t.Fatalf("waits %v (%s in all); want two of 11m, the third refused under the 25m cap", got, e.res.Waited)
	}
}

// A secondary limit is run again after the secondary wait, at most
// Policy.SecondaryRetries times.
func TestRunSecondaryRetriesBounded(t *testing.T) {
	t.Parallel()
	for name, c := range map[string]struct {
		outcomes  []string
		wantCode  int
		wantRuns  int
		wantWaits int
	}{
		"retried":         {[]string{"secondary", "ok"}, 0, 2, 1},
		"bounded":         {[]string{"secondary"}, 1, 3, 2},
		"bounded per run": {[]string{"secondary", "secondary", "primary", "secondary", "ok"}, 1, 4, 3},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			w := newWorld(t)
			w.exhaustedFor(start.Add(time.Minute))
			argv, runs := script(t, c.outcomes...)
			cfg := w.config(argv)
			cfg.Policy.SecondaryWait, cfg.Policy.SecondaryRetries = 10*time.Second, 2
			cfg.Policy.ResetMargin = 0
			e := w.drive(cfg, runs, nil)
			if e.err != nil || e.res.ExitCode != c.wantCode || runs() != c.wantRuns || len(e.waits) != c.wantWaits {
				t.Fatalf("ended %+v, %v, %d runs, waits %v; want exit %d after %d runs and %d waits\n%s",
					e.res, e.err, runs(), e.waits, c.wantCode, c.wantRuns, c.wantWaits, w.stderr.String())
			}
			for _, wt := range e.waits {
				if wt.d < 10*time.Second {
					t.Errorf("wait %v: shorter than the secondary wait", wt)
				}
			}
			if c.wantCode != 0 && !strings.Contains(w.stderr.String(), "still in force after 2 retries") {
				t.Errorf("stderr does not say the retries ran out:\n%s", w.stderr.String())
			}
			if !strings.Contains(w.stderr.String(), "Secondary limit wait until") || !slices.Contains(e.res.WaitedFor, "secondary limit") {
				t.Errorf("the secondary wait is not shown (%v):\n%s", e.res.WaitedFor, w.stderr.String())
			}
		})
	}
}

// SIGINT or SIGTERM ends a wait at once: the command is not run again, the
// wait leaves the waiter table, and the time that passed is what was
// waited. The end of the context does the same.
func TestRunWaitEndsOnSignal(t *testing.T) {
	t.Parallel()
	for _, sig := range []os.Signal{syscall.SIGINT, syscall.SIGTERM, nil} {
		name := "context"
		if sig != nil {
			name = sig.String()
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			w := newWorld(t)
			w.exhaustedFor(start.Add(time.Hour))
			argv, runs := script(t, "primary", "ok")
			cfg := w.config(argv)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			cfg.Signals = w.sigs
			done := make(chan ended, 1)
			go func() {
				res, err := command.Run(ctx, cfg)
				done <- ended{res: res, err: err}
			}()
			<-w.clk.TimerAdded()
			w.clk.Advance(5 * time.Minute)
			if sig != nil {
				w.sigs <- sig
			} else {
				cancel()
			}
			e := <-done
			var ie *command.InterruptedError
			if !errors.As(e.err, &ie) || ie.Signal != sig || ie.What != "Quota wait" {
				t.Fatalf("ended %+v, %v; want the Quota wait ended by %v", e.res, e.err, sig)
			}
			if sig == nil && !errors.Is(e.err, context.Canceled) {
				t.Errorf("%v does not wrap the context's end", e.err)
			}
			if e.res.Runs != 1 || runs() != 1 || e.res.Waited != 5*time.Minute || e.res.ExitCode != 1 {
				t.Errorf("Result %+v, %d runs; want one run and the 5m that passed", e.res, runs())
			}
			if ws, _ := w.st.Waiters(context.Background()); len(ws) != 0 {
				t.Errorf("waiters after the wait ended: %+v", ws)
			}
			if !strings.Contains(w.stderr.String(), "Waited 5m0s for the GitHub quota (core)") {
				t.Errorf("stderr:\n%s", w.stderr.String())
			}
		})
	}
}

// A signal while the command runs is forwarded to it, and a command so
// stopped is never run again, whatever its output says.
func TestRunForwardsSignalToTheCommand(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	w.exhaustedFor(start.Add(time.Minute))
	stdin, hold, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer stdin.Close()
	defer hold.Close()
	ready := make(chan struct{})
	cfg := w.config([]string{"sh", "-c", "echo '" + primaryMsg + "' >&2; echo ready; read line"})
	cfg.Stdin, cfg.Stdout = stdin, notifyWriter{ready}
	done := make(chan ended, 1)
	go func() {
		res, err := command.Run(context.Background(), cfg)
		done <- ended{res: res, err: err}
	}()
	<-ready
	w.sigs <- syscall.SIGTERM
	e := <-done
	if e.err != nil || e.res.ExitCode != 128+int(syscall.SIGTERM) || e.res.Runs != 1 || w.clk.Pending() != 0 {
		t.Fatalf("ended %+v, %v; want the command's own end by SIGTERM and no wait", e.res, e.err)
	}
}

// notifyWriter closes ready at its first write.
type notifyWriter struct{ ready chan struct{} }

func (n notifyWriter) Write(p []byte) (int, error) {
	select {
	case <-n.ready:
	default:
		close(n.ready)
	}
	return len(p), nil
}

// With Quota, a key the ledger holds as exhausted is waited out before the
// command's first run, so that no call is wasted; a key not named does not
// hold it back.
func TestRunQuotaWaitsBeforeStart(t *testing.T) {
	t.Parallel()
	for name, c := range map[string]struct {
		names    command.QuotaNames
		wantWait bool
	}{
		"github:core": {command.QuotaNames{{Provider: "github", Resource: "core"}}, true},
		"github":      {command.QuotaNames{{Provider: "github"}}, true},
		"search":      {command.QuotaNames{{Provider: "github", Resource: "search"}}, false},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			w := newWorld(t)
			reset := start.Add(4 * time.Minute)
			w.ledgerExhausted(reset)
			argv, runs := script(t, "ok")
			cfg := w.config(argv)
			cfg.Quota = c.names
			e := w.drive(cfg, runs, nil)
			if e.err != nil || e.res.ExitCode != 0 || runs() != 1 {
				t.Fatalf("ended %+v, %v after %d runs", e.res, e.err, runs())
			}
			if !c.wantWait {
				if len(e.waits) != 0 {
					t.Fatalf("waited %v for a quota not named", e.waits)
				}
				return
			}
			if len(e.waits) != 1 || e.waits[0].runs != 0 || e.waits[0].d != 5*time.Minute {
				t.Fatalf("waits %+v; want one of 5m (reset and margin) before the first run", e.waits)
			}
		})
	}
}

// --defer-after: a declared wait longer than it is not waited; the run ends
// with a receipt as the last line of stdout (its own line, after output
// that did not end one), and the receipt holds no secret. With Submit the
// job is stored for the durable host. No receipt for a reset past 24 h,
// nor for a wait within --defer-after.
func TestRunDefersWithAReceipt(t *testing.T) {
	t.Parallel()
	t.Run("receipt", func(t *testing.T) {
		t.Parallel()
		w := newWorld(t)
		reset := start.Add(3 * time.Hour)
		w.exhaustedFor(reset)
		argv, runs := script(t, "primary")
		argv[2] = "printf 'partial'; " + argv[2]
		cfg := w.config(argv)
		cfg.Defer, cfg.DeferAfter = true, time.Minute
		e := w.drive(cfg, runs, nil)
		var de *command.DeferredError
		if !errors.As(e.err, &de) || de.JobID != "" || runs() != 1 || len(e.waits) != 0 {
			t.Fatalf("ended %+v, %v, %d runs, waits %v; want a deferral at once", e.res, e.err, runs(), e.waits)
		}
		if !strings.HasPrefix(w.stdout.String(), "partial") || lastLine(w.stdout.String()) != string(de.Receipt) {
			t.Fatalf("stdout %q: want the receipt as its last line, on a line of its own", w.stdout.String())
		}
		rc, err := receipt.Decode(de.Receipt)
		if err != nil {
			t.Fatal(err)
		}
		want := reset.Add(time.Minute) // reset + margin, no jitter
		if rc.Reason != receipt.RESTReserve || rc.Ownership.Disposition != receipt.Handoff || !rc.ResumeAfter().Equal(want) ||
			!de.ResumeAt.Equal(want) || !rc.IssuedAt().Equal(start) {
			t.Errorf("receipt %+v, resume at %v; want rest-reserve, handoff, resume_after %v", rc, de.ResumeAt, want)
		}
		for _, secret := range []string{testToken, "octocat", "127.0.0.1"} {
			if strings.Contains(string(de.Receipt), secret) {
				t.Errorf("the receipt holds %q: %s", secret, de.Receipt)
			}
		}
	})
	t.Run("submit", func(t *testing.T) {
		t.Parallel()
		w := newWorld(t)
		w.exhaustedFor(start.Add(time.Hour))
		argv, runs := script(t, "primary")
		cfg := w.config(argv)
		cfg.Submit = true
		e := w.drive(cfg, runs, nil)
		var de *command.DeferredError
		if !errors.As(e.err, &de) || de.JobID == "" {
			t.Fatalf("ended %+v, %v; want a deferral with a job", e.res, e.err)
		}
		j, err := w.st.Job(context.Background(), de.JobID)
		if err != nil || j.State != job.Deferred || j.Ownership != job.Handoff || !j.RunAt.Equal(de.ResumeAt) ||
			!slices.Equal(j.Spec.Argv, argv) || !slices.Equal(j.Spec.Quota, []string{"github:core"}) {
			t.Fatalf("job %+v %v", j, err)
		}
		if !strings.Contains(w.stderr.String(), "deferred as job "+de.JobID) || !strings.Contains(w.stderr.String(), "handoff") {
			t.Errorf("stderr:\n%s", w.stderr.String())
		}
	})
	t.Run("submit refuses a secret", func(t *testing.T) {
		t.Parallel()
		w := newWorld(t)
		argv, runs := script(t, "ok")
		cfg := w.config(append(argv, testToken))
		cfg.Submit = true
		e := w.drive(cfg, runs, nil)
		var ie *command.InputError
		if !errors.As(e.err, &ie) || !errors.Is(e.err, job.ErrSecret) || runs() != 0 {
			t.Fatalf("ended %+v, %v after %d runs; want the job refused before the start", e.res, e.err, runs())
		}
	})
	t.Run("past 24h", func(t *testing.T) {
		t.Parallel()
		w := newWorld(t)
		w.exhaustedFor(start.Add(30 * time.Hour))
		argv, runs := script(t, "primary")
		cfg := w.config(argv)
		cfg.Defer = true
		e := w.drive(cfg, runs, nil)
		if e.err != nil || e.res.ExitCode != 1 || strings.Contains(w.stdout.String(), "deferred-receipt") ||
			!strings.Contains(w.stderr.String(), "more than 24h away") {
			t.Fatalf("ended %+v, %v; want no receipt and the cap's refusal\n%s", e.res, e.err, w.stderr.String())
		}
	})
	t.Run("one jitter", func(t *testing.T) {
		t.Parallel()
		// The first draw is the whole jitter, every later one none: the
		// wait --defer-after weighs and the receipt's resume_after must
		// both hold the first, drawn once for this wait.
		w := newWorld(t)
		reset := start.Add(10 * time.Minute)
		w.exhaustedFor(reset)
		argv, runs := script(t, "primary")
		cfg := w.config(argv)
		cfg.Policy.Jitter = time.Minute
		cfg.Rand = &firstDrawTop{}
		cfg.Defer, cfg.DeferAfter = true, 11*time.Minute+30*time.Second // reset + margin + half the jitter
		e := w.drive(cfg, runs, nil)
		var de *command.DeferredError
		if !errors.As(e.err, &de) {
			t.Fatalf("ended %+v, %v, waits %v; want a deferral", e.res, e.err, e.waits)
		}
		rc, err := receipt.Decode(de.Receipt)
		if err != nil {
			t.Fatal(err)
		}
		want := reset.Add(2 * time.Minute) // reset + margin + the first draw
		if !rc.ResumeAfter().Equal(want) || !de.ResumeAt.Equal(want) {
			t.Errorf("resume_after %v, resume at %v; want %v, the jitter the deferral was decided on", rc.ResumeAfter(), de.ResumeAt, want)
		}
	})
	t.Run("within defer-after", func(t *testing.T) {
		t.Parallel()
		w := newWorld(t)
		w.exhaustedFor(start.Add(10 * time.Minute))
		argv, runs := script(t, "primary", "ok")
		cfg := w.config(argv)
		cfg.Defer, cfg.DeferAfter = true, time.Hour
		e := w.drive(cfg, runs, nil)
		if e.err != nil || e.res.ExitCode != 0 || len(e.waits) != 1 || strings.Contains(w.stdout.String(), "deferred-receipt") {
			t.Fatalf("ended %+v, %v, waits %v; want the wait waited in process", e.res, e.err, e.waits)
		}
	})
}

// firstDrawTop is a quota.Rand whose first draw is the top of its range and
// every later one 0.
type firstDrawTop struct {
	mu    sync.Mutex
	drawn bool
}

func (r *firstDrawTop) Int64N(n int64) int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.drawn {
		return 0
	}
	r.drawn = true
	return n - 1
}

// Issue 10: with HoldStdout (stdout a pipe), only the run that ends the Run
// reaches stdout; a failed run another followed goes to stderr under a line
// naming it. Past 1 MiB each run's output still comes through byte for
// byte.
func TestRunHoldStdoutPassesOnTheLastRun(t *testing.T) {
	t.Parallel()
	for name, size := range map[string]int{"small": 10, "past 1 MiB": 1<<20 + 4321} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			w := newWorld(t)
			w.exhaustedFor(start.Add(5 * time.Minute))
			dir := t.TempDir()
			bodies := [][]byte{bytes.Repeat([]byte("failed-body "), size/12+1), bytes.Repeat([]byte{'o', 'k', 0, 0xff}, size/4+1)}
			for i, b := range bodies {
				if err := os.WriteFile(filepath.Join(dir, strconv.Itoa(i+1)), b, 0o600); err != nil {
					t.Fatal(err)
				}
			}
			argv, runs := script(t, "primary", "ok")
			// script prints "run N" first: the body follows it.
			argv[2] = strings.Replace(argv[2], "echo run $n\n", "echo run $n; cat "+dir+"/$n\n", 1)
			cfg := w.config(argv)
			cfg.HoldStdout = true
			e := w.drive(cfg, runs, nil)
			if e.err != nil || e.res.ExitCode != 0 || runs() != 2 {
				t.Fatalf("ended %+v, %v after %d runs", e.res, e.err, runs())
			}
			if want := append([]byte("run 2\n"), bodies[1]...); !bytes.Equal(w.stdout.Bytes(), want) {
				t.Errorf("stdout: %d bytes, want exactly the second run's %d", w.stdout.Len(), len(want))
			}
			marker := "layover: output of attempt 1, which failed (quota):\nrun 1\n"
			stderr := w.stderr.String()
			i := strings.Index(stderr, marker)
			if i < 0 || !strings.HasPrefix(stderr[i+len(marker):], string(bodies[0])+"\n") {
				t.Errorf("stderr does not hold the first run's output under its line:\n%.400s", stderr)
			}
		})
	}
}
