package cli_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/layoverhq/layover/internal/fake"
)

type shownJob struct {
	ID        string  `json:"id"`
	State     string  `json:"state"`
	Stage     string  `json:"stage"`
	Ownership *string `json:"ownership"`
	Spec      struct {
		Argv     []string `json:"argv"`
		EnvNames []string `json:"env_names"`
		Quota    []string `json:"quota"`
		Deadline string   `json:"deadline"`
	} `json:"spec"`
	Attempts []struct {
		AttemptID string `json:"attempt_id"`
		Fence     int64  `json:"fence"`
		Outcome   string `json:"outcome"`
		ExitCode  *int   `json:"exit_code"`
	} `json:"attempts"`
	Receipts    []json.RawMessage `json:"receipts"`
	Transitions []struct{ From, To, Reason string }
	Checkpoint  *struct{ Stage string } `json:"checkpoint"`
}

func (b *bundle) show(id string) shownJob {
	b.t.Helper()
	r := b.layover("show", id, "--json")
	if r.code != 0 {
		b.t.Fatalf("show %s: exit %d %s", id, r.code, r.stderr)
	}
	var j shownJob
	if err := json.Unmarshal([]byte(r.stdout), &j); err != nil {
		b.t.Fatalf("show --json: %v\n%s", err, r.stdout)
	}
	return j
}

// awaitJob polls show until the job reaches state (the serve process moves
// it), failing after a bound.
func (b *bundle) awaitJob(id, state string) shownJob {
	b.t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		j := b.show(id)
		if j.State == state {
			return j
		}
		if time.Now().After(deadline) {
			b.t.Fatalf("job %s is %s (%s), never %s", id, j.State, j.Stage, state)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func TestSubmitIsIdempotentByID(t *testing.T) {
	t.Parallel()
	b := setup(t, fake.GitHubConfig{})
	for i := 0; i < 2; i++ {
		r := b.layover("submit", "--id", "nightly-1", "--quota", "github", "--env", "DEPLOY_KEY", "--", "sh", "-c", "exit 0")
		if r.code != 0 || r.stdout != "nightly-1\n" {
			t.Fatalf("submit %d: exit %d stdout %q stderr %q", i, r.code, r.stdout, r.stderr)
		}
	}
	r := b.layover("submit", "--id", "nightly-1", "--", "sh", "-c", "exit 1")
	if r.code != 1 || !strings.Contains(r.stderr, "different spec") {
		t.Fatalf("a reused id with another spec: exit %d stderr %q", r.code, r.stderr)
	}
	j := b.show("nightly-1")
	if j.State != "ready" || j.Ownership != nil || j.Spec.EnvNames[0] != "DEPLOY_KEY" || j.Spec.Quota[0] != "github" || j.Spec.Deadline == "" {
		t.Fatalf("show: %+v", j)
	}
	if r := b.layover("jobs", "--state", "ready", "--json"); !strings.Contains(r.stdout, `"id": "nightly-1"`) {
		t.Fatalf("jobs --json: %s", r.stdout)
	}
}

func TestSubmitRefusesTokensAndBadInput(t *testing.T) {
	t.Parallel()
	b := setup(t, fake.GitHubConfig{})
	cases := map[string][]string{
		"token in argv":  {"submit", "--", "curl", "-H", "Authorization: Bearer ghp_abcdefghijklmnopqrstuvwxyz0123456789"},
		"bad env name":   {"submit", "--env", "1X", "--", "true"},
		"bad id":         {"submit", "--id", "../x", "--", "true"},
		"past deadline":  {"submit", "--deadline", "2001-01-01T00:00:00Z", "--", "true"},
		"no command":     {"submit", "--"},
		"zero attempts":  {"submit", "--max-attempts", "0", "--", "true"},
		"many attempts":  {"submit", "--max-attempts", "1000000", "--", "true"},
		"unknown state":  {"jobs", "--state", "sleeping"},
		"show no id":     {"show"},
		"bad defer":      {"run", "--defer-after", "soon", "--", "true"},
		"serve hb>lease": {"serve", "--lease", "1s", "--heartbeat", "2s"},
	}
	for name, args := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			if r := b.layover(args...); r.code != 2 {
				t.Fatalf("exit %d, want 2; stderr %q", r.code, r.stderr)
			}
		})
	}
	if r := b.layover("jobs", "--json"); !noJobs(r) {
		t.Fatalf("bad input stored something: %s", r.stdout)
	}
	// show last: a reading command finds no store until one that writes
	// has made it (exit 2, not the unknown job's 1).
	for _, cmd := range []string{"cancel", "approve", "unblock", "adopt", "show"} {
		if r := b.layover(cmd, "no-such-job"); r.code != 1 {
			t.Errorf("%s of an unknown job: exit %d, want 1", cmd, r.code)
		}
	}
}

func TestOperatorTransitions(t *testing.T) {
	t.Parallel()
	b := setup(t, fake.GitHubConfig{})
	b.layover("submit", "--id", "a", "--", "true")
	if r := b.layover("unblock", "a"); r.code != 1 {
		t.Fatalf("unblocking a ready job: exit %d, want a refused transition", r.code)
	}
	if r := b.layover("cancel", "a"); r.code != 0 || !strings.Contains(r.stdout, "a: cancelled") {
		t.Fatalf("cancel: %d %q %q", r.code, r.stdout, r.stderr)
	}
	if r := b.layover("cancel", "a"); r.code != 1 {
		t.Fatalf("cancelling twice: exit %d", r.code)
	}
	j := b.show("a")
	last := j.Transitions[len(j.Transitions)-1]
	if last.From != "ready" || last.To != "cancelled" {
		t.Fatalf("transitions %+v", j.Transitions)
	}
}

