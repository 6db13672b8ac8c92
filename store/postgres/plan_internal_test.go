package postgres

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/url"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// TestClaimPlan: ClaimJobs reads unclaimed jobs in claim order through
// jobs_claim, whatever the statistics say: none yet (a new store), or
// stale ones taken when no job was claimable (a burst of submissions into
// an idle store). A plan that sorts every claimable job instead makes each
// claim cost the size of the queue. NextJobDue still finds the next
// claimable time through jobs_claimable_at.
func TestClaimPlan(t *testing.T) {
	t.Parallel()
	dsn := os.Getenv("LAYOVER_TEST_POSTGRES")
	if dsn == "" {
		if os.Getenv("CI") != "" {
			t.Fatal("LAYOVER_TEST_POSTGRES is not set")
		}
		t.Skip("LAYOVER_TEST_POSTGRES is not set (see postgres_test.go)")
	}
	ctx := t.Context()
	b := make([]byte, 6)
	rand.Read(b)
	schema := "layover_test_" + hex.EncodeToString(b)
	admin, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(context.Background())
	if _, err := admin.Exec(ctx, "CREATE SCHEMA "+schema); err != nil {
		t.Fatal(err)
	}
	defer admin.Exec(context.Background(), "DROP SCHEMA "+schema+" CASCADE")
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	s, err := Open(ctx, u.String())
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
	// insert adds n jobs in state.
	insert := func(prefix, state string, n int) {
		t.Helper()
		exec(`INSERT INTO jobs (id, spec, state, stage, ownership, priority, deadline_ms, created_at_ms,
			updated_at_ms, run_at_ms, resume_by_ms, fence, lease_owner, lease_until_ms, progress_by_ms, attempts,
			probes, approved, session_id, transition_seq, receipt_seq)
			SELECT '` + prefix + `' || i, '{}', '` + state + `', '', '', i % 3, 0, i, i, 0, 0, 0, '', 0, 0, 0, 0,
			false, '', 1, 0 FROM generate_series(1, ` + strconv.Itoa(n) + `) AS i`)
	}
	plan := func(query string, args ...any) string {
		t.Helper()
		rows, err := s.pool.Query(ctx, "EXPLAIN "+query, args...)
		if err != nil {
			t.Fatal(err)
		}
		lines, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			t.Fatal(err)
		}
		return strings.Join(lines, "\n")
	}
	now := time.Now().UnixMilli()
	checkClaim := func(what string) {
		t.Helper()
		p := plan(claimJobs, "host-a", now+30_000, now, 16)
		if !strings.Contains(p, "Index Scan using jobs_claim on") || strings.Contains(p, "jobs_claimable_at") {
			t.Errorf("%s: the claim does not read jobs_claim in order:\n%s", what, p)
		}
	}

	exec(`ALTER TABLE jobs SET (autovacuum_enabled = false)`)
	insert("ready-", "ready", 5000)
	checkClaim("no statistics")

	exec(`DELETE FROM jobs`)
	insert("done-", "complete", 5000)
	exec(`ANALYZE jobs`)
	insert("ready-", "ready", 5000)
	checkClaim("statistics from before the burst")

	exec(`ANALYZE jobs`)
	checkClaim("fresh statistics")
	if p := plan(nextJobDue); !strings.Contains(p, "jobs_claimable_at") {
		t.Errorf("NextJobDue does not read jobs_claimable_at:\n%s", p)
	}
}
