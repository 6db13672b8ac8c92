package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/layoverhq/layover/internal/view"
	"github.com/layoverhq/layover/job"
	"github.com/layoverhq/layover/store"
)

// response is one request's answer, read whole.
type response struct {
	code int
	hdr  http.Header
	body string
}

func (w *world) do(t *testing.T, method, path string, body url.Values, hdr map[string]string) response {
	t.Helper()
	var rd io.Reader
	if body != nil {
		rd = strings.NewReader(body.Encode())
	}
	req := httptest.NewRequest(method, path, rd)
	if body != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	rec := httptest.NewRecorder()
	w.srv.Handler().ServeHTTP(rec, req)
	return response{code: rec.Code, hdr: rec.Header(), body: rec.Body.String()}
}

func (w *world) get(t *testing.T, path string) response {
	t.Helper()
	return w.do(t, "GET", path, nil, nil)
}

func wantAll(t *testing.T, what, body string, wants ...string) {
	t.Helper()
	for _, want := range wants {
		if !strings.Contains(body, want) {
			t.Errorf("%s lacks %q", what, want)
		}
	}
}

func TestPagesShowWhatTheStoreHolds(t *testing.T) {
	eachWorld(t, testToken, func(t *testing.T, w *world) {
		for _, tc := range []struct {
			path  string
			wants []string
		}{
			{"/", []string{"api.github.com", "octocat", "core", "0 / 5000", "2026-12-02 05:42:00 UTC (in 42m0s)",
				"Quota wait until 2026-12-02 05:42:00 UTC", "<svg", "4 obs.", `class="obs"`, ">500<"}},
			{"/waits", []string{"api.github.com/octocat/core</td><td>Quota wait</td><td>2026-12-02 05:42:00 UTC (in 42m0s)", "job-sync-repos", "sync repos", "Quota wait until", "laptop", "4242", "api.github.com/octocat/core",
				"gh api /repos/octo/demo/issues", "2026-12-02 05:42:00 UTC (in 42m0s)"}},
			{"/jobs", []string{"5 jobs.", "job-build-1", "job-build-2", "job-lint", "job-deploy", "job-sync-repos", "nightly job-lint"}},
			{"/jobs/job-sync-repos", []string{`id="job-state">deferred<`, "Receipt 1, issued", "resume_after", "submitted",
				"Receipt expires"}},
			{"/runs", []string{"run-nightly-7", "nightly-review", "paused", "review: paused"}},
			{"/runs/run-nightly-7", []string{"fetch", "<li>fetch</li>", "<li>review</li>", "claude-code five_hour: resets 2026-12-02 08:00:00 UTC (in 3h0m0s)",
				"quota claude-code/five_hour", "needs review"}},
			{"/hosts", []string{"host-buildbox-1", "buildbox", "7001", "2026-12-02 04:59:55 UTC (5s ago)", "30s", "live"}},
			{"/login", []string{`name="token"`, `type="password"`}},
		} {
			t.Run(tc.path, func(t *testing.T) {
				r := w.get(t, tc.path)
				if r.code != 200 {
					t.Fatalf("GET %s: %d\n%s", tc.path, r.code, r.body)
				}
				if ct := r.hdr.Get("Content-Type"); ct != "text/html; charset=utf-8" {
					t.Errorf("Content-Type %q", ct)
				}
				wantAll(t, tc.path, r.body, tc.wants...)
			})
		}
	})
}

func TestUnknownJobAndRunAre404(t *testing.T) {
	w := newWorld(t, testToken)
	for _, path := range []string{"/jobs/job-nope", "/runs/run-nope", "/api/v1/jobs/job-nope", "/api/v1/runs/run-nope", "/nope"} {
		if r := w.get(t, path); r.code != 404 {
			t.Errorf("GET %s: %d, want 404", path, r.code)
		}
	}
}

func TestSecurityHeadersOnEveryResponse(t *testing.T) {
	w := newWorld(t, testToken)
	for _, req := range [][2]string{{"GET", "/"}, {"GET", "/jobs?state=bogus"}, {"GET", "/nope"}, {"GET", "/api/v1/jobs"},
		{"GET", "/healthz"}, {"GET", "/static/console.css"}, {"GET", "/jobs/job-lint/cancel"}, {"POST", "/jobs/job-lint/cancel"},
		{"POST", "/api/v1/jobs/job-lint/cancel"}} {
		r := w.do(t, req[0], req[1], nil, nil)
		csp := r.hdr.Get("Content-Security-Policy")
		if !strings.Contains(csp, "default-src 'self'") || strings.Contains(csp, "unsafe-inline") {
			t.Errorf("%s %s: CSP %q", req[0], req[1], csp)
		}
		for k, v := range map[string]string{"X-Content-Type-Options": "nosniff", "X-Frame-Options": "DENY", "Referrer-Policy": "no-referrer"} {
			if got := r.hdr.Get(k); got != v {
				t.Errorf("%s %s: %s %q, want %q", req[0], req[1], k, got, v)
			}
		}
	}
}