// The durable host end to end: run --submit defers with retained ownership
// while serve is live, serve wakes the job after the reset and completes it
// as a fresh run; a submitted job runs; SIGTERM stops serve with exit 0.
func TestServeResumesSubmittedDeferral(t *testing.T) {
	t.Parallel()
	b := setup(t, fake.GitHubConfig{})
	serve := b.start("serve", "--lease", "3s", "--heartbeat", "500ms", "--reset-margin", "0s", "--jitter", "0s")
	serve.waitLine(t, "layover serve started")

	marker := filepath.Join(b.dir, "ran")
	r := b.layover("submit", "--id", "plain", "--", "sh", "-c", "echo $LAYOVER_JOB_ID > "+marker)
	if r.code != 0 {
		t.Fatal(r.stderr)
	}
	b.awaitJob("plain", "complete")
	if data, _ := os.ReadFile(marker); string(data) != "plain\n" {
		t.Fatalf("the job did not run with LAYOVER_JOB_ID: %q", data)
	}

	b.gh.SetQuota(testToken, "core", 0, nextSecond(4*time.Second))
	r = b.layover(runArgs([]string{"--submit"}, "gh", "api", "/repos/octo/demo")...)
	if r.code != 6 || !strings.Contains(r.stderr, "retained by the live durable host") {
		t.Fatalf("run --submit: exit %d stderr:\n%s", r.code, r.stderr)
	}
	id := strings.Fields(r.stderr[strings.Index(r.stderr, "deferred as job ")+len("deferred as job "):])[0]
	j := b.show(id)
	if j.State != "deferred" || j.Ownership == nil || *j.Ownership != "retained" || len(j.Receipts) != 1 {
		t.Fatalf("deferred job: %+v", j)
	}
	j = b.awaitJob(id, "complete")
	if len(j.Attempts) != 1 || j.Attempts[0].Fence != 1 || *j.Attempts[0].ExitCode != 0 {
		t.Fatalf("attempts after the resume: %+v", j.Attempts)
	}
	if n := b.ghRuns(); n != 2 {
		t.Fatalf("gh ran %d times: the failure and one fresh run", n)
	}
	st := b.layover("status", "--json")
	if !strings.Contains(st.stdout, `"live": true`) || !strings.Contains(st.stdout, `"complete": 2`) {
		t.Fatalf("status: %s", st.stdout)
	}

	if err := serve.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if code := serve.wait(t); code != 0 {
		t.Fatalf("serve exit %d after SIGTERM", code)
	}
}

// Without a live host run --submit hands the job off; adopt needs a live
// host.
func TestSubmitWithoutHostIsHandoff(t *testing.T) {
	t.Parallel()
	b := setup(t, fake.GitHubConfig{})
	b.gh.SetQuota(testToken, "core", 0, nextSecond(time.Hour))
	r := b.layover(runArgs([]string{"--submit"}, "gh", "api", "/repos/octo/demo")...)
	if r.code != 6 || !strings.Contains(r.stderr, "handoff") {
		t.Fatalf("exit %d stderr %s", r.code, r.stderr)
	}
	id := strings.Fields(r.stderr[strings.Index(r.stderr, "deferred as job ")+len("deferred as job "):])[0]
	if r := b.layover("adopt", id); r.code != 1 || !strings.Contains(r.stderr, "no live durable host") {
		t.Fatalf("adopt without a host: exit %d %q", r.code, r.stderr)
	}
}

func TestCheckpointOutsideJobAndStaleFence(t *testing.T) {
	t.Parallel()
	b := setup(t, fake.GitHubConfig{})
	if r := b.layover("checkpoint", "--stage", "built"); r.code != 2 {
		t.Fatalf("outside a job: exit %d", r.code)
	}
	b.layover("submit", "--id", "c", "--", "true")
	b.env["LAYOVER_JOB_ID"], b.env["LAYOVER_FENCE"] = "c", "7"
	if r := b.layover("checkpoint", "--stage", "built"); r.code != 1 {
		t.Fatalf("stale fence: exit %d %q", r.code, r.stderr)
	}
}

// Issue 8 finding 6: flags go before or after the positional argument, and
// "--" ends the flags.
func TestFlagsAroundPositional(t *testing.T) {
	t.Parallel()
	b := setup(t, fake.GitHubConfig{})
	if r := b.layover("submit", "--id", "order", "--", "true"); r.code != 0 {
		t.Fatalf("submit: exit %d %s", r.code, r.stderr)
	}
	for _, args := range [][]string{
		{"show", "--store", b.store, "order", "--json"},
		{"show", "order", "--json", "--store", b.store},
		{"show", "--json", "order"},
		{"show", "--json", "--", "order"},
	} {
		r := b.layover(args...)
		var j shownJob
		if r.code != 0 || json.Unmarshal([]byte(r.stdout), &j) != nil || j.ID != "order" {
			t.Errorf("%q: exit %d, stdout %q, stderr %q", args, r.code, r.stdout, r.stderr)
		}
	}
	if r := b.layover("show", "order", "other"); r.code != 2 || !strings.Contains(r.stderr, `unexpected argument "other"`) {
		t.Errorf("two ids: exit %d, stderr %q", r.code, r.stderr)
	}
	if r := b.layover("show", "--", "--json"); r.code != 1 {
		t.Errorf(`"--json" after "--" is an id: exit %d, want 1 (unknown job); stderr %q`, r.code, r.stderr)
	}
}
