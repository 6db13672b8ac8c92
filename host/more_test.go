package host_test

import (
	"context"
	"errors"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/layoverhq/layover/host"
	"github.com/layoverhq/layover/job"
	"github.com/layoverhq/layover/quota"
	"github.com/layoverhq/layover/receipt"
)

func TestMissingEnvironmentBlocks(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.submit("j", job.Spec{EnvNames: []string{"HOME", "DEPLOY_KEY"}})
	j := b.awaitState("j", job.Blocked)
	if !strings.Contains(j.Stage, "DEPLOY_KEY") || b.script.count() != 0 {
		t.Fatalf("stage %q, runs %d", j.Stage, b.script.count())
	}
}

func TestCancelBlockedAndResumable(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.submit("blocked", job.Spec{EnvNames: []string{"DEPLOY_KEY"}}) // the host lacks it
	b.awaitState("blocked", job.Blocked)
	if _, err := b.ops.Cancel(context.Background(), "blocked"); err != nil {
		t.Fatal(err)
	}
	b.awaitState("blocked", job.Cancelled)

	// A resumable job the host has not claimed yet (the store's sweep woke
	// it) can be cancelled too. Deferred while the host runs, it is
	// retained; the host stops before its wake-up.
	_, _, err := b.host.SubmitDeferred(context.Background(), "r", job.Spec{Argv: []string{"true"}},
		host.Deferral{Key: coreKey, Provider: "github", ResetAt: t0.Add(time.Minute)}, nil)
	if err != nil {
		t.Fatal(err)
	}
	b.host.Stop()
	if _, err := b.st.SweepJobs(context.Background(), t0.Add(5*time.Minute)); err != nil {
		t.Fatal(err)
	}
	if j, _ := b.st.Job(context.Background(), "r"); j.State != job.Resumable {
		t.Fatalf("state %s, want resumable", j.State)
	}
	j, err := b.ops.Cancel(context.Background(), "r")
	if err != nil || j.State != job.Cancelled {
		t.Fatalf("cancel resumable: %v %v", j.State, err)
	}
}

// A checkpoint renews the progress deadline and reaches the next attempt
// through LAYOVER_CHECKPOINT; a stale fence is refused.
func TestCheckpointReachesTheNextAttempt(t *testing.T) {
	t.Parallel()
	b := setup(t)
	var second host.Run
	b.script.push(func(ctx context.Context, r host.Run) error {
		if _, err := b.ops.Checkpoint(ctx, r.Job.ID, r.Fence, "fetched", []byte(`{"page":3}`)); err != nil {
			return host.Permanent(err.Error())
		}
		if _, err := b.ops.Checkpoint(ctx, r.Job.ID, r.Fence-1, "stale", nil); !errors.Is(err, job.ErrStaleFence) {
			return host.Permanent("a stale fence was accepted")
		}
		return errors.New("connection reset")
	}, func(_ context.Context, r host.Run) error { second = r; return nil })
	b.submit("j", job.Spec{ProgressTimeout: time.Hour})
	j := b.await("j", func(j job.Job) bool { return j.State == job.Ready && j.Attempts == 1 }, "ready after a transient failure")
	if j.Checkpoint == nil || j.Checkpoint.Stage != "fetched" {
		t.Fatalf("checkpoint %+v", j.Checkpoint)
	}
	b.clock.Advance(10 * time.Second)
	b.awaitState("j", job.Complete)
	var path string
	for _, kv := range second.Env {
		if v, ok := strings.CutPrefix(kv, "LAYOVER_CHECKPOINT="); ok {
			path = v
		}
	}
	data, err := os.ReadFile(path)
	if err != nil || string(data) != `{"page":3}` {
		t.Fatalf("LAYOVER_CHECKPOINT %q holds %q (%v)", path, data, err)
	}
}

func TestPriorityRunsFirst(t *testing.T) {
	t.Parallel()
	b := setup(t, func(c *host.Config) { c.Concurrency = 1 })
	b.host.Stop() // queue first, then start a host that sees them all at once
	for _, p := range []struct {
		id  string
		pri int
	}{{"low", 0}, {"high", 5}, {"mid", 2}} {
		if _, _, err := b.ops.Submit(context.Background(), p.id, job.Spec{Argv: []string{"true"}, Priority: p.pri}); err != nil {
			t.Fatal(err)
		}
	}
	var order []string
	h2, err := host.New(host.Config{Store: b.st, Clock: b.clock, Concurrency: 1, ID: "host-b", CheckpointDir: t.TempDir(),
		Runner: host.FuncRunner(func(_ context.Context, r host.Run) error { order = append(order, r.Job.ID); return nil })})
	if err != nil {
		t.Fatal(err)
	}
	b.follow(h2.Jobs)
	if err := h2.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer h2.Stop()
	b.awaitState("low", job.Complete)
	if strings.Join(order, ",") != "high,mid,low" {
		t.Fatalf("order %v", order)
	}
}

