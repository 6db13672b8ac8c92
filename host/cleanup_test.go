package host_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/layoverhq/layover/host"
	"github.com/layoverhq/layover/job"
	"github.com/layoverhq/layover/quota"
)

// cleanupLog is a file a cleanup command appends a line to, naming the job
// and the state it ended in, and the command that does it. It also prints
// a line the host must neither store nor log.
func cleanupLog(t *testing.T) (path, cmd string) {
	t.Helper()
	path = filepath.Join(t.TempDir(), "cleanups")
	return path, `echo "output-not-kept"; echo "$LAYOVER_JOB_ID $LAYOVER_JOB_STATE" >> '` + path + `'`
}

// cleanupLines reads the lines a cleanupLog command wrote; none when it
// never ran.
func cleanupLines(t *testing.T, path string) []string {
	t.Helper()
	data, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	return strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
}

func cleanedUp(j job.Job) bool { return j.Cleanup == job.CleanupDone }

// A job that fails runs its cleanup command once, with the job's
// environment, and its cleanup is done; the command's output is kept
// nowhere.
func TestFailedJobRunsItsCleanupOnce(t *testing.T) {
	t.Parallel()
	b := setup(t)
	path, cmd := cleanupLog(t)
	b.script.push(func(context.Context, host.Run) error { return host.Permanent("404") })
	b.submit("j", job.Spec{CleanupCmd: cmd})
	j := b.await("j", cleanedUp, "cleaned up")
	if j.State != job.Failed {
		t.Errorf("state %s, want failed", j.State)
	}
	if got := cleanupLines(t, path); len(got) != 1 || got[0] != "j failed" {
		t.Errorf("the cleanup command wrote %q; want one run, for j, failed", got)
	}
	h := b.history("j")
	if got := transitions(h); got != ">ready ready>running running>failed" {
		t.Errorf("transitions %q: a cleanup moves no state", got)
	}
	if strings.Contains(j.Stage, "output-not-kept") || strings.Contains(j.Cleanup, "output-not-kept") {
		t.Errorf("the cleanup's output reached the job: %+v", j)
	}
}

// A job with a cleanup command that completes never runs it.
func TestCompletedJobRunsNoCleanup(t *testing.T) {
	t.Parallel()
	b := setup(t)
	path, cmd := cleanupLog(t)
	b.submit("j", job.Spec{CleanupCmd: cmd})
	j := b.awaitState("j", job.Complete)
	if j.Cleanup != job.CleanupArmed {
		t.Errorf("cleanup %q, want it left armed", j.Cleanup)
	}
	if p, err := b.st.PendingCleanups(context.Background(), 10); err != nil || len(p) != 0 {
		t.Errorf("pending cleanups %+v, %v; want none", p, err)
	}
	if got := cleanupLines(t, path); got != nil {
		t.Errorf("the cleanup of a completed job ran: %q", got)
	}
}

// A deferred job the operator cancels (from another process: the host
// hears of it from the store) runs its cleanup at the host's next
// heartbeat, without waiting for the quota its job waited for: no key of
// it is exhausted in the ledger.
func TestOperatorCancelledDeferredJobRunsItsCleanup(t *testing.T) {
	t.Parallel()
	b := setup(t)
	path, cmd := cleanupLog(t)
	reset := t0.Add(30 * time.Minute)
	b.script.push(func(context.Context, host.Run) error { return host.Quota("github", "core", reset) })
	b.submit("j", job.Spec{Quota: []string{"github"}, CleanupCmd: cmd})
	b.awaitState("j", job.Deferred)
	if _, err := b.ops.Cancel(context.Background(), "j"); err != nil {
		t.Fatal(err)
	}
	b.clock.Advance(host.DefaultHeartbeat)
	j := b.await("j", cleanedUp, "cleaned up")
	if j.State != job.Cancelled || !j.UpdatedAt.Before(reset) {
		t.Errorf("cleaned up %s at %s; want cancelled, before the reset", j.State, j.UpdatedAt)
	}
	if got := cleanupLines(t, path); len(got) != 1 || got[0] != "j cancelled" {
		t.Errorf("the cleanup command wrote %q; want one run, for j, cancelled", got)
	}
}

