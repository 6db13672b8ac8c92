package transport_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/layoverhq/layover/quota"
	"github.com/layoverhq/layover/transport"
)

const viewerQuery = `{"query":"query { viewer { login } }"}`

// GitHub answers an exhausted GraphQL budget with a 200 whose errors[] says
// RATE_LIMITED: the query was not run. The transport reads that body, waits
// for the reset, and sends the query again.
func TestGraphQLRateLimitUnderA200IsWaitedOut(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{follow: true})
	reset := t0.Add(10 * time.Minute)
	b.gh.SetQuota(token, "graphql", 0, reset)

	req := b.request(t, context.Background(), http.MethodPost, "/graphql", strings.NewReader(viewerQuery))
	status, body, err := b.do(t, req)
	if err != nil || status != http.StatusOK {
		t.Fatalf("Do = %d, %v", status, err)
	}
	if !strings.Contains(body, `"viewer"`) || strings.Contains(body, "RATE_LIMITED") {
		t.Errorf("body %q: want the query's answer after the reset", body)
	}
	starts, bodies := b.recorded()
	if len(bodies) != 2 || bodies[0] != viewerQuery || bodies[1] != viewerQuery {
		t.Fatalf("server saw %q; want the query twice", bodies)
	}
	if starts[1].Before(reset.Add(quota.DefaultResetMargin)) {
		t.Errorf("sent again at %s, before the reset plus margin", starts[1])
	}
	evs := b.drainEvents()
	if len(evs) != 1 || evs[0].Kind != transport.WaitQuota || evs[0].Key != b.key("graphql") {
		t.Errorf("waits %+v; want one quota wait on graphql", evs)
	}
}

// In deferral mode the caller gets GitHub's 200 whole, the ledger learns the
// exhaustion, and the next query defers without being sent.
func TestGraphQLRateLimitUnderA200IsRecorded(t *testing.T) {
	t.Parallel()
	st := newMemStore()
	b := setup(t, setupOpts{opts: transport.Options{Store: st, Mode: transport.ModeDefer}})
	reset := t0.Add(10 * time.Minute)
	b.gh.SetQuota(token, "graphql", 0, reset)

	status, body, err := b.do(t, b.request(t, context.Background(), http.MethodPost, "/graphql", strings.NewReader(viewerQuery)))
	if err != nil || status != http.StatusOK || !strings.Contains(body, `"RATE_LIMITED"`) {
		t.Fatalf("Do = %d %q, %v; want GitHub's rate-limit answer, whole", status, body, err)
	}
	s, ok := st.state(b.key("graphql"))
	if !ok || s.Remaining != 0 || !s.ResetAt.Equal(reset) {
		t.Fatalf("stored %+v (%v); want graphql exhausted until %s", s, ok, reset)
	}
	_, err = b.client.Do(b.request(t, context.Background(), http.MethodPost, "/graphql", strings.NewReader(viewerQuery)))
	var de *quota.DeferralError
	if !errors.As(err, &de) || de.Key != b.key("graphql") {
		t.Fatalf("second query: %v; want a deferral on graphql", err)
	}
	if n := b.calls(); n != 1 {
		t.Errorf("server saw %d requests; the deferred query must not be sent", n)
	}
}

// A GraphQL answer that is not a rejection reaches the caller unchanged,
// however much of it the transport read.
func TestGraphQLAnswersPassThroughWhole(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{})
	status, body, err := b.do(t, b.request(t, context.Background(), http.MethodPost, "/graphql", strings.NewReader(viewerQuery)))
	if err != nil || status != http.StatusOK {
		t.Fatalf("Do = %d, %v", status, err)
	}
	if want := `{"data":{"viewer":{"login":`; !strings.HasPrefix(body, want) {
		t.Errorf("body %q; want it to begin %s", body, want)
	}
	if evs := b.drainEvents(); len(evs) != 0 {
		t.Errorf("waits %+v; want none", evs)
	}
}
