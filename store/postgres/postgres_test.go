package postgres_test

import (
	"context"
	"errors"
	"fmt"
	mrand "math/rand/v2"
	"net/url"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/layoverhq/layover/job"
	"github.com/layoverhq/layover/quota"
	"github.com/layoverhq/layover/store"
	"github.com/layoverhq/layover/store/postgres"
	"github.com/layoverhq/layover/store/postgres/pgtest"
	"github.com/layoverhq/layover/store/storetest"
)

// base is the fixed time these tests observe quotas and run jobs at.
var base = time.Date(2026, 11, 10, 14, 0, 0, 0, time.UTC)

// open opens a store on dsn, closed when t ends.
func open(t testing.TB, dsn string) *postgres.Store {
	t.Helper()
	s, err := postgres.Open(t.Context(), dsn)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// openFresh opens a store on a fresh schema.
func openFresh(t testing.TB) *postgres.Store {
	t.Helper()
	return open(t, pgtest.Schema(t))
}

func TestStore(t *testing.T) {
	t.Parallel()
	pgtest.DSN(t)

	storetest.Run(t, func(t *testing.T) store.Store {
		s, err := postgres.Open(t.Context(), pgtest.Schema(t))
		if err != nil {
			t.Fatalf("Open: %v", err)
		}
		return s
	})
}

func TestJobs(t *testing.T) {
	t.Parallel()
	pgtest.DSN(t)

	storetest.RunJobs(t, func(t *testing.T) store.Store { return openFresh(t) })
}

// TestWithoutPreparedStatements runs the suites with statements sent
// unprepared (default_query_exec_mode=exec), as behind a pooler in
// transaction mode.
func TestWithoutPreparedStatements(t *testing.T) {
	t.Parallel()
	pgtest.DSN(t)

	dsn := func(t *testing.T) string {
		return pgtest.WithParams(t, pgtest.Schema(t), "default_query_exec_mode", "exec")
	}
	t.Run("Store", func(t *testing.T) {
		t.Parallel()
		storetest.Run(t, func(t *testing.T) store.Store {
			s, err := postgres.Open(t.Context(), dsn(t))
			if err != nil {
				t.Fatalf("Open: %v", err)
			}
			return s
		})
	})
	t.Run("Jobs", func(t *testing.T) {
		t.Parallel()
		storetest.RunJobs(t, func(t *testing.T) store.Store { return open(t, dsn(t)) })
	})
	t.Run("Workflows", func(t *testing.T) {
		t.Parallel()
		storetest.RunWorkflows(t, func(t *testing.T) store.Store { return open(t, dsn(t)) })
	})
}

func TestRedact(t *testing.T) {
	t.Parallel()

	tests := []struct {
		dsn, want string
	}{
		{"postgres://alice:s3cret-pw@db.example.com:5432/layover?sslmode=require",
			"postgres://alice:[redacted]@db.example.com:5432/layover?sslmode=require"},
		{"postgresql://alice@db.example.com/layover", "postgresql://alice@db.example.com/layover"},
		{"postgres://db.example.com/layover?password=s3cret-pw&sslmode=disable",
			"postgres://db.example.com/layover?password=[redacted]&sslmode=disable"},
		{"postgres://db.example.com/layover?sslpassword=s3cret-pw", "postgres://db.example.com/layover?sslpassword=[redacted]"},
		{"postgres://db.example.com/layover?PassWord=s3cret-pw", "postgres://db.example.com/layover?PassWord=[redacted]"},
		{"postgres://db.example.com/layover?pass%77ord=s3cret-pw", "postgres://db.example.com/layover?pass%77ord=[redacted]"},
		{"postgres://al%40ice:p%40ss@db.example.com/layover", "postgres://al%40ice:[redacted]@db.example.com/layover"},
		{"postgres://alice:s3cret pw@db.example.com:notaport/x", "postgres://…"},
		{"host=db password=s3cret-pw", "(not a URL)"},
		{"postgres://alice:1234/5678@db.example.com/layover", "postgres://…"},
		{"postgres://alice:1234?5678@db.example.com/layover", "postgres://…"},
	}
	for _, tt := range tests {
		if got := postgres.Redact(tt.dsn); got != tt.want {
			t.Errorf("Redact(%q) = %q, want %q", tt.dsn, got, tt.want)
		}
	}
}

func TestOpenErrors(t *testing.T) {
	t.Parallel()
	dsn := pgtest.DSN(t)
	const pw = "Sup3r-s3cret-pw"
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	withPassword := func(host, path string, params ...string) string {
		v := *u
		v.User = url.UserPassword(cmpOr(u.User.Username(), "postgres"), pw)
		if host != "" {
			v.Host = host
		}
		if path != "" {
			v.Path = path
		}
		q := v.Query()
		q.Set("connect_timeout", "3")
		for i := 0; i+1 < len(params); i += 2 {
			q.Set(params[i], params[i+1])
		}
		v.RawQuery = q.Encode()
		return v.String()
	}

	tests := []struct {
		name    string
		dsn     string
		dsnErr  bool   // a *DSNError: the input is wrong
		mention string // what the message must say
	}{
		{"not postgres", "mysql://root:" + pw + "@localhost/db", true, "not a postgres:// or postgresql:// URL"},
		{"key=value", "host=localhost password=" + pw, true, "not a postgres://"},
		{"bad port", "postgres://u:" + pw + "@localhost:port/db", true, "not a valid URL"},
		{"unescaped slash in the password", "postgres://u:" + pw[:5] + "/" + pw[5:] + "@localhost/db", true, "not a valid URL"},
		{"bad sslmode", withPassword("", "", "sslmode", "sometimes"), true, "sslmode"},
		{"bad pool size", withPassword("", "", "pool_max_conns", "many"), true, "pool_max_conns"},
		{"password parameter", withPassword("", "", "password", pw, "sslmode", "sometimes"), true, "sslmode"},
		{"refused", withPassword("127.0.0.1:1", ""), false, "cannot connect"},
		{"unknown host", withPassword("no-such-host.invalid:5432", ""), false, "cannot connect"},
		{"no such database", withPassword("", "/layover_no_such_db_"+pgtest.RandomHex(4)), false, "does not exist"},
		{"no such schema", withPassword("", "", "search_path", "layover_no_such_schema"), false, "search_path"},
	}
	opens := map[string]func(context.Context, string) (*postgres.Store, error){
		"Open": postgres.Open, "OpenReadOnly": postgres.OpenReadOnly}
	for _, tt := range tests {
		for name, openStore := range opens {
			t.Run(tt.name+"/"+name, func(t *testing.T) {
				t.Parallel()
				testOpenError(t, openStore, tt.dsn, tt.dsnErr, tt.mention, pw)
			})
		}
	}
}

// testOpenError checks that openStore(dsn) fails with one line naming the
// store and saying mention, never the password pw; a *DSNError exactly
// when dsnErr.
func testOpenError(t *testing.T, openStore func(context.Context, string) (*postgres.Store, error), dsn string, dsnErr bool, mention, pw string) {
	t.Helper()
	s, err := openStore(t.Context(), dsn)
	if err == nil {
		s.Close()
		t.Fatalf("open succeeded")
	}
	msg := err.Error()
	t.Logf("%s", msg)
	var de *postgres.DSNError
	if errors.As(err, &de) != dsnErr {
		t.Errorf("open = %T %v; DSNError: %v, want %v", err, err, errors.As(err, &de), dsnErr)
	}
	if strings.Contains(msg, pw) || strings.Contains(msg, pw[5:]) {
		t.Errorf("the error shows the password: %s", msg)
	}
	if strings.ContainsAny(msg, "\n\r") {
		t.Errorf("the error is not one line: %q", msg)
	}
	if !strings.HasPrefix(msg, "store ") || !strings.Contains(msg, mention) {
		t.Errorf("the error = %q, want it to name the store and say %q", msg, mention)
	}
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// TestOpenConcurrently opens one new schema from many pools at once (as
// many processes starting on a new database would): each migrates or finds
// it migrated, and every migration runs once.
func TestOpenConcurrently(t *testing.T) {
	t.Parallel()
	dsn := pgtest.Schema(t)

	const n = 8
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			s, err := postgres.Open(t.Context(), dsn)
			if err != nil {
				errs[i] = err
				return
			}
			defer s.Close()
			errs[i] = s.RecordStates(t.Context(), []quota.State{{
				Key:        quota.Key{Host: "api.github.com", Principal: "octocat", Resource: "core"},
				Remaining:  int64(i),
				ResetAt:    base.Add(time.Hour),
				ObservedAt: base.Add(time.Duration(i) * time.Second),
			}})
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	s := open(t, dsn)
	rows, err := s.Pool().Query(t.Context(), `SELECT version FROM schema_migrations ORDER BY version`)
	if err != nil {
		t.Fatal(err)
	}
	versions, err := pgx.CollectRows(rows, pgx.RowTo[int32])
	if err != nil || fmt.Sprint(versions) != "[1 2 3 4 5 6 7 8 9 10]" {
		t.Errorf("schema_migrations = %v, %v; want [1 2 3 4 5 6 7 8 9 10]", versions, err)
	}
	st, err := s.AllStates(t.Context())
	if err != nil || len(st) != 1 || st[0].Remaining != n-1 {
		t.Errorf("AllStates = %+v, %v; want the newest of the %d writes", st, err, n)
	}
}

func TestReopenKeepsData(t *testing.T) {
	t.Parallel()
	dsn := pgtest.Schema(t)
	ctx := t.Context()

	s, err := postgres.Open(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	k := quota.Key{Host: "api.github.com", Principal: "octocat", Resource: "core"}
	if err := s.RecordStates(ctx, []quota.State{{Key: k, Limit: 5000, Remaining: 7, ResetAt: base, ObservedAt: base}}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.SubmitJob(ctx, job.Job{ID: "j1", Spec: job.Spec{Argv: []string{"true"}}}, nil, base); err != nil {
		t.Fatal(err)
	}
	s.Close()

	s = open(t, dsn)
	if st, err := s.States(ctx, []quota.Key{k}); err != nil || len(st) != 1 || st[0].Remaining != 7 {
		t.Errorf("States after reopening = %+v, %v", st, err)
	}
	if j, err := s.Job(ctx, "j1"); err != nil || j.State != job.Ready {
		t.Errorf("Job after reopening = %+v, %v", j, err)
	}
}

func TestOpenRefusesNewerSchema(t *testing.T) {
	t.Parallel()
	dsn := pgtest.Schema(t)

	s := open(t, dsn)
	if _, err := s.Pool().Exec(t.Context(), `INSERT INTO schema_migrations (version, name) VALUES (99, '099_future')`); err != nil {
		t.Fatal(err)
	}
	s2, err := postgres.Open(t.Context(), dsn)
	if err == nil {
		s2.Close()
		t.Fatal("Open of a newer schema succeeded")
	}
	if !strings.Contains(err.Error(), "schema version 99 is newer") {
		t.Errorf("Open = %v, want it to say the schema is newer", err)
	}
}

// TestReceiptsCannotChange: the database itself refuses to edit or delete
// a stored receipt.
func TestReceiptsCannotChange(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	s := openFresh(t)

	j := job.Job{ID: "j1", State: job.Deferred, Ownership: job.Retained, RunAt: base.Add(time.Hour),
		ResumeBy: base.Add(2 * time.Hour), Spec: job.Spec{Argv: []string{"true"}}}
	if _, _, err := s.SubmitJob(ctx, j, &job.Receipt{JSON: []byte(`{"r":1}`), IssuedAt: base}, base); err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{
		`UPDATE job_receipt SET json = '\x7b7d'::bytea`,
		`DELETE FROM job_receipt`,
		`TRUNCATE job_receipt`,
	} {
		if _, err := s.Pool().Exec(ctx, q); err == nil || !strings.Contains(err.Error(), "append-only") {
			t.Errorf("%s = %v, want it refused as append-only", q, err)
		}
	}
	h, err := s.JobHistory(ctx, "j1")
	if err != nil || len(h.Receipts) != 1 || string(h.Receipts[0].JSON) != `{"r":1}` {
		t.Errorf("receipts = %+v, %v; want the one stored, unchanged", h.Receipts, err)
	}
}

// TestLedgerAcrossPools has 4 pools (hosts) of 8 goroutines write
// overlapping keys in random order, each observation newer than the last
// written anywhere, while logins are learned that merge a token's rows into
// its login's: no write fails (a deadlock between writers is retried), and
// every key ends holding the newest observation written to it.
func TestLedgerAcrossPools(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	dsn := pgtest.Schema(t)
	pools := make([]*postgres.Store, 4)
	for i := range pools {
		pools[i] = open(t, pgtest.WithParams(t, dsn, "pool_max_conns", "8"))
	}

	const fp = "0123456789ab"
	principals := []string{"octocat", "tok:" + fp, "hubot"}
	resources := []string{"core", "graphql", "search", "code_search"}
	var clock atomic.Int64 // observation times, in ms after base
	var mu sync.Mutex
	newest := map[quota.Key]int64{} // by key as written, the login's for the token's
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for p, s := range pools {
		for w := range 8 {
			wg.Go(func() {
				r := mrand.New(mrand.NewPCG(uint64(p), uint64(w)))
				for range 60 {
					if r.IntN(10) == 0 {
						if err := s.LearnLogin(ctx, "api.github.com", fp, "octocat", base); err != nil {
							errs <- err
							return
						}
						continue
					}
					var batch []quota.State
					for range 1 + r.IntN(6) {
						k := quota.Key{Host: "api.github.com", Principal: principals[r.IntN(3)], Resource: resources[r.IntN(4)]}
						at := clock.Add(1)
						batch = append(batch, quota.State{Key: k, Limit: 5000, Remaining: at, ResetAt: base.Add(time.Hour),
							ObservedAt: base.Add(time.Duration(at) * time.Millisecond), ObservedBy: "writer"})
						if k.Principal == "tok:"+fp {
							k.Principal = "octocat"
						}
						mu.Lock()
						newest[k] = max(newest[k], at)
						mu.Unlock()
					}
					if err := s.RecordStates(ctx, batch); err != nil {
						errs <- err
						return
					}
				}
			})
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if err := pools[0].LearnLogin(ctx, "api.github.com", fp, "octocat", base); err != nil {
		t.Fatal(err)
	}
	all, err := pools[1].AllStates(ctx)
	if err != nil {
		t.Fatal(err)
	}
	got := map[quota.Key]int64{}
	for _, st := range all {
		got[st.Key] = st.Remaining
		if want := base.Add(time.Duration(st.Remaining) * time.Millisecond); !st.ObservedAt.Equal(want) {
			t.Errorf("%s: remaining %d observed at %s: fields of two writes mixed", st.Key, st.Remaining, st.ObservedAt)
		}
	}
	if fmt.Sprint(got) != fmt.Sprint(newest) {
		t.Errorf("ledger after the writes:\n%v\nwant the newest written per key:\n%v", got, newest)
	}
}

// TestMigrateFromVersion2: a store made by a layover that knew migrations 1
// and 2 is brought up to date by Open, its data kept: a job of then reads
// with no runs, secondaries nor checks, its receipt from no host at fence
// 0, no cleanup, and it can wait for credentials.
func TestMigrateFromVersion2(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	dsn := pgtest.Schema(t)

	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		t.Fatal(err)
	}
	conn, err := pgx.ConnectConfig(ctx, cfg.ConnConfig)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	for _, name := range []string{"001_ledger", "002_jobs"} {
		body, err := os.ReadFile("migration/" + name + ".sql")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := conn.Exec(ctx, string(body)); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
	}
	if _, err := conn.Exec(ctx, `CREATE TABLE schema_migrations (version integer PRIMARY KEY, name text NOT NULL,
		applied_at timestamptz NOT NULL DEFAULT now());
		INSERT INTO schema_migrations (version, name) VALUES (1, '001_ledger'), (2, '002_jobs');
		INSERT INTO quota_state VALUES ('api.github.com', 'octocat', 'core', 5000, 42, 1794319445123, true,
			1794319445, 1794319000000, 'host-a', 'headers', '');
		INSERT INTO jobs (id, spec, state, stage, ownership, priority, deadline_ms, created_at_ms, updated_at_ms,
			run_at_ms, resume_by_ms, fence, lease_owner, lease_until_ms, progress_by_ms, attempts, probes, approved,
			session_id, transition_seq, receipt_seq)
			VALUES ('old', '{"argv":["true"]}', 'running', '', '', 0, 0, 1794319000000, 1794319000000, 0, 0, 1,
			'host-a', 1794319030000, 0, 0, 0, false, '', 2, 1);
		INSERT INTO job_transition VALUES ('old', 1, '', 'ready', 1794319000000, 'submitted'),
			('old', 2, 'ready', 'running', 1794319000000, 'claimed');
		INSERT INTO job_receipt VALUES ('old', 1, '{}', 1794319000000);
		INSERT INTO job_attempt (job_id, attempt_id, fence, started_at_ms, ended_at_ms, outcome, exit_code, waited_s)
			VALUES ('old', 'att-1', 1, 1794319000000, 0, '', NULL, 0)`); err != nil {
		t.Fatal(err)
	}

	s := open(t, dsn)
	if st, err := s.AllStates(ctx); err != nil || len(st) != 1 || st[0].Remaining != 42 {
		t.Errorf("AllStates after the upgrade = %+v, %v; want the state stored before", st, err)
	}
	// Its one attempt counts as a run: its next start reconciles first.
	if j, err := s.Job(ctx, "old"); err != nil || j.Runs != 1 || j.Secondaries != 0 || j.Cleanup != job.CleanupNone {
		t.Errorf("a job from version 2 = %+v, %v; want its attempt as one run, no secondaries nor cleanup", j, err)
	}
	// Migration 007's tables are new: no workflow run predates them.
	if runs, err := s.Runs(ctx); err != nil || len(runs) != 0 {
		t.Errorf("workflow runs of a store from version 2 = %+v, %v; want none", runs, err)
	}
	one := 1
	check := job.Check{Fence: 1, At: base, Trigger: "resume", ExitCode: &one, Result: job.CheckRun}
	if _, err := s.ApplyJob(ctx, "old", 1, job.Change{To: job.AuthWait, Reason: "auth", Now: base, Checked: &check}); err != nil {
		t.Fatalf("a job from version 2 to auth-wait: %v", err)
	}
	h, err := s.JobHistory(ctx, "old")
	if err != nil || len(h.Receipts) != 1 || h.Receipts[0].HostID != "" || h.Receipts[0].Fence != 0 ||
		len(h.Checks) != 1 || len(h.Transitions) != 3 {
		t.Errorf("history of a job from version 2 = %+v, %v; want its receipt from no host at fence 0, one check, 3 transitions", h, err)
	}
	j := job.Job{ID: "j1", Spec: job.Spec{Argv: []string{"true"}}}
	if _, _, err := s.SubmitJob(ctx, j, nil, base); err != nil {
		t.Fatal(err)
	}
	var def string
	if err := s.Pool().QueryRow(ctx, `SELECT indexdef FROM pg_indexes
		WHERE schemaname = current_schema() AND indexname = 'jobs_claimable_at'`).Scan(&def); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(def, "fence >= 0") {
		t.Errorf("jobs_claimable_at after the upgrade: %s", def)
	}
	if at, ok, err := s.NextJobDue(ctx); err != nil || !ok || !at.IsZero() {
		t.Errorf("NextJobDue = %s, %v, %v; want the ready job due now", at, ok, err)
	}
}
