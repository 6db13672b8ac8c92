package cli_test

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/layoverhq/layover/internal/fake"
)

// fallbackFile is one agent task with two candidates in order.
const fallbackFile = `name: fallback
tasks:
  review:
    agent: [claude, codex]
    prompt: fix the flaky test
`

// Under serve, a durable agent task whose first candidate hits its limit
// switches to the next one, which gets the brief. With the next one
// limited too, the task pauses on the earliest reset (the first
// candidate's, though the second's job is the one deferred); when that
// reset passes, serve switches back to the first candidate, again with
// the brief, and the run completes.
func TestFlowSubmitSwitchesCandidatesAndPausesOnTheEarliestReset(t *testing.T) {
	t.Parallel()
	onEachStore(t, fake.GitHubConfig{}, func(t *testing.T, b *bundle) {
		b.agentBin()
		early, late := nextSecond(5*time.Second), nextSecond(time.Hour)
		script := filepath.Join(b.dir, "agent-script")
		writeTestFile(t, script, fmt.Sprintf("limit %d\nlimit %d\nok\n", early.Unix(), late.Unix()))
		b.env["FAKE_AGENT_SCRIPT"], b.env["FAKE_AGENT_LOG"] = script, filepath.Join(b.dir, "agent.log")
		writeTestFile(t, filepath.Join(b.dir, "fallback.yaml"), fallbackFile)
		if r := b.layover("flow", "submit", "fallback.yaml", "--run-id", "fb-1"); r.code != 0 {
			t.Fatalf("flow submit: exit %d\n%s", r.code, r.stderr)
		}
		serve := b.start("serve", "--lease", "3s", "--heartbeat", "500ms", "--reset-margin", "0s", "--jitter", "0s")
		serve.waitLine(t, "run=fb-1 status=paused")
		s := b.flowStatus("fb-1")
		rv := s.Tasks[0]
		if rv.State != "paused" || rv.Candidate == nil || *rv.Candidate != "codex" || rv.Quota == nil || rv.Quota.ResetAt == nil {
			t.Fatalf("review while every candidate is limited: %+v", rv)
		}
		if got, want := *rv.Quota.ResetAt, early.UTC().Format(time.RFC3339); got != want || rv.Quota.Provider != "claude-code" {
			t.Errorf("the pause's quota %s reset %s, want claude-code's at %s (the earliest)", rv.Quota.Provider, got, want)
		}
		serve.waitLine(t, "run=fb-1 status=complete")
		s = b.flowStatus("fb-1")
		if rv = s.Tasks[0]; rv.State != "complete" || rv.Candidate == nil || *rv.Candidate != "claude" || rv.Starts != 3 {
			t.Fatalf("review after the earliest reset: %+v", rv)
		}
		brief := func(agent string) string { return strings.Join(agentBriefs[agent][1:], " ") }
		calls := b.agentCalls()
		want := []string{"claude", "codex", "claude"}
		if len(calls) != len(want) {
			t.Fatalf("agent calls %q, want the brief to claude, codex, then claude again", calls)
		}
		for i, a := range want {
			if !strings.Contains(strings.ReplaceAll(calls[i], `"`, ""), brief(a)) {
				t.Errorf("call %d %q: want %s's brief (%s)", i+1, calls[i], a, brief(a))
			}
		}
	})
}
