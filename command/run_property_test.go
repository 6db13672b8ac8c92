package command_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/layoverhq/layover/clock"
	"github.com/layoverhq/layover/command"
	"github.com/layoverhq/layover/quota"
	"github.com/layoverhq/layover/receipt"
)

// runScenario is one Run against a provider that rejects the command every
// time it runs.
type runScenario struct {
	margin, jitter, maxWait, secondaryWait, unknownReset time.Duration
	secondaryRetries                                     int
	deferAfter                                           time.Duration // < 0: no Defer
	// failure is what the command prints: "primary", "secondary", or
	// "alternate" (primary on odd runs, secondary on even ones).
	failure string
	// resetIn is where /rate_limit puts the core reset, from the fake
	// time of each request: past (a stale reset), near or far; room makes
	// it report units left instead.
	resetIn time.Duration
	room    bool
}

func (s runScenario) String() string {
	return fmt.Sprintf("margin=%s jitter=%s cap=%s secwait=%s unknown=%s retries=%d defer=%s failure=%s reset=%s room=%v",
		s.margin, s.jitter, s.maxWait, s.secondaryWait, s.unknownReset, s.secondaryRetries, s.deferAfter, s.failure, s.resetIn, s.room)
}

// The wait planner's promises, checked on the real run engine with a fake
// clock and a provider that never lets the command through: every re-run
// comes at least quota.MinRerunWait after the failure before it, the waits
// never add up past the cap, a declared wait longer than --defer-after
// defers instead, and the command runs exactly once more than it waited,
// with at most the allowed secondary retries. Before issue 8 an extreme
// margin wrapped a wait into the past and re-ran the command ~96 times a
// second; a stale reset still re-ran it every margin until the cap.
func TestRunWaitsKeepTheirPromises(t *testing.T) {
	t.Parallel()
	scenarios := []runScenario{
		// A stale reset with no margin: once after the floor, then the
		// assumed reset, not a re-run every second for two hours.
		{margin: 0, jitter: 0, maxWait: 2 * time.Hour, unknownReset: 15 * time.Minute, failure: "primary", resetIn: -time.Hour, deferAfter: -1},
		{margin: quota.MaxPolicyWait, jitter: quota.MaxPolicyWait, maxWait: quota.MaxTotalWaitCap, unknownReset: quota.MaxPolicyWait,
			secondaryWait: quota.MaxPolicyWait, secondaryRetries: quota.MaxSecondaryRetries, failure: "alternate", resetIn: time.Hour, deferAfter: -1},
		{margin: 0, jitter: 0, maxWait: 10 * time.Minute, unknownReset: time.Minute, failure: "primary", room: true, deferAfter: -1},
		{margin: 0, jitter: 0, maxWait: 0, unknownReset: time.Minute, failure: "primary", resetIn: time.Second, deferAfter: -1},
		{margin: time.Minute, jitter: time.Minute, maxWait: 2 * time.Hour, unknownReset: 15 * time.Minute, failure: "primary", resetIn: 30 * time.Minute, deferAfter: 0},
		{margin: time.Minute, jitter: 0, maxWait: 7 * 24 * time.Hour, unknownReset: 15 * time.Minute, failure: "primary", resetIn: 25 * time.Hour, deferAfter: time.Hour},
		{secondaryWait: 0, secondaryRetries: 5, maxWait: 2 * time.Hour, unknownReset: time.Minute, failure: "secondary", deferAfter: 0},
	}
	seed := rand.Uint64()
	if v := os.Getenv("LAYOVER_PROPERTY_SEED"); v != "" { // to run a logged seed again
		if n, err := strconv.ParseUint(v, 10, 64); err == nil {
			seed = n
		}
	}
	rnd := rand.New(rand.NewPCG(seed, 1))
	pick := func(ds ...time.Duration) time.Duration { return ds[rnd.IntN(len(ds))] }
	for range 25 {
		s := runScenario{
			margin:           pick(0, time.Second, time.Minute, quota.MaxPolicyWait),
			jitter:           pick(0, time.Millisecond, time.Minute, quota.MaxPolicyWait),
			maxWait:          pick(0, time.Second, 10*time.Minute, 2*time.Hour, quota.MaxTotalWaitCap),
			secondaryWait:    pick(0, time.Second, time.Minute, quota.MaxPolicyWait),
			unknownReset:     pick(time.Minute, 15*time.Minute, quota.MaxPolicyWait),
			secondaryRetries: []int{0, 1, 5, quota.MaxSecondaryRetries}[rnd.IntN(4)],
			deferAfter:       pick(-1, -1, 0, time.Minute, time.Hour),
			failure:          []string{"primary", "secondary", "alternate"}[rnd.IntN(3)],
			resetIn:          pick(-time.Hour, -time.Second, 0, time.Second, 10*time.Minute, 3*time.Hour, 25*time.Hour),
			room:             rnd.IntN(5) == 0,
		}
		// Keep the waits the flags allow few enough to run: a provider
		// that says "reset in 1 s" and rejects again is re-run every
		// second up to the cap, as it should be.
		s.maxWait = min(s.maxWait, maxTestedWaits*s.shortestWait())
		scenarios = append(scenarios, s)
	}
	t.Logf("random scenarios from seed %d", seed)
	for i, s := range scenarios {
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			t.Parallel()
			checkRunScenario(t, s)
		})
	}
}

