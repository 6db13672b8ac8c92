package server

import (
	"context"
	"net/http/httptest"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// chromium finds a Chromium or Chrome to drive: $LAYOVER_CHROMIUM, else
// the usual names on $PATH. Without one the browser tests skip, unless CI
// is set: then they fail, as CI installs Chromium (.ci/run).
func chromium(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("LAYOVER_CHROMIUM"); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "chrome", "headless-shell"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("CI") != "" {
		t.Fatal("no Chromium found (set LAYOVER_CHROMIUM or install the chromium package); CI needs the browser tests")
	}
	t.Skip("no Chromium found; set LAYOVER_CHROMIUM to run the browser tests")
	return ""
}

// startBrowser starts Chromium under parent and returns the context that
// drives it, ended with the test. A browser that fails to start (on a
// loaded machine Chromium has exited before it listened) is started again,
// up to three times: the start is the machine's, not the console's.
func startBrowser(t *testing.T, parent context.Context, exe string, opts []chromedp.ExecAllocatorOption) context.Context {
	t.Helper()
	var err error
	for try := 1; try <= 3; try++ {
		actx, cancelAlloc := chromedp.NewExecAllocator(parent, opts...)
		ctx, cancelBrowser := chromedp.NewContext(actx)
		if err = chromedp.Do(ctx); err == nil {
			t.Cleanup(func() { cancelBrowser(); cancelAlloc() })
			return ctx
		}
		cancelBrowser()
		cancelAlloc()
		t.Logf("start %s (try %d): %v", exe, try, err)
	}
	t.Fatalf("start %s: %v", exe, err)
	return nil
}

// TestConsoleInABrowser drives the console in headless Chromium over a
// SQLite store holding real jobs and waits: each page shows what a person
// needs, and a person who logs in with the token cancels a job and sees it
// cancelled. One browser serves every subtest.
func TestConsoleInABrowser(t *testing.T) {
	exe := chromium(t)
	w := newWorld(t, testToken)
	ts := httptest.NewServer(w.srv.Handler())
	defer ts.Close()

	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(exe), chromedp.NoSandbox, chromedp.DisableGPU)
	// The deadline only ends a hung browser; no assertion depends on time.
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	ctx = startBrowser(t, ctx, exe, opts)

	do := func(t *testing.T, steps ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		if err := chromedp.Do(ctx, steps...); err != nil {
			t.Fatal(err)
		}
	}
	text := func(t *testing.T, sel string) string {
		t.Helper()
		s, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(sel)))
		if err != nil {
			t.Fatalf("text of %s: %v", sel, err)
		}
		return s
	}
	eval := func(t *testing.T, js string) []string {
		t.Helper()
		v, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](js))
		if err != nil {
			t.Fatalf("%s: %v", js, err)
		}
		return v
	}
	// see loads path and returns the text a person reads in the element
	// sel selects.
	see := func(t *testing.T, path, sel string) string {
		t.Helper()
		do(t, chromedp.Navigate(ts.URL+path))
		return text(t, sel)
	}
	want := func(t *testing.T, what, text string, wants ...string) {
		t.Helper()
		for _, s := range wants {
			if !strings.Contains(text, s) {
				t.Errorf("%s: a person does not see %q in:\n%s", what, s, text)
			}
		}
	}

	t.Run("quotas", func(t *testing.T) {
		want(t, "quotas", see(t, "/", "#quotas"), "api.github.com", "octocat", "core", "0 / 5000", "500",
			"2026-12-02 05:42:00 UTC (in 42m0s)", "Quota wait until 2026-12-02 05:42:00 UTC")
		points := eval(t, `[...document.querySelectorAll("svg.burn circle.obs")].map(c => c.getAttribute("cy"))`)
		if len(points) != 4 || points[3] != "58.0" {
			t.Errorf("burn chart: want 4 observations ending at the bottom (nothing left), got %v", points)
		}
		if bg := eval(t, `[getComputedStyle(document.querySelector("header")).backgroundColor]`); bg[0] != "rgb(34, 34, 51)" {
			t.Errorf("the stylesheet did not apply under the CSP: header background %q", bg)
		}
	})
	t.Run("waits", func(t *testing.T) {
		want(t, "keys", see(t, "/waits", "#keys"), "api.github.com/octocat/core", "Quota wait", "2026-12-02 05:42:00 UTC (in 42m0s)")
		want(t, "deferred jobs", text(t, "#deferred"), "job-sync-repos", "sync repos",
			"2026-12-02 05:43:00 UTC (in 43m0s)", "retained")
		want(t, "waiting commands", text(t, "#waiting"), "laptop", "4242", "api.github.com/octocat/core",
			"gh api /repos/octo/demo/issues", "2026-12-02 05:42:00 UTC (in 42m0s)")
	})
	t.Run("job with receipt", func(t *testing.T) {
		want(t, "job page", see(t, "/jobs/job-sync-repos", "main"), "deferred", "Receipt 1, issued 2026-12-02 05:00:00 UTC",
			"Transitions", "submitted")
	})
	t.Run("jobs filter", func(t *testing.T) {
		want(t, "jobs", see(t, "/jobs", "#jobs"), "job-build-1", "job-build-2", "job-lint", "job-deploy", "job-sync-repos")
		do(t, chromedp.SetValue(chromedp.CSS("#state"), "deferred"), chromedp.Click(chromedp.CSS("#search")),
			chromedp.WaitReady(chromedp.CSS(`option[value="deferred"][selected]`)))
		rows := text(t, "#jobs")
		want(t, "deferred jobs", rows, "job-sync-repos")
		if strings.Contains(rows, "job-lint") {
			t.Errorf("the deferred filter lists a ready job:\n%s", rows)
		}
	})
	t.Run("run with a paused task", func(t *testing.T) {
		want(t, "runs", see(t, "/runs", "#runs"), "run-nightly-7", "nightly-review", "paused", "review: paused")
		want(t, "tasks", see(t, "/runs/run-nightly-7", "#tasks"),
			"claude-code five_hour: resets 2026-12-02 08:00:00 UTC (in 3h0m0s)", "needs review")
		needs := eval(t, `[...document.querySelectorAll("#tasks tr")].slice(1).map(tr => tr.cells[0].textContent + "<-" +
			[...tr.querySelectorAll("ul.needs li")].map(li => li.textContent).join("+"))`)
		if strings.Join(needs, " ") != "fetch<- review<-fetch report<-review" {
			t.Errorf("task graph: %v, want review needing fetch and report needing review", needs)
		}
	})
	t.Run("hosts", func(t *testing.T) {
		want(t, "hosts", see(t, "/hosts", "#hosts"), "host-buildbox-1", "buildbox", "7001", "(5s ago)", "30s", "live")
	})
	t.Run("log in and cancel", func(t *testing.T) {
		want(t, "before login", see(t, "/jobs/job-build-2", "#actions"), "Log in")
		do(t, chromedp.Navigate(ts.URL+"/login"), chromedp.SendKeys(chromedp.CSS("#token"), testToken),
			chromedp.Click(chromedp.CSS("#login")), chromedp.WaitVisible(chromedp.CSS("#filter")))
		if state := see(t, "/jobs/job-build-2", "#job-state"); state != "ready" {
			t.Fatalf("job-build-2 shows %q before the cancel", state)
		}
		html, err := chromedp.Run(ctx, chromedp.OuterHTML(chromedp.CSS("html")))
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(html, testToken) {
			t.Fatal("a page holds the token")
		}
		do(t, chromedp.Click(chromedp.CSS("#cancel")), chromedp.WaitNotPresent(chromedp.CSS("#cancel")))
		if state := text(t, "#job-state"); state != "cancelled" {
			t.Errorf("after pressing cancel the page shows %q", state)
		}
		want(t, "transitions", text(t, "#transitions"), "cancelled by the operator")
		if s := w.state(t, "job-build-2"); s != "cancelled" {
			t.Errorf("the store holds %s", s)
		}
		if status := see(t, "/runs/run-nightly-7", "#run-status"); status != "paused" {
			t.Fatalf("the run shows %q before its cancel", status)
		}
		do(t, chromedp.Click(chromedp.CSS("#cancel-run")), chromedp.WaitNotPresent(chromedp.CSS("#cancel-run")))
		if status := text(t, "#run-status"); status != "cancelled" {
			t.Errorf("after pressing cancel run the page shows %q", status)
		}
		states := eval(t, `[...document.querySelectorAll("#tasks tbody tr")].map(tr => tr.cells[0].textContent + "=" + tr.cells[2].textContent)`)
		if got := strings.Join(states, " "); got != "fetch=complete review=cancelled report=cancelled" {
			t.Errorf("tasks after the run's cancel: %s", got)
		}
	})
}
