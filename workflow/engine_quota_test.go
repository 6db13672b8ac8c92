package workflow_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/layoverhq/layover/quota"
	"github.com/layoverhq/layover/store"
	"github.com/layoverhq/layover/workflow"
	"github.com/layoverhq/layover/workflow/record"
)

// Under on_quota fail, a task whose quota is exhausted before its start
// fails without starting.
func TestExhaustedQuotaBeforeStartFails(t *testing.T) {
	t.Parallel()
	eachStore(t, func(t *testing.T, st store.Store) {
		b := setup(t, st)
		b.opts = func(o *workflow.Options) { o.Quotas = fakeQuotas{reset: t0.Add(time.Hour)} }
		fetch := &counted{}
		def := workflow.Definition{Name: "nightly", OnQuota: workflow.OnQuota{Action: workflow.ActionFail}, Tasks: []workflow.Task{
			{Name: "fetch", Quota: []string{"github:core"}, Func: fetch.fn},
		}}
		res := b.start(def)
		f := task(t, res, "fetch")
		if res.Status != record.RunFailed || f.State != record.TaskFailed || f.Starts != 0 || fetch.calls.Load() != 0 {
			t.Fatalf("run %s, fetch %+v, %d calls", res.Status, f, fetch.calls.Load())
		}
		if got := b.moves("fetch"); len(got) != 1 || !strings.HasPrefix(got[0], "pending>failed: on_quota fail: exhausted before the start") {
			t.Errorf("fetch's moves %q", got)
		}
	})
}

// slowQuotas answers Fresh only once release is closed, then waits for
// its context to end.
type slowQuotas struct {
	fakeQuotas
	release     chan struct{}
	cancel      context.CancelFunc
	blocked     *bool // release never came
	uncancelled *bool // the context never ended
}

func (s slowQuotas) Fresh(ctx context.Context, keys []quota.Key) ([]quota.State, error) {
	select {
	case <-s.release:
	case <-time.After(guard):
		*s.blocked = true
	}
	s.cancel()
	select {
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-time.After(guard):
		*s.uncancelled = true
	}
	return s.fakeQuotas.Fresh(ctx, keys)
}

// The quota check before a start holds up no other task, and ends with
// Start's context.
func TestQuotaCheckOffTheLock(t *testing.T) {
	t.Parallel()
	eachStore(t, func(t *testing.T, st store.Store) {
		b := setup(t, st)
		ctx, cancel := context.WithCancel(t.Context())
		b.context = ctx
		release := make(chan struct{})
		var blocked, uncancelled bool
		b.opts = func(o *workflow.Options) {
			o.Quotas = slowQuotas{fakeQuotas{t0.Add(time.Hour)}, release, cancel, &blocked, &uncancelled}
		}
		b.advance = func(ev workflow.Event) time.Time {
			if ev.Task == "docs" && ev.To == record.TaskComplete {
				close(release)
			}
			return ev.Until
		}
		fetch, docs := &counted{}, &counted{}
		def := workflow.Definition{Name: "nightly", Tasks: []workflow.Task{
			{Name: "fetch", Quota: []string{"github:core"}, Func: fetch.fn},
			{Name: "docs", Func: docs.fn},
		}}
		res, err := b.startErr(def)
		if !errors.Is(err, context.Canceled) {
			t.Errorf("Start: %v, want context.Canceled", err)
		}
		if blocked || uncancelled {
			t.Errorf("the quota check held up docs: %v; ignored Start's context: %v", blocked, uncancelled)
		}
		wantState(t, res, map[string]record.TaskState{"docs": record.TaskComplete, "fetch": record.TaskPending})
		if fetch.calls.Load() != 0 {
			t.Error("fetch ran")
		}
	})
}