// maxTestedWaits bounds the waits a scenario may take; more is a runaway.
const maxTestedWaits = 300

// shortestWait is a lower bound of the waits s can take after its first
// two: a reset ahead is waited out, a stale reset (or room) the assumed
// reset, a secondary limit its secondary wait.
func (s runScenario) shortestWait() time.Duration {
	primary := s.unknownReset
	if s.resetIn > 0 && !s.room {
		primary = min(primary, s.resetIn+s.margin)
	}
	w := primary
	if s.failure != "primary" {
		w = min(w, s.secondaryWait)
	}
	return max(w, quota.MinRerunWait)
}

func checkRunScenario(t *testing.T, s runScenario) {
	t.Helper()
	dir := t.TempDir()
	clk := clock.NewFake(time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC))
	gh := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/rate_limit" {
			http.NotFound(w, r)
			return
		}
		now := clk.Now()
		remaining, reset := int64(0), now.Add(s.resetIn)
		if s.room {
			remaining = 17
		}
		w.Header().Set("Date", now.UTC().Format(http.TimeFormat))
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"resources":{"core":{"limit":5000,"used":%d,"remaining":%d,"reset":%d},`+
			`"graphql":{"limit":5000,"used":0,"remaining":5000,"reset":%d}}}`,
			5000-remaining, remaining, reset.Unix(), now.Add(time.Hour).Unix())
	}))
	t.Cleanup(gh.Close)

	count := filepath.Join(dir, "runs")
	primary := `gh: API rate limit exceeded for user ID 1. (HTTP 403)`
	secondary := `gh: You have exceeded a secondary rate limit. Please wait a few minutes before you try again. (HTTP 403)`
	script := fmt.Sprintf(`echo . >> %q; n=$(wc -l < %q); msg=%q