func TestPagesHoldNoScript(t *testing.T) {
	w := newWorld(t, testToken)
	for _, path := range []string{"/", "/waits", "/jobs", "/jobs/job-sync-repos", "/runs", "/runs/run-nightly-7", "/hosts", "/login"} {
		if body := w.get(t, path).body; strings.Contains(strings.ToLower(body), "<script") || strings.Contains(body, "style=") {
			t.Errorf("%s has inline script or style, which the CSP blocks", path)
		}
	}
}

func decode[T any](t *testing.T, r response) T {
	t.Helper()
	var v T
	if r.code != 200 {
		t.Fatalf("status %d: %s", r.code, r.body)
	}
	if err := json.Unmarshal([]byte(r.body), &v); err != nil {
		t.Fatalf("%v: %s", err, r.body)
	}
	return v
}

// sameJSON reports whether a and b marshal to equal JSON.
func sameJSON(t *testing.T, a, b any) bool {
	t.Helper()
	x, err := json.Marshal(a)
	if err != nil {
		t.Fatal(err)
	}
	y, err := json.Marshal(b)
	if err != nil {
		t.Fatal(err)
	}
	var xa, ya any
	_ = json.Unmarshal(x, &xa)
	_ = json.Unmarshal(y, &ya)
	return fmt.Sprint(xa) == fmt.Sprint(ya)
}

func TestAPIServesTheCLIObjects(t *testing.T) {
	eachWorld(t, testToken, func(t *testing.T, w *world) {
		j, _ := w.st.Job(w.ctx, "job-sync-repos")
		hist, _ := w.st.JobHistory(w.ctx, "job-sync-repos")
		got := decode[map[string]any](t, w.get(t, "/api/v1/jobs/job-sync-repos"))
		if !sameJSON(t, got, view.NewJobDetail(j, hist)) {
			t.Errorf("job: got %v", got)
		}
		if rs := got["receipts"].([]any); len(rs) != 1 {
			t.Errorf("job: want its one receipt, got %v", rs)
		}
		quotas := decode[[]view.Quota](t, w.get(t, "/api/v1/quotas"))
		if len(quotas) != 1 || !quotas[0].InWait || quotas[0].WaitUntil != "2026-12-02T05:42:00Z" || quotas[0].Remaining != float64(0) {
			t.Errorf("quotas: %+v", quotas)
		}
		waits := decode[waitsJSON](t, w.get(t, "/api/v1/waits"))
		if len(waits.Keys) != 1 || waits.Keys[0].Resource != "core" || waits.Keys[0].WaitUntil != "2026-12-02T05:42:00Z" {
			t.Errorf("waits' keys: %+v", waits.Keys)
		}
		if len(waits.Deferred) != 1 || waits.Deferred[0].ID != "job-sync-repos" || len(waits.Waiting) != 1 || waits.Waiting[0].PID != 4242 {
			t.Errorf("waits: %+v", waits)
		}
		jobs := decode[jobsJSON](t, w.get(t, "/api/v1/jobs?state=ready"))
		if jobs.Total != 4 || len(jobs.Jobs) != 4 || jobs.Page != 1 || jobs.Pages != 1 {
			t.Errorf("ready jobs: %+v", jobs)
		}
		run := decode[view.FlowRunDetail](t, w.get(t, "/api/v1/runs/run-nightly-7"))
		if run.Run.Status != "paused" || len(run.Tasks) != 3 || run.Tasks[1].Quota == nil || run.Tasks[1].Quota.ResetAt != "2026-12-02T08:00:00Z" {
			t.Errorf("run: %+v", run)
		}
		runs := decode[view.FlowRuns](t, w.get(t, "/api/v1/runs"))
		if len(runs.Runs) != 1 || runs.Runs[0].Tasks["paused"] != 1 {
			t.Errorf("runs: %+v", runs)
		}
		hosts := decode[[]view.Host](t, w.get(t, "/api/v1/hosts"))
		if len(hosts) != 1 || !hosts[0].Live || hosts[0].Hostname != "buildbox" {
			t.Errorf("hosts: %+v", hosts)
		}
		if r := w.get(t, "/api/v1/jobs?state=bogus"); r.code != 400 || !strings.Contains(r.body, `"error"`) {
			t.Errorf("bad state: %d %s", r.code, r.body)
		}
	})
}

