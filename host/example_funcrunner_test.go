package host_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/layoverhq/layover/host"
	"github.com/layoverhq/layover/job"
	"github.com/layoverhq/layover/quota"
	"github.com/layoverhq/layover/store/sqlite"
)

// A program embeds the durable host and runs its jobs as Go functions. The
// function reports a quota exhaustion with host.Quota; the host defers the
// job with a receipt and runs the function again, fresh, after the reset.
func Example_funcRunner() {
	dir, _ := os.MkdirTemp("", "layover-example-")
	defer os.RemoveAll(dir)
	st, err := sqlite.Open(context.Background(), filepath.Join(dir, "layover.db"))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer st.Close()

	calls := 0
	done := make(chan struct{})
	sync := func(ctx context.Context, r host.Run) error {
		calls++
		if calls == 1 {
			// The provider said: out of quota until 50 ms from now.
			return host.Quota("github", "core", time.Now().Add(50*time.Millisecond))
		}
		fmt.Printf("attempt %d of %s ran fresh\n", calls, r.Job.ID)
		close(done)
		return nil
	}

	policy := quota.DefaultPolicy()
	policy.ResetMargin, policy.Jitter = 0, 0 // resume right at the reset
	h, err := host.New(host.Config{Store: st, Runner: host.FuncRunner(sync), Policy: policy})
	if err != nil {
		fmt.Println(err)
		return
	}
	if err := h.Start(context.Background()); err != nil {
		fmt.Println(err)
		return
	}
	events := h.Subscribe(0) // the host's moves of its jobs, as it makes them
	defer events.Close()
	if _, _, err := h.Submit(context.Background(), "nightly-sync", job.Spec{Argv: []string{"sync"}}); err != nil {
		fmt.Println(err)
		return
	}
	<-done
	for ev := range events.C() {
		if ev.JobID == "nightly-sync" && ev.To == job.Complete {
			break
		}
	}
	h.Stop()

	hist, _ := st.JobHistory(context.Background(), "nightly-sync")
	for _, t := range hist.Transitions {
		fmt.Printf("%s -> %s\n", t.From, t.To)
	}
	fmt.Println("receipts:", len(hist.Receipts))
	// Output:
	// attempt 2 of nightly-sync ran fresh
	//  -> ready
	// ready -> running
	// running -> deferred
	// deferred -> resumable
	// resumable -> running
	// running -> complete
	// receipts: 1
}
