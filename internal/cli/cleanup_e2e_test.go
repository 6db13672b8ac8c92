package cli_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/layoverhq/layover/internal/fake"
)

// A job submitted with --cleanup-cmd and cancelled while it waits for a
// quota runs its cleanup under serve: the cleanup, under the job's key,
// waits for the reset rather than spend a call, then runs once and is done.
func TestServeCleanupWaitsForTheResetThenRuns(t *testing.T) {
	onEachStore(t, fake.GitHubConfig{}, func(t *testing.T, b *bundle) {
		reset := nextSecond(3 * time.Second)
		b.gh.SetQuota(testToken, "core", 0, reset)
		serve := b.start("serve", "--lease", "3s", "--heartbeat", "500ms", "--reset-margin", "0s", "--jitter", "0s")
		serve.waitLine(t, "layover serve started")
		if r := b.layover("submit", "--id", "j", "--quota", "github", "--cleanup-cmd", "gh api /repos/octo/demo/issues",
			"--", "gh", "api", "/repos/octo/demo"); r.code != 0 {
			t.Fatalf("submit: %s", r.stderr)
		}
		b.awaitJob("j", "deferred")
		if r := b.layover("cancel", "j"); r.code != 0 {
			t.Fatalf("cancel: exit %d %s", r.code, r.stderr)
		}
		deadline := time.Now().Add(60 * time.Second)
		var cleanup *string
		for {
			var shown struct {
				Cleanup *string `json:"cleanup"`
			}
			if err := json.Unmarshal([]byte(b.layover("show", "j", "--json").stdout), &shown); err != nil {
				t.Fatal(err)
			}
			if cleanup = shown.Cleanup; cleanup != nil && (*cleanup == "done" || strings.HasPrefix(*cleanup, "failed")) {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("cleanup %v, never done", cleanup)
			}
			time.Sleep(50 * time.Millisecond)
		}
		if *cleanup != "done" {
			t.Fatalf("cleanup %q, want done", *cleanup)
		}
		if time.Now().Before(reset) {
			t.Errorf("the cleanup was done before the reset at %s", reset.Format(time.TimeOnly))
		}
		if n := b.gh.Calls("/repos/octo/demo/issues"); n != 1 {
			t.Errorf("the cleanup called GitHub %d times; want once, after the reset", n)
		}
		if j := b.show("j"); j.State != "cancelled" {
			t.Errorf("state %s, want cancelled", j.State)
		}
		if r := b.layover("show", "j"); !strings.Contains(r.stdout, "  cleanup:   done\n") {
			t.Errorf("show lacks the cleanup:\n%s", r.stdout)
		}
	})
}