case %q in secondary) msg=%q ;; alternate) [ $((n %% 2)) = 0 ] && msg=%q ;; esac
echo "$msg" >&2; exit 1`, count, count, primary, s.failure, secondary, secondary)

	vars := map[string]string{"GITHUB_API_URL": gh.URL, "GH_TOKEN": "property-token", "LAYOVER_PRINCIPAL": "octocat"}
	st := openStore(t)
	policy := quota.DefaultPolicy()
	policy.ResetMargin, policy.Jitter, policy.MaxTotalWait = s.margin, s.jitter, s.maxWait
	policy.SecondaryWait, policy.SecondaryRetries, policy.UnknownReset = s.secondaryWait, s.secondaryRetries, s.unknownReset
	var stdout, stderr bytes.Buffer
	cfg := &command.Config{Command: []string{"sh", "-c", script}, Policy: &policy, Defer: s.deferAfter >= 0,
		DeferAfter: max(s.deferAfter, 0), Store: st, Stdout: &stdout, Stderr: &stderr,
		Getenv: func(k string) string { return vars[k] }, Clock: clk, Rand: rand.New(rand.NewPCG(7, 7)), Hostname: "h1"}

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	type ended struct {
		res command.Result
		err error
	}
	done := make(chan ended, 1)
	go func() {
		res, err := command.Run(ctx, cfg)
		done <- ended{res, err}
	}()

	// Each wait of a run off a terminal is one fake timer: move the clock
	// to it, and note how many runs came before it.
	type wait struct {
		d         time.Duration
		runsSoFar int
	}
	var waits []wait
	var end ended
	runaway := maxTestedWaits + 2
loop:
	for {
		select {
		case end = <-done:
			break loop
		case <-clk.TimerAdded():
			next, ok := clk.Next()
			if !ok {
				continue
			}
			waits = append(waits, wait{next.Sub(clk.Now()), countLines(t, count)})
			if len(waits) > runaway {
				cancel()
				t.Fatalf("%s: more than %d waits: a runaway loop; first waits %v\n%s", s, runaway, waits[:5], stderr.String()[:2000])
			}
			clk.Set(next)
		}
	}
	runs := countLines(t, count)

	var total time.Duration
	for i, w := range waits {
		if w.runsSoFar != i+1 {
			t.Errorf("%s: wait %d came after %d runs, want %d: a re-run without a wait", s, i, w.runsSoFar, i+1)
		}
		if w.d < quota.MinRerunWait {
			t.Errorf("%s: wait %d is %s, shorter than the %s floor", s, i, w.d, quota.MinRerunWait)
		}
		// A receipt can be issued only when the resume (reset + margin +
		// jitter) lies within its 24 h window; past it the wait stays in
		// process, as docs/receipt.md says.
		declared := s.failure == "primary" && s.resetIn > 0 && !s.room &&
			quota.SumSat(quota.SumSat(s.resetIn, s.margin), s.jitter) <= receipt.MaxWindow
		if s.deferAfter >= 0 && declared && w.d > max(s.deferAfter, quota.MinRerunWait) {
			t.Errorf("%s: waited %s in process, past --defer-after %s for a declared reset", s, w.d, s.deferAfter)
		}
		if stale := s.room || s.resetIn <= 0; stale && s.failure == "primary" && i > 0 && w.d < s.unknownReset {
			t.Errorf("%s: wait %d is %s: a stale reset seen again waits the assumed reset (%s), not the margin", s, i, w.d, s.unknownReset)
		}
		total = quota.SumSat(total, w.d)
	}
	if total > s.maxWait {
		t.Errorf("%s: waited %s in all, past the %s cap", s, total, s.maxWait)
	}
	var deferred *command.DeferredError
	isDeferred := errors.As(end.err, &deferred)
	if runs != len(waits)+1 && !isDeferred {
		t.Errorf("%s: the command ran %d times after %d waits, want one more run than waits (%v)\n%s", s, runs, len(waits), end.err, stderr.String())
	}
	if end.res.Runs != runs || end.res.Waited != total {
		t.Errorf("%s: Result says %d runs and %s waited; %d ran and %s passed in waits", s, end.res.Runs, end.res.Waited, runs, total)
	}
	if s.failure == "secondary" && runs > 1+s.secondaryRetries {
		t.Errorf("%s: ran %d times on secondary limits, more than 1 + %d retries", s, runs, s.secondaryRetries)
	}
	switch {
	case end.err == nil && end.res.ExitCode == 1: // the command's own exit: the cap or the retries ended it
	case isDeferred:
		lines := strings.Split(strings.TrimSpace(stdout.String()), "\n")
		last := lines[len(lines)-1]
		if _, err := receipt.Decode([]byte(last)); err != nil || last != string(deferred.Receipt) {
			t.Errorf("%s: deferred, but the last stdout line is not its receipt: %v\n%s", s, err, stdout.String())
		}
	default:
		t.Errorf("%s: ended with exit %d and %v, want the command's 1 or a deferral\n%s", s, end.res.ExitCode, end.err, stderr.String())
	}
}

// countLines counts the lines of path; 0 when it does not exist yet.
func countLines(t *testing.T, path string) int {
	t.Helper()
	data, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return 0
	}
	if err != nil {
		t.Fatal(err)
	}
	return bytes.Count(data, []byte("\n"))
}
