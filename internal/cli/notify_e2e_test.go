package cli_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/layoverhq/layover/internal/fake"
	"github.com/layoverhq/layover/job"
	"github.com/layoverhq/layover/store"
	"github.com/layoverhq/layover/store/postgres"
	"github.com/layoverhq/layover/store/sqlite"
)

// webhook is a fake notification receiver: it keeps each body by path.
type webhook struct {
	*httptest.Server
	mu     sync.Mutex
	bodies map[string][]string
	got    chan struct{}
}

func newWebhook(t *testing.T) *webhook {
	w := &webhook{bodies: map[string][]string{}, got: make(chan struct{}, 1000)}
	w.Server = httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		w.mu.Lock()
		w.bodies[r.URL.Path] = append(w.bodies[r.URL.Path], string(body))
		w.mu.Unlock()
		w.got <- struct{}{}
	}))
	t.Cleanup(w.Close)
	return w
}

// await waits until path has received n bodies and returns them.
func (w *webhook) await(t *testing.T, path string, n int) []string {
	t.Helper()
	return w.awaitMatching(t, path, n, func(string) bool { return true })
}

// awaitMatching waits until path has received n bodies that match, and
// returns those.
func (w *webhook) awaitMatching(t *testing.T, path string, n int, match func(body string) bool) []string {
	t.Helper()
	timeout := time.After(60 * time.Second)
	for {
		var got []string
		w.mu.Lock()
		for _, s := range w.bodies[path] {
			if match(s) {
				got = append(got, s)
			}
		}
		w.mu.Unlock()
		if len(got) >= n {
			return got
		}
		select {
		case <-w.got:
		case <-timeout:
			t.Fatalf("%s received %d matching notifications, want %d: %q", path, len(got), n, got)
		}
	}
}

// serve --notify tells a receiver of a job deferred on a spent quota and
// of one that failed, in order, in the JSON body and in Slack's form;
// with --log-format json every line of serve's log is JSON, with a line
// per transition; no secret reaches a receiver or the log. On both stores.
func TestServeNotifiesAndLogsJSON(t *testing.T) {
	t.Parallel()
	onEachStore(t, fake.GitHubConfig{}, testServeNotifiesAndLogsJSON)
}

