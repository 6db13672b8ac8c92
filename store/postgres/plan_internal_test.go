package postgres

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/layoverhq/layover/job"
	"github.com/layoverhq/layover/store/postgres/pgtest"
	"github.com/layoverhq/layover/store/storetest"
)

// TestPlans: the statements a host runs over and over read what they need
// through indexes, whatever the statistics say (see claimPlan and
// sweepPlan): none yet (a new store), none after a mass delete, stale ones
// taken when no job was claimable (a burst of submissions into an idle
// store), or fresh ones. ClaimJobs reads jobs_claim in claim order and
// stops at its limit, instead of sorting the whole queue; the sweep's rules
// read their partial indexes and reach rows by key; RenewLeases and the
// group commit's reads and writes (groupcommit.go) reach their jobs by
// key; NextJobDue finds the next claimable time through jobs_claimable_at.
func TestPlans(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	s, err := Open(ctx, pgtest.Schema(t))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()

	exec := func(sql string) {
		t.Helper()
		if _, err := s.pool.Exec(ctx, sql); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
	}
	// insert adds n jobs in state, as SubmitJob writes them: one priority,
	// one creation time, a spec of a realistic size.
	spec := `'{"name":"bench","argv":["gh","pr","create","--fill"],"workdir":"/srv/repo","env_names":["GH_TOKEN"],` +
		`"quota":["github"],"provider":"github","priority":0,"deadline":"2026-11-11T14:00:00Z","resume_cmd":"",` +
		`"check_cmd":"","verify_cmd":"","plan_cmd":"","fresh_approval_required":false,"max_attempts":0,"progress_timeout":0}'`
	insert := func(prefix, state string, n int) {
		t.Helper()
		exec(`INSERT INTO jobs (id, spec, state, stage, ownership, priority, deadline_ms, created_at_ms,
			updated_at_ms, run_at_ms, resume_by_ms, fence, lease_owner, lease_until_ms, progress_by_ms, attempts,
			probes, approved, session_id, transition_seq, receipt_seq)
			SELECT '` + prefix + `' || i, ` + spec + `, '` + state + `', 'ready', '', 0, 1794405600000, 1794319200000,
			1794319200000, 0, 0, 0, '', 0, 0, 0, 0, false, '', 1, 0 FROM generate_series(1, ` + strconv.Itoa(n) + `) AS i`)
	}
	// plan explains query as the store runs it: after setup, in a
	// transaction, with a plan the server would cache (pgx prepares every
	// statement) forced generic or not.
	plan := func(setup, query string, generic bool, args ...any) string {
		t.Helper()
		tx, err := s.pool.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		// The transaction only explains and sets locals: nothing to keep,
		// and a failed rollback leaves nothing for the test to check.
		defer func() { _ = tx.Rollback(ctx) }()
		if generic {
			setup += "; SET LOCAL plan_cache_mode = force_generic_plan"
		}
		if _, err := tx.Exec(ctx, setup); err != nil {
			t.Fatal(err)
		}
		rows, err := tx.Query(ctx, "EXPLAIN (ANALYZE) "+query, args...)
		if err != nil {
			t.Fatal(err)
		}
		lines, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			t.Fatal(err)
		}
		return strings.Join(lines, "\n")
	}
	now := int64(1794319200000 + 60_000) // a minute after the jobs were made, before their deadline
	checkSweep := func(what string) {
		t.Helper()
		for i, st := range sweepSteps {
			args := []any{now, st.reason}
			if st.outcome != "" {
				args = append(args, st.outcome)
			}
			for _, generic := range []bool{false, true} {
				p := plan(sweepPlan, sweepQueries()[i], generic, args...)
				if strings.Contains(p, "Seq Scan") || strings.Contains(p, "Hash") || strings.Contains(p, "Merge") ||
					strings.Contains(p, "JIT") {
					t.Errorf("%s (generic plan: %v): sweep step %d reads whole tables, or is compiled:\n%s", what, generic, i, p)
				}
			}
		}
	}
	// The writes of a group deferring two ready jobs, as read, with every
	// part of writeJobs: an attempt and a reconcile check each, and one
	// closed.
	writes := newGroupWrites(2)
	for _, id := range []string{"ready-1", "ready-2"} {
		r := readJob{job: job.Job{ID: id, State: job.Ready}, transitionSeq: 1, xmin: "1"}
		if _, err := writes.add(r, 0, storetest.Deferral(time.UnixMilli(now))); err != nil {
			t.Fatal(err)
		}
		writes.closed.add(id, int64(1), now, job.OutcomeLeaseLost, (*string)(nil))
		writes.attempts.add(id, "a1", int64(1), now, now, "deferred", (*int64)(nil), 0.0)
		writes.checks.add(id, int64(1), int64(1), now, "resume", (*int64)(nil), job.CheckRun, "")
	}
	writeQuery, writeArgs := writes.query()
	if writeQuery != writeJobs()[len(writeJobs())-1] {
		t.Fatal("the writes to explain lack some part of writeJobs")
	}
	// checkKeyed: statements that name their jobs read them by key.
	checkKeyed := func(what string) {
		t.Helper()
		for _, generic := range []bool{false, true} {
			p := plan("SELECT 1", renewLeases, generic, "host-a", []string{"ready-1", "ready-2"}, []int64{1, 1}, now+30_000)
			if strings.Contains(p, "Seq Scan") {
				t.Errorf("%s (generic plan: %v): the renewal reads the whole table:\n%s", what, generic, p)
			}
			for _, q := range []string{readJobs, lockJobs} {
				if p := plan("SELECT 1", q, generic, []string{"ready-1", "ready-2"}); strings.Contains(p, "Seq Scan") {
					t.Errorf("%s (generic plan: %v): the group's read of its jobs reads the whole table:\n%s", what, generic, p)
				}
			}
			if p := plan("SELECT 1", writeQuery, generic, writeArgs...); strings.Contains(p, "Seq Scan on jobs") {
				t.Errorf("%s (generic plan: %v): the group's writes read the whole table:\n%s", what, generic, p)
			}
		}
	}
	checkClaim := func(what string) {
		t.Helper()
		for _, generic := range []bool{false, true} {
			p := plan(claimPlan, claimJobs, generic, "host-a", now+30_000, now, 16)
			// The unclaimed jobs' part of the plan.
			_, unclaimed, _ := strings.Cut(p, "CTE unclaimed")
			unclaimed, _, _ = strings.Cut(unclaimed, "CTE lapsed")
			if !strings.Contains(unclaimed, "Index Scan using jobs_claim on") || strings.Contains(unclaimed, "Sort") ||
				strings.Contains(unclaimed, "Bitmap") || strings.Contains(p, "JIT") {
				t.Errorf("%s (generic plan: %v): the claim does not read jobs_claim in order, or is compiled:\n%s", what, generic, p)
			}
		}
	}

	exec(`ALTER TABLE jobs SET (autovacuum_enabled = false)`)
	insert("ready-", "ready", 20000)
	checkClaim("no statistics")
	checkSweep("no statistics")
	checkKeyed("no statistics")
	exec(`DELETE FROM jobs`)
	insert("again-", "ready", 20000)
	checkClaim("no statistics, after a delete")
	checkSweep("no statistics, after a delete")
	checkKeyed("no statistics, after a delete")

	exec(`DELETE FROM jobs`)
	insert("done-", "complete", 20000)
	exec(`ANALYZE jobs`)
	insert("ready-", "ready", 20000)
	checkClaim("statistics from before the burst")
	checkSweep("statistics from before the burst")
	checkKeyed("statistics from before the burst")

	exec(`ANALYZE jobs`)
	checkClaim("fresh statistics")
	checkSweep("fresh statistics")
	checkKeyed("fresh statistics")
	if p := plan("SELECT 1", nextJobDue, false); !strings.Contains(p, "jobs_claimable_at") {
		t.Errorf("NextJobDue does not read jobs_claimable_at:\n%s", p)
	}
}