// anthropicQuotas resolves every quota name to one Anthropic key.
type anthropicQuotas struct{}

var anthropicKey = quota.Key{Host: "api.anthropic.com", Principal: "org-1", Resource: "tokens"}

func (anthropicQuotas) Keys(context.Context, []string) ([]quota.Key, error) {
	return []quota.Key{anthropicKey}, nil
}

func (anthropicQuotas) Fresh(context.Context, []quota.Key) ([]quota.State, error) {
	return nil, errors.New("no free read")
}

// The host finds a key's provider in the registry: a job whose Anthropic
// key is already in a Quota wait is deferred with a provider-quota receipt,
// not GitHub's rest-reserve.
func TestLedgerWaitOfAnotherProviderDefersAsItsQuota(t *testing.T) {
	t.Parallel()
	b := setup(t, func(c *host.Config) { c.Quotas = anthropicQuotas{} })
	reset := t0.Add(20 * time.Minute)
	if err := b.st.RecordStates(context.Background(), []quota.State{{Key: anthropicKey, Limit: 1000, Remaining: 0,
		ResetAt: reset, ResetKnown: true, ObservedAt: t0, Cause: quota.CauseExhausted}}); err != nil {
		t.Fatal(err)
	}
	b.submit("j", job.Spec{Quota: []string{"anthropic"}})
	j := b.awaitState("j", job.Deferred)
	rcs := decodeReceipts(t, b.history("j"))
	if len(rcs) != 1 || rcs[0].Reason != receipt.ProviderQuota || b.script.count() != 0 {
		t.Fatalf("deferred %+v with receipts %+v after %d runs; want one provider-quota receipt and no run", j, rcs, b.script.count())
	}
}

// A workflow task's job is told its run, task and idempotency key, and
// the stored spec keeps the names; any other job gets none of them.
func TestFlowJobEnvironment(t *testing.T) {
	t.Parallel()
	b := setup(t, func(c *host.Config) { c.Env = append(c.Env, "LAYOVER_TASK=outer") })
	envs := map[string][]string{}
	var mu sync.Mutex
	record := func(_ context.Context, r host.Run) error {
		mu.Lock()
		defer mu.Unlock()
		envs[r.Job.ID] = r.Env
		return nil
	}
	b.script.push(record, record)
	b.submit("r1.build", job.Spec{Flow: &job.FlowRef{Run: "r1", Task: "build"}})
	j := b.awaitState("r1.build", job.Complete)
	if j.Spec.Flow == nil || *j.Spec.Flow != (job.FlowRef{Run: "r1", Task: "build"}) {
		t.Fatalf("stored flow %+v", j.Spec.Flow)
	}
	b.submit("plain", job.Spec{})
	b.awaitState("plain", job.Complete)
	mu.Lock()
	defer mu.Unlock()
	lookup := func(env []string, k string) []string {
		var out []string
		for _, kv := range env {
			if v, ok := strings.CutPrefix(kv, k+"="); ok {
				out = append(out, v)
			}
		}
		return out
	}
	for k, want := range map[string]string{"LAYOVER_RUN_ID": "r1", "LAYOVER_TASK": "build", "LAYOVER_IDEMPOTENCY_KEY": "r1:build"} {
		if got := lookup(envs["r1.build"], k); len(got) != 1 || got[0] != want {
			t.Errorf("flow job %s = %q, want %q", k, got, want)
		}
	}
	if got := lookup(envs["plain"], "LAYOVER_RUN_ID"); len(got) != 0 {
		t.Errorf("a plain job got LAYOVER_RUN_ID %q", got)
	}
	if got := lookup(envs["plain"], "LAYOVER_TASK"); len(got) != 1 || got[0] != "outer" {
		t.Errorf("a plain job's LAYOVER_TASK from the host = %q, want it kept", got)
	}
	if err := (job.Spec{Argv: []string{"true"}, Flow: &job.FlowRef{Run: "r1"}}).Validate(); err == nil {
		t.Error("a flow job without its task validated")
	}
}
