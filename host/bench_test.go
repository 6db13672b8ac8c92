//go:build unix

package host_test

import (
	"context"
	"database/sql"
	"math/rand/v2"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/layoverhq/layover/host"
	"github.com/layoverhq/layover/job"
	"github.com/layoverhq/layover/quota"
	"github.com/layoverhq/layover/store/sqlite"
)

// BenchmarkSubmitDeferred measures durable deferrals recorded through the
// host's Go API, (*host.Host).SubmitDeferred, on a started host (so
// ownership is retained) over a SQLite file store, each call returning once
// the job (with its submission), its receipt and its wake-up are committed
// (synchronous=FULL, WAL), against a bare ceiling measured in the same run:
// the same jobs and job_receipt rows the host wrote, byte for byte, written
// again into a fresh store file opened the same way (so the same driver,
// pragmas, tables and indexes) by two plain INSERTs per deferral through
// statements prepared once on one connection, 10 deferrals a commit from as
// many goroutines (one a commit with one goroutine). A second ceiling,
// "plain", writes the same way into the same two tables without the jobs
// table's secondary indexes (its primary key kept), which the store needs
// to find due work but a bare insert does not. The three take turns, a
// tenth of b.N each, so that all see the same load from the machine's
// other work. docs/benchmarks-host.md has the figures and the targets
// (issue 9: at 64 goroutines >= 15,000/s and >= 80 % of the ceiling; with
// one, >= 90 % of the single-commit ceiling).
//
// Metrics: deferrals/s is the host's, bare-deferrals/s and
// plain-deferrals/s the ceilings', %-of-bare and %-of-plain the host's
// share of each; cpu-µs/deferral and bare-cpu-µs/deferral the CPU this
// process spent (user and system, every thread) per deferral in the host
// and in the bare ceiling; ns/op is the host's alone. On a shared machine
// the CPU figures move less with others' load than the rates do.
//
//	go test -run '^$' -bench SubmitDeferred -benchtime 20000x -count 5 ./host
func BenchmarkSubmitDeferred(b *testing.B) {
	for _, c := range []struct{ goroutines, perCommit int }{{64, 10}, {1, 1}} {
		b.Run("goroutines="+strconv.Itoa(c.goroutines), func(b *testing.B) {
			hb := startHostBench(b)
			bare, plain := openBareBench(b, false), openBareBench(b, true)
			b.ResetTimer()
			var hostT, bareT, plainT, hostCPU, bareCPU time.Duration
			rounds := min(10, b.N)
			for k := range rounds {
				lo, hi := k*b.N/rounds, (k+1)*b.N/rounds
				b.StartTimer()
				cpu := processCPU(b)
				hostT += hb.submit(b, c.goroutines, lo, hi)
				hostCPU += processCPU(b) - cpu
				b.StopTimer()
				rows := hb.rowsAfter(b, lo)
				cpu = processCPU(b)
				bareT += bare.write(b, c.goroutines, c.perCommit, rows)
				bareCPU += processCPU(b) - cpu
				plainT += plain.write(b, c.goroutines, c.perCommit, rows)
			}
			hb.check(b)
			bare.check(b)
			plain.check(b)
			hostRate, bareRate := float64(b.N)/hostT.Seconds(), float64(b.N)/bareT.Seconds()
			plainRate := float64(b.N) / plainT.Seconds()
			b.ReportMetric(hostRate, "deferrals/s")
			b.ReportMetric(bareRate, "bare-deferrals/s")
			b.ReportMetric(100*hostRate/bareRate, "%-of-bare")
			b.ReportMetric(plainRate, "plain-deferrals/s")
			b.ReportMetric(100*hostRate/plainRate, "%-of-plain")
			b.ReportMetric(float64(hostCPU.Microseconds())/float64(b.N), "cpu-µs/deferral")
			b.ReportMetric(float64(bareCPU.Microseconds())/float64(b.N), "bare-cpu-µs/deferral")
		})
	}
}

// hostBench is a started host on a new SQLite file store, and the
// deferral it records again and again.
type hostBench struct {
	st       *sqlite.Store
	h        *host.Host
	spec     job.Spec
	d        host.Deferral
	keys     []quota.Key
	rand     quota.Rand
	retained atomic.Int64
}

func startHostBench(b *testing.B) *hostBench {
	ctx := context.Background()
	st, err := sqlite.Open(ctx, filepath.Join(b.TempDir(), "layover.db"))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { st.Close() })
	checkDurable(b, st.DB())
	h, err := host.New(host.Config{Store: st, Runner: host.FuncRunner(func(context.Context, host.Run) error { return nil }),
		Env:           []string{"PATH=/usr/bin:/bin"},
		CheckpointDir: b.TempDir(), Hostname: "bench"})
	if err != nil {
		b.Fatal(err)
	}
	if err := h.Start(ctx); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(h.Stop)
	key := quota.Key{Host: "api.github.com", Principal: "octocat", Resource: "core"}
	return &hostBench{st: st, h: h, rand: &lockedRand{r: rand.New(rand.NewPCG(1, 2))},
		spec: job.Spec{Name: "triage", Argv: []string{"gh", "issue", "list", "--limit", "100"}, Workdir: "/srv/bot",
			Quota: []string{"github"}, Provider: "github", MaxAttempts: host.DefaultMaxAttempts,
			Deadline: time.Now().Add(24 * time.Hour).UTC().Truncate(time.Millisecond)},
		d:    host.Deferral{Key: key, Provider: "github", ResetAt: time.Now().Add(time.Hour).Truncate(time.Second)},
		keys: []quota.Key{key}}
}

