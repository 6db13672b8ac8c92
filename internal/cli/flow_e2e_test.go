package cli_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/layoverhq/layover/internal/fake"
)

// flowStatus is what these tests read of flow status RUN --json.
type flowStatus struct {
	Run struct {
		ID     string         `json:"id"`
		Status string         `json:"status"`
		Tasks  map[string]int `json:"tasks"`
	} `json:"run"`
	Tasks []struct {
		Name      string  `json:"name"`
		State     string  `json:"state"`
		Attempts  int     `json:"attempts"`
		Starts    int     `json:"starts"`
		Candidate *string `json:"candidate"`
		SessionID *string `json:"session_id"`
		Quota     *struct {
			Provider string  `json:"provider"`
			ResetAt  *string `json:"reset_at"`
		} `json:"quota"`
	} `json:"tasks"`
}

func (b *bundle) flowStatus(run string) flowStatus {
	b.t.Helper()
	r := b.layover("flow", "status", run, "--json")
	if r.code != 0 {
		b.t.Fatalf("flow status %s: exit %d %s", run, r.code, r.stderr)
	}
	var s flowStatus
	if err := json.Unmarshal([]byte(r.stdout), &s); err != nil {
		b.t.Fatalf("flow status --json: %v\n%s", err, r.stdout)
	}
	return s
}

// states is "name=state …" of a run's tasks, in order.
func (s flowStatus) states() string {
	var parts []string
	for _, t := range s.Tasks {
		parts = append(parts, t.Name+"="+t.State)
	}
	return strings.Join(parts, " ")
}

// agentCalls are the fake agent's invocations, one a line.
func (b *bundle) agentCalls() []string {
	data, err := os.ReadFile(b.env["FAKE_AGENT_LOG"])
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		b.t.Fatal(err)
	}
	return strings.Split(strings.TrimSpace(string(data)), "\n")
}

// lines counts the lines of a file a task appends to: how often it ran.
func (b *bundle) lines(name string) int {
	data, err := os.ReadFile(filepath.Join(b.dir, name))
	if os.IsNotExist(err) {
		return 0
	}
	if err != nil {
		b.t.Fatal(err)
	}
	return strings.Count(string(data), "\n")
}

// pairFile is two independent tasks, an agent's and a command's, and a
// third that needs both.
const pairFile = `name: pair
tasks:
  review:
    agent: claude
    prompt: fix the flaky test
  docs: {run: echo docs >> docs.out}
  publish:
    needs: [review, docs]
    run: echo published >> publish.out
`

// The agent task's limit pauses it (exit 6, the reset on stderr) while the
// independent task completes and the dependent waits; the same run id run
// again before the reset calls nobody; after it, the run continues the
// agent's session (not the brief again), runs the dependent, and never
// runs the completed task twice.
func TestFlowRunPausesOnQuotaAndResumes(t *testing.T) {
	t.Parallel()
	onEachStore(t, fake.GitHubConfig{}, func(t *testing.T, b *bundle) {
		b.agentBin()
		reset := nextSecond(4 * time.Second)
		script := filepath.Join(b.dir, "agent-script")
		writeTestFile(t, script, fmt.Sprintf("limit %d\nok\n", reset.Unix()))
		session := "5f0c8a52-flow"
		b.env["FAKE_AGENT_SCRIPT"], b.env["FAKE_AGENT_SESSION"] = script, session
		b.env["FAKE_AGENT_LOG"] = filepath.Join(b.dir, "agent.log")
		writeTestFile(t, filepath.Join(b.dir, "pair.yaml"), pairFile)
		run := func() result {
			return b.layover("flow", "run", "pair.yaml", "--run-id", "pair-1", "--reset-margin", "0s", "--jitter", "0s")
		}

		r := run()
		if r.code != 6 {
			t.Fatalf("flow run: exit %d, want 6 (paused)\n%s%s", r.code, r.stdout, r.stderr)
		}
		want := "layover: paused until " + reset.UTC().Format(time.RFC3339) + ": review (claude-code"
		if !strings.Contains(r.stderr, want) {
			t.Fatalf("stderr lacks %q:\n%s", want, r.stderr)
		}
		if !strings.Contains(r.stderr, "layover: docs complete") || !strings.Contains(r.stderr, "layover: review paused") {
			t.Errorf("stderr lacks the progress of docs and review:\n%s", r.stderr)
		}
		s := b.flowStatus("pair-1")
		if s.Run.Status != "paused" || s.states() != "review=paused docs=complete publish=pending" {
			t.Fatalf("after the pause: run %s, tasks %s", s.Run.Status, s.states())
		}
		review := s.Tasks[0]
		if review.Quota == nil || review.Quota.Provider != "claude-code" || review.Quota.ResetAt == nil ||
			*review.Quota.ResetAt != reset.UTC().Format(time.RFC3339) {
			t.Errorf("review's quota record %+v, want claude-code until %s", review.Quota, reset.UTC().Format(time.RFC3339))
		}
		if review.Attempts != 0 || review.Candidate == nil || *review.Candidate != "claude" {
			t.Errorf("review: attempts %d candidate %v; a quota pause counts no attempt", review.Attempts, review.Candidate)
		}

		// Before the reset: still paused, and the agent is not called.
		if r := run(); r.code != 6 || len(b.agentCalls()) != 1 {
			t.Fatalf("flow run before the reset: exit %d, agent calls %d; want 6 and the one call\n%s", r.code, len(b.agentCalls()), r.stderr)
		}

		// The reset is a real time the binary reads its clock against.
		time.Sleep(time.Until(reset))
		r = run()
		if r.code != 0 {
			t.Fatalf("flow run after the reset: exit %d\n%s%s", r.code, r.stdout, r.stderr)
		}
		calls := b.agentCalls()
		if len(calls) != 2 || !strings.Contains(calls[1], session) || !strings.Contains(calls[1], "Continue the interrupted task") ||
			strings.Contains(calls[1], "fix the flaky test") {
			t.Fatalf("agent calls %q: want the brief, then the session %s continued", calls, session)
		}
		s = b.flowStatus("pair-1")
		if s.Run.Status != "complete" || s.states() != "review=complete docs=complete publish=complete" {
			t.Fatalf("after the resume: run %s, tasks %s", s.Run.Status, s.states())
		}
		if b.lines("docs.out") != 1 || b.lines("publish.out") != 1 {
			t.Errorf("docs ran %d times, publish %d; want once each", b.lines("docs.out"), b.lines("publish.out"))
		}
		if r := b.layover("flow", "status"); r.code != 0 || !strings.Contains(r.stdout, "pair-1") || !strings.Contains(r.stdout, "3 complete") {
			t.Errorf("flow status: exit %d\n%s", r.code, r.stdout)
		}
	})
}

