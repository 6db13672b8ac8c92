package command_test

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/layoverhq/layover/clock"
	"github.com/layoverhq/layover/command"
	"github.com/layoverhq/layover/quota"
	"github.com/layoverhq/layover/store/sqlite"
)

const (
	testToken = "world-token-0123456789"
	// What gh prints on a primary and a secondary rate limit.
	primaryMsg   = `gh: API rate limit exceeded for user ID 1. (HTTP 403)`
	secondaryMsg = `gh: You have exceeded a secondary rate limit. Please wait a few minutes before you try again. (HTTP 403)`
)

// start is the fake time every world begins at: a whole second, as
// GitHub's resets are.
var start = time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)

// world is one in-process Run's surroundings: a fake clock, a store, and a
// fake GitHub whose GET /rate_limit reports the core quota coreAt says.
type world struct {
	t   *testing.T
	clk *clock.Fake
	st  *sqlite.Store
	api *httptest.Server

	mu sync.Mutex
	// coreAt gives the core quota's remaining units and reset for the n-th
	// call of /rate_limit (from 0), at the fake time now.
	coreAt    func(n int, now time.Time) (int64, time.Time)
	rateCalls int

	stdout, stderr bytes.Buffer
	sigs           chan os.Signal
}

func newWorld(t *testing.T) *world {
	t.Helper()
	w := &world{t: t, clk: clock.NewFake(start), st: openStore(t), sigs: make(chan os.Signal, 1)}
	w.coreAt = func(int, time.Time) (int64, time.Time) { return 5000, start.Add(time.Hour) }
	w.api = httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/rate_limit" {
			http.NotFound(rw, r)
			return
		}
		now := w.clk.Now()
		w.mu.Lock()
		remaining, reset := w.coreAt(w.rateCalls, now)
		w.rateCalls++
		w.mu.Unlock()
		rw.Header().Set("Date", now.UTC().Format(http.TimeFormat))
		rw.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(rw, `{"resources":{"core":{"limit":5000,"used":%d,"remaining":%d,"reset":%d},`+
			`"graphql":{"limit":5000,"used":0,"remaining":5000,"reset":%d}}}`,
			5000-remaining, remaining, reset.Unix(), now.Add(time.Hour).Unix())
	}))
	t.Cleanup(w.api.Close)
	return w
}

// exhaustedFor makes /rate_limit report core exhausted until reset.
func (w *world) exhaustedFor(reset time.Time) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.coreAt = func(int, time.Time) (int64, time.Time) { return 0, reset }
}

// ledgerExhausted records in the ledger, as another process's rejection
// would, that core is exhausted until reset.
func (w *world) ledgerExhausted(reset time.Time) {
	w.t.Helper()
	if err := w.st.RecordStates(context.Background(), []quota.State{{Key: w.key("core"), Limit: 5000, Remaining: 0,
		ResetAt: reset, ResetKnown: true, ObservedAt: start, Source: quota.SourceRejected, Cause: quota.CauseExhausted}}); err != nil {
		w.t.Fatal(err)
	}
}

// getenv is the environment of every world: its fake GitHub, a token and
// the principal octocat.
func (w *world) getenv(k string) string {
	return map[string]string{"GITHUB_API_URL": w.api.URL, "GH_TOKEN": testToken, "LAYOVER_PRINCIPAL": "octocat"}[k]
}

// config is a Config for argv in this world: the default policy without
// jitter, so every wait is exact.
func (w *world) config(argv []string) *command.Config {
	p := quota.DefaultPolicy()
	p.Jitter = 0
	return &command.Config{Command: argv, Policy: &p, Store: w.st, Stdout: &w.stdout, Stderr: &w.stderr,
		Getenv: w.getenv, Clock: w.clk, Signals: w.sigs, Hostname: "h1"}
}

// key is the world's GitHub quota key of resource: its API's host, octocat.
func (w *world) key(resource string) quota.Key {
	return quota.Key{Host: strings.TrimPrefix(w.api.URL, "http://"), Principal: "octocat", Resource: resource}
}

// state is the ledger's state of resource.
func (w *world) state(resource string) quota.State {
	w.t.Helper()
	states, err := w.st.States(context.Background(), []quota.Key{w.key(resource)})
	if err != nil || len(states) != 1 {
		w.t.Fatalf("ledger states of %s: %v %v", resource, states, err)
	}
	return states[0]
}

// script is a command whose n-th run does outcomes[n-1], the last outcome
// repeated: "primary" and "secondary" fail (exit 1) as gh does on a
// primary or secondary rate limit, "ok" succeeds. Each run prints "run N"
// on stdout. runs counts the runs so far.
func script(t *testing.T, outcomes ...string) (argv []string, runs func() int) {
	t.Helper()
	file := filepath.Join(t.TempDir(), "runs")
	var b strings.Builder
	fmt.Fprintf(&b, "echo . >> %q; n=$(($(wc -l < %q))); echo run $n\ncase $n in\n", file, file)
	for i, o := range outcomes {
		pat := strconv.Itoa(i + 1)
		if i == len(outcomes)-1 {
			pat = "*"
		}
		switch o {
		case "primary":
			fmt.Fprintf(&b, "%s) echo %q >&2; exit 1 ;;\n", pat, primaryMsg)
		case "secondary":
			fmt.Fprintf(&b, "%s) echo %q >&2; exit 1 ;;\n", pat, secondaryMsg)
		case "ok":
			fmt.Fprintf(&b, "%s) exit 0 ;;\n", pat)
		default:
			t.Fatalf("script: unknown outcome %q", o)
		}
	}
	b.WriteString("esac\n")
	return []string{"sh", "-c", b.String()}, func() int { return countLines(t, file) }
}

// wait is one wait a Run took: how long, and after how many runs.
type wait struct {
	d    time.Duration
	runs int
}

// ended is how a Run ended.
type ended struct {
	res   command.Result
	err   error
	waits []wait
}

// drive runs cfg on the world's fake clock. Each wait is one fake timer:
// drive notes it and hands it to onWait, which may look around and must
// move the clock to next or end the wait; nil moves the clock to next.
func (w *world) drive(cfg *command.Config, runs func() int, onWait func(i int, next time.Time)) ended {
	w.t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan ended, 1)
	go func() {
		res, err := command.Run(ctx, cfg)
		done <- ended{res: res, err: err}
	}()
	var waits []wait
	for {
		select {
		case e := <-done:
			e.waits = waits
			return e
		case <-w.clk.TimerAdded():
			next, ok := w.clk.Next()
			if !ok {
				continue
			}
			waits = append(waits, wait{next.Sub(w.clk.Now()), runs()})
			if len(waits) > 50 {
				cancel()
				w.t.Fatalf("more than 50 waits: a runaway loop; %v\n%s", waits[:5], w.stderr.String())
			}
			if onWait != nil {
				onWait(len(waits)-1, next)
			} else {
				w.clk.Set(next)
			}
		}
	}
}

// durations are the lengths of waits.
func durations(waits []wait) []time.Duration {
	out := make([]time.Duration, len(waits))
	for i, w := range waits {
		out[i] = w.d
	}
	return out
}

// lastLine is the last line of s.
func lastLine(s string) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return lines[len(lines)-1]
}
