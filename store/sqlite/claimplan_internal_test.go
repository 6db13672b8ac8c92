package sqlite

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestClaimReadsInClaimOrder checks the claim's plan: each state is read
// along jobs_claim and stops at the limit, with no sort of every due job
// (which made a claim cost as much as the jobs due: a burst of 10,000
// drained at 450/s, docs/benchmarks.md).
func TestClaimReadsInClaimOrder(t *testing.T) {
	t.Parallel()
	s, err := Open(t.Context(), filepath.Join(t.TempDir(), "s.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	rows, err := s.db.QueryContext(t.Context(), "EXPLAIN QUERY PLAN "+claimJobs, "h", 2, 1, 16)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var plan []string
	for rows.Next() {
		var id, parent, unused int
		var detail string
		if err := rows.Scan(&id, &parent, &unused, &detail); err != nil {
			t.Fatal(err)
		}
		plan = append(plan, detail)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	all := strings.Join(plan, "\n")
	if n := strings.Count(all, "USING INDEX jobs_claim (state=?)"); n != 2 {
		t.Errorf("claim plan reads jobs_claim %d times, want 2 (ready, resumable):\n%s", n, all)
	}
	if strings.Contains(all, "jobs_run_at") {
		t.Errorf("claim plan reads jobs_run_at:\n%s", all)
	}
	// One sort is allowed: the outer one, of the at most 2×limit rows the
	// two states' reads return. A sort inside either read would be of
	// every due job again.
	if n := strings.Count(all, "USE TEMP B-TREE"); n > 1 || (n == 1 && !strings.HasSuffix(all, "USE TEMP B-TREE FOR ORDER BY")) {
		t.Errorf("claim plan sorts inside a state's read:\n%s", all)
	}
}