// A bad file is exit 2 with its line and field, and nothing is stored:
// flow status lists only the run that came before.
func TestFlowRunBadFiles(t *testing.T) {
	t.Parallel()
	onEachStore(t, fake.GitHubConfig{}, func(t *testing.T, b *bundle) {
		writeTestFile(t, filepath.Join(b.dir, "good.yaml"), "name: good\ntasks:\n  a: {run: \"true\"}\n")
		if r := b.layover("flow", "run", "good.yaml", "--run-id", "good-1"); r.code != 0 {
			t.Fatalf("a good file: exit %d %s", r.code, r.stderr)
		}
		for _, tc := range []struct{ name, file, want string }{
			{"unknown key", "name: w\ntasks:\n  a: {run: \"true\"}\n  b:\n    run: \"true\"\n    need: [a]\n",
				`:6: tasks.b: unknown key "need"`},
			{"cycle", "name: w\ntasks:\n  a: {run: \"true\", needs: [c]}\n  b: {run: \"true\", needs: [a]}\n  c: {run: \"true\", needs: [b]}\n",
				":3: tasks.a.needs: a cycle of needs: a -> c -> b -> a"},
			{"missing need", "name: w\ntasks:\n  fetch: {run: \"true\"}\n  review:\n    needs: [fecth]\n    run: \"true\"\n",
				`:5: tasks.review.needs: no task "fecth"`},
			{"unknown agent", "name: w\ntasks:\n  review:\n    agent: [claude, chatgpt]\n    prompt: hi\n",
				`:4: tasks.review.agent: unknown agent "chatgpt"`},
			{"bad duration", "name: w\non_quota: {action: pause, max_wait: 6 hours}\ntasks:\n  a: {run: \"true\"}\n",
				`:2: on_quota.max_wait: "6 hours" is not a duration`},
		} {
			file := strings.ReplaceAll(tc.name, " ", "-") + ".yaml"
			writeTestFile(t, filepath.Join(b.dir, file), tc.file)
			r := b.layover("flow", "run", file, "--run-id", "bad-1")
			if r.code != 2 || !strings.Contains(r.stderr, "layover: "+file+tc.want) || strings.Count(r.stderr, "\n") != 1 {
				t.Errorf("%s: exit %d, stderr %q; want 2 and one line with %q", tc.name, r.code, r.stderr, file+tc.want)
			}
		}
		r := b.layover("flow", "status", "--json")
		var out struct {
			Runs []struct{ ID string } `json:"runs"`
		}
		if err := json.Unmarshal([]byte(r.stdout), &out); err != nil || len(out.Runs) != 1 || out.Runs[0].ID != "good-1" {
			t.Fatalf("flow status --json after bad files: %v %s; want only good-1", err, r.stdout)
		}
		if r := b.layover("flow", "status", "bad-1"); r.code != 1 {
			t.Fatalf("flow status bad-1: exit %d, want 1 (no such run)", r.code)
		}
	})
}

