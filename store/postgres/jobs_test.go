package postgres_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/layoverhq/layover/job"
	"github.com/layoverhq/layover/store"
	"github.com/layoverhq/layover/store/postgres"
	"github.com/layoverhq/layover/store/postgres/pgtest"
	"github.com/layoverhq/layover/store/storetest"
)

// submitAll submits n jobs made by mk, from 16 goroutines.
func submitAll(t testing.TB, s store.Store, n int, mk func(i int) job.Job) {
	t.Helper()
	errs := make([]error, 16)
	var wg sync.WaitGroup
	for w := range errs {
		wg.Go(func() {
			for i := w; i < n; i += len(errs) {
				if _, _, err := s.SubmitJob(context.Background(), mk(i), nil, base); err != nil {
					errs[w] = err
					return
				}
			}
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatalf("SubmitJob: %v", err)
	}
}

// hostPools opens n stores on dsn, as n hosts would, each with a pool of
// conns connections.
func hostPools(t testing.TB, dsn string, n, conns int) []*postgres.Store {
	t.Helper()
	dsn = pgtest.WithParams(t, dsn, "pool_max_conns", strconv.Itoa(conns))
	out := make([]*postgres.Store, n)
	for i := range out {
		out[i] = open(t, dsn)
	}
	return out
}

// TestClaimAcrossPools has 4 pools (hosts) of 8 goroutines each claim 500
// ready jobs in rounds, every round after the last one's leases ended:
// in each round every job is claimed exactly once, by one host, at a fence
// one above the round before.
func TestClaimAcrossPools(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	dsn := pgtest.Schema(t)

	const jobs, hosts, workers, rounds = 500, 4, 8, 3
	const lease = time.Hour
	pools := hostPools(t, dsn, hosts, workers)
	submitAll(t, pools[0], jobs, func(i int) job.Job {
		j := storetest.BenchJob(fmt.Sprintf("j%03d", i), base)
		j.Spec.Priority = i % 5
		return j
	})

	for round := 1; round <= rounds; round++ {
		now := base.Add(time.Duration(round-1) * 2 * lease)
		type claim struct {
			host string
			job  job.Job
		}
		var mu sync.Mutex
		var claims []claim
		var errs []error
		var wg sync.WaitGroup
		for h, s := range pools {
			hostID := "host-" + strconv.Itoa(h)
			for w := range workers {
				wg.Go(func() {
					for {
						js, err := s.ClaimJobs(ctx, hostID, now, lease, 1+w%4)
						mu.Lock()
						if err != nil {
							errs = append(errs, err)
						}
						for _, j := range js {
							claims = append(claims, claim{hostID, j})
						}
						mu.Unlock()
						if err != nil || len(js) == 0 {
							return
						}
					}
				})
			}
		}
		wg.Wait()
		if err := errors.Join(errs...); err != nil {
			t.Fatalf("round %d: ClaimJobs: %v", round, err)
		}

		byJob := map[string][]claim{}
		perHost := map[string]int{}
		for _, c := range claims {
			byJob[c.job.ID] = append(byJob[c.job.ID], c)
			perHost[c.host]++
			if c.job.LeaseOwner != c.host || c.job.Fence != int64(round) ||
				!c.job.LeaseUntil.Equal(now.Add(lease)) {
				t.Errorf("round %d: %s claimed by %s: owner %q, fence %d, lease until %s; want %s, fence %d, until %s",
					round, c.job.ID, c.host, c.job.LeaseOwner, c.job.Fence, c.job.LeaseUntil, c.host, round, now.Add(lease))
			}
		}
		if len(byJob) != jobs {
			t.Errorf("round %d: %d jobs claimed, want %d", round, len(byJob), jobs)
		}
		for id, cs := range byJob {
			if len(cs) != 1 {
				t.Errorf("round %d: %s claimed %d times", round, id, len(cs))
			}
		}
		t.Logf("round %d: claims per host %v", round, perHost)

		// The store agrees: each job leased to the one host that claimed it.
		stored, err := pools[1].ListJobs(ctx, job.Ready)
		if err != nil {
			t.Fatal(err)
		}
		for _, j := range stored {
			cs := byJob[j.ID]
			if len(cs) != 1 || j.LeaseOwner != cs[0].host || j.Fence != int64(round) {
				t.Errorf("round %d: stored %s leased to %q at fence %d, claimed as %v", round, j.ID, j.LeaseOwner, j.Fence, cs)
			}
		}
	}
}

// TestRenewAndSweepRace races hosts renewing their leases against two
// sweepers, at the instant the leases end: each job ends up either renewed
// (its holder told nothing was lost, the lease extended) or taken back
// (its holder told it was lost, the job free, a running one back to ready
// with its attempt closed), never both, and the sweeps count each taking
// once.
func TestRenewAndSweepRace(t *testing.T) {
	t.Parallel()

	const hosts, perHost, rounds = 4, 30, 4
	const lease = 30 * time.Second
	for round := range rounds {
		ctx := t.Context()
		dsn := pgtest.Schema(t)
		pools := hostPools(t, dsn, hosts, 4)
		submitAll(t, pools[0], hosts*perHost, func(i int) job.Job { return storetest.BenchJob(fmt.Sprintf("j%03d", i), base) })

		held := make([]map[string]int64, hosts)
		running := map[string]bool{}
		for h, s := range pools {
			host := "host-" + strconv.Itoa(h)
			js, err := s.ClaimJobs(ctx, host, base, lease, perHost)
			if err != nil || len(js) != perHost {
				t.Fatalf("ClaimJobs(%s) = %d jobs, %v", host, len(js), err)
			}
			held[h] = map[string]int64{}
			for i, j := range js {
				held[h][j.ID] = j.Fence
				if i%2 == 0 {
					running[j.ID] = true
					if _, err := s.ApplyJob(ctx, j.ID, j.Fence, job.Change{To: job.Running, Reason: "start", Now: base,
						Attempt: &job.Attempt{ID: j.ID + "-a1", Fence: j.Fence, StartedAt: base}}); err != nil {
						t.Fatal(err)
					}
				}
			}
		}

		at := base.Add(lease) // every lease ends now
		lost := make([][]string, hosts)
		var sweeps []store.SweepResult
		var mu sync.Mutex
		var errs []error
		fail := func(err error) {
			mu.Lock()
			errs = append(errs, err)
			mu.Unlock()
		}
		var wg sync.WaitGroup
		for h, s := range pools {
			wg.Go(func() {
				time.Sleep(time.Duration(rand.IntN(3000)) * time.Microsecond)
				l, err := s.RenewLeases(ctx, "host-"+strconv.Itoa(h), held[h], at, lease)
				if err != nil {
					fail(err)
				}
				lost[h] = l
			})
		}
		for i := range 2 {
			wg.Go(func() {
				for range 3 {
					time.Sleep(time.Duration(rand.IntN(1000)) * time.Microsecond)
					res, err := pools[i].SweepJobs(ctx, at)
					if err != nil {
						fail(err)
						return
					}
					mu.Lock()
					sweeps = append(sweeps, res)
					mu.Unlock()
				}
			})
		}
		wg.Wait()
		if err := errors.Join(errs...); err != nil {
			t.Fatal(err)
		}
		// A sweep leaves a job another transaction holds to the next one.
		res, err := pools[0].SweepJobs(ctx, at)
		if err != nil {
			t.Fatal(err)
		}
		sweeps = append(sweeps, res)

		reclaimed := 0
		for _, r := range sweeps {
			reclaimed += r.Reclaimed
			if r.Woken+r.Expired+r.PastDue != 0 {
				t.Errorf("sweep %+v: only leases were due", r)
			}
		}
		nLost := 0
		for h := range pools {
			host := "host-" + strconv.Itoa(h)
			nLost += len(lost[h])
			for id, fence := range held[h] {
				j, err := pools[0].Job(ctx, id)
				if err != nil {
					t.Fatal(err)
				}
				hist, err := pools[0].JobHistory(ctx, id)
				if err != nil {
					t.Fatal(err)
				}
				wantState := job.Ready
				if running[id] {
					wantState = job.Running
				}
				if slices.Contains(lost[h], id) {
					// Taken back: free, a running job ready again with its
					// attempt closed and the move recorded, the fence kept.
					if j.LeaseOwner != "" || j.State != job.Ready || j.Fence != fence {
						t.Errorf("round %d: %s lost by %s but %s, leased to %q, fence %d", round, id, host, j.State, j.LeaseOwner, j.Fence)
					}
					if running[id] {
						tr := hist.Transitions[len(hist.Transitions)-1]
						if len(hist.Transitions) != 3 || tr.Reason != "lease lost" || hist.Attempts[0].Outcome != "lease-lost" {
							t.Errorf("round %d: %s taken while running: transitions %+v, attempts %+v", round, id, hist.Transitions, hist.Attempts)
						}
					}
					continue
				}
				// Renewed: still the holder's, its lease extended.
				if j.LeaseOwner != host || !j.LeaseUntil.Equal(at.Add(lease)) || j.State != wantState || j.Fence != fence {
					t.Errorf("round %d: %s renewed by %s but %s, leased to %q until %s, fence %d", round, id, host, j.State, j.LeaseOwner, j.LeaseUntil, j.Fence)
				}
				if running[id] && (len(hist.Transitions) != 2 || hist.Attempts[0].EndedAt != (time.Time{})) {
					t.Errorf("round %d: renewed running %s: transitions %+v, attempts %+v", round, id, hist.Transitions, hist.Attempts)
				}
			}
		}
		if reclaimed != nLost {
			t.Errorf("round %d: sweeps reclaimed %d jobs, renewals lost %d", round, reclaimed, nLost)
		}
		t.Logf("round %d: %d of %d leases renewed, %d taken back by %d sweeps", round, hosts*perHost-nLost, hosts*perHost, nLost, len(sweeps))
	}
}

// TestConcurrentSweeps has four pools sweep one store at once: every due
// job is moved once, and counted once across the sweeps.
func TestConcurrentSweeps(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	dsn := pgtest.Schema(t)
	pools := hostPools(t, dsn, 4, 2)

	const wake, pastDue = 300, 100
	submitAll(t, pools[0], wake+pastDue, func(i int) job.Job {
		j := storetest.BenchJob(fmt.Sprintf("j%03d", i), base)
		if i < wake {
			j.State, j.Ownership, j.RunAt, j.ResumeBy = job.Deferred, job.Retained, base.Add(time.Minute), base.Add(time.Hour)
		} else {
			j.Spec.Deadline = base.Add(time.Minute)
		}
		return j
	})
	at := base.Add(2 * time.Minute)
	results := make([]store.SweepResult, len(pools))
	errs := make([]error, len(pools))
	var wg sync.WaitGroup
	for i, s := range pools {
		wg.Go(func() { results[i], errs[i] = s.SweepJobs(ctx, at) })
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	var sum store.SweepResult
	for _, r := range results {
		sum.Woken += r.Woken
		sum.PastDue += r.PastDue
		sum.Expired += r.Expired
		sum.Reclaimed += r.Reclaimed
	}
	// Left to a later sweep: what another sweep held when this one looked,
	// and that one then moved. So the total is exact.
	if want := (store.SweepResult{Woken: wake, PastDue: pastDue}); !reflect.DeepEqual(sum, want) {
		t.Errorf("sweeps moved %+v in all (%+v), want %+v", sum, results, want)
	}
	counts, err := pools[0].CountJobs(ctx)
	if err != nil || counts[job.Resumable] != wake || counts[job.Cancelled] != pastDue {
		t.Errorf("CountJobs = %v, %v", counts, err)
	}
	for _, id := range []string{"j000", "j299", "j300", "j399"} {
		h, err := pools[0].JobHistory(ctx, id)
		if err != nil || len(h.Transitions) != 2 {
			t.Errorf("%s: transitions %+v, %v; want the submission and one move", id, h.Transitions, err)
		}
	}
}

// TestRacingSubmitsAndSkips: writers on several pools racing to create the
// same row get one winner. One submit of an id creates the job, the others
// with its spec get it back uncreated, those with another spec a conflict;
// one RecordSkip of a reason writes its line.
func TestRacingSubmitsAndSkips(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	pools := hostPools(t, pgtest.Schema(t), 4, 8)

	const racers = 32
	created := make([]bool, racers)
	wrote := make([]bool, racers)
	submitErrs := make([]error, racers)
	errs := make([]error, racers)
	priority := func(i int) int { return i % 8 / 7 } // 1 for every 8th racer: another spec
	var wg sync.WaitGroup
	for i := range racers {
		wg.Go(func() {
			s := pools[i%len(pools)]
			j := storetest.BenchJob("same", base)
			j.Spec.Priority = priority(i)
			_, created[i], submitErrs[i] = s.SubmitJob(ctx, j, &job.Receipt{JSON: storetest.Receipt, IssuedAt: base}, base)
			wrote[i], errs[i] = s.RecordSkip(ctx, "pass:x", "core@1", store.Activity{At: base, Kind: "skip", Line: "skipped"})
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	count := func(bs []bool) (n int) {
		for _, b := range bs {
			if b {
				n++
			}
		}
		return n
	}
	if n := count(created); n != 1 {
		t.Fatalf("%d submits created the job, want 1", n)
	}
	winner := slices.Index(created, true)
	for i, err := range submitErrs {
		switch {
		case i == winner && err != nil:
			t.Errorf("the creating submit failed: %v", err)
		case i != winner && priority(i) == priority(winner) && err != nil:
			t.Errorf("submit %d of the stored spec = %v, want the stored job", i, err)
		case i != winner && priority(i) != priority(winner) && !errors.Is(err, job.ErrConflict):
			t.Errorf("submit %d of another spec = %v, want job.ErrConflict", i, err)
		}
	}
	if n := count(wrote); n != 1 {
		t.Errorf("%d skips wrote, want 1", n)
	}
	h, err := pools[0].JobHistory(ctx, "same")
	if err != nil || len(h.Transitions) != 1 || len(h.Receipts) != 1 {
		t.Errorf("history = %+v, %v; want one submission with its receipt", h, err)
	}
	if lines, err := pools[0].Activity(ctx, 0); err != nil || len(lines) != 1 {
		t.Errorf("activity = %+v, %v; want one line", lines, err)
	}
}
