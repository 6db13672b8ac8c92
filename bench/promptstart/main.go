// Command promptstart measures how soon an idle durable host starts a job
// another store handle submits (docs/lifecycle.md, Prompt start).
//
// It opens the store twice, as `layover serve` and `layover submit` would:
// one handle for a real host (the real clock, the default 10 s heartbeat,
// a Go function runner that notes when each attempt starts), the other for
// a front door (host.NewJobs) that submits. Before each of -n submissions
// it waits a random time up to -gap, so submissions fall anywhere in the
// SQLite watcher's polling interval; the latency is from just before the
// Submit call to the runner's call. Before the submissions it reads the
// process's CPU over -idle with the host idle: the cost of watching.
//
//	go run ./bench/promptstart                                    # SQLite, 200 jobs
//	go run ./bench/promptstart -postgres "$LAYOVER_TEST_POSTGRES" # PostgreSQL, a fresh schema
package main

import (
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/layoverhq/layover/bench/internal/benchkit"
	"github.com/layoverhq/layover/host"
	"github.com/layoverhq/layover/job"
	"github.com/layoverhq/layover/store"
	"github.com/layoverhq/layover/store/postgres"
	"github.com/layoverhq/layover/store/sqlite"
)

func main() {
	benchkit.Name = "promptstart"
	n := flag.Int("n", 200, "submissions")
	gap := flag.Duration("gap", 100*time.Millisecond, "the longest random wait before each submission")
	idle := flag.Duration("idle", 5*time.Second, "how long to read the idle host's CPU")
	noWatch := flag.Bool("no-watch", false, "hide the store's change watch from the host, for the idle CPU without it (submissions then wait for the heartbeat: use a small -n)")
	dsn := flag.String("postgres", "", "a PostgreSQL server's URL: measure the fleet store, in a fresh schema (default SQLite in a temporary folder)")
	flag.Parse()
	ctx := context.Background()

	open, cleanup := openSQLite()
	defer cleanup()
	what := "SQLite"
	if *dsn != "" {
		schema, drop := benchkit.PostgresSchema(ctx, *dsn, "promptstart")
		defer drop()
		open = func() store.Store {
			s, err := postgres.Open(ctx, schema)
			if err != nil {
				benchkit.Fail("%v", err)
			}
			return s
		}
		what = "PostgreSQL"
	}
	hostStore, submitStore := open(), open()
	defer hostStore.Close()
	defer submitStore.Close()

	watched := hostStore
	if *noWatch {
		watched = struct{ store.Store }{hostStore} // no WatchJobs
	}
	started := make(chan time.Time, 1)
	h, err := host.New(host.Config{Store: watched, Env: []string{}, CheckpointDir: os.TempDir(),
		Runner: host.FuncRunner(func(context.Context, host.Run) error { started <- time.Now(); return nil })})
	if err != nil {
		benchkit.Fail("%v", err)
	}
	if err := h.Start(ctx); err != nil {
		benchkit.Fail("%v", err)
	}
	defer h.Stop()
	front, err := host.NewJobs(host.Config{Store: submitStore})
	if err != nil {
		benchkit.Fail("%v", err)
	}

	time.Sleep(time.Second) // the start's own writes settle
	before := benchkit.ReadCPU()
	time.Sleep(*idle)
	idleCPU := benchkit.ReadCPU().Sub(before)

	lat := make([]time.Duration, 0, *n)
	for i := range *n {
		time.Sleep(rand.N(*gap))
		t0 := time.Now()
		if _, _, err := front.Submit(ctx, fmt.Sprintf("p%05d", i), job.Spec{Argv: []string{"true"}}); err != nil {
			benchkit.Fail("submit: %v", err)
		}
		select {
		case at := <-started:
			lat = append(lat, at.Sub(t0))
		case <-time.After(30 * time.Second):
			benchkit.Fail("job %d did not start in 30 s", i)
		}
	}
	slices.Sort(lat)
	if *noWatch {
		what += " (not watched)"
	}
	fmt.Printf("%s: %d submissions from another handle to an idle host (heartbeat %s)\n", what, len(lat), host.DefaultHeartbeat)
	fmt.Printf("  submit -> attempt start: median %s, p95 %s, max %s\n",
		benchkit.MS(benchkit.Pct(lat, 50)), benchkit.MS(benchkit.Pct(lat, 95)), benchkit.MS(lat[len(lat)-1]))
	fmt.Printf("  idle process CPU over %s: %.2f%% of a core\n", *idle, 100*idleCPU.Mine())
	fmt.Printf("  load average at the end: %s\n", benchkit.Uptime())
}

// openSQLite returns a function that opens a store in a new temporary
// folder, the same file each call, and one that removes the folder.
func openSQLite() (open func() store.Store, remove func()) {
	dir, err := os.MkdirTemp("", "promptstart-")
	if err != nil {
		benchkit.Fail("%v", err)
	}
	path := filepath.Join(dir, "layover.db")
	return func() store.Store {
		s, err := sqlite.Open(context.Background(), path)
		if err != nil {
			benchkit.Fail("%v", err)
		}
		return s
	}, func() { os.RemoveAll(dir) }
}