// flow cancel marks the run and its unfinished tasks cancelled, keeps the
// completed ones, and refuses an unknown run or a second cancel (exit 1);
// the cancelled run id does not run again.
func TestFlowCancel(t *testing.T) {
	t.Parallel()
	onEachStore(t, fake.GitHubConfig{}, func(t *testing.T, b *bundle) {
		b.agentBin()
		script := filepath.Join(b.dir, "agent-script")
		writeTestFile(t, script, fmt.Sprintf("limit %d\n", time.Now().Add(time.Hour).Unix()))
		b.env["FAKE_AGENT_SCRIPT"], b.env["FAKE_AGENT_LOG"] = script, filepath.Join(b.dir, "agent.log")
		writeTestFile(t, filepath.Join(b.dir, "pair.yaml"), pairFile)
		if r := b.layover("flow", "run", "pair.yaml", "--run-id", "c1"); r.code != 6 {
			t.Fatalf("flow run: exit %d, want 6\n%s", r.code, r.stderr)
		}
		if r := b.layover("flow", "cancel", "c1"); r.code != 0 || !strings.Contains(r.stdout, "c1: cancelled (2 unfinished tasks cancelled)") {
			t.Fatalf("flow cancel: exit %d %s%s", r.code, r.stdout, r.stderr)
		}
		s := b.flowStatus("c1")
		if s.Run.Status != "cancelled" || s.states() != "review=cancelled docs=complete publish=cancelled" {
			t.Fatalf("after cancel: run %s, tasks %s", s.Run.Status, s.states())
		}
		if r := b.layover("flow", "cancel", "c1"); r.code != 1 {
			t.Errorf("a second cancel: exit %d, want 1", r.code)
		}
		if r := b.layover("flow", "cancel", "no-such-run"); r.code != 1 || !strings.Contains(r.stderr, `no run "no-such-run"`) {
			t.Errorf("cancel of an unknown run: exit %d %s", r.code, r.stderr)
		}
		if r := b.layover("flow", "run", "pair.yaml", "--run-id", "c1"); r.code != 1 || len(b.agentCalls()) != 1 {
			t.Errorf("flow run of a cancelled run: exit %d, agent calls %d; want 1 and no call", r.code, len(b.agentCalls()))
		}
	})
}

// A task that fails is exit 1, naming it with its reason after the run
// (as its progress line did), and its dependent is skipped;
// the same run id with a changed file is refused (exit 1), and so is a run
// id that is not one.
func TestFlowRunFails(t *testing.T) {
	t.Parallel()
	onEachStore(t, fake.GitHubConfig{}, func(t *testing.T, b *bundle) {
		writeTestFile(t, filepath.Join(b.dir, "f.yaml"), "name: f\nattempts: 1\ntasks:\n  build: {run: exit 3}\n  ship: {needs: [build], run: echo shipped >> ship.out}\n")
		r := b.layover("flow", "run", "f.yaml", "--run-id", "f-1")
		if r.code != 1 || strings.Count(r.stderr, "layover: build failed: exit 3") != 2 || !strings.Contains(r.stdout, "f-1: failed (1 failed, 1 skipped)") {
			t.Fatalf("flow run: exit %d\n%s%s", r.code, r.stdout, r.stderr)
		}
		if b.lines("ship.out") != 0 {
			t.Errorf("ship ran after build failed")
		}
		writeTestFile(t, filepath.Join(b.dir, "f.yaml"), "name: f\nattempts: 1\ntasks:\n  build: {run: \"true\"}\n")
		if r := b.layover("flow", "run", "f.yaml", "--run-id", "f-1"); r.code != 1 || !strings.Contains(r.stderr, "another definition") {
			t.Errorf("a changed file under the same run id: exit %d %s", r.code, r.stderr)
		}
		if r := b.layover("flow", "run", "f.yaml", "--run-id", "no/slash"); r.code != 2 || !strings.Contains(r.stderr, "run id") {
			t.Errorf("a bad run id: exit %d %s", r.code, r.stderr)
		}
	})
}

