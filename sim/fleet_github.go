package sim

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/layoverhq/layover/clock"
)

// fleetAPIHost is the API host a strategy's fake GitHub answers as (its
// GITHUB_API_URL), one per strategy so that the strategies run side by
// side. The requests never leave the process: the transport sends them
// to fakeGitHub, and GitHub's free /rate_limit (which the pass admission
// reads through net/http's default transport) is answered by fleetNet.
func fleetAPIHost(strategy string) string { return strategy + ".fleet.invalid" }

// windowQuota is the fake provider's quota: limit calls in each window,
// the windows back to back from start (a fixed reset every window, as
// GitHub's hourly reset looks to a fleet that calls all the time).
type windowQuota struct {
	limit  int64
	window time.Duration
	start  time.Time
	idx    int64 // the current window
	used   int64
}

// roll moves the quota to the window of now.
func (q *windowQuota) roll(now time.Time) {
	if i := int64(now.Sub(q.start) / q.window); i != q.idx {
		q.idx, q.used = i, 0
	}
}

// resetAt is when the window of now ends.
func (q *windowQuota) resetAt(now time.Time) time.Time {
	q.roll(now)
	return q.start.Add(time.Duration(q.idx+1) * q.window)
}

// take charges one call at now: false when the window has none left.
func (q *windowQuota) take(now time.Time) bool {
	q.roll(now)
	if q.used >= q.limit {
		return false
	}
	q.used++
	return true
}

func (q *windowQuota) remaining(now time.Time) int64 {
	q.roll(now)
	return q.limit - q.used
}

// fakeGitHub answers the fleet's calls from the window quota as GitHub
// does: x-ratelimit-* headers on every answer, 403 "API rate limit
// exceeded" once the window is spent, /rate_limit for free. Not safe for
// concurrent use: the simulation is one goroutine.
type fakeGitHub struct {
	q   *windowQuota
	clk clock.Clock
	// onCall is told of every charged call, accepted or not.
	onCall func(accepted bool)
}

func (g *fakeGitHub) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Body != nil {
		_ = req.Body.Close()
	}
	now := g.clk.Now()
	if strings.HasSuffix(req.URL.Path, "/rate_limit") {
		reset := g.q.resetAt(now).Unix()
		rem := g.q.remaining(now)
		entry := fmt.Sprintf(`{"limit":%d,"used":%d,"remaining":%d,"reset":%d}`, g.q.limit, g.q.limit-rem, rem, reset)
		graphql := fmt.Sprintf(`{"limit":5000,"used":0,"remaining":5000,"reset":%d}`, reset)
		body := `{"resources":{"core":` + entry + `,"graphql":` + graphql + `},"rate":` + entry + `}`
		return g.reply(req, http.StatusOK, now, body), nil
	}
	ok := g.q.take(now)
	if g.onCall != nil {
		g.onCall(ok)
	}
	if !ok {
		return g.reply(req, http.StatusForbidden, now,
			`{"message":"API rate limit exceeded for user ID 1.","documentation_url":"https://docs.github.com/rest/overview/resources-in-the-rest-api#rate-limiting"}`), nil
	}
	return g.reply(req, http.StatusOK, now, `{}`), nil
}

func (g *fakeGitHub) reply(req *http.Request, status int, now time.Time, body string) *http.Response {
	h := http.Header{}
	h.Set("Content-Type", "application/json; charset=utf-8")
	h.Set("Date", now.UTC().Format(http.TimeFormat))
	h.Set("X-Ratelimit-Limit", strconv.FormatInt(g.q.limit, 10))
	rem := g.q.remaining(now)
	h.Set("X-Ratelimit-Remaining", strconv.FormatInt(rem, 10))
	h.Set("X-Ratelimit-Used", strconv.FormatInt(g.q.limit-rem, 10))
	h.Set("X-Ratelimit-Reset", strconv.FormatInt(g.q.resetAt(now).Unix(), 10))
	h.Set("X-Ratelimit-Resource", "core")
	return &http.Response{StatusCode: status, Status: strconv.Itoa(status) + " " + http.StatusText(status),
		Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1, Header: h, Request: req,
		Body: io.NopCloser(bytes.NewReader([]byte(body))), ContentLength: int64(len(body))}
}

// fleetNet stands in for http.DefaultTransport while a fleet runs: the
// fake GitHub answers its own host, and every other request is counted
// and refused, as networkGuard does.
type fleetNet struct {
	fakes   map[string]*fakeGitHub // by API host; read-only while installed
	refused atomic.Int64
	prev    http.RoundTripper
}

func guardFleetNetwork(fakes map[string]*fakeGitHub) *fleetNet {
	guardMu.Lock()
	n := &fleetNet{fakes: fakes, prev: http.DefaultTransport}
	http.DefaultTransport = n
	return n
}

func (n *fleetNet) RoundTrip(req *http.Request) (*http.Response, error) {
	if gh, ok := n.fakes[req.URL.Host]; ok && strings.HasSuffix(req.URL.Path, "/rate_limit") {
		return gh.RoundTrip(req)
	}
	n.refused.Add(1)
	if req.Body != nil {
		_ = req.Body.Close()
	}
	return nil, errNoNetwork
}

func (n *fleetNet) restore() {
	http.DefaultTransport = n.prev
	guardMu.Unlock()
}
