package cli_test

import (
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/layoverhq/layover/internal/fake"
	"github.com/layoverhq/layover/store/postgres/pgtest"
)

// machine is another host of the fleet: its own directory and HOME, the
// same GitHub and the same PostgreSQL store as b.
func (b *bundle) machine() *bundle {
	m := *b
	m.dir = b.t.TempDir()
	m.env = maps.Clone(b.env)
	m.env["HOME"] = m.dir
	return &m
}

// Two machines on one PostgreSQL store are one fleet: a quota one of them
// saw exhausted holds back the other's passes without it asking GitHub, and
// their serve processes share the queue, each job running once.
func TestFleetSharesAPostgresStore(t *testing.T) {
	t.Parallel()
	dsn := pgtest.Schema(t)
	a := setup(t, fake.GitHubConfig{})
	a.env["LAYOVER_STORE"] = dsn
	b := a.machine()

	// The ledger is shared.
	a.gh.SetQuota(testToken, "core", 0, nextSecond(time.Hour))
	if r := a.layover("pass", "--", "true"); r.code != 0 {
		t.Fatalf("pass on a: exit %d %s", r.code, r.stderr)
	}
	asked := a.gh.Calls("/rate_limit")
	marker := filepath.Join(b.dir, "ran")
	if r := b.layover("pass", "--", "touch", marker); r.code != 0 {
		t.Fatalf("pass on b: exit %d %s", r.code, r.stderr)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("b's pass ran although a had seen the quota exhausted")
	}
	if n := a.gh.Calls("/rate_limit"); n != asked {
		t.Errorf("b asked /rate_limit %d more times; the shared ledger already said skip", n-asked)
	}
	if r := b.layover("activity"); !strings.Contains(r.stdout, "skipped: GitHub Quota wait until") {
		t.Errorf("b's activity lacks the skip:\n%s", r.stdout)
	}

	// The queue is shared.
	for _, m := range []*bundle{a, b} {
		p := m.start("serve", "--lease", "3s", "--heartbeat", "500ms")
		p.waitLine(t, "layover serve started")
	}
	sink := filepath.Join(a.dir, "sink")
	const jobs = 24
	for i := range jobs {
		m := []*bundle{a, b}[i%2]
		script := fmt.Sprintf(`echo "$LAYOVER_JOB_ID $LAYOVER_FENCE start" >> %s; sleep 0.1; echo "$LAYOVER_JOB_ID $LAYOVER_FENCE end" >> %s`, sink, sink)
		if r := m.layover("submit", "--id", fmt.Sprintf("fleet-%02d", i), "--", "sh", "-c", script); r.code != 0 {
			t.Fatalf("submit: exit %d %s", r.code, r.stderr)
		}
	}
	for i := range jobs {
		j := a.awaitJob(fmt.Sprintf("fleet-%02d", i), "complete")
		if len(j.Attempts) != 1 {
			t.Errorf("%s: %d attempts, want 1", j.ID, len(j.Attempts))
		}
	}
	data, _ := os.ReadFile(sink)
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	seen := map[string]int{}
	for _, l := range lines {
		seen[l]++
	}
	if len(lines) != 2*jobs || len(seen) != 2*jobs {
		t.Errorf("sink has %d lines, %d distinct; want each job to start and end once:\n%s", len(lines), len(seen), data)
	}
	var st struct {
		Hosts []struct {
			ID   string `json:"id"`
			Live bool   `json:"live"`
		} `json:"hosts"`
	}
	r := b.layover("status", "--json")
	if err := json.Unmarshal([]byte(r.stdout), &st); err != nil {
		t.Fatalf("status --json: %v\n%s", err, r.stdout)
	}
	live := 0
	for _, h := range st.Hosts {
		if h.Live {
			live++
		}
	}
	if live != 2 {
		t.Errorf("status lists %d live hosts, want both serve processes: %s", live, r.stdout)
	}
}