// submit records deferrals lo to hi-1 from goroutines at once and returns
// the time it took.
func (hb *hostBench) submit(b *testing.B, goroutines, lo, hi int) time.Duration {
	ctx := context.Background()
	start := time.Now()
	inParallel(b, goroutines, lo, hi, 1, func(i, _ int) error {
		// Each deferral draws its jitter once, as run's engine does.
		d := hb.d
		d.Jitter = quota.DefaultPolicy().DrawJitter(hb.rand)
		j, rc, err := hb.h.SubmitDeferred(ctx, "bench-"+strconv.Itoa(i), hb.spec, d, hb.keys)
		if err == nil && rc.IsRetained() && j.Ownership == job.Retained {
			hb.retained.Add(1)
		}
		return err
	})
	return time.Since(start)
}

// check fails unless the store holds b.N deferred jobs, each retained.
func (hb *hostBench) check(b *testing.B) {
	if r := hb.retained.Load(); r != int64(b.N) {
		b.Fatalf("%d of %d deferrals retained", r, b.N)
	}
	counts, err := hb.st.CountJobs(context.Background())
	if err != nil {
		b.Fatal(err)
	}
	if counts[job.Deferred] != b.N {
		b.Fatalf("the store holds %v, want %d deferred jobs", counts, b.N)
	}
}

// bareRow is the jobs row and the job_receipt row of one deferral.
type bareRow struct {
	id, spec, state, stage, ownership, submitted                  string
	priority, deadline, created, updated, runAt, resumeBy, issued int64
	receipt                                                       []byte
}

const (
	// bareColumns are the jobs columns a deferral sets; bareInsertJob
	// gives the others the values a new job has.
	bareColumns = `id, spec, state, stage, ownership, priority, deadline_ms, created_at_ms, updated_at_ms,
	run_at_ms, resume_by_ms, submitted_state`
	// bareSelect reads the rows of the jobs after the first ?1, in the
	// order the host wrote them.
	bareSelect = `SELECT ` + bareColumns + `, r.json, r.issued_at_ms FROM jobs JOIN job_receipt r ON r.job_id = id
	WHERE jobs.rowid > ?1 ORDER BY jobs.rowid`
	bareInsertJob = `INSERT INTO jobs (` + bareColumns + `, fence, lease_owner, lease_until_ms, progress_by_ms,
	attempts, probes, approved, session_id, checkpoint_stage, checkpoint_data, checkpoint_at_ms)
	VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 0, '', 0, 0, 0, 0, 0, '', NULL, NULL, NULL)`
	bareInsertReceipt = `INSERT INTO job_receipt (job_id, seq, json, issued_at_ms) VALUES (?, 1, ?, ?)`
)

// rowsAfter reads back the two rows of each deferral the host recorded
// after its first n, in the order it wrote them.
func (hb *hostBench) rowsAfter(b *testing.B, n int) []bareRow {
	rows, err := hb.st.DB().Query(bareSelect, n)
	if err != nil {
		b.Fatal(err)
	}
	defer rows.Close()
	var out []bareRow
	for rows.Next() {
		var r bareRow
		if err := rows.Scan(&r.id, &r.spec, &r.state, &r.stage, &r.ownership, &r.priority, &r.deadline, &r.created,
			&r.updated, &r.runAt, &r.resumeBy, &r.submitted, &r.receipt, &r.issued); err != nil {
			b.Fatal(err)
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		b.Fatal(err)
	}
	return out
}

// bareBench is a ceiling: a fresh file opened as the store opens it (the
// same driver, pragmas and schema), written through one connection and its
// four statements (BEGIN, COMMIT and the two INSERTs) prepared once on it.
type bareBench struct {
	conn                              *sql.Conn
	begin, commit, insJob, insReceipt *sql.Stmt
	mu                                sync.Mutex // hands conn from goroutine to goroutine
	n                                 int
}

// openBareBench opens a ceiling; plain drops the jobs table's secondary
// indexes first.
func openBareBench(b *testing.B, plain bool) *bareBench {
	ctx := context.Background()
	st, err := sqlite.Open(ctx, filepath.Join(b.TempDir(), "bare.db"))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { st.Close() })
	bb := &bareBench{}
	if bb.conn, err = st.DB().Conn(ctx); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { bb.conn.Close() })
	checkDurable(b, bb.conn)
	if plain {
		dropIndexes(b, bb.conn, "jobs")
	}
	for st, query := range map[**sql.Stmt]string{&bb.begin: "BEGIN IMMEDIATE", &bb.commit: "COMMIT",
		&bb.insJob: bareInsertJob, &bb.insReceipt: bareInsertReceipt} {
		if *st, err = bb.conn.PrepareContext(ctx, query); err != nil {
			b.Fatal(err)
		}
	}
	return bb
}

