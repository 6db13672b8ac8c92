package workflow_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/layoverhq/layover/host"
	"github.com/layoverhq/layover/store"
	"github.com/layoverhq/layover/workflow"
	"github.com/layoverhq/layover/workflow/record"
)

// renewing tells of each run write.
type renewing struct {
	workflow.Store
	wrote chan time.Time
}

func (r renewing) UpdateRun(ctx context.Context, run record.Run, now time.Time) (record.Run, error) {
	out, err := r.Store.UpdateRun(ctx, run, now)
	r.wrote <- now
	return out, err
}

// A second process on a run id that one runs is refused, and runs
// nothing, while the first renews the run; a run left running by a
// process that is gone is taken over after OwnerTimeout.
func TestOneProcessRunsARun(t *testing.T) {
	t.Parallel()
	eachStore(t, func(t *testing.T, st store.Store) {
		b := setup(t, st)
		wrote := make(chan time.Time, 100)
		b.opts = func(o *workflow.Options) { o.Store = renewing{Store: o.Store, wrote: wrote} }
		second := func() (workflow.Result, error) {
			return workflow.Start(context.Background(), def1(), workflow.Options{RunID: b.runID, Store: st, Clock: b.clk, Policy: testPolicy, Runner: b.runner})
		}
		var errs []error
		calls := 0
		def := workflow.Definition{Name: "nightly", Tasks: []workflow.Task{{Name: "a", Func: func(ctx context.Context, _ *workflow.Attempt) error {
			calls++
			_, err := second()
			errs = append(errs, err)
			b.clk.Advance(35 * time.Second) // past OwnerTimeout since the start
			for at := range wrote {
				if at.Equal(t0.Add(35 * time.Second)) {
					break // renewed
				}
			}
			_, err = second()
			errs = append(errs, err)
			return nil
		}}}}
		done := make(chan workflow.Result, 1)
		go func() { done <- b.start(def) }()
		select {
		case res := <-done:
			if res.Status != record.RunComplete || calls != 1 {
				t.Fatalf("the first process: %s, %d calls", res.Status, calls)
			}
		case <-time.After(guard):
			t.Fatal("the run was never renewed")
		}
		for i, err := range errs {
			if !errors.Is(err, workflow.ErrBusy) || !errors.Is(err, record.ErrConflict) || !strings.Contains(err.Error(), "is running, written") {
				t.Errorf("second process %d: %v, want ErrBusy", i+1, err)
			}
		}

		// A process that died left the run running: after OwnerTimeout it
		// is taken over.
		b.runID = "nightly-2"
		b.opts = nil
		a := &counted{errs: []error{host.Quota("github", "core", b.clk.Now().Add(time.Minute))}}
		def = workflow.Definition{Name: "nightly", Tasks: []workflow.Task{{Name: "a", Func: a.fn}}}
		if res := b.start(def); res.Status != record.RunPaused {
			t.Fatalf("first start: %s", res.Status)
		}
		run, err := st.Run(t.Context(), b.runID)
		if err != nil {
			t.Fatal(err)
		}
		run.Status = record.RunRunning
		if _, err := st.UpdateRun(t.Context(), run, b.clk.Now()); err != nil {
			t.Fatal(err)
		}
		left := b.clk.Now()
		b.clk.Set(left.Add(20 * time.Second))
		if _, err := b.startErr(def); !errors.Is(err, workflow.ErrBusy) || a.calls.Load() != 1 {
			t.Errorf("20 s after the last write: %v, %d calls", err, a.calls.Load())
		}
		b.clk.Set(left.Add(2 * time.Minute))
		if res := b.start(def); res.Status != record.RunComplete || a.calls.Load() != 2 {
			t.Errorf("taken over: %s, %d calls", res.Status, a.calls.Load())
		}
	})
}

// def1 is the one-task definition of TestOneProcessRunsARun, as a second
// process reads it (a function is kept as "a function").
func def1() workflow.Definition {
	return workflow.Definition{Name: "nightly", Tasks: []workflow.Task{{Name: "a", Func: func(context.Context, *workflow.Attempt) error {
		return errors.New("the second process ran the task")
	}}}}
}