func TestJobsFilterSearchAndPage(t *testing.T) {
	eachWorld(t, testToken, func(t *testing.T, w *world) {
		for i := range 120 {
			if _, _, err := w.jobs.Submit(w.ctx, fmt.Sprintf("job-bulk-%03d", i), job.Spec{Argv: []string{"true"}}); err != nil {
				t.Fatal(err)
			}
		}
		rows := regexp.MustCompile(`<a href="/jobs/[^"]+">`)
		for _, tc := range []struct {
			query      string
			rows       int
			wants      []string
			prev, next bool
		}{
			{"", 50, []string{"125 jobs, page 1 of 3."}, false, true},
			{"?page=2", 50, []string{"page 2 of 3"}, true, true},
			{"?page=3", 25, []string{"page 3 of 3"}, true, false},
			{"?page=9", 0, []string{"125 jobs, page 9 of 3."}, true, false},
			{"?q=BULK-11", 10, []string{"10 jobs."}, false, false},
			{"?state=deferred", 1, []string{"job-sync-repos", `<option value="deferred" selected>`}, false, false},
			{"?state=cancelled", 0, []string{"0 jobs."}, false, false},
		} {
			r := w.get(t, "/jobs"+tc.query)
			if r.code != 200 {
				t.Fatalf("%s: %d", tc.query, r.code)
			}
			if n := len(rows.FindAllString(r.body, -1)); n != tc.rows {
				t.Errorf("%s: %d rows, want %d", tc.query, n, tc.rows)
			}
			wantAll(t, tc.query, r.body, tc.wants...)
			if got := strings.Contains(r.body, `id="prev"`); got != tc.prev {
				t.Errorf("%s: prev link %v", tc.query, got)
			}
			if got := strings.Contains(r.body, `id="next"`); got != tc.next {
				t.Errorf("%s: next link %v", tc.query, got)
			}
		}
		p := decode[jobsJSON](t, w.get(t, "/api/v1/jobs?q=bulk&page=3"))
		if p.Total != 120 || len(p.Jobs) != 20 || p.Pages != 3 || p.PageSize != PageSize {
			t.Errorf("api page 3: total %d, %d jobs, %d pages", p.Total, len(p.Jobs), p.Pages)
		}
		for _, bad := range []string{"?page=0", "?page=x", "?state=nope", "?q=" + strings.Repeat("a", 129), "?q=%00"} {
			if r := w.get(t, "/jobs"+bad); r.code != 400 {
				t.Errorf("%s: %d, want 400", bad, r.code)
			}
		}
	})
}