func testServeNotifiesAndLogsJSON(t *testing.T, b *bundle) {
	const deployKey = "deploy-key-value-8c1f2e"
	b.env["DEPLOY_KEY"] = deployKey
	hook := newWebhook(t)
	reset := nextSecond(time.Hour)
	b.gh.SetQuota(testToken, "core", 0, reset)
	serve := b.start("serve", "--lease", "3s", "--heartbeat", "500ms", "--log-format", "json",
		"--notify", hook.URL+"/hook/T0-hook-secret", "--notify", "slack:"+hook.URL+"/slack/T1-slack-secret")
	serve.waitLine(t, "layover serve started")

	if r := b.layover("submit", "--id", "waits", "--quota", "github", "--", "gh", "api", "/repos/octo/demo"); r.code != 0 {
		t.Fatalf("submit waits: exit %d %s", r.code, r.stderr)
	}
	b.awaitJob("waits", "deferred")
	if r := b.layover("submit", "--id", "fails", "--max-attempts", "1", "--env", "DEPLOY_KEY", "--",
		"sh", "-c", `echo "using $DEPLOY_KEY"; echo "API Error: 500 internal error for $DEPLOY_KEY" >&2; exit 1`); r.code != 0 {
		t.Fatalf("submit fails: exit %d %s", r.code, r.stderr)
	}
	b.awaitJob("fails", "failed")

	bodies := hook.await(t, "/hook/T0-hook-secret", 3)
	type body struct {
		Version                                         int
		ID, Kind, Job, State, Key, Reset, Message, Time string
	}
	var got []body
	for _, s := range bodies {
		var x body
		if err := json.Unmarshal([]byte(s), &x); err != nil {
			t.Fatalf("body %s: %v", s, err)
		}
		got = append(got, x)
	}
	wantReset := reset.UTC().Format(time.RFC3339)
	if len(got) != 3 || got[0].Kind != "quota-wait-started" || got[0].Job != "waits" || !strings.HasSuffix(got[0].Key, "/core") || got[0].Reset != wantReset ||
		got[1].Kind != "job-deferred" || got[1].Job != "waits" || got[1].State != "deferred" || got[1].Key != got[0].Key || got[1].Reset != wantReset ||
		got[2].Kind != "job-failed" || got[2].Job != "fails" || got[2].State != "failed" || !strings.Contains(got[2].Message, "internal error for [redacted]") {
		t.Errorf("notifications, want quota-wait-started, job-deferred (waits, core, reset %s), job-failed (fails):\n%s", wantReset, strings.Join(bodies, "\n"))
	}
	for _, x := range got {
		if x.Version != 1 || x.ID == "" || x.Time == "" {
			t.Errorf("body %+v: want version 1, an id and a time", x)
		}
	}
	slack := hook.await(t, "/slack/T1-slack-secret", 3)
	if !strings.HasPrefix(slack[1], `{"text":"layover: job waits deferred on `) || !strings.Contains(slack[2], "job fails failed") {
		t.Errorf("Slack bodies:\n%s", strings.Join(slack, "\n"))
	}

	if err := serve.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if code := serve.wait(t); code != 0 {
		t.Fatalf("serve: exit %d after SIGTERM", code)
	}
	log := serve.stderr()
	for _, s := range append(append([]string{log}, bodies...), slack...) {
		for _, secret := range []string{deployKey, testToken, "T0-hook-secret", "T1-slack-secret"} {
			if strings.Contains(s, secret) {
				t.Errorf("%q reached a log line or a notification:\n%s", secret, s)
			}
		}
	}
	type line struct {
		Msg, Job, From, To, Key, Reset, Line string
		Fence                                *int64
	}
	var deferred, failed, output bool
	for _, l := range strings.Split(log, "\n") {
		var x line
		if err := json.Unmarshal([]byte(l), &x); err != nil {
			t.Errorf("a log line is not JSON: %v\n%s", err, l)
			continue
		}
		switch {
		case x.Msg == "job transition" && x.Fence == nil:
			t.Errorf("a transition line without its fence: %s", l)
		case x.Msg == "job transition" && x.Job == "waits" && x.To == "deferred":
			deferred = x.From == "running" && strings.HasSuffix(x.Key, "/core") && x.Reset != "" && *x.Fence == 1
		case x.Msg == "job transition" && x.Job == "fails" && x.To == "failed":
			failed = x.From == "running" && *x.Fence == 1
		case x.Msg == "job output" && x.Job == "fails":
			output = output || x.Line == "using [redacted]"
		}
	}
	if !deferred || !failed || !output {
		t.Errorf("want JSON lines for waits' deferral (from running, key, reset, fence 1) %v, fails' failure %v and its masked output %v:\n%s",
			deferred, failed, output, log)
	}
}

// A --notify target that is no http(s) URL, and an unknown --log-format,
// are usage errors; the error names the target by scheme and host only.
func TestServeRefusesBadNotifyTarget(t *testing.T) {
	t.Parallel()
	b := setup(t, fake.GitHubConfig{})
	r := b.layover("serve", "--notify", "https://ok.example.com/x", "--notify", "ftp://hooks.example.com/T2/hunter2-path?token=hunter2-query")
	if r.code != 2 || !strings.Contains(r.stderr, "target 2") || !strings.Contains(r.stderr, "ftp://hooks.example.com") || strings.Contains(r.stderr, "hunter2") {
		t.Errorf("serve --notify ftp://…: exit %d %q; want exit 2 naming the target without its secret", r.code, r.stderr)
	}
	if r := b.layover("serve", "--notify", "slack:hooks.slack.com/services/hunter2"); r.code != 2 || strings.Contains(r.stderr, "hunter2") {
		t.Errorf("serve --notify slack:<no scheme>: exit %d %q", r.code, r.stderr)
	}
	if r := b.layover("serve", "--log-format", "xml"); r.code != 2 || !strings.Contains(r.stderr, "--log-format") {
		t.Errorf("serve --log-format xml: exit %d %q", r.code, r.stderr)
	}
}

