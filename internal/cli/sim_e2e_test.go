package cli_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/layoverhq/layover/internal/fake"
)

// layover sim lanes runs the lanes through the real host and prints the
// figures; a bad flag is a usage error.
func TestSimLanes(t *testing.T) {
	t.Parallel()
	b := setup(t, fake.GitHubConfig{})
	r := b.layover("sim", "lanes", "--resource", "15", "--auth", "15", "--seed", "2")
	if r.code != 0 {
		t.Fatalf("exit %d: %s%s", r.code, r.stdout, r.stderr)
	}
	for _, want := range []string{"lanes: 15 WAIT_RESOURCE + 15 WAIT_AUTH\n", "resumes: 30\n", "provider calls: 0\n",
		"provider tokens: 0\n", "lanes in the wrong state: 0\n", "invariants broken: 0\n", "wall time: "} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("stdout lacks %q:\n%s", want, r.stdout)
		}
	}
	for _, args := range [][]string{{"sim", "lanes"}, {"sim", "lanes", "--resource", "-1"},
		{"sim", "lanes", "--auth", "1", "--store", "postgres"}, {"sim", "nope"}, {"sim"}, {"sim", "fleet", "x.yaml"}} {
		if r := b.layover(args...); r.code != 2 {
			t.Errorf("layover %v: exit %d, want 2 (%s)", args, r.code, r.stderr)
		}
	}
}

// layover sim fleet runs thirdshift's scenario (cut to 20 minutes) under
// the three strategies and prints each one's figures, the same for one
// seed; --json gives them as an object; a bad file is exit 2 at its line.
func TestSimFleet(t *testing.T) {
	t.Parallel()
	b := setup(t, fake.GitHubConfig{})
	file, err := filepath.Abs("../../examples/sim/thirdshift.yaml")
	if err != nil {
		t.Fatal(err)
	}
	r := b.layover("sim", "fleet", file, "--duration", "20m", "--seed", "4")
	if r.code != 0 {
		t.Fatalf("exit %d: %s%s", r.code, r.stdout, r.stderr)
	}
	for _, want := range []string{"fleet: 5 hosts, 20m0s simulated, 1 windows of 5000 calls, seed 4\n",
		"\nnone:\n", "\ndefaults:\n", "\npacing:\n", "  passes: ", " failed mid-work\n", "  commands: ",
		" rejected (", "  quota spent on admitted work: ", "  total waiting: ", "\nprovider calls: 0\n"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("stdout lacks %q:\n%s", want, r.stdout)
		}
	}
	j := b.layover("sim", "fleet", "--json", "--duration", "20m", "--seed", "4", file)
	var rep struct {
		Hosts      int `json:"hosts"`
		Strategies []struct {
			Strategy     string `json:"strategy"`
			PassesRun    int    `json:"passes_run"`
			CommandsLost int    `json:"commands_lost"`
		} `json:"strategies"`
	}
	if err := json.Unmarshal([]byte(j.stdout), &rep); err != nil || j.code != 0 {
		t.Fatalf("--json: exit %d, %v: %s", j.code, err, j.stdout)
	}
	if rep.Hosts != 5 || len(rep.Strategies) != 3 || rep.Strategies[1].Strategy != "defaults" || rep.Strategies[0].PassesRun == 0 {
		t.Errorf("--json: %+v", rep)
	}
	// The same seed, the same passes (the text's figures, but the wall time).
	if !strings.Contains(r.stdout, fmt.Sprintf("passes: %d run", rep.Strategies[0].PassesRun)) {
		t.Errorf("text and JSON differ for one seed:\n%s\n%s", r.stdout, j.stdout)
	}
	bad := filepath.Join(t.TempDir(), "bad.yaml")
	if err := os.WriteFile(bad, []byte("hosts: 3\nquota:\n  window: 10s\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"sim", "fleet", bad}, {"sim", "fleet"}, {"sim", "fleet", file, "--duration", "9000h"},
		{"sim", "fleet", file, "extra.yaml"}, {"sim", "fleet", file, "--ledger", "postgres"}} {
		r := b.layover(args...)
		if r.code != 2 {
			t.Errorf("layover %v: exit %d, want 2 (%s)", args, r.code, r.stderr)
		}
		if len(args) == 3 && args[2] == bad && !strings.Contains(r.stderr, bad+":3: quota.window: want a duration from 1m0s to 24h0m0s") {
			t.Errorf("bad file: stderr %q", r.stderr)
		}
	}
}

// layover sim fleet on agentday's agent jobs: the text names them, and
// --json gives their figures; none loses jobs, the defaults lose none and
// resume sessions that met the limit (at most one a limit hit: a session
// the run ended before it continued is not resumed).
func TestSimFleetAgents(t *testing.T) {
	t.Parallel()
	b := setup(t, fake.GitHubConfig{})
	file, err := filepath.Abs("../../examples/sim/agentday.yaml")
	if err != nil {
		t.Fatal(err)
	}
	r := b.layover("sim", "fleet", file, "--duration", "10h")
	if r.code != 0 || !strings.Contains(r.stdout, "  agent jobs: ") || !strings.Contains(r.stdout, "  agent sessions resumed: ") {
		t.Fatalf("exit %d: %s%s", r.code, r.stdout, r.stderr)
	}
	j := b.layover("sim", "fleet", "--json", "--duration", "10h", file)
	var rep struct {
		AgentJobs  int `json:"agent_jobs"`
		Strategies []struct {
			Lost    int `json:"agent_jobs_lost"`
			Resumed int `json:"agent_sessions_resumed"`
			Hits    int `json:"agent_limit_hits"`
			Done    int `json:"agent_jobs_done"`
			Under   int `json:"agent_jobs_unfinished"`
		} `json:"strategies"`
	}
	if err := json.Unmarshal([]byte(j.stdout), &rep); err != nil || j.code != 0 {
		t.Fatalf("--json: exit %d, %v: %s", j.code, err, j.stdout)
	}
	if s := rep.Strategies; rep.AgentJobs != 60 || len(s) != 3 || s[0].Lost == 0 || s[1].Lost != 0 || s[1].Resumed == 0 || s[1].Resumed > s[1].Hits ||
		s[1].Done+s[1].Under != s[0].Done+s[0].Lost+s[0].Under {
		t.Errorf("--json: %+v", rep)
	}
}
