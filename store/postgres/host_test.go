package postgres_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/layoverhq/layover/clock"
	"github.com/layoverhq/layover/host"
	"github.com/layoverhq/layover/job"
	"github.com/layoverhq/layover/store/postgres/pgtest"
)

// TestTwoHostsShareJobs runs two durable hosts, each with its own pool, on
// one store, as two machines of a fleet would: 200 jobs submitted through
// either host all complete, each run exactly once, in one attempt at fence
// 1.
func TestTwoHostsShareJobs(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	dsn := pgtest.Schema(t)

	const jobs = 200
	var mu sync.Mutex
	runs := map[string]int{}     // job id -> runs
	byHost := map[string]int{}   // host id -> runs
	var overlapping atomic.Int32 // runs of one job at once, should one happen
	var inFlight sync.Map
	runner := func(hostID string) host.FuncRunner {
		return func(ctx context.Context, r host.Run) error {
			if _, dup := inFlight.LoadOrStore(r.Job.ID, hostID); dup {
				overlapping.Add(1)
			}
			defer inFlight.Delete(r.Job.ID)
			mu.Lock()
			runs[r.Job.ID]++
			byHost[hostID]++
			mu.Unlock()
			time.Sleep(time.Duration(rand.IntN(5)) * time.Millisecond)
			return nil
		}
	}
	var hosts []*host.Host
	for i := range 2 {
		id := fmt.Sprintf("host-%d", i+1)
		h, err := host.New(host.Config{
			Store: open(t, dsn), Runner: runner(id), ID: id, Hostname: id,
			Lease: 5 * time.Second, Heartbeat: 200 * time.Millisecond, Concurrency: 8,
			Env: []string{}, CheckpointDir: t.TempDir(),
		})
		if err != nil {
			t.Fatal(err)
		}
		if err := h.Start(ctx); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(h.Stop)
		hosts = append(hosts, h)
	}
	for i := range jobs {
		if _, _, err := hosts[i%2].Submit(ctx, fmt.Sprintf("job-%03d", i), job.Spec{Argv: []string{"sync"}}); err != nil {
			t.Fatal(err)
		}
	}

	st := open(t, dsn)
	deadline := time.Now().Add(60 * time.Second)
	for {
		counts, err := st.CountJobs(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if counts[job.Complete] == jobs {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after 60 s: jobs per state %v", counts)
		}
		time.Sleep(20 * time.Millisecond)
	}
	for _, h := range hosts {
		h.Stop()
	}

	mu.Lock()
	defer mu.Unlock()
	t.Logf("runs per host: %v", byHost)
	if n := overlapping.Load(); n != 0 {
		t.Errorf("%d runs started while the same job was running", n)
	}
	for i := range jobs {
		id := fmt.Sprintf("job-%03d", i)
		if runs[id] != 1 {
			t.Errorf("%s ran %d times, want once", id, runs[id])
		}
		h, err := st.JobHistory(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if len(h.Attempts) != 1 || h.Attempts[0].Fence != 1 || h.Attempts[0].Outcome != "ok" {
			t.Errorf("%s: attempts %+v, want one ok at fence 1", id, h.Attempts)
		}
		var moves []string
		for _, tr := range h.Transitions {
			moves = append(moves, string(tr.To))
		}
		if fmt.Sprint(moves) != "[ready running complete]" {
			t.Errorf("%s: moved through %v", id, moves)
		}
	}
	if len(runs) != jobs {
		t.Errorf("%d jobs ran, want %d", len(runs), jobs)
	}
}

// A job submitted through another handle on the store starts on an idle
// host at once, woken by the store's notification: the host's clock (a
// fake one) never reaches its next heartbeat.
func TestHostStartsAnotherHandlesJobPromptly(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	dsn := pgtest.Schema(t)
	clk := clock.NewFake(base)
	started := make(chan string, 1)
	h, err := host.New(host.Config{Store: open(t, dsn), Clock: clk, ID: "host-a", Env: []string{}, CheckpointDir: t.TempDir(),
		Runner: host.FuncRunner(func(_ context.Context, r host.Run) error { started <- r.Job.ID; return nil })})
	if err != nil {
		t.Fatal(err)
	}
	if err := h.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(h.Stop)
	// Idle: the scheduler and the heartbeat each wait on a timer.
	for clk.Pending() < 2 {
		<-clk.TimerAdded()
	}
	front, err := host.NewJobs(host.Config{Store: open(t, dsn), Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := front.Submit(ctx, "elsewhere", job.Spec{Argv: []string{"true"}}); err != nil {
		t.Fatal(err)
	}
	select {
	case id := <-started:
		if id != "elsewhere" {
			t.Fatalf("started %s", id)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the job submitted through another handle never started")
	}
	if !clk.Now().Equal(base) {
		t.Fatal("the clock moved")
	}
}
