package server

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/layoverhq/layover/clock"
	"github.com/layoverhq/layover/host"
	"github.com/layoverhq/layover/job"
	"github.com/layoverhq/layover/quota"
	"github.com/layoverhq/layover/store"
	"github.com/layoverhq/layover/store/postgres"
	"github.com/layoverhq/layover/store/postgres/pgtest"
	"github.com/layoverhq/layover/store/sqlite"
	"github.com/layoverhq/layover/workflow/record"
)

// testToken is the console token of the test worlds; no response body and
// no log line may hold it.
const testToken = "tok-S3cr3t-console-9f2c1d"

// t0 is the fake clock's time when the world is built.
var t0 = time.Date(2026, 12, 2, 5, 0, 0, 0, time.UTC)

// reset is when the world's exhausted GitHub quota refills.
var reset = t0.Add(42 * time.Minute)

// world is a SQLite store holding what an operator would look at: jobs
// submitted through host.Jobs (ready ones, one awaiting approval, a
// deferred one with its receipt), a GitHub quota spent over the last half
// hour, a command waiting on it, a workflow run with a paused task and a
// durable host.
type world struct {
	ctx   context.Context
	clock *clock.Fake
	st    store.Store
	jobs  *host.Jobs
	srv   *Server
	logs  *syncBuffer
	key   quota.Key
}

// syncBuffer is a log sink the server may write to from its handlers.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// newWorld builds the world on a fresh SQLite store.
func newWorld(t testing.TB, token string) *world {
	t.Helper()
	st, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "layover.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	return buildWorld(t, st, token)
}

// eachWorld runs f on the world built on SQLite and on PostgreSQL (a
// schema of its own on the server of LAYOVER_TEST_POSTGRES; skipped
// without it, failed under CI).
func eachWorld(t *testing.T, token string, f func(t *testing.T, w *world)) {
	t.Run("sqlite", func(t *testing.T) { f(t, newWorld(t, token)) })
	t.Run("postgres", func(t *testing.T) {
		st, err := postgres.Open(t.Context(), pgtest.Schema(t))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = st.Close() })
		f(t, buildWorld(t, st, token))
	})
}

func buildWorld(t testing.TB, st store.Store, token string) *world {
	t.Helper()
	ctx := context.Background()
	fake := clock.NewFake(t0.Add(-30 * time.Minute))
	jobs, err := host.NewJobs(host.Config{Store: st, Clock: fake, Env: []string{}})
	if err != nil {
		t.Fatal(err)
	}
	w := &world{ctx: ctx, clock: fake, st: st, jobs: jobs, logs: &syncBuffer{},
		key: quota.Key{Host: "api.github.com", Principal: "octocat", Resource: "core"}}
	// The quota burns down from 900 to 0 over the half hour before t0.
	for i, left := range []int64{900, 600, 250, 0} {
		at := t0.Add(time.Duration(i-3) * 10 * time.Minute)
		fake.Set(at)
		w.must(t, st.RecordStates(ctx, []quota.State{{Key: w.key, Limit: 5000, Remaining: left, ResetAt: reset,
			ResetKnown: true, ObservedAt: at, ObservedBy: "buildbox", Source: quota.SourceHeaders}}))
	}
	fake.Set(t0)
	w.must(t, st.RegisterHost(ctx, job.Host{ID: "host-buildbox-1", Hostname: "buildbox", PID: 7001, StartedAt: t0.Add(-time.Hour),
		LastSeen: t0.Add(-5 * time.Second), Lease: 30 * time.Second}))
	for _, id := range []string{"job-build-1", "job-build-2", "job-lint"} {
		if _, _, err := jobs.Submit(ctx, id, job.Spec{Name: "nightly " + id, Argv: []string{"make", "test"}, Quota: []string{"github"}}); err != nil {
			t.Fatal(err)
		}
	}
	if _, _, err := jobs.Submit(ctx, "job-deploy", job.Spec{Name: "deploy", Argv: []string{"./deploy.sh"}, FreshApprovalRequired: true}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := jobs.SubmitDeferred(ctx, "job-sync-repos", job.Spec{Name: "sync repos", Argv: []string{"gh", "repo", "sync"}},
		host.Deferral{Key: w.key, Provider: "github", ResetAt: reset}, []quota.Key{w.key}); err != nil {
		t.Fatal(err)
	}
	if _, err := st.RegisterWaiter(ctx, store.Waiter{Hostname: "laptop", PID: 4242, Command: "gh api /repos/octo/demo/issues",
		Key: w.key, Stage: "Quota wait until " + reset.Format(time.RFC3339), WaitUntil: reset, StartedAt: t0}); err != nil {
		t.Fatal(err)
	}
	def, _ := json.Marshal(map[string]any{"name": "nightly-review", "tasks": []map[string]any{
		{"name": "fetch", "run": "git fetch"}, {"name": "review", "needs": []string{"fetch"}, "agent": []string{"claude"}},
		{"name": "report", "needs": []string{"review"}, "run": "make report"}}})
	_, _, err = st.CreateRun(ctx, record.Run{ID: "run-nightly-7", Name: "nightly-review", Definition: def, Status: record.RunPaused},
		[]record.Task{
			{Name: "fetch", State: record.TaskComplete, Stage: "complete", Starts: 1},
			{Name: "review", State: record.TaskPaused, Stage: "paused", Starts: 1, Quota: &record.Quota{Provider: "claude-code",
				Resource: "five_hour", ResetAt: t0.Add(3 * time.Hour), Message: "5-hour limit reached"}, WaitingOn: "quota claude-code/five_hour"},
			{Name: "report", State: record.TaskPending, Stage: "pending", WaitingOn: "needs review"},
		}, t0)
	w.must(t, err)
	logger := slog.New(slog.NewTextHandler(w.logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	w.srv, err = New(Config{Store: st, Jobs: jobs, Clock: fake, Token: token, Logger: logger})
	if err != nil {
		t.Fatal(err)
	}
	return w
}

func (w *world) must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

var _ = io.Discard
