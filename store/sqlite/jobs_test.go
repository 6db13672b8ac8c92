package sqlite_test

import (
	"bufio"
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/layoverhq/layover/job"
	"github.com/layoverhq/layover/store"
	"github.com/layoverhq/layover/store/sqlite"
	"github.com/layoverhq/layover/store/storetest"
)

func TestJobs(t *testing.T) {
	t.Parallel()

	storetest.RunJobs(t, func(t *testing.T) store.Store {
		return open(t, filepath.Join(t.TempDir(), "layover.db"))
	})
}

func TestGroupCommit(t *testing.T) {
	t.Parallel()

	t.Run("OneFailureFailsOnlyItself", func(t *testing.T) {
		t.Parallel()
		ctx := t.Context()
		s := open(t, filepath.Join(t.TempDir(), "layover.db"))

		// Many concurrent changes, every third one refused (a stale fence
		// or a transition the lifecycle forbids): whatever the batches,
		// each call gets its own answer and the others commit.
		const n = 300
		submitAll(t, s, n, func(i int) job.Job { return storetest.BenchJob(fmt.Sprintf("j%03d", i), base) })
		errs := make([]error, n)
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() {
				id := fmt.Sprintf("j%03d", i)
				switch i % 3 {
				case 0:
					_, errs[i] = s.ApplyJob(ctx, id, 0, storetest.Deferral(base))
				case 1:
					_, errs[i] = s.ApplyJob(ctx, id, 5, storetest.Deferral(base))
				case 2:
					_, errs[i] = s.ApplyJob(ctx, id, -1, job.Change{To: job.Complete, Now: base})
				}
			})
		}
		wg.Wait()
		for i, err := range errs {
			id := fmt.Sprintf("j%03d", i)
			want := []error{nil, job.ErrStaleFence, job.ErrTransition}[i%3]
			if !errors.Is(err, want) || (want == nil) != (err == nil) {
				t.Errorf("%s: ApplyJob = %v, want %v", id, err, want)
			}
			j, err := s.Job(ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			h, err := s.JobHistory(ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			wantState, wantReceipts := job.Ready, 0
			if i%3 == 0 {
				wantState, wantReceipts = job.Deferred, 1
			}
			if j.State != wantState || len(h.Receipts) != wantReceipts || len(h.Transitions) != 1+wantReceipts {
				t.Errorf("%s: %s with %d receipts, %d transitions; want %s, %d, %d",
					id, j.State, len(h.Receipts), len(h.Transitions), wantState, wantReceipts, 1+wantReceipts)
			}
		}
	})

	t.Run("SameIDAtOnce", func(t *testing.T) {
		t.Parallel()
		ctx := t.Context()
		s := open(t, filepath.Join(t.TempDir(), "layover.db"))

		// Submits of one id from many goroutines, every fourth with another
		// spec, whatever the batches: one creates the job; those with its
		// spec get it back, the others job.ErrConflict; the job has one
		// submission and one receipt.
		const n = 64
		name := func(i int) string { return map[bool]string{false: "same", true: "other"}[i%4 == 3] }
		created := make([]bool, n)
		errs := make([]error, n)
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() {
				j := storetest.BenchJob("same", base)
				j.Spec.Name = name(i)
				_, created[i], errs[i] = s.SubmitJob(ctx, j, &job.Receipt{JSON: []byte(`{"v":1}`), IssuedAt: base}, base)
			})
		}
		wg.Wait()
		stored, err := s.Job(ctx, "same")
		if err != nil {
			t.Fatal(err)
		}
		news := 0
		for i := range n {
			switch {
			case created[i]:
				news++
			case name(i) == stored.Spec.Name && errs[i] != nil:
				t.Errorf("submit %d of the stored spec: %v, want the job back", i, errs[i])
			case name(i) != stored.Spec.Name && !errors.Is(errs[i], job.ErrConflict):
				t.Errorf("submit %d of another spec: %v, want job.ErrConflict", i, errs[i])
			}
		}
		h, err := s.JobHistory(ctx, "same")
		if err != nil {
			t.Fatal(err)
		}
		if news != 1 || len(h.Transitions) != 1 || len(h.Receipts) != 1 {
			t.Errorf("%d submits created the job; it has %d transitions, %d receipts; want 1, 1, 1",
				news, len(h.Transitions), len(h.Receipts))
		}
	})

	t.Run("PanicReachesItsCaller", func(t *testing.T) {
		t.Parallel()
		ctx := t.Context()
		s := open(t, filepath.Join(t.TempDir(), "layover.db"))

		if _, _, err := s.SubmitJob(ctx, storetest.BenchJob("j1", base), nil, base); err != nil {
			t.Fatal(err)
		}
		func() {
			defer func() {
				if r := recover(); r != "mutate bug" {
					t.Errorf("recovered %v, want the Mutate panic", r)
				}
			}()
			// Mutate panics, so ApplyJob does not return (the t.Error below
			// says so if it does).
			_, _ = s.ApplyJob(ctx, "j1", 0, job.Change{Now: base, Mutate: func(j *job.Job) {
				j.Stage = "half-written"
				panic("mutate bug")
			}})
			t.Error("ApplyJob returned after its Mutate panicked")
		}()
		// Nothing of it was written, and the store goes on.
		if j, err := s.Job(ctx, "j1"); err != nil || j.Stage != "" {
			t.Errorf("after the panic: Job = %+v, %v", j, err)
		}
		if _, err := s.ApplyJob(ctx, "j1", 0, storetest.Deferral(base)); err != nil {
			t.Errorf("ApplyJob after a panic: %v", err)
		}
	})

	t.Run("CancelledContext", func(t *testing.T) {
		t.Parallel()
		s := open(t, filepath.Join(t.TempDir(), "layover.db"))

		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		if _, err := s.ApplyJob(ctx, "j1", 0, storetest.Deferral(base)); !errors.Is(err, ctx.Err()) {
			t.Errorf("ApplyJob with a cancelled context = %v, want %v", err, ctx.Err())
		}
	})
}

