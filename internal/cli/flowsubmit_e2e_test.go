package cli_test

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/layoverhq/layover/internal/fake"
)

// flow submit hands the run to serve: the agent task pauses on the fake's
// limit while the independent task completes; after the reset serve
// resumes the agent's job and runs the dependent, and no task runs twice.
func TestFlowSubmitServeResumesAfterReset(t *testing.T) {
	t.Parallel()
	onEachStore(t, fake.GitHubConfig{}, func(t *testing.T, b *bundle) {
		b.agentBin()
		reset := nextSecond(4 * time.Second)
		script := filepath.Join(b.dir, "agent-script")
		writeTestFile(t, script, fmt.Sprintf("limit %d\nok\n", reset.Unix()))
		b.env["FAKE_AGENT_SCRIPT"], b.env["FAKE_AGENT_SESSION"] = script, "5f0c8a52-durable"
		b.env["FAKE_AGENT_LOG"] = filepath.Join(b.dir, "agent.log")
		writeTestFile(t, filepath.Join(b.dir, "pair.yaml"), pairFile)

		r := b.layover("flow", "submit", "pair.yaml", "--run-id", "pair-1")
		if r.code != 0 || strings.TrimSpace(r.stdout) != "pair-1" {
			t.Fatalf("flow submit: exit %d stdout %q\n%s", r.code, r.stdout, r.stderr)
		}
		if r := b.layover("flow", "run", "pair.yaml", "--run-id", "pair-1"); r.code == 0 {
			t.Fatalf("flow run of a submitted run: exit 0, want a refusal\n%s", r.stderr)
		}
		serve := b.start("serve", "--lease", "3s", "--heartbeat", "500ms", "--reset-margin", "0s", "--jitter", "0s")
		serve.waitLine(t, "run=pair-1 status=paused")
		s := b.flowStatus("pair-1")
		if s.states() != "review=paused docs=complete publish=pending" {
			t.Fatalf("after the pause: run %s, tasks %s", s.Run.Status, s.states())
		}
		if q := s.Tasks[0].Quota; q == nil || q.ResetAt == nil {
			t.Errorf("review's quota record %+v, want its reset", q)
		}
		serve.waitLine(t, "run=pair-1 status=complete")
		s = b.flowStatus("pair-1")
		if s.states() != "review=complete docs=complete publish=complete" {
			t.Fatalf("after the reset: run %s, tasks %s", s.Run.Status, s.states())
		}
		if calls := b.agentCalls(); len(calls) != 2 {
			t.Errorf("agent calls %q: want the brief, then the resume", calls)
		}
		if b.lines("docs.out") != 1 || b.lines("publish.out") != 1 {
			t.Errorf("docs ran %d times, publish %d; want once each", b.lines("docs.out"), b.lines("publish.out"))
		}
	})
}

// crashFile's first task takes a while and says when it started; each
// task's check makes a re-run after a crash see work already done (a
// process killed with its host is run again: docs/workflows.md).
const crashFile = `name: crash
tasks:
  slow:
    run: echo slow-started && sleep 1 && echo slow >> slow.out && touch slow.done
    check: test -f slow.done
  quick: {run: echo quick >> quick.out, check: test -s quick.out}
  last:
    needs: [slow, quick]
    run: echo last >> last.out
    check: test -s last.out
`

// A serve killed mid-run loses nothing: another serve takes the run over
// and every task ends complete exactly once.
func TestFlowSubmitSurvivesServeCrash(t *testing.T) {
	t.Parallel()
	onEachStore(t, fake.GitHubConfig{}, func(t *testing.T, b *bundle) {
		writeTestFile(t, filepath.Join(b.dir, "crash.yaml"), crashFile)
		if r := b.layover("flow", "submit", "crash.yaml", "--run-id", "crash-1"); r.code != 0 {
			t.Fatalf("flow submit: exit %d\n%s", r.code, r.stderr)
		}
		first := b.start("serve", "--lease", "3s", "--heartbeat", "500ms")
		first.waitLine(t, "slow-started")
		if err := first.cmd.Process.Kill(); err != nil {
			t.Fatal(err)
		}
		first.wait(t)
		second := b.start("serve", "--lease", "3s", "--heartbeat", "500ms")
		second.waitLine(t, "run=crash-1 status=complete")
		s := b.flowStatus("crash-1")
		if s.Run.Status != "complete" || s.states() != "slow=complete quick=complete last=complete" {
			t.Fatalf("after the crash: run %s, tasks %s", s.Run.Status, s.states())
		}
		for _, f := range []string{"slow.out", "quick.out", "last.out"} {
			if n := b.lines(f); n != 1 {
				t.Errorf("%s has %d lines, want 1: the task completed once", f, n)
			}
		}
	})
}

// flow cancel of a submitted run cancels its jobs too: the running task's
// job ends cancelled, and the dependent's job is never submitted.
func TestFlowCancelDurableRunCancelsJobs(t *testing.T) {
	t.Parallel()
	onEachStore(t, fake.GitHubConfig{}, func(t *testing.T, b *bundle) {
		writeTestFile(t, filepath.Join(b.dir, "long.yaml"),
			"name: long\ntasks:\n  wait: {run: echo wait-started && sleep 30}\n  after: {needs: [wait], run: echo after >> after.out}\n")
		if r := b.layover("flow", "submit", "long.yaml", "--run-id", "long-1"); r.code != 0 {
			t.Fatalf("flow submit: exit %d\n%s", r.code, r.stderr)
		}
		serve := b.start("serve", "--lease", "3s", "--heartbeat", "500ms")
		serve.waitLine(t, "wait-started")
		if r := b.layover("flow", "cancel", "long-1"); r.code != 0 {
			t.Fatalf("flow cancel: exit %d\n%s", r.code, r.stderr)
		}
		var shown struct {
			State string `json:"state"`
		}
		if err := json.Unmarshal([]byte(b.layover("show", "long-1.wait", "--json").stdout), &shown); err != nil {
			t.Fatal(err)
		}
		if shown.State != "cancelled" {
			t.Errorf("the running task's job is %q, want cancelled", shown.State)
		}
		if s := b.flowStatus("long-1"); s.Run.Status != "cancelled" || s.states() != "wait=cancelled after=cancelled" {
			t.Errorf("after flow cancel: run %s, tasks %s", s.Run.Status, s.states())
		}
		if r := b.layover("show", "long-1.after"); r.code == 0 {
			t.Errorf("the dependent's job exists:\n%s", r.stdout)
		}
	})
}

// flow submit of a bad file is exit 2 with its line and field, as flow
// run's, and stores nothing.
func TestFlowSubmitBadFile(t *testing.T) {
	t.Parallel()
	onEachStore(t, fake.GitHubConfig{}, func(t *testing.T, b *bundle) {
		writeTestFile(t, filepath.Join(b.dir, "bad.yaml"), "name: w\ntasks:\n  a: {run: \"true\", needs: [b]}\n")
		r := b.layover("flow", "submit", "bad.yaml", "--run-id", "bad-1")
		if r.code != 2 || !strings.Contains(r.stderr, `bad.yaml:3: tasks.a.needs: no task "b"`) {
			t.Fatalf("flow submit of a bad file: exit %d %q", r.code, r.stderr)
		}
		if r := b.layover("flow", "status", "bad-1"); r.code == 0 {
			t.Errorf("a run was stored:\n%s", r.stdout)
		}
	})
}