// A cleanup whose key is exhausted with a known reset is put back, not
// run, and runs once the reset and the margin have passed.
func TestCleanupWaitsForTheReset(t *testing.T) {
	t.Parallel()
	b := setup(t)
	path, cmd := cleanupLog(t)
	reset := t0.Add(30 * time.Minute)
	if err := b.st.RecordStates(context.Background(), []quota.State{{Key: coreKey, Limit: 5000, Remaining: 0,
		ResetAt: reset, ResetKnown: true, RawReset: reset.Unix(), ObservedAt: t0, Cause: quota.CauseExhausted}}); err != nil {
		t.Fatal(err)
	}
	b.submit("j", job.Spec{Quota: []string{"github:core"}, CleanupCmd: cmd})
	b.awaitState("j", job.Deferred)
	cancelled, err := b.ops.Cancel(context.Background(), "j")
	if err != nil {
		t.Fatal(err)
	}
	b.clock.Advance(host.DefaultHeartbeat)
	j := b.await("j", func(j job.Job) bool { return j.Cleanup == job.CleanupArmed && j.UpdatedAt.After(cancelled.UpdatedAt) },
		"claimed and put back")
	if got := cleanupLines(t, path); got != nil {
		t.Fatalf("the cleanup ran into an exhausted key: %q", got)
	}
	// After the reset and the margin (a minute; no jitter in the tests).
	resume := reset.Add(b.cfg.Policy.ResetMargin)
	b.clock.Set(resume)
	j = b.await("j", cleanedUp, "cleaned up")
	if j.UpdatedAt.Before(resume) {
		t.Errorf("cleaned up at %s, before the reset and margin %s", j.UpdatedAt, resume)
	}
	if got := cleanupLines(t, path); len(got) != 1 || got[0] != "j cancelled" {
		t.Errorf("the cleanup command wrote %q; want one run", got)
	}
}

// A cleanup whose output says it hit a quota is tried again after the
// reset; one that exits otherwise fails, with its exit code.
func TestCleanupHitsAQuotaThenFails(t *testing.T) {
	t.Parallel()
	b := setup(t)
	dir := t.TempDir()
	// The first run meets GitHub's rate limit, the second exits 3.
	cmd := `if [ -f '` + dir + `/once' ]; then exit 3; fi; touch '` + dir + `/once'; ` +
		`echo 'API rate limit exceeded for user ID 1.' >&2; exit 1`
	b.script.push(func(context.Context, host.Run) error { return host.Permanent("404") })
	b.submit("j", job.Spec{CleanupCmd: cmd})
	ran := func() bool { _, err := os.Stat(filepath.Join(dir, "once")); return err == nil }
	b.await("j", func(j job.Job) bool { return j.State == job.Failed && j.Cleanup == job.CleanupArmed && ran() },
		"put back after a quota")
	// No reset was declared nor is known: the probe backoff's first wait.
	b.clock.Advance(b.cfg.Policy.UnknownReset)
	j := b.await("j", func(j job.Job) bool { return strings.HasPrefix(j.Cleanup, "failed: ") }, "cleanup failed")
	if j.Cleanup != job.CleanupFailed("exit 3") {
		t.Errorf("cleanup %q, want %q", j.Cleanup, job.CleanupFailed("exit 3"))
	}
}

// gatedCleanups holds each PendingCleanups that finds work until the test
// opens the gate, saying which host listed it, so that two hosts read the
// same pending cleanup before either claims it.
type gatedCleanups struct {
	host.Store
	id     string
	listed chan<- string
	open   <-chan struct{}
}

