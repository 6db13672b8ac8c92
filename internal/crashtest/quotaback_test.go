package crashtest

import (
	"math/rand/v2"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/layoverhq/layover/internal/fake"
)

// rateLimited is GitHub's 403 for an exhausted core quota. Scripted, it
// costs nothing, so /rate_limit still shows room: what the host sees when
// the reset comes between a job's rejected call and its own check, as it
// did in the crash test now and then.
func rateLimited() fake.Response {
	return fake.Response{Status: http.StatusForbidden,
		Body: `{"message":"API rate limit exceeded for user ID 1.","documentation_url":"https://docs.github.com/rest/overview/rate-limits-for-the-rest-api"}`}
}

// A job rejected for quota whose fresh check finds the quota has room again
// runs again after the margin (here 0), once, instead of waiting the
// 15-minute probe of an unknown reset; a second such rejection in a row
// probes on the backoff.
func TestServeRunsAgainWhenQuotaIsBack(t *testing.T) {
	w := newWorld(t, rand.New(rand.NewPCG(1, 2)))
	w.gh.Script("/repos/octo/demo", rateLimited())
	srv := w.startServe(1)
	defer srv.kill()
	submit := func(id string) {
		t.Helper()
		r, err := w.layover("submit", "--id", id, "--quota", "github", "--", "gh", "api", "/repos/octo/demo")
		if err != nil || r.code != 0 {
			t.Fatalf("submit %s: %v %+v", id, err, r)
		}
	}
	await := func(id string, done func(shownJob) bool) (shownJob, string) {
		t.Helper()
		deadline := time.Now().Add(20 * time.Second)
		for {
			j, raw, err := w.show(id)
			if err != nil {
				t.Fatal(err)
			}
			if done(j) {
				return j, raw
			}
			if time.Now().After(deadline) {
				t.Fatalf("job %s is %s (%s):\n%s", id, j.State, j.Stage, raw)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}

	submit("once")
	j, raw := await("once", func(j shownJob) bool { return j.State == "complete" })
	var roomAgain bool
	for _, tr := range j.Transitions {
		roomAgain = roomAgain || (tr.To == "deferred" && strings.Contains(tr.Reason, "room again"))
	}
	if !roomAgain || len(j.Receipts) != 0 || len(j.Attempts) != 2 {
		t.Fatalf("want a deferral saying the quota has room again, no receipt, and a second attempt:\n%s", raw)
	}

	w.gh.Script("/repos/octo/demo", rateLimited(), rateLimited())
	submit("twice")
	j, raw = await("twice", func(j shownJob) bool { return j.State == "deferred" && len(j.Attempts) == 2 })
	if last := j.Transitions[len(j.Transitions)-1]; !strings.Contains(last.Reason, "probing again") ||
		!strings.HasSuffix(j.Stage, "(reset unknown)") {
		t.Fatalf("a second rejection in a row must probe on the backoff:\n%s", raw)
	}
}
