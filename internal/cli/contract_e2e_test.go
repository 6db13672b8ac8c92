package cli_test

import (
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/layoverhq/layover/internal/fake"
	"github.com/layoverhq/layover/job"
)

// keysOf is the sorted keys of one JSON object.
func keysOf(t *testing.T, raw json.RawMessage) []string {
	t.Helper()
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatalf("not a JSON object: %v\n%s", err, raw)
	}
	return slices.Sorted(maps.Keys(m))
}

// The fields of docs/design.md's show contract.
var (
	jobKeys  = []string{"checkpoint", "id", "name", "ownership", "session_id", "spec", "stage", "state"}
	showKeys = []string{"attempts", "checkpoint", "checks", "cleanup", "id", "name", "ownership", "receipt_owners", "receipts",
		"session_id", "spec", "stage", "state", "transitions"}
	specKeys = []string{"agent", "argv", "check_cmd", "cleanup_cmd", "deadline", "env_names", "fresh_approval_required",
		"max_attempts", "plan_cmd", "priority", "progress_timeout", "provider", "quota", "resume_cmd", "verify_cmd"}
)

// Issue 8 finding 8: show --json has every field of the contract, with
// its history arrays (attempts, receipts, transitions, and since issue 10
// checks and receipt_owners) even when empty; jobs --json lists the same
// objects without the history.
func TestShowAndJobsJSONContract(t *testing.T) {
	t.Parallel()
	b := setup(t, fake.GitHubConfig{})
	if r := b.layover("submit", "--id", "c1", "--", "true"); r.code != 0 {
		t.Fatalf("submit: exit %d %s", r.code, r.stderr)
	}
	r := b.layover("show", "c1", "--json")
	if r.code != 0 {
		t.Fatalf("show: exit %d %s", r.code, r.stderr)
	}
	if got := keysOf(t, json.RawMessage(r.stdout)); !slices.Equal(got, showKeys) {
		t.Errorf("show --json keys %v, want %v", got, showKeys)
	}
	var shown map[string]json.RawMessage
	if err := json.Unmarshal([]byte(r.stdout), &shown); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"attempts", "receipts", "checks", "receipt_owners"} {
		if s := string(shown[k]); s != "[]" {
			t.Errorf("show --json %s = %s, want [] for a job that never ran nor deferred", k, s)
		}
	}
	if s := string(shown["transitions"]); !strings.HasPrefix(s, "[") || !strings.Contains(s, `"to": "ready"`) {
		t.Errorf("show --json transitions = %s, want the submission", s)
	}
	// Unknowns are null: the submission comes from no state.
	var transitions []map[string]any
	if err := json.Unmarshal(shown["transitions"], &transitions); err != nil || len(transitions) == 0 {
		t.Fatalf("transitions: %v %s", err, shown["transitions"])
	}
	if from, ok := transitions[0]["from"]; !ok || from != nil {
		t.Errorf("the submission's from = %#v, want null", from)
	}
	if got := keysOf(t, shown["spec"]); !slices.Equal(got, specKeys) {
		t.Errorf("show --json spec keys %v, want %v", got, specKeys)
	}
	// A job without a cleanup command has none; one with it, armed.
	if s := string(shown["cleanup"]); s != "null" {
		t.Errorf("show --json cleanup = %s, want null for a job without a cleanup command", s)
	}
	if r := b.layover("show", "c1"); r.code != 0 || strings.Contains(r.stdout, "cleanup:") {
		t.Errorf("show of a job without a cleanup command: exit %d\n%s", r.code, r.stdout)
	}
	if r := b.layover("submit", "--id", "c2", "--cleanup-cmd", "gh issue edit 7 --remove-assignee @me", "--", "true"); r.code != 0 {
		t.Fatalf("submit --cleanup-cmd: exit %d %s", r.code, r.stderr)
	}
	var armed struct {
		Cleanup *string `json:"cleanup"`
	}
	if r := b.layover("show", "c2", "--json"); json.Unmarshal([]byte(r.stdout), &armed) != nil || armed.Cleanup == nil ||
		*armed.Cleanup != job.CleanupArmed {
		t.Errorf("show --json of a job with a cleanup command: %s; want \"cleanup\": \"armed\"", r.stdout)
	}
	if r := b.layover("show", "c2"); !strings.Contains(r.stdout, "  cleanup:   armed\n") {
		t.Errorf("show of a job with a cleanup command lacks its cleanup:\n%s", r.stdout)
	}

	r = b.layover("jobs", "--json")
	var jobs []json.RawMessage
	if err := json.Unmarshal([]byte(r.stdout), &jobs); err != nil || len(jobs) != 2 {
		t.Fatalf("jobs --json: %v\n%s", err, r.stdout)
	}
	if got := keysOf(t, jobs[0]); !slices.Equal(got, jobKeys) {
		t.Errorf("jobs --json keys %v, want %v", got, jobKeys)
	}
	var listed map[string]json.RawMessage
	if err := json.Unmarshal(jobs[0], &listed); err != nil {
		t.Fatal(err)
	}
	if got := keysOf(t, listed["spec"]); !slices.Equal(got, specKeys) {
		t.Errorf("jobs --json spec keys %v, want %v", got, specKeys)
	}
}

// Issue 8 finding 8: the default store follows the XDG Base Directory
// specification: a relative XDG_STATE_HOME is ignored (the store goes to
// ~/.local/state), and a relative HOME, which would make the store follow
// the working directory, is a usage error naming it.
func TestDefaultStorePath(t *testing.T) {
	t.Parallel()
	b := setup(t, fake.GitHubConfig{})
	delete(b.env, "LAYOVER_STORE")
	b.env["XDG_STATE_HOME"] = "rel/state"
	// A command that writes the store: a reading one creates none.
	if r := b.layover("run", "--", "true"); r.code != 0 {
		t.Fatalf("run: exit %d %s", r.code, r.stderr)
	}
	if _, err := os.Stat(filepath.Join(b.dir, ".local", "state", "layover", "layover.db")); err != nil {
		t.Errorf("the store is not under $HOME/.local/state: %v", err)
	}
	if _, err := os.Stat(filepath.Join(b.dir, "rel")); err == nil {
		t.Errorf("a relative XDG_STATE_HOME was used (%s/rel exists)", b.dir)
	}

	b.env["HOME"] = "home"
	r := b.layover("status")
	if r.code != 2 || !strings.Contains(r.stderr, `HOME ("home") is not an absolute path`) {
		t.Errorf("relative HOME: exit %d %q; want 2 naming HOME", r.code, r.stderr)
	}
	if _, err := os.Stat(filepath.Join(b.dir, "home")); err == nil {
		t.Errorf("a store was made under the working directory")
	}
}