func (g *gatedCleanups) PendingCleanups(ctx context.Context, limit int) ([]job.Job, error) {
	js, err := g.Store.PendingCleanups(ctx, limit)
	if len(js) == 0 || err != nil {
		return js, err
	}
	select {
	case g.listed <- g.id:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	select {
	case <-g.open:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	return js, nil
}

// Two hosts on one store that both find a cleanup pending run it once:
// each claims it before it runs it, and only one claim takes.
func TestTwoHostsRunACleanupOnce(t *testing.T) {
	t.Parallel()
	listed := make(chan string, 2)
	open := make(chan struct{})
	var once sync.Once
	opened := func() { once.Do(func() { close(open) }) }
	b := setup(t, func(c *host.Config) {
		c.Store = &gatedCleanups{Store: c.Store, id: c.ID, listed: listed, open: open}
	})
	cfg := b.cfg
	cfg.ID = "host-b"
	cfg.Store = &gatedCleanups{Store: b.st, id: cfg.ID, listed: listed, open: open}
	hb, err := host.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	b.follow(hb.Jobs)
	if err := hb.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(hb.Stop)
	t.Cleanup(opened) // before the hosts stop

	path, cmd := cleanupLog(t)
	b.script.push(func(context.Context, host.Run) error { return host.Permanent("404") })
	b.submit("j", job.Spec{CleanupCmd: cmd})
	b.awaitState("j", job.Failed)
	// The host that failed the job lists its cleanup at once, the other
	// at its next heartbeat.
	b.clock.Advance(host.DefaultHeartbeat)
	seen := map[string]bool{}
	timeout := time.After(10 * time.Second)
	for len(seen) < 2 {
		select {
		case id := <-listed:
			seen[id] = true
		case <-timeout:
			t.Fatalf("hosts that listed the cleanup: %v; want both", seen)
		}
	}
	opened()
	// Three changes of the failed job's cleanup: the claim that took, its
	// end, and the other host's claim, which found it taken.
	for n := 0; n < 3; {
		select {
		case ev := <-b.events:
			if ev.JobID == "j" && ev.From == job.Failed && ev.To == job.Failed {
				n++
			}
		case <-timeout:
			t.Fatalf("saw %d cleanup changes, want 3", n)
		}
	}
	j, err := b.st.Job(context.Background(), "j")
	if err != nil || j.Cleanup != job.CleanupDone {
		t.Fatalf("cleanup %q, %v; want done", j.Cleanup, err)
	}
	if got := cleanupLines(t, path); len(got) != 1 {
		t.Errorf("the cleanup command ran %d times (%q); want once", len(got), got)
	}
}

// A job this host's sweep cancels past its deadline runs its cleanup in
// the same pass, before the next heartbeat's round.
func TestSweptJobRunsItsCleanupAtOnce(t *testing.T) {
	t.Parallel()
	b := setup(t)
	path, cmd := cleanupLog(t)
	// Deferred as a probe (no reset declared), due again in 15 minutes,
	// past its deadline in 5 seconds.
	b.script.push(func(context.Context, host.Run) error { return host.Quota("github", "core", time.Time{}) })
	b.submit("j", job.Spec{Deadline: t0.Add(5 * time.Second), CleanupCmd: cmd})
	b.awaitState("j", job.Deferred)
	b.clock.Advance(6 * time.Second) // before the heartbeat's round, at 10 s
	j := b.await("j", cleanedUp, "cleaned up")
	if j.State != job.Cancelled || j.UpdatedAt.After(t0.Add(6*time.Second)) {
		t.Errorf("cleaned up %s at %s; want cancelled, within the 6 s", j.State, j.UpdatedAt)
	}
	if got := cleanupLines(t, path); len(got) != 1 || got[0] != "j cancelled" {
		t.Errorf("the cleanup command wrote %q; want one run", got)
	}
}

// A cleanup command that runs for ten minutes is killed, with what it
// started, and its cleanup failed.
func TestCleanupIsBoundedByTenMinutes(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.script.push(func(context.Context, host.Run) error { return host.Permanent("404") })
	// The shell forks sleep and waits for it: killing the shell alone would
	// leave sleep holding the output open.
	b.submit("j", job.Spec{CleanupCmd: "sleep 600; echo never"})
	b.await("j", func(j job.Job) bool { return j.Cleanup == job.CleanupRunning("host-a") }, "cleanup claimed")
	b.clock.Advance(host.CleanupTimeout)
	j := b.await("j", func(j job.Job) bool { return strings.HasPrefix(j.Cleanup, "failed: ") }, "cleanup failed")
	if want := job.CleanupFailed("timed out after 10m0s"); j.Cleanup != want {
		t.Errorf("cleanup %q, want %q", j.Cleanup, want)
	}
}
