package workflow_test

import (
	"context"
	"testing"

	"github.com/layoverhq/layover/clock"
	"github.com/layoverhq/layover/store"
	"github.com/layoverhq/layover/workflow"
	"github.com/layoverhq/layover/workflow/record"
)

// flow cancel of a run that a flow run is running stops it: at its next
// renewal the running Start reads the run cancelled, stops the attempt
// under way (its context ends, as a process's would be stopped), starts
// nothing more, writes nothing over what flow cancel wrote, and returns
// the run cancelled.
func TestCancelStopsARunningStart(t *testing.T) {
	t.Parallel()
	eachStore(t, func(t *testing.T, st store.Store) {
		clk := clock.NewFake(t0)
		started, stoppedBy := make(chan struct{}), make(chan error, 1)
		after := &counted{}
		def := workflow.Definition{Name: "nightly", Tasks: []workflow.Task{
			{Name: "long", Func: func(ctx context.Context, _ *workflow.Attempt) error {
				close(started)
				<-ctx.Done()
				stoppedBy <- ctx.Err()
				return ctx.Err()
			}},
			{Name: "after", Needs: []string{"long"}, Func: after.fn},
		}}
		type out struct {
			res workflow.Result
			err error
		}
		done := make(chan out, 1)
		go func() {
			res, err := workflow.Start(context.Background(), def, workflow.Options{RunID: "cancel-1", Store: st, Clock: clk, Policy: testPolicy})
			done <- out{res, err}
		}()
		<-started
		if _, err := workflow.Cancel(t.Context(), st, nil, "cancel-1", clk.Now()); err != nil {
			t.Fatal(err)
		}
		select {
		case err := <-stoppedBy:
			t.Fatalf("the attempt was stopped (%v) before the run's renewal read the cancel", err)
		default:
		}
		clk.Advance(workflow.RenewEvery)
		var o out
		select {
		case o = <-done:
		case <-stalled():
			t.Fatal("Start never noticed the cancel")
		}
		if o.err != nil || o.res.Status != record.RunCancelled {
			t.Fatalf("Start: %v, status %s", o.err, o.res.Status)
		}
		if err := <-stoppedBy; err == nil {
			t.Fatal("the running attempt's context did not end")
		}
		if after.calls.Load() != 0 {
			t.Fatal("the dependent ran after the cancel")
		}
		recs, err := st.RunTasks(t.Context(), "cancel-1")
		if err != nil {
			t.Fatal(err)
		}
		for _, rt := range recs {
			if rt.State != record.TaskCancelled {
				t.Errorf("task %s is %s, want cancelled as flow cancel left it", rt.Name, rt.State)
			}
		}
		if r, err := st.Run(t.Context(), "cancel-1"); err != nil || r.Status != record.RunCancelled {
			t.Fatalf("the run is %s (%v), want cancelled", r.Status, err)
		}
	})
}