// submitAll submits n jobs from 16 goroutines, so that they share commits.
func submitAll(t *testing.T, s *sqlite.Store, n int, mk func(i int) job.Job) {
	t.Helper()
	var next atomic.Int64
	var wg sync.WaitGroup
	for range 16 {
		wg.Go(func() {
			for i := next.Add(1) - 1; i < int64(n); i = next.Add(1) - 1 {
				if _, _, err := s.SubmitJob(t.Context(), mk(int(i)), nil, base); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
}

// TestMigrateSubmissions opens a file made by a layover whose job tables
// kept a job's submission as its first job_transition row (schema 2): the
// old job's history reads as before and goes on, and a job submitted after
// the migration has the same history though no row says its submission.
// Its rows from before migration 005 read with no runs, secondaries nor
// checks, and its receipt with no issuing host, at fence 0; from before
// migration 006, with no cleanup; and it has no workflow runs (migration
// 007).
func TestMigrateSubmissions(t *testing.T) {
	t.Parallel()
	ctx := t.Context()

	path := filepath.Join(t.TempDir(), "layover.db")
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"001_ledger.up.sql", "002_jobs.up.sql"} {
		body, err := os.ReadFile(filepath.Join("migration", name))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := db.ExecContext(ctx, string(body)); err != nil {
			t.Fatalf("making a v2 file: %s: %v", name, err)
		}
	}
	// A deferred job as schema 2 stored it, submitted at base.
	old := storetest.BenchJob("old", base)
	spec, err := json.Marshal(old.Spec)
	if err != nil {
		t.Fatal(err)
	}
	ms := base.UnixMilli()
	for _, q := range []string{"PRAGMA user_version = 2",
		`INSERT INTO jobs (id, spec, state, stage, ownership, priority, deadline_ms, created_at_ms, updated_at_ms,
		run_at_ms, resume_by_ms, fence, lease_owner, lease_until_ms, progress_by_ms, attempts, probes, approved,
		session_id) VALUES ('old', '` + string(spec) + `', 'deferred', '', 'handoff', 0, 0, ` + strconv.FormatInt(ms, 10) +
			`, ` + strconv.FormatInt(ms, 10) + `, 0, 0, 0, '', 0, 0, 0, 0, 0, '')`,
		`INSERT INTO job_transition (job_id, seq, from_state, to_state, at_ms, reason)
		VALUES ('old', 1, '', 'deferred', ` + strconv.FormatInt(ms, 10) + `, 'submitted')`,
		`INSERT INTO job_receipt (job_id, seq, json, issued_at_ms) VALUES ('old', 1, '{}', ` + strconv.FormatInt(ms, 10) + `)`,
		`INSERT INTO job_attempt (job_id, attempt_id, fence, started_at_ms, ended_at_ms, outcome, exit_code, waited_s)
		VALUES ('old', 'att-1', 1, ` + strconv.FormatInt(ms, 10) + `, ` + strconv.FormatInt(ms, 10) + `, 'quota', 1, 0)`,
		// A host registered before hosts recorded their lease (migration 004).
		`INSERT INTO host (id, hostname, pid, started_at_ms, last_seen_ms) VALUES ('h-old', 'box', 1, 0, ` + strconv.FormatInt(ms, 10) + `)`,
	} {
		if _, err := db.ExecContext(ctx, q); err != nil {
			t.Fatalf("making a v2 file: %v", err)
		}
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}

	s := open(t, path)
	// Its one attempt counts as a run: its next start reconciles first.
	if j, err := s.Job(ctx, "old"); err != nil || j.Runs != 1 || j.Secondaries != 0 || j.Cleanup != job.CleanupNone {
		t.Errorf("a job from schema 2 = %+v, %v; want its attempt as one run, no secondaries nor cleanup", j, err)
	}
	if h, err := s.JobHistory(ctx, "old"); err != nil || len(h.Checks) != 0 || len(h.Receipts) != 1 ||
		h.Receipts[0].HostID != "" || h.Receipts[0].Fence != 0 || string(h.Receipts[0].JSON) != "{}" {
		t.Errorf("history of a job from schema 2 = %+v, %v; want its receipt, from no host at fence 0, and no checks", h, err)
	}
	// Its lease is read as the default lease, by which liveness was judged then.
	if hosts, err := s.Hosts(ctx); err != nil || len(hosts) != 1 || hosts[0].Lease != 30*time.Second {
		t.Errorf("a host from schema 2: Hosts = %+v, %v; want one with a 30s lease", hosts, err)
	}
	// Migration 007's tables are new: no workflow run predates them.
	if runs, err := s.Runs(ctx); err != nil || len(runs) != 0 {
		t.Errorf("workflow runs of a store from schema 2 = %+v, %v; want none", runs, err)
	}
	if c, err := s.CountRuns(ctx); err != nil || len(c) != 0 {
		t.Errorf("CountRuns of a store from schema 2 = %v, %v; want none", c, err)
	}
	later := base.Add(time.Minute)
	if _, _, err := s.SubmitJob(ctx, storetest.BenchJob("new", base), nil, later); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"old", "new"} {
		if _, err := s.ApplyJob(ctx, id, job.NoFence, job.Change{To: job.Cancelled, Now: later.Add(time.Second), Reason: "test"}); err != nil {
			t.Fatal(err)
		}
	}
	for id, want := range map[string][]job.Transition{
		"old": {{To: job.Deferred, At: base, Reason: "submitted"},
			{From: job.Deferred, To: job.Cancelled, At: later.Add(time.Second), Reason: "test"}},
		"new": {{To: job.Ready, At: later, Reason: "submitted"},
			{From: job.Ready, To: job.Cancelled, At: later.Add(time.Second), Reason: "test"}},
	} {
		h, err := s.JobHistory(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if len(h.Transitions) != len(want) {
			t.Fatalf("%s: transitions %+v, want %+v", id, h.Transitions, want)
		}
		for i, w := range want {
			if g := h.Transitions[i]; g.From != w.From || g.To != w.To || !g.At.Equal(w.At) || g.Reason != w.Reason {
				t.Errorf("%s: transition %d = %+v, want %+v", id, i, g, w)
			}
		}
	}
}

// TestMigrateLedgerFile opens a file made by a layover that had only the
// ledger: the job tables are added, the ledger kept.
func TestMigrateLedgerFile(t *testing.T) {
	t.Parallel()
	ctx := t.Context()

	path := filepath.Join(t.TempDir(), "layover.db")
	ledger, err := os.ReadFile(filepath.Join("migration", "001_ledger.up.sql"))
	if err != nil {
		t.Fatal(err)
	}
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{string(ledger), "PRAGMA user_version = 1",
		`INSERT INTO activity (at_ms, kind, line) VALUES (1, 'wait', 'from before')`} {
		if _, err := db.ExecContext(ctx, q); err != nil {
			t.Fatalf("making a v1 file: %v", err)
		}
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}

	s := open(t, path)
	if lines, err := s.Activity(ctx, 0); err != nil || len(lines) != 1 || lines[0].Line != "from before" {
		t.Errorf("Activity after the migration = %+v, %v", lines, err)
	}
	if _, _, err := s.SubmitJob(ctx, storetest.BenchJob("j1", base), nil, base); err != nil {
		t.Errorf("SubmitJob after the migration: %v", err)
	}
	var v int
	if err := s.DB().QueryRowContext(ctx, "PRAGMA user_version").Scan(&v); err != nil || v < 2 {
		t.Errorf("user_version = %d, %v; want at least 2", v, err)
	}
}

// TestReceiptsCannotChange: the schema itself refuses to edit or delete a
// stored receipt.
func TestReceiptsCannotChange(t *testing.T) {
	t.Parallel()
	ctx := t.Context()

	s := open(t, filepath.Join(t.TempDir(), "layover.db"))
	j := storetest.BenchJob("j1", base)
	j.State = job.Deferred
	if _, _, err := s.SubmitJob(ctx, j, &job.Receipt{JSON: storetest.Receipt, IssuedAt: base}, base); err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{
		`UPDATE job_receipt SET json = '{}' WHERE job_id = 'j1'`,
		`DELETE FROM job_receipt WHERE job_id = 'j1'`,
	} {
		if _, err := s.DB().ExecContext(ctx, q); err == nil || !strings.Contains(err.Error(), "append-only") {
			t.Errorf("%s = %v, want it refused as append-only", q, err)
		}
	}
	h, err := s.JobHistory(ctx, "j1")
	if err != nil || len(h.Receipts) != 1 || !bytes.Equal(h.Receipts[0].JSON, storetest.Receipt) {
		t.Errorf("receipts = %+v, %v; want the one stored, unchanged", h.Receipts, err)
	}
}

// Multi-process claims: the test binary runs itself as claimer processes.
const (
	envClaimerStore = "LAYOVER_TEST_CLAIMER_STORE"
	envClaimerID    = "LAYOVER_TEST_CLAIMER_ID"

	claimJobs      = 200
	claimProcesses = 8
)

// TestHelperClaimer is a helper process of TestClaimAcrossProcesses. It
// opens the store, prints "ready", waits for a line on stdin, then claims
// until no job is left, printing "claimed ID FENCE" for each.
func TestHelperClaimer(t *testing.T) {
	t.Parallel()

	path := os.Getenv(envClaimerStore)
	if path == "" {
		return
	}
	ctx := t.Context()
	host := "claimer-" + os.Getenv(envClaimerID)
	s, err := sqlite.Open(ctx, path)
	if err != nil {
		t.Fatalf("%s: Open: %v", host, err)
	}
	defer s.Close()
	fmt.Println("ready")
	if _, err := bufio.NewReader(os.Stdin).ReadString('\n'); err != nil {
		t.Fatalf("%s: waiting for go: %v", host, err)
	}
	// Several goroutines per process, so batches and processes both race.
	var wg sync.WaitGroup
	var mu sync.Mutex
	for g := range 4 {
		wg.Go(func() {
			for {
				js, err := s.ClaimJobs(ctx, host, base, time.Hour, 1+g)
				if err != nil {
					t.Errorf("%s: ClaimJobs: %v", host, err)
					return
				}
				if len(js) == 0 {
					return
				}
				mu.Lock()
				for _, j := range js {
					fmt.Printf("claimed %s %d\n", j.ID, j.Fence)
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
}

// TestClaimAcrossProcesses has 8 processes claim from one file at once:
// every job is claimed exactly once.
func TestClaimAcrossProcesses(t *testing.T) {
	t.Parallel()
	ctx := t.Context()

	dir := t.TempDir()
	path := filepath.Join(dir, "layover.db")
	s := open(t, path)
	submitAll(t, s, claimJobs, func(i int) job.Job {
		j := storetest.BenchJob(fmt.Sprintf("j%03d", i), base)
		j.Spec.Priority = i % 5
		return j
	})

	type helper struct {
		cmd    *exec.Cmd
		stdin  io.WriteCloser
		stdout *bufio.Reader
		errOut bytes.Buffer
	}
	hs := make([]*helper, claimProcesses)
	for i := range hs {
		h := &helper{cmd: exec.CommandContext(ctx, os.Args[0], "-test.run=^TestHelperClaimer$", "-test.count=1", "-test.timeout=5m")}
		h.cmd.Dir = dir
		h.cmd.Env = append(os.Environ(), envClaimerStore+"="+path, envClaimerID+"="+strconv.Itoa(i))
		h.cmd.Stderr = &h.errOut
		var err error
		if h.stdin, err = h.cmd.StdinPipe(); err != nil {
			t.Fatal(err)
		}
		out, err := h.cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		h.stdout = bufio.NewReader(out)
		if err := h.cmd.Start(); err != nil {
			t.Fatalf("start claimer %d: %v", i, err)
		}
		hs[i] = h
	}
	for i, h := range hs {
		if line, err := h.stdout.ReadString('\n'); line != "ready\n" {
			t.Fatalf("claimer %d did not get ready: %q, %v\n%s", i, line, err, h.errOut.String())
		}
	}
	for i, h := range hs {
		if _, err := io.WriteString(h.stdin, "go\n"); err != nil {
			t.Fatalf("release claimer %d: %v", i, err)
		}
		h.stdin.Close()
	}

	claims := map[string][]string{} // job id -> "claimer:fence"
	for i, h := range hs {
		rest, _ := io.ReadAll(h.stdout)
		if err := h.cmd.Wait(); err != nil {
			t.Fatalf("claimer %d: %v\n%s%s", i, err, rest, h.errOut.String())
		}
		for line := range strings.Lines(string(rest)) {
			f := strings.Fields(line)
			if len(f) == 3 && f[0] == "claimed" {
				claims[f[1]] = append(claims[f[1]], fmt.Sprintf("%d:%s", i, f[2]))
			}
		}
	}
	if len(claims) != claimJobs {
		t.Errorf("%d jobs claimed, want %d", len(claims), claimJobs)
	}
	for id, cs := range claims {
		if len(cs) != 1 || !strings.HasSuffix(cs[0], ":1") {
			t.Errorf("%s claimed as %v, want once at fence 1", id, cs)
		}
	}
	js, err := s.ListJobs(ctx, job.Ready)
	if err != nil {
		t.Fatal(err)
	}
	for _, j := range js {
		if j.Fence != 1 || !strings.HasPrefix(j.LeaseOwner, "claimer-") {
			t.Errorf("%s: fence %d, lease %q after the claims", j.ID, j.Fence, j.LeaseOwner)
		}
	}
}

// The job benchmarks of store/storetest, on a SQLite file (synchronous=FULL).
func BenchmarkApplyJobParallel(b *testing.B) {
	storetest.BenchApplyJobParallel(b, open(b, filepath.Join(b.TempDir(), "layover.db")), base)
}

func BenchmarkApplyJob(b *testing.B) {
	storetest.BenchApplyJob(b, open(b, filepath.Join(b.TempDir(), "layover.db")), base)
}

func BenchmarkSubmitJob(b *testing.B) {
	storetest.BenchSubmitJob(b, open(b, filepath.Join(b.TempDir(), "layover.db")), base)
}

func BenchmarkRecordStates(b *testing.B) {
	storetest.BenchRecordStates(b, open(b, filepath.Join(b.TempDir(), "layover.db")), base)
}

func TestChanges(t *testing.T) {
	t.Parallel()

	storetest.RunChanges(t, func(t *testing.T) (store.Store, store.Store) {
		path := filepath.Join(t.TempDir(), "layover.db")
		return open(t, path), open(t, path)
	})
}