// SIGINT ends flow run with exit 130 and stops the task it was running;
// the run keeps what completed, and the interrupted task runs again when
// the run id is run again.
func TestFlowRunInterrupted(t *testing.T) {
	t.Parallel()
	b := setup(t, fake.GitHubConfig{})
	// slow waits until the file go exists, which the test makes after the
	// interrupt.
	writeTestFile(t, filepath.Join(b.dir, "slow.yaml"), `name: slow
tasks:
  quick: {run: echo quick >> quick.out}
  slow:
    needs: [quick]
    run: if [ -e go ]; then echo slow >> slow.out; else sleep 60; fi
`)
	p := b.start("flow", "run", "slow.yaml", "--run-id", "s1")
	p.waitLine(t, "layover: slow running")
	if err := p.cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	if code := p.wait(t); code != 130 {
		t.Fatalf("flow run after SIGINT: exit %d, want 130\n%s", code, p.stderr())
	}
	if s := b.flowStatus("s1"); s.Run.Status == "complete" || s.Tasks[0].State != "complete" || s.Tasks[1].State == "complete" {
		t.Fatalf("after SIGINT: run %s, tasks %s", s.Run.Status, s.states())
	}
	writeTestFile(t, filepath.Join(b.dir, "go"), "")
	if r := b.layover("flow", "run", "slow.yaml", "--run-id", "s1"); r.code != 0 {
		t.Fatalf("flow run again: exit %d\n%s", r.code, r.stderr)
	}
	if b.lines("quick.out") != 1 || b.lines("slow.out") != 1 {
		t.Errorf("quick ran %d times, slow %d to completion; want once each", b.lines("quick.out"), b.lines("slow.out"))
	}
}

// With two tasks paused, stderr names both, the earliest reset first.
func TestFlowRunPausedEarliestFirst(t *testing.T) {
	t.Parallel()
	b := setup(t, fake.GitHubConfig{})
	b.agentBin()
	later, sooner := nextSecond(2*time.Hour), nextSecond(time.Hour)
	script := filepath.Join(b.dir, "agent-script")
	writeTestFile(t, script, fmt.Sprintf("limit %d\nlimit %d\n", later.Unix(), sooner.Unix()))
	b.env["FAKE_AGENT_SCRIPT"] = script
	writeTestFile(t, filepath.Join(b.dir, "two.yaml"),
		"name: two\ntasks:\n  a: {agent: claude, prompt: one}\n  b: {agent: claude, prompt: two}\n")
	before := time.Now().UTC().Format("20060102")
	r := b.layover("flow", "run", "two.yaml")
	after := time.Now().UTC().Format("20060102")
	if r.code != 6 {
		t.Fatalf("exit %d, want 6\n%s", r.code, r.stderr)
	}
	var paused []string
	for _, l := range strings.Split(r.stderr, "\n") {
		if strings.HasPrefix(l, "layover: paused until ") {
			paused = append(paused, l)
		}
	}
	if len(paused) != 2 || !strings.HasPrefix(paused[0], "layover: paused until "+sooner.UTC().Format(time.RFC3339)+": ") ||
		!strings.HasPrefix(paused[1], "layover: paused until "+later.UTC().Format(time.RFC3339)+": ") {
		t.Fatalf("paused lines %q: want the reset %s first, then %s", paused, sooner.UTC().Format(time.RFC3339), later.UTC().Format(time.RFC3339))
	}
	// The default run id is the file's name and the UTC date (either side
	// of a midnight the run may have crossed).
	if !strings.HasPrefix(r.stdout, "two-"+before+": paused") && !strings.HasPrefix(r.stdout, "two-"+after+": paused") {
		t.Errorf("stdout %q: want the default run id two-%s", r.stdout, after)
	}
}

// `layover checkpoint` inside a task of flow run records the task's
// checkpoint in the run's store, also when --store is a relative path and
// the task runs in the workflow file's directory; flow status shows it.
func TestFlowRunTaskCheckpoints(t *testing.T) {
	t.Parallel()
	b := setup(t, fake.GitHubConfig{})
	if err := os.Mkdir(filepath.Join(b.dir, "flows"), 0o700); err != nil {
		t.Fatal(err)
	}
	writeTestFile(t, filepath.Join(b.dir, "flows", "c.yaml"), "name: c\ntasks:\n"+
		"  build: {run: \"layover checkpoint --stage built --data '{\\\"n\\\":1}'\"}\n")
	if r := b.layover("flow", "run", "flows/c.yaml", "--run-id", "c-1", "--store", "rel.db"); r.code != 0 {
		t.Fatalf("flow run: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	r := b.layover("flow", "status", "c-1", "--store", "rel.db", "--json")
	var s struct {
		Tasks []struct {
			Checkpoint *struct {
				Stage string          `json:"stage"`
				Data  json.RawMessage `json:"data"`
			} `json:"checkpoint"`
		} `json:"tasks"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &s); err != nil || len(s.Tasks) != 1 {
		t.Fatalf("flow status --json: %v\n%s%s", err, r.stdout, r.stderr)
	}
	var data bytes.Buffer
	if cp := s.Tasks[0].Checkpoint; cp == nil || cp.Stage != "built" || json.Compact(&data, cp.Data) != nil ||
		data.String() != `{"n":1}` {
		t.Errorf("build's checkpoint %+v, want built {\"n\":1}\n%s", cp, r.stdout)
	}
}