func (w *world) state(t *testing.T, id string) job.State {
	t.Helper()
	j, err := w.st.Job(w.ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	return j.State
}

func TestAPIActionsNeedTheBearerToken(t *testing.T) {
	eachWorld(t, testToken, func(t *testing.T, w *world) {
		cookie := w.login(t)
		for _, tc := range []struct {
			name string
			hdr  map[string]string
			code int
		}{
			{"no header", nil, 401},
			{"wrong token", map[string]string{"Authorization": "Bearer tok-wrong"}, 403},
			{"token prefix", map[string]string{"Authorization": "Bearer " + testToken[:len(testToken)-1]}, 403},
			{"basic auth", map[string]string{"Authorization": "Basic " + testToken}, 401},
			{"session cookie", map[string]string{"Cookie": cookie}, 401},
		} {
			if r := w.do(t, "POST", "/api/v1/jobs/job-lint/cancel", nil, tc.hdr); r.code != tc.code {
				t.Errorf("%s: %d, want %d: %s", tc.name, r.code, tc.code, r.body)
			}
		}
		if s := w.state(t, "job-lint"); s != job.Ready {
			t.Fatalf("refused cancels changed the job: %s", s)
		}
		auth := map[string]string{"Authorization": "Bearer " + testToken}
		if r := w.do(t, "GET", "/api/v1/jobs/job-lint/cancel", nil, auth); r.code != 405 {
			t.Errorf("GET on an action: %d, want 405", r.code)
		}
		got := decode[view.Job](t, w.do(t, "POST", "/api/v1/jobs/job-lint/cancel", nil, auth))
		if got.State != job.Cancelled || w.state(t, "job-lint") != job.Cancelled {
			t.Errorf("cancel: %s", got.State)
		}
		if r := w.do(t, "POST", "/api/v1/jobs/job-lint/cancel", nil, auth); r.code != 409 {
			t.Errorf("cancel of a cancelled job: %d, want 409", r.code)
		}
		if r := w.do(t, "POST", "/api/v1/jobs/job-nope/cancel", nil, auth); r.code != 404 {
			t.Errorf("cancel of no job: %d, want 404", r.code)
		}
		got = decode[view.Job](t, w.do(t, "POST", "/api/v1/jobs/job-deploy/approve", nil, auth))
		j, _ := w.st.Job(w.ctx, "job-deploy")
		if !j.Approved || got.ID != "job-deploy" {
			t.Errorf("approve: stored %+v", j)
		}
		if r := w.do(t, "POST", "/api/v1/jobs/job-build-1/unblock", nil, auth); r.code != 409 {
			t.Errorf("unblock of a ready job: %d, want 409", r.code)
		}
		if !strings.Contains(w.logs.String(), "console: cancel") {
			t.Errorf("the cancel is not logged:\n%s", w.logs)
		}
	})
}

// login posts the token and returns the session cookie header.
func (w *world) login(t *testing.T) string {
	t.Helper()
	r := w.do(t, "POST", "/login", url.Values{"token": {testToken}}, nil)
	if r.code != 303 {
		t.Fatalf("login: %d %s", r.code, r.body)
	}
	c := r.hdr.Get("Set-Cookie")
	for _, want := range []string{sessionCookie + "=", "HttpOnly", "SameSite=Strict", "Path=/"} {
		if !strings.Contains(c, want) {
			t.Errorf("session cookie %q lacks %s", c, want)
		}
	}
	return strings.SplitN(c, ";", 2)[0]
}

func TestPageActionsNeedSessionAndCSRF(t *testing.T) {
	eachWorld(t, testToken, func(t *testing.T, w *world) {
		if r := w.do(t, "POST", "/login", url.Values{"token": {"tok-wrong"}}, nil); r.code != 403 || r.hdr.Get("Set-Cookie") != "" {
			t.Errorf("wrong token: %d, cookie %q", r.code, r.hdr.Get("Set-Cookie"))
		}
		cookie := w.login(t)
		page := w.do(t, "GET", "/jobs/job-build-1", nil, map[string]string{"Cookie": cookie})
		m := regexp.MustCompile(`name="csrf" value="([0-9a-f]+)"`).FindStringSubmatch(page.body)
		if m == nil || !strings.Contains(page.body, `id="cancel"`) {
			t.Fatalf("logged in, the job's page has no cancel form with a CSRF token:\n%s", page.body)
		}
		csrf := m[1]
		for _, tc := range []struct {
			name string
			form url.Values
			hdr  map[string]string
		}{
			{"no session", url.Values{"csrf": {csrf}}, nil},
			{"forged session", url.Values{"csrf": {csrf}}, map[string]string{"Cookie": sessionCookie + "=" + strings.Repeat("0", 64)}},
			{"the token as session", url.Values{"csrf": {csrf}}, map[string]string{"Cookie": sessionCookie + "=" + testToken}},
			{"no CSRF", url.Values{}, map[string]string{"Cookie": cookie}},
			{"wrong CSRF", url.Values{"csrf": {"00" + csrf[2:]}}, map[string]string{"Cookie": cookie}},
		} {
			if r := w.do(t, "POST", "/jobs/job-build-1/cancel", tc.form, tc.hdr); r.code != 403 {
				t.Errorf("%s: %d, want 403", tc.name, r.code)
			}
		}
		if s := w.state(t, "job-build-1"); s != job.Ready {
			t.Fatalf("refused cancels changed the job: %s", s)
		}
		if r := w.do(t, "GET", "/jobs/job-build-1/cancel", nil, map[string]string{"Cookie": cookie}); r.code != 405 {
			t.Errorf("GET on an action: %d, want 405", r.code)
		}
		r := w.do(t, "POST", "/jobs/job-build-1/cancel", url.Values{"csrf": {csrf}}, map[string]string{"Cookie": cookie})
		if r.code != 303 || r.hdr.Get("Location") != "/jobs/job-build-1" {
			t.Fatalf("cancel: %d to %q", r.code, r.hdr.Get("Location"))
		}
		if s := w.state(t, "job-build-1"); s != job.Cancelled {
			t.Errorf("after cancel: %s", s)
		}
		if r := w.do(t, "POST", "/logout", url.Values{"csrf": {csrf}}, map[string]string{"Cookie": cookie}); r.code != 303 ||
			!strings.Contains(r.hdr.Get("Set-Cookie"), "Max-Age=0") {
			t.Errorf("logout: %d %q", r.code, r.hdr.Get("Set-Cookie"))
		}
	})
}

func TestNoTokenMeansNoActions(t *testing.T) {
	w := newWorld(t, "")
	if r := w.do(t, "POST", "/api/v1/jobs/job-lint/cancel", nil, map[string]string{"Authorization": "Bearer "}); r.code != 403 {
		t.Errorf("empty bearer with no token: %d, want 403", r.code)
	}
	if r := w.do(t, "POST", "/login", url.Values{"token": {""}}, nil); r.code != 403 {
		t.Errorf("login with no token: %d, want 403", r.code)
	}
	session, err := w.srv.sessions.open(w.clock.Now()) // as if a login had been possible
	if err != nil {
		t.Fatal(err)
	}
	if r := w.do(t, "POST", "/jobs/job-lint/cancel", url.Values{"csrf": {w.srv.sessions.csrf(session)}},
		map[string]string{"Cookie": sessionCookie + "=" + session}); r.code != 403 {
		t.Errorf("page cancel with no token: %d, want 403", r.code)
	}
	if s := w.state(t, "job-lint"); s != job.Ready {
		t.Errorf("job-lint: %s", s)
	}
	if body := w.get(t, "/jobs/job-lint").body; strings.Contains(body, "Log in") || !strings.Contains(body, "read-only") {
		t.Errorf("with actions off the page offers a login")
	}
}

func TestTheTokenIsInNoResponseNorLog(t *testing.T) {
	w := newWorld(t, testToken)
	cookie := w.login(t)
	logged := map[string]string{"Cookie": cookie}
	bearer := map[string]string{"Authorization": "Bearer " + testToken}
	var bodies []response
	for _, path := range []string{"/", "/waits", "/jobs", "/jobs/job-sync-repos", "/jobs/job-deploy", "/runs", "/runs/run-nightly-7",
		"/hosts", "/login", "/jobs?state=bad", "/jobs/nope", "/api/v1/quotas", "/api/v1/waits", "/api/v1/jobs",
		"/api/v1/jobs/job-sync-repos", "/api/v1/runs", "/api/v1/runs/run-nightly-7", "/api/v1/hosts", "/healthz"} {
		bodies = append(bodies, w.do(t, "GET", path, nil, nil), w.do(t, "GET", path, nil, logged))
	}
	bodies = append(bodies,
		w.do(t, "POST", "/login", url.Values{"token": {testToken + "x"}}, nil),
		w.do(t, "POST", "/login", url.Values{"token": {testToken}}, nil),
		w.do(t, "POST", "/api/v1/jobs/job-lint/cancel", nil, map[string]string{"Authorization": "Bearer " + testToken + "x"}),
		w.do(t, "POST", "/api/v1/jobs/job-lint/cancel", nil, bearer),
		w.do(t, "POST", "/api/v1/jobs/job-lint/cancel", nil, bearer),
		w.do(t, "POST", "/jobs/job-lint/cancel", url.Values{}, logged))
	for i, r := range bodies {
		if strings.Contains(r.body, testToken) {
			t.Errorf("response %d holds the token", i)
		}
		for k, vs := range r.hdr {
			if strings.Contains(strings.Join(vs, " "), testToken) {
				t.Errorf("response %d's %s header holds the token", i, k)
			}
		}
	}
	if strings.Contains(w.logs.String(), testToken) {
		t.Errorf("the log holds the token")
	}
}

func TestProviderTextIsEscapedAndBounded(t *testing.T) {
	w := newWorld(t, testToken)
	evil := "<script>alert(1)</script>\x1b[31m" + strings.Repeat("x", 5000)
	if _, err := w.st.RegisterWaiter(w.ctx, store.Waiter{Hostname: "h", PID: 9, Command: evil, Key: w.key, Stage: evil,
		WaitUntil: reset, StartedAt: t0}); err != nil {
		t.Fatal(err)
	}
	body := w.get(t, "/waits").body
	if strings.Contains(body, "<script>") || strings.Contains(body, "\x1b") {
		t.Errorf("provider text is not escaped")
	}
	if !strings.Contains(body, "&lt;script&gt;alert(1)&lt;/script&gt;") {
		t.Errorf("the escaped command is missing")
	}
	if strings.Contains(body, strings.Repeat("x", maxCell+1)) {
		t.Errorf("a cell holds more than %d bytes", maxCell)
	}
}

type failingStore struct{ store.Store }

func (failingStore) CountJobs(context.Context) (map[job.State]int, error) {
	return nil, errors.New("disk gone")
}

func TestHealthz(t *testing.T) {
	w := newWorld(t, testToken)
	if r := w.get(t, "/healthz"); r.code != 200 {
		t.Errorf("healthz: %d", r.code)
	}
	alive := false
	for _, cfg := range []Config{
		{Store: w.st, Jobs: w.jobs, Alive: func() bool { return alive }, Logger: slog.New(slog.DiscardHandler)},
		{Store: failingStore{w.st}, Jobs: w.jobs, Logger: slog.New(slog.DiscardHandler)},
	} {
		srv, err := New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		rec := httptest.NewRecorder()
		srv.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/healthz", nil))
		if rec.Code != 503 {
			t.Errorf("healthz: %d, want 503", rec.Code)
		}
	}
}

func TestMetricsMountedWhenGiven(t *testing.T) {
	w := newWorld(t, testToken)
	if r := w.get(t, "/metrics"); r.code != 404 {
		t.Errorf("no metrics handler: %d", r.code)
	}
	srv, err := New(Config{Store: w.st, Jobs: w.jobs, Metrics: http.HandlerFunc(func(rw http.ResponseWriter, _ *http.Request) {
		_, _ = io.WriteString(rw, "layover_jobs 5\n")
	})})
	if err != nil {
		t.Fatal(err)
	}
	rec := httptest.NewRecorder()
	srv.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	if rec.Code != 200 || rec.Body.String() != "layover_jobs 5\n" || rec.Header().Get("X-Frame-Options") != "DENY" {
		t.Errorf("metrics: %d %q", rec.Code, rec.Body)
	}
}

func TestRunCancelNeedsTheTokenAndCancelsAsFlowCancel(t *testing.T) {
	eachWorld(t, testToken, func(t *testing.T, w *world) {
		if r := w.do(t, "POST", "/api/v1/runs/run-nightly-7/cancel", nil, map[string]string{"Authorization": "Bearer tok-wrong"}); r.code != 403 {
			t.Errorf("wrong token: %d", r.code)
		}
		if r := w.do(t, "POST", "/runs/run-nightly-7/cancel", url.Values{}, map[string]string{"Cookie": w.login(t)}); r.code != 403 {
			t.Errorf("no CSRF: %d", r.code)
		}
		if r := w.get(t, "/runs/run-nightly-7/cancel"); r.code != 405 {
			t.Errorf("GET on the cancel: %d, want 405", r.code)
		}
		if run, _ := w.st.Run(w.ctx, "run-nightly-7"); run.Status != "paused" {
			t.Fatalf("refused cancels changed the run: %s", run.Status)
		}
		auth := map[string]string{"Authorization": "Bearer " + testToken}
		got := decode[view.FlowRunDetail](t, w.do(t, "POST", "/api/v1/runs/run-nightly-7/cancel", nil, auth))
		states := map[string]string{}
		for _, task := range got.Tasks {
			states[task.Name] = task.State
		}
		if got.Run.Status != "cancelled" || states["fetch"] != "complete" || states["review"] != "cancelled" || states["report"] != "cancelled" {
			t.Errorf("after cancel: run %s, tasks %v", got.Run.Status, states)
		}
		if r := w.do(t, "POST", "/api/v1/runs/run-nightly-7/cancel", nil, auth); r.code != 409 || !strings.Contains(r.body, "cancelled already") {
			t.Errorf("cancel of a cancelled run: %d %s", r.code, r.body)
		}
		if r := w.do(t, "POST", "/api/v1/runs/run-nope/cancel", nil, auth); r.code != 404 {
			t.Errorf("cancel of no run: %d", r.code)
		}
		if body := w.do(t, "GET", "/runs/run-nightly-7", nil, map[string]string{"Cookie": w.login(t)}).body; strings.Contains(body, `id="cancel-run"`) {
			t.Errorf("a cancelled run still offers its cancel")
		}
	})
}

func TestWrongTokensAreLimited(t *testing.T) {
	w := newWorld(t, testToken)
	auth := map[string]string{"Authorization": "Bearer " + testToken}
	for i := range maxWrongTokens {
		var r response
		if i%2 == 0 {
			r = w.do(t, "POST", "/api/v1/jobs/job-lint/cancel", nil, map[string]string{"Authorization": "Bearer guess-" + fmt.Sprint(i)})
		} else {
			r = w.do(t, "POST", "/login", url.Values{"token": {"guess-" + fmt.Sprint(i)}}, nil)
		}
		if r.code != 403 {
			t.Fatalf("wrong token %d: %d, want 403", i+1, r.code)
		}
	}
	w.clock.Advance(wrongTokenWindow / 2)
	for _, r := range []response{
		w.do(t, "POST", "/api/v1/jobs/job-lint/cancel", nil, auth),
		w.do(t, "POST", "/login", url.Values{"token": {testToken}}, nil),
	} {
		if r.code != 429 || r.hdr.Get("Retry-After") != "31" || !strings.Contains(r.body, "try again in 30s") {
			t.Errorf("after %d wrong tokens the right one: %d, Retry-After %q: %s", maxWrongTokens, r.code, r.hdr.Get("Retry-After"), r.body)
		}
	}
	if s := w.state(t, "job-lint"); s != job.Ready {
		t.Fatalf("a refused cancel changed the job: %s", s)
	}
	w.clock.Advance(wrongTokenWindow / 2)
	if r := w.do(t, "POST", "/api/v1/jobs/job-lint/cancel", nil, auth); r.code != 200 {
		t.Errorf("after the window the right token: %d %s", r.code, r.body)
	}
}

// On a loopback bind only requests naming this machine are answered: a
// page of another site whose name resolves to 127.0.0.1 (DNS rebinding)
// gets 421 for every path, the API and /healthz too.
func TestLoopbackBindAnswersOnlyLocalHostNames(t *testing.T) {
	w := newWorld(t, testToken)
	srv, err := New(Config{Store: w.st, Jobs: w.jobs, Clock: w.clock, Token: testToken, LoopbackOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	do := func(host, path string) int {
		req := httptest.NewRequest("GET", path, nil)
		req.Host = host
		rec := httptest.NewRecorder()
		srv.Handler().ServeHTTP(rec, req)
		return rec.Code
	}
	for _, host := range []string{"localhost", "LocalHost:9464", "127.0.0.1", "127.0.0.1:9464", "[::1]", "[::1]:9464"} {
		if code := do(host, "/api/v1/jobs"); code != 200 {
			t.Errorf("Host %q: %d, want 200", host, code)
		}
	}
	for _, host := range []string{"rebind.example", "rebind.example:9464", "localhost.rebind.example", "127.0.0.2:9464",
		"127.0.0.1.nip.io", "", "[::2]:9464", "0.0.0.0:9464"} {
		for _, path := range []string{"/", "/api/v1/jobs", "/healthz", "/login"} {
			if code := do(host, path); code != http.StatusMisdirectedRequest {
				t.Errorf("Host %q %s: %d, want 421", host, path, code)
			}
		}
	}
	// Off a loopback bind (the token guards it) any name is answered.
	if r := w.get(t, "/api/v1/jobs"); r.code != 200 {
		t.Errorf("Host example.com without LoopbackOnly: %d, want 200", r.code)
	}
}

// doFrom is do with the request from client's address (host:port).
func (w *world) doFrom(t *testing.T, client, method, path string, body url.Values, hdr map[string]string) response {
	t.Helper()
	var rd io.Reader
	if body != nil {
		rd = strings.NewReader(body.Encode())
	}
	req := httptest.NewRequest(method, path, rd)
	req.RemoteAddr = client
	if body != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	rec := httptest.NewRecorder()
	w.srv.Handler().ServeHTTP(rec, req)
	return response{code: rec.Code, hdr: rec.Header(), body: rec.Body.String()}
}

// A guesser's wrong tokens lock out the guesser's address only: the
// operator at another address logs in and acts meanwhile, and the
// guesser's other ports are the same client.
func TestWrongTokensLockOutTheirClientOnly(t *testing.T) {
	w := newWorld(t, testToken)
	for i := range maxWrongTokens {
		port := fmt.Sprintf("198.51.100.7:%d", 40000+i) // a new connection each time
		if r := w.doFrom(t, port, "POST", "/login", url.Values{"token": {fmt.Sprint("guess-", i)}}, nil); r.code != 403 {
			t.Fatalf("wrong token %d: %d, want 403", i+1, r.code)
		}
	}
	if r := w.doFrom(t, "198.51.100.7:50000", "POST", "/login", url.Values{"token": {testToken}}, nil); r.code != 429 {
		t.Errorf("the guesser with the right token: %d, want 429", r.code)
	}
	if r := w.doFrom(t, "[2001:db8::1]:443", "POST", "/login", url.Values{"token": {testToken}}, nil); r.code != 303 {
		t.Errorf("the operator at another address: %d, want 303 (logged in): %s", r.code, r.body)
	}
	if r := w.doFrom(t, "203.0.113.9:1", "POST", "/api/v1/jobs/job-lint/cancel", nil,
		map[string]string{"Authorization": "Bearer " + testToken}); r.code != 200 {
		t.Errorf("the API from another address: %d, want 200: %s", r.code, r.body)
	}
}

// Wrong tokens from many addresses, each under its own limit, still end
// at the overall cap: then every client is refused until the window ends.
func TestWrongTokensFromManyClientsHitTheOverallCap(t *testing.T) {
	w := newWorld(t, testToken)
	for i := range maxWrongTokensAll {
		client := fmt.Sprintf("10.%d.%d.1:1", i/maxWrongTokens/256, i/maxWrongTokens%256)
		if r := w.doFrom(t, client, "POST", "/api/v1/jobs/job-lint/cancel", nil,
			map[string]string{"Authorization": fmt.Sprint("Bearer guess-", i)}); r.code != 403 {
			t.Fatalf("wrong token %d from %s: %d, want 403", i+1, client, r.code)
		}
	}
	auth := map[string]string{"Authorization": "Bearer " + testToken}
	if r := w.doFrom(t, "192.0.2.200:1", "POST", "/api/v1/jobs/job-lint/cancel", nil, auth); r.code != 429 {
		t.Errorf("a fresh client after %d wrong tokens overall: %d, want 429", maxWrongTokensAll, r.code)
	}
	w.clock.Advance(wrongTokenWindow)
	if r := w.doFrom(t, "192.0.2.200:1", "POST", "/api/v1/jobs/job-lint/cancel", nil, auth); r.code != 200 {
		t.Errorf("after the window: %d, want 200: %s", r.code, r.body)
	}
}

// The per-client counts stay bounded however many addresses guess; once
// their windows end, room is made for new clients.
func TestWrongTokenClientsAreBounded(t *testing.T) {
	var l wrongTokens
	now := t0
	for i := range 3 * maxTrackedClients {
		l.wrong(fmt.Sprintf("client-%d", i), now)
	}
	if n := len(l.clients); n > maxTrackedClients {
		t.Fatalf("%d clients tracked, want at most %d", n, maxTrackedClients)
	}
	now = now.Add(wrongTokenWindow)
	for range maxWrongTokens {
		l.wrong("late", now)
	}
	if _, ok := l.blocked("late", now); !ok {
		t.Errorf("a client after the old windows ended is not tracked: %d wrong tokens, not blocked", maxWrongTokens)
	}
	if n := len(l.clients); n > maxTrackedClients {
		t.Errorf("%d clients tracked, want at most %d", n, maxTrackedClients)
	}
}

// A login posted from another site is refused before the token is even
// looked at: no session, no wrong token counted.
func TestLoginFromAnotherSiteIsRefused(t *testing.T) {
	w := newWorld(t, testToken)
	for _, hdr := range []map[string]string{
		{"Sec-Fetch-Site": "cross-site"},
		{"Sec-Fetch-Site": "same-site"},
		{"Origin": "https://evil.example"},
		{"Origin": "http://example.com.evil.example"},
		{"Origin": "https://evil.example", "Sec-Fetch-Site": "same-origin"},
		{"Origin": "null"},
	} {
		r := w.do(t, "POST", "/login", url.Values{"token": {testToken}}, hdr)
		if r.code != 403 || r.hdr.Get("Set-Cookie") != "" {
			t.Errorf("login with %v: %d, cookie %q; want 403 and none", hdr, r.code, r.hdr.Get("Set-Cookie"))
		}
	}
	// The console's own form (httptest's Host is example.com), and a
	// client that names no origin.
	for _, hdr := range []map[string]string{
		{"Origin": "http://example.com", "Sec-Fetch-Site": "same-origin"},
		{"Origin": "null", "Sec-Fetch-Site": "same-origin"}, // Chromium's, under Referrer-Policy no-referrer
		{"Sec-Fetch-Site": "none"},
		nil,
	} {
		if r := w.do(t, "POST", "/login", url.Values{"token": {testToken}}, hdr); r.code != 303 {
			t.Errorf("login with %v: %d, want 303", hdr, r.code)
		}
	}
}

// csrfOf logs in and returns the session cookie header and the CSRF token
// of its forms, as the job page shows it.
func (w *world) csrfOf(t *testing.T) (cookie, csrf string) {
	t.Helper()
	cookie = w.login(t)
	page := w.do(t, "GET", "/jobs/job-build-1", nil, map[string]string{"Cookie": cookie})
	m := regexp.MustCompile(`name="csrf" value="([0-9a-f]+)"`).FindStringSubmatch(page.body)
	if m == nil {
		t.Fatalf("logged in, the job's page has no CSRF token:\n%s", page.body)
	}
	return cookie, m[1]
}

// Logout ends the session on the server: the old cookie, replayed with
// its CSRF token, acts no more; another login's session goes on, and the
// CSRF token of one session is not another's.
func TestLogoutEndsTheSession(t *testing.T) {
	w := newWorld(t, testToken)
	cookie, csrf := w.csrfOf(t)
	other, otherCSRF := w.csrfOf(t)
	if cookie == other || csrf == otherCSRF {
		t.Fatalf("two logins share a session (%v) or a CSRF token (%v)", cookie == other, csrf == otherCSRF)
	}
	if r := w.do(t, "POST", "/jobs/job-build-1/cancel", url.Values{"csrf": {otherCSRF}}, map[string]string{"Cookie": cookie}); r.code != 403 {
		t.Errorf("one session's cookie with another's CSRF token: %d, want 403", r.code)
	}
	if r := w.do(t, "POST", "/logout", url.Values{"csrf": {csrf}}, map[string]string{"Cookie": cookie}); r.code != 303 {
		t.Fatalf("logout: %d %s", r.code, r.body)
	}
	if r := w.do(t, "POST", "/jobs/job-build-1/cancel", url.Values{"csrf": {csrf}}, map[string]string{"Cookie": cookie}); r.code != 403 {
		t.Errorf("the logged-out cookie replayed: %d, want 403", r.code)
	}
	if body := w.do(t, "GET", "/jobs/job-build-1", nil, map[string]string{"Cookie": cookie}).body; strings.Contains(body, csrf) ||
		!strings.Contains(body, "Log in") {
		t.Errorf("the logged-out cookie still shows a logged-in page")
	}
	if s := w.state(t, "job-build-1"); s != job.Ready {
		t.Fatalf("a refused cancel changed the job: %s", s)
	}
	if r := w.do(t, "POST", "/jobs/job-build-1/cancel", url.Values{"csrf": {otherCSRF}}, map[string]string{"Cookie": other}); r.code != 303 {
		t.Errorf("the other session after the first's logout: %d, want 303", r.code)
	}
}

// A session ends sessionLifetime after its login, on the server's clock.
func TestSessionsExpire(t *testing.T) {
	w := newWorld(t, testToken)
	cookie, csrf := w.csrfOf(t)
	if c := w.do(t, "POST", "/login", url.Values{"token": {testToken}}, nil).hdr.Get("Set-Cookie"); !strings.Contains(c,
		fmt.Sprintf("Max-Age=%d", int(sessionLifetime.Seconds()))) {
		t.Errorf("session cookie %q does not end with the session", c)
	}
	w.clock.Advance(sessionLifetime - time.Second)
	if r := w.do(t, "POST", "/jobs/job-build-1/approve", url.Values{"csrf": {csrf}}, map[string]string{"Cookie": cookie}); r.code == 403 {
		t.Errorf("a second before its end the session is refused: %s", r.body)
	}
	w.clock.Advance(time.Second)
	if r := w.do(t, "POST", "/jobs/job-build-1/cancel", url.Values{"csrf": {csrf}}, map[string]string{"Cookie": cookie}); r.code != 403 {
		t.Errorf("at its end the session still acts: %d, want 403", r.code)
	}
	if s := w.state(t, "job-build-1"); s != job.Ready {
		t.Fatalf("an expired session's cancel changed the job: %s", s)
	}
}

// However many logins there are, at most maxSessions are kept: the
// newest are open, the one closest to its end was ended.
func TestSessionsAreBounded(t *testing.T) {
	ss, err := newSessions()
	if err != nil {
		t.Fatal(err)
	}
	now := t0
	first, err := ss.open(now)
	if err != nil {
		t.Fatal(err)
	}
	var last string
	for range maxSessions + 10 {
		now = now.Add(time.Second)
		if last, err = ss.open(now); err != nil {
			t.Fatal(err)
		}
	}
	if n := len(ss.expiry); n > maxSessions {
		t.Errorf("%d sessions kept, want at most %d", n, maxSessions)
	}
	if ss.valid(first, now) || !ss.valid(last, now) {
		t.Errorf("the oldest session is open (%v) or the newest is not (%v)", ss.valid(first, now), !ss.valid(last, now))
	}
}