// write writes rows from goroutines at once, each taking perCommit
// deferrals at a time and committing them in one immediate transaction,
// and returns the time it took. The goroutines share the connection (a
// mutex hands it over, so no writer waits in SQLite's busy handler).
func (bb *bareBench) write(b *testing.B, goroutines, perCommit int, rows []bareRow) time.Duration {
	ctx := context.Background()
	start := time.Now()
	inParallel(b, goroutines, 0, len(rows), perCommit, func(i, n int) error {
		bb.mu.Lock()
		defer bb.mu.Unlock()
		if _, err := bb.begin.ExecContext(ctx); err != nil {
			return err
		}
		for _, r := range rows[i : i+n] {
			if _, err := bb.insJob.ExecContext(ctx, r.id, r.spec, r.state, r.stage, r.ownership, r.priority, r.deadline,
				r.created, r.updated, r.runAt, r.resumeBy, r.submitted); err != nil {
				return err
			}
			if _, err := bb.insReceipt.ExecContext(ctx, r.id, r.receipt, r.issued); err != nil {
				return err
			}
		}
		_, err := bb.commit.ExecContext(ctx)
		return err
	})
	bb.n += len(rows)
	return time.Since(start)
}

// dropIndexes drops the indexes made on table, leaving those SQLite keeps
// for its keys.
func dropIndexes(b *testing.B, conn *sql.Conn, table string) {
	ctx := context.Background()
	rows, err := conn.QueryContext(ctx, `SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = ?
		AND sql IS NOT NULL`, table)
	if err != nil {
		b.Fatal(err)
	}
	var names []string
	for rows.Next() {
		var name string
		if err := rows.Scan(&name); err != nil {
			b.Fatal(err)
		}
		names = append(names, name)
	}
	if err := closeRows(rows); err != nil || len(names) == 0 {
		b.Fatalf("indexes of %s: %v, %v", table, names, err)
	}
	for _, name := range names {
		if _, err := conn.ExecContext(ctx, `DROP INDEX "`+name+`"`); err != nil {
			b.Fatal(err)
		}
	}
}

// closeRows closes rows, returning the error that ended them first.
func closeRows(rows *sql.Rows) error {
	err := rows.Err()
	if cerr := rows.Close(); err == nil {
		err = cerr
	}
	return err
}

// check fails unless the bare store holds b.N deferrals.
func (bb *bareBench) check(b *testing.B) {
	var n int
	if err := bb.conn.QueryRowContext(context.Background(), `SELECT count(*) FROM job_receipt`).Scan(&n); err != nil ||
		n != b.N || bb.n != b.N {
		b.Fatalf("the bare store holds %d receipts (%v), want %d", n, err, b.N)
	}
}

// inParallel calls fn(i, k) from goroutines at once until fn has been
// given [lo, hi) in pieces of up to per, each piece i to i+k once. The
// first error fails b, after every goroutine stopped.
func inParallel(b *testing.B, goroutines, lo, hi, per int, fn func(i, k int) error) {
	var next atomic.Int64
	next.Store(int64(lo))
	var failed atomic.Pointer[error]
	var wg sync.WaitGroup
	for range goroutines {
		wg.Go(func() {
			for failed.Load() == nil {
				i := int(next.Add(int64(per))) - per
				if i >= hi {
					return
				}
				if err := fn(i, min(per, hi-i)); err != nil {
					failed.CompareAndSwap(nil, &err)
				}
			}
		})
	}
	wg.Wait()
	if err := failed.Load(); err != nil {
		b.Fatal(*err)
	}
}

// processCPU is the CPU time this process has used, user and system.
func processCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// checkDurable fails unless q's connection commits durably as the store
// promises: WAL with synchronous=FULL (2), an fsync of the log per commit.
func checkDurable(b *testing.B, q interface {
	QueryRowContext(context.Context, string, ...any) *sql.Row
}) {
	b.Helper()
	var mode string
	var synchronous int
	ctx := context.Background()
	if err := q.QueryRowContext(ctx, "PRAGMA journal_mode").Scan(&mode); err != nil {
		b.Fatal(err)
	}
	if err := q.QueryRowContext(ctx, "PRAGMA synchronous").Scan(&synchronous); err != nil {
		b.Fatal(err)
	}
	if mode != "wal" || synchronous != 2 {
		b.Fatalf("journal_mode %s, synchronous %d: want wal and 2 (FULL)", mode, synchronous)
	}
}

// lockedRand is a quota.Rand safe for concurrent use: the deferrals made
// from many goroutines draw their jitter from one.
type lockedRand struct {
	mu sync.Mutex
	r  *rand.Rand
}

func (l *lockedRand) Int64N(n int64) int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.r.Int64N(n)
}