// A durable workflow run's pause on a quota and its completion reach a
// --notify receiver, in that order, the pause naming the task's quota and
// its reset.
func TestServeNotifiesFlowRun(t *testing.T) {
	t.Parallel()
	b := setup(t, fake.GitHubConfig{})
	b.agentBin()
	reset := nextSecond(4 * time.Second)
	script := filepath.Join(b.dir, "agent-script")
	writeTestFile(t, script, fmt.Sprintf("limit %d\nok\n", reset.Unix()))
	b.env["FAKE_AGENT_SCRIPT"], b.env["FAKE_AGENT_SESSION"] = script, "5f0c8a52-notify"
	b.env["FAKE_AGENT_LOG"] = filepath.Join(b.dir, "agent.log")
	writeTestFile(t, filepath.Join(b.dir, "pair.yaml"), pairFile)
	if r := b.layover("flow", "submit", "pair.yaml", "--run-id", "pair-n"); r.code != 0 {
		t.Fatalf("flow submit: exit %d %s", r.code, r.stderr)
	}
	hook := newWebhook(t)
	serve := b.start("serve", "--lease", "3s", "--heartbeat", "500ms", "--reset-margin", "0s", "--jitter", "0s", "--notify", hook.URL+"/flow")
	serve.waitLine(t, "run=pair-n status=complete")
	var flow []map[string]any
	for _, s := range hook.awaitMatching(t, "/flow", 2, func(s string) bool { return strings.Contains(s, `"kind":"flow-`) }) {
		var x map[string]any
		if err := json.Unmarshal([]byte(s), &x); err != nil {
			t.Fatal(err)
		}
		flow = append(flow, x)
	}
	p, c := flow[0], flow[1]
	if p["kind"] != "flow-paused" || p["run"] != "pair-n" || p["state"] != "paused" || p["key"] == nil ||
		p["reset"] != reset.UTC().Format(time.RFC3339) || c["kind"] != "flow-complete" || c["run"] != "pair-n" {
		t.Errorf("flow notifications:\n%v\n%v\nwant flow-paused (pair-n, its key, reset %s), then flow-complete", p, c, reset.UTC().Format(time.RFC3339))
	}
}

// openBundleStore opens the store b's commands use (SQLite, or the
// PostgreSQL schema onEachStore gave it).
func openBundleStore(t *testing.T, b *bundle) store.Store {
	t.Helper()
	var st store.Store
	var err error
	if loc := b.env["LAYOVER_STORE"]; strings.HasPrefix(loc, "postgres://") {
		st, err = postgres.Open(t.Context(), loc)
	} else {
		st, err = sqlite.Open(t.Context(), b.store)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	return st
}

// A job waiting for credentials when its deadline passes is failed by
// serve's sweep, in bulk in the store, and its job-failed notification
// is sent all the same.
func TestServeNotifiesAJobTheSweepFails(t *testing.T) {
	t.Parallel()
	onEachStore(t, fake.GitHubConfig{}, func(t *testing.T, b *bundle) {
		ctx := t.Context()
		st := openBundleStore(t, b)
		now := time.Now()
		const id = "needs-login"
		j := job.Job{ID: id, State: job.Ready, Spec: job.Spec{Name: id, Argv: []string{"gh", "api", "/user"},
			Deadline: now.Add(time.Second).Truncate(time.Millisecond)}}
		if _, _, err := st.SubmitJob(ctx, j, nil, now); err != nil {
			t.Fatal(err)
		}
		c, err := st.ClaimJobs(ctx, "elsewhere", now, time.Minute, 1)
		if err != nil || len(c) != 1 {
			t.Fatalf("claim: %v %v", c, err)
		}
		att := job.Attempt{ID: id + "-a1", Fence: c[0].Fence, StartedAt: now}
		if _, err := st.ApplyJob(ctx, id, c[0].Fence, job.Change{To: job.Running, Reason: "claimed", Now: now, Attempt: &att,
			Mutate: func(j *job.Job) { j.Runs++ }}); err != nil {
			t.Fatal(err)
		}
		exit := 1
		att.EndedAt, att.Outcome, att.ExitCode = now, "auth", &exit
		if _, err := st.ApplyJob(ctx, id, c[0].Fence, job.Change{To: job.AuthWait, Reason: "auth: bad credentials", Now: now,
			From: []job.State{job.Running}, Attempt: &att, Mutate: func(j *job.Job) { j.RunAt = now.Add(time.Hour) }}); err != nil {
			t.Fatal(err)
		}
		hook := newWebhook(t)
		serve := b.start("serve", "--lease", "3s", "--heartbeat", "500ms", "--notify", hook.URL+"/hook/T2-sweep-secret")
		serve.waitLine(t, "layover serve started")
		bodies := hook.awaitMatching(t, "/hook/T2-sweep-secret", 1, func(s string) bool { return strings.Contains(s, `"job-failed"`) })
		var got struct{ Kind, Job, State string }
		if err := json.Unmarshal([]byte(bodies[0]), &got); err != nil || got.Job != id || got.State != "failed" {
			t.Errorf("job-failed notification %s (%v); want job %s, state failed", bodies[0], err, id)
		}
		if err := serve.cmd.Process.Signal(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
		if code := serve.wait(t); code != 0 {
			t.Errorf("serve after SIGTERM: exit %d\n%s", code, serve.stderr())
		}
	})
}
