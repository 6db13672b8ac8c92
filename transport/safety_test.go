package transport_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/layoverhq/layover/internal/fake"
	"github.com/layoverhq/layover/quota"
	"github.com/layoverhq/layover/transport"
)

// throttle429 is a bare 429 with a Retry-After: a short throttle.
func throttle429(retryAfter string) fake.Response {
	return fake.Response{Status: http.StatusTooManyRequests, Header: http.Header{"Retry-After": {retryAfter}},
		Body: `{"message":"Too many requests"}`}
}

// Safety rule: a request rejected for quota or throttling is sent again
// only when its body can be read again.
func TestRejectedPOSTWithoutGetBodyIsNotRetried(t *testing.T) {
	t.Parallel()

	tests := []struct {
		name    string
		prepare func(b *testBundle)
		status  int
	}{
		{"primary exhaustion 403", func(b *testBundle) {
			b.gh.SetQuota(token, "core", 0, t0.Add(10*time.Minute))
		}, http.StatusForbidden},
		{"throttle 429", func(b *testBundle) {
			b.gh.Script("/repos/o/r/issues", throttle429("30"))
		}, http.StatusTooManyRequests},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t, setupOpts{follow: true})
			tt.prepare(b)

			body := newCloseRecorder(`{"title":"x"}`)
			req := b.request(t, context.Background(), http.MethodPost, "/repos/o/r/issues", body)
			if req.GetBody != nil {
				t.Fatal("test request has GetBody")
			}
			status, respBody, err := b.do(t, req)
			if err != nil {
				t.Fatalf("Do: %v", err)
			}
			if status != tt.status {
				t.Errorf("status = %d, want %d (returned as the provider sent it)", status, tt.status)
			}
			if respBody == "" {
				t.Error("the response body was not returned to the caller")
			}
			if got := b.calls(); got != 1 {
				t.Errorf("server saw %d requests, want 1", got)
			}
			if evs := b.drainEvents(); len(evs) != 0 {
				t.Errorf("waited %d times, want none: %+v", len(evs), evs)
			}
			if !body.isClosed() {
				t.Error("request body not closed")
			}
		})
	}
}

func TestRejectedPOSTWithGetBodyIsRetriedAfterTheWait(t *testing.T) {
	t.Parallel()

	tests := []struct {
		name     string
		prepare  func(b *testBundle)
		kind     transport.WaitKind
		minWait  time.Duration
		maxWait  time.Duration
		resource string
	}{
		{"primary exhaustion waits for the reset plus margin and jitter", func(b *testBundle) {
			b.gh.SetQuota(token, "core", 0, t0.Add(10*time.Minute))
		}, transport.WaitQuota, 11 * time.Minute, 12 * time.Minute, "core"},
		{"throttle waits its retry-after", func(b *testBundle) {
			b.gh.Script("/repos/o/r/issues", throttle429("30"))
		}, transport.WaitSecondary, 30 * time.Second, 30 * time.Second, "core"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t, setupOpts{follow: true})
			tt.prepare(b)

			const sent = `{"title":"x"}`
			req := b.request(t, context.Background(), http.MethodPost, "/repos/o/r/issues", strings.NewReader(sent))
			status, _, err := b.do(t, req)
			if err != nil {
				t.Fatalf("Do: %v", err)
			}
			if status != http.StatusCreated {
				t.Errorf("status = %d, want 201 after the retry", status)
			}
			_, bodies := b.recorded()
			if len(bodies) != 2 || bodies[0] != sent || bodies[1] != sent {
				t.Errorf("server saw bodies %q, want the same body twice", bodies)
			}
			evs := b.drainEvents()
			if len(evs) != 1 {
				t.Fatalf("waits = %+v, want one", evs)
			}
			ev := evs[0]
			if ev.Kind != tt.kind || ev.Key != b.key(tt.resource) || ev.Attempt != 1 || ev.Method != http.MethodPost {
				t.Errorf("wait event = %+v, want kind %s on %v after attempt 1", ev, tt.kind, b.key(tt.resource))
			}
			if ev.Wait < tt.minWait || ev.Wait > tt.maxWait {
				t.Errorf("waited %s, want between %s and %s", ev.Wait, tt.minWait, tt.maxWait)
			}
		})
	}
}

// Safety rule: other transient failures are retried only for GET, HEAD,
// OPTIONS or a request with an Idempotency-Key; 501 never.
func TestTransientFailures(t *testing.T) {
	t.Parallel()

	tests := []struct {
		name      string
		method    string
		idemKey   bool
		status    int
		wantCalls int
		want      int
	}{
		{"502 GET is retried", http.MethodGet, false, 502, 2, 200},
		{"503 HEAD is retried", http.MethodHead, false, 503, 2, 200},
		{"500 OPTIONS is retried", http.MethodOptions, false, 500, 2, 200},
		{"502 POST is not retried", http.MethodPost, false, 502, 1, 502},
		{"502 PATCH is not retried", http.MethodPatch, false, 502, 1, 502},
		{"502 POST with Idempotency-Key is retried", http.MethodPost, true, 502, 2, 201},
		{"501 GET is not retried", http.MethodGet, false, 501, 1, 501},
		{"501 POST with Idempotency-Key is not retried", http.MethodPost, true, 501, 1, 501},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t, setupOpts{follow: true})
			b.gh.Script("/repos/o/r/issues", fake.ServerError(tt.status))

			var body io.Reader
			if tt.method == http.MethodPost || tt.method == http.MethodPatch {
				body = strings.NewReader(`{"title":"x"}`) // replayable: only the method decides
			}
			req := b.request(t, context.Background(), tt.method, "/repos/o/r/issues", body)
			if tt.idemKey {
				req.Header.Set("Idempotency-Key", "k-1")
			}
			status, _, err := b.do(t, req)
			if err != nil {
				t.Fatalf("Do: %v", err)
			}
			if status != tt.want {
				t.Errorf("status = %d, want %d", status, tt.want)
			}
			if got := b.calls(); got != tt.wantCalls {
				t.Errorf("server saw %d requests, want %d", got, tt.wantCalls)
			}
			evs := b.drainEvents()
			if len(evs) != tt.wantCalls-1 {
				t.Fatalf("waits = %+v, want %d", evs, tt.wantCalls-1)
			}
			for _, ev := range evs {
				if ev.Kind != transport.WaitTransient || ev.Wait != time.Second {
					t.Errorf("wait = %+v, want a 1s transient backoff", ev)
				}
			}
		})
	}
}

func TestTransientRetriesAreBoundedWithBackoff(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{follow: true, opts: transport.Options{TransientRetries: 3}})
	for range 5 {
		b.gh.Script("/repos/o/r", fake.ServerError(502))
	}
	status, _, err := b.do(t, b.request(t, context.Background(), http.MethodGet, "/repos/o/r", nil))
	if err != nil {
		t.Fatalf("Do: %v", err)
	}
	if status != http.StatusBadGateway {
		t.Errorf("status = %d, want the last 502", status)
	}
	if got := b.calls(); got != 4 {
		t.Errorf("server saw %d requests, want 1 + 3 retries", got)
	}
	var waits []time.Duration
	for _, ev := range b.drainEvents() {
		waits = append(waits, ev.Wait)
	}
	want := []time.Duration{time.Second, 2 * time.Second, 4 * time.Second}
	if len(waits) != len(want) || waits[0] != want[0] || waits[1] != want[1] || waits[2] != want[2] {
		t.Errorf("backoffs = %v, want %v", waits, want)
	}
}

// A transient failure's Retry-After is read by one rule in both its forms
// (resetparse.RetryAfter): a stated wait within MaxTransientRetryAfter is
// waited, a longer one returns the response at once, whether it is written
// in seconds or as an HTTP-date, a day away or a minute.
func TestTransientRetryAfterOneRuleForBothForms(t *testing.T) {
	t.Parallel()
	date := t0.UTC().Format(http.TimeFormat)
	for name, c := range map[string]struct {
		retryAfter string
		wantCalls  int
		wantWait   time.Duration
	}{
		"seconds, a minute":     {"60", 2, time.Minute},
		"HTTP-date, a minute":   {t0.Add(time.Minute).UTC().Format(http.TimeFormat), 2, time.Minute},
		"seconds, 25 hours":     {"90000", 1, 0},
		"HTTP-date, 25 hours":   {t0.Add(25 * time.Hour).UTC().Format(http.TimeFormat), 1, 0},
		"seconds, 10 minutes":   {"600", 1, 0},
		"HTTP-date, 10 minutes": {t0.Add(10 * time.Minute).UTC().Format(http.TimeFormat), 1, 0},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			b := setup(t, setupOpts{follow: true})
			r := fake.ServerError(http.StatusServiceUnavailable)
			r.Header = http.Header{"Retry-After": {c.retryAfter}, "Date": {date}}
			b.gh.Script("/repos/o/r", r)
			status, _, err := b.do(t, b.request(t, context.Background(), http.MethodGet, "/repos/o/r", nil))
			if err != nil {
				t.Fatalf("Do: %v", err)
			}
			if got := b.calls(); got != c.wantCalls {
				t.Fatalf("server saw %d requests (last status %d), want %d", got, status, c.wantCalls)
			}
			evs := b.drainEvents()
			if c.wantCalls == 1 {
				if status != http.StatusServiceUnavailable || len(evs) != 0 {
					t.Errorf("status %d after waits %+v; want the 503 at once", status, evs)
				}
				return
			}
			if len(evs) != 1 || evs[0].Kind != transport.WaitTransient || evs[0].Wait != c.wantWait {
				t.Errorf("waits = %+v, want one transient wait of %s", evs, c.wantWait)
			}
		})
	}
}

func TestConnectionErrors(t *testing.T) {
	t.Parallel()

	tests := []struct {
		name      string
		method    string
		idemKey   bool
		wantCalls int
		wantErr   bool
	}{
		{"GET is retried", http.MethodGet, false, 2, false},
		{"POST is not retried", http.MethodPost, false, 1, true},
		{"POST with Idempotency-Key is retried", http.MethodPost, true, 2, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t, setupOpts{follow: true})
			calls := 0
			next := roundTripFunc(func(r *http.Request) (*http.Response, error) {
				calls++
				if calls == 1 {
					if r.Body != nil {
						r.Body.Close()
					}
					return nil, errors.New("read: connection reset by peer")
				}
				return b.srv.Client().Transport.RoundTrip(r)
			})
			tr, err := transport.New(next, &transport.Options{Provider: transport.GitHub(), Clock: b.clock,
				OnWait: func(ev transport.WaitEvent) { b.clock.Set(ev.Until) }})
			if err != nil {
				t.Fatal(err)
			}
			req := b.request(t, context.Background(), tt.method, "/repos/o/r", strings.NewReader("{}"))
			if tt.idemKey {
				req.Header.Set("Idempotency-Key", "k-1")
			}
			resp, err := tr.RoundTrip(req)
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v, want error %v", err, tt.wantErr)
			}
			if resp != nil {
				resp.Body.Close()
			}
			if calls != tt.wantCalls {
				t.Errorf("sent %d times, want %d", calls, tt.wantCalls)
			}
		})
	}
}

// Safety rule: a quota wait never fixes credentials.
func TestAuthIsNeverRetriedOrWaited(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{follow: true})
	b.gh.Script("/repos/o/r", fake.Response{Status: http.StatusUnauthorized,
		Body:   `{"message":"Bad credentials","documentation_url":"https://docs.github.com/rest"}`,
		Header: http.Header{"X-Ratelimit-Remaining": {"0"}, "Retry-After": {"30"}}})

	status, _, err := b.do(t, b.request(t, context.Background(), http.MethodGet, "/repos/o/r", nil))
	if err != nil {
		t.Fatalf("Do: %v", err)
	}
	if status != http.StatusUnauthorized {
		t.Errorf("status = %d, want 401", status)
	}
	if got := b.calls(); got != 1 {
		t.Errorf("server saw %d requests, want 1", got)
	}
	if evs := b.drainEvents(); len(evs) != 0 {
		t.Errorf("waited after a 401: %+v", evs)
	}
	if states := b.tr.States(); len(states) != 0 {
		t.Errorf("a 401 left states in the ledger: %+v", states)
	}
	// The next request is not held back either.
	status, _, _ = b.do(t, b.request(t, context.Background(), http.MethodGet, "/repos/o/r", nil))
	if status != http.StatusOK {
		t.Errorf("next status = %d, want 200", status)
	}
}

// A secondary limit waits its retry-after (else Policy.SecondaryWait) and
// is retried at most Policy.SecondaryRetries times.
func TestSecondaryLimitObeysRetryAfterAndRetryCount(t *testing.T) {
	t.Parallel()

	tests := []struct {
		name      string
		answers   []fake.Response
		retries   int
		wantCalls int
		want      int
		wantWait  time.Duration
	}{
		{"retry-after then success", []fake.Response{fake.SecondaryLimit(30)}, 5, 2, 200, 30 * time.Second},
		{"no retry-after waits SecondaryWait", []fake.Response{fake.SecondaryLimit(0)}, 5, 2, 200, time.Minute},
		{"retries run out", []fake.Response{fake.SecondaryLimit(30), fake.SecondaryLimit(30), fake.SecondaryLimit(30)}, 2, 3, 403, 30 * time.Second},
		{"zero retries", []fake.Response{fake.SecondaryLimit(30)}, 0, 1, 403, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			pol := testPolicy()
			pol.SecondaryRetries = tt.retries
			b := setup(t, setupOpts{follow: true, opts: transport.Options{Policy: pol}})
			b.gh.Script("/repos/o/r", tt.answers...)

			status, _, err := b.do(t, b.request(t, context.Background(), http.MethodGet, "/repos/o/r", nil))
			if err != nil {
				t.Fatalf("Do: %v", err)
			}
			if status != tt.want {
				t.Errorf("status = %d, want %d", status, tt.want)
			}
			if got := b.calls(); got != tt.wantCalls {
				t.Errorf("server saw %d requests, want %d", got, tt.wantCalls)
			}
			evs := b.drainEvents()
			if len(evs) != min(tt.retries, len(tt.answers)) {
				t.Fatalf("waits = %+v, want %d", evs, min(tt.retries, len(tt.answers)))
			}
			for _, ev := range evs {
				if ev.Kind != transport.WaitSecondary || ev.Wait != tt.wantWait {
					t.Errorf("wait = %+v, want a %s secondary wait", ev, tt.wantWait)
				}
			}
		})
	}
}

// The cap turns a long wait into a DeferralError without sending.
func TestWaitPastTheCapDefersWithoutSending(t *testing.T) {
	t.Parallel()
	st := newMemStore()
	b := setup(t, setupOpts{follow: true, opts: transport.Options{Store: st}})
	reset := t0.Add(3 * time.Hour)
	st.states[b.key("core")] = exhausted(b.key("core"), reset)

	body := newCloseRecorder("{}")
	_, _, err := b.do(t, b.request(t, context.Background(), http.MethodPost, "/repos/o/r/issues", body))
	var de *quota.DeferralError
	if !errors.As(err, &de) {
		t.Fatalf("err = %v, want a *quota.DeferralError", err)
	}
	if de.Key != b.key("core") || de.Cause != quota.CauseExhausted {
		t.Errorf("deferral = %+v, want core exhausted", de)
	}
	margin := quota.DefaultResetMargin
	if de.ResumeAt.Before(reset.Add(margin)) || de.ResumeAt.After(reset.Add(margin+quota.DefaultJitter)) {
		t.Errorf("ResumeAt = %s, want reset + margin + jitter", de.ResumeAt)
	}
	if !strings.Contains(de.Reason, "cap") {
		t.Errorf("Reason = %q, want it to name the cap", de.Reason)
	}
	if got := b.calls(); got != 0 {
		t.Errorf("server saw %d requests, want none", got)
	}
	if evs := b.drainEvents(); len(evs) != 0 {
		t.Errorf("waited: %+v", evs)
	}
	if !body.isClosed() {
		t.Error("the unsent request's body was not closed")
	}
}

// A short wait within the cap is taken, and the request is sent after it.
func TestExhaustedKeyWaitsThenSends(t *testing.T) {
	t.Parallel()
	st := newMemStore()
	b := setup(t, setupOpts{follow: true, opts: transport.Options{Store: st}})
	reset := t0.Add(20 * time.Minute)
	st.states[b.key("core")] = exhausted(b.key("core"), reset)

	status, _, err := b.do(t, b.request(t, context.Background(), http.MethodGet, "/repos/o/r", nil))
	if err != nil || status != http.StatusOK {
		t.Fatalf("Do = %d, %v; want 200", status, err)
	}
	starts, _ := b.recorded()
	if len(starts) != 1 || starts[0].Before(reset.Add(quota.DefaultResetMargin)) {
		t.Errorf("sent at %v, want once, after reset + margin %s", starts, reset.Add(quota.DefaultResetMargin))
	}
	evs := b.drainEvents()
	if len(evs) != 1 || evs[0].Kind != transport.WaitQuota || evs[0].Attempt != 0 {
		t.Errorf("waits = %+v, want one quota wait before the first attempt", evs)
	}
}

func TestDeferMode(t *testing.T) {
	t.Parallel()

	t.Run("an exhausted key defers without sending", func(t *testing.T) {
		t.Parallel()
		st := newMemStore()
		b := setup(t, setupOpts{opts: transport.Options{Store: st, Mode: transport.ModeDefer}})
		reset := t0.Add(5 * time.Minute)
		st.states[b.key("core")] = exhausted(b.key("core"), reset)

		_, _, err := b.do(t, b.request(t, context.Background(), http.MethodGet, "/repos/o/r", nil))
		var de *quota.DeferralError
		if !errors.As(err, &de) || de.Key != b.key("core") || de.Cause != quota.CauseExhausted {
			t.Fatalf("err = %v, want a DeferralError on core", err)
		}
		if de.ResumeAt.Before(reset.Add(quota.DefaultResetMargin)) {
			t.Errorf("ResumeAt = %s, before reset + margin", de.ResumeAt)
		}
		if b.calls() != 0 || len(b.drainEvents()) != 0 {
			t.Error("a deferral sent or waited")
		}
		// Another resource is not held back.
		status, _, err := b.do(t, b.request(t, context.Background(), http.MethodGet, "/search/issues", nil))
		if err != nil || status != http.StatusOK {
			t.Errorf("search = %d, %v; want 200", status, err)
		}
	})

	t.Run("a rejection is returned as is, and the next request defers", func(t *testing.T) {
		t.Parallel()
		b := setup(t, setupOpts{opts: transport.Options{Mode: transport.ModeDefer}})
		b.gh.SetQuota(token, "core", 0, t0.Add(10*time.Minute))

		status, _, err := b.do(t, b.request(t, context.Background(), http.MethodGet, "/repos/o/r", nil))
		if err != nil || status != http.StatusForbidden {
			t.Fatalf("first = %d, %v; want the 403", status, err)
		}
		_, _, err = b.do(t, b.request(t, context.Background(), http.MethodGet, "/repos/o/r", nil))
		var de *quota.DeferralError
		if !errors.As(err, &de) {
			t.Fatalf("second err = %v, want a DeferralError", err)
		}
		if b.calls() != 1 {
			t.Errorf("server saw %d requests, want 1", b.calls())
		}
	})

	t.Run("a throttle holds the key for its retry-after", func(t *testing.T) {
		t.Parallel()
		b := setup(t, setupOpts{opts: transport.Options{Mode: transport.ModeDefer}})
		b.gh.Script("/repos/o/r", fake.SecondaryLimit(45))

		status, _, _ := b.do(t, b.request(t, context.Background(), http.MethodGet, "/repos/o/r", nil))
		if status != http.StatusForbidden {
			t.Fatalf("first = %d, want the 403", status)
		}
		_, _, err := b.do(t, b.request(t, context.Background(), http.MethodGet, "/repos/o/r", nil))
		var de *quota.DeferralError
		if !errors.As(err, &de) || !de.ResumeAt.Equal(t0.Add(45*time.Second)) {
			t.Fatalf("second err = %v, want a DeferralError until t0+45s", err)
		}
		b.clock.Advance(45 * time.Second)
		status, _, err = b.do(t, b.request(t, context.Background(), http.MethodGet, "/repos/o/r", nil))
		if err != nil || status != http.StatusOK {
			t.Errorf("after the hold = %d, %v; want 200", status, err)
		}
	})
}

// A low-priority request stops at the reserve; a normal one goes on.
func TestLowPriorityStopsAtTheReserve(t *testing.T) {
	t.Parallel()
	st := newMemStore()
	b := setup(t, setupOpts{follow: true, opts: transport.Options{Store: st}})
	below := quota.State{Key: b.key("core"), Limit: 5000, Remaining: 120, ResetAt: t0.Add(30 * time.Minute),
		ResetKnown: true, ObservedAt: t0.Add(-time.Second), Source: quota.SourceHeaders}
	st.states[below.Key] = below
	b.gh.SetQuota(token, "core", 120, t0.Add(30*time.Minute))

	low := transport.WithLowPriority(context.Background())
	_, _, err := b.do(t, b.request(t, low, http.MethodGet, "/repos/o/r", nil))
	var de *quota.DeferralError
	if !errors.As(err, &de) {
		t.Fatalf("low priority: err = %v, want a DeferralError", err)
	}
	if de.Cause != quota.CauseBelowReserve || de.Key != b.key("core") || !strings.Contains(de.Reason, "120 left, reserve 500") {
		t.Errorf("deferral = %+v, want core below-reserve, quoting the count and the reserve it was held against", de)
	}
	if b.calls() != 0 {
		t.Errorf("low priority sent %d requests", b.calls())
	}

	status, _, err := b.do(t, b.request(t, context.Background(), http.MethodGet, "/repos/o/r", nil))
	if err != nil || status != http.StatusOK {
		t.Fatalf("normal priority = %d, %v; want 200", status, err)
	}
	if evs := b.drainEvents(); len(evs) != 0 {
		t.Errorf("normal priority waited below the reserve: %+v", evs)
	}

	// Exhausted: a low-priority request defers rather than waits.
	b.gh.SetQuota(token, "core", 0, t0.Add(30*time.Minute))
	_, _, _ = b.do(t, b.request(t, context.Background(), http.MethodPost, "/repos/o/r/issues", newCloseRecorder("{}")))
	_, _, err = b.do(t, b.request(t, low, http.MethodGet, "/repos/o/r", nil))
	if !errors.As(err, &de) || de.Cause != quota.CauseExhausted {
		t.Errorf("low priority on an exhausted key: err = %v, want an exhausted DeferralError", err)
	}
	if evs := b.drainEvents(); len(evs) != 0 {
		t.Errorf("low priority waited: %+v", evs)
	}
}

// A context that ends during a wait ends the wait with ctx.Err().
func TestContextCancellationEndsAWait(t *testing.T) {
	t.Parallel()
	st := newMemStore()
	b := setup(t, setupOpts{opts: transport.Options{Store: st}})
	st.states[b.key("core")] = exhausted(b.key("core"), t0.Add(10*time.Minute))

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, _, err := b.do(t, b.request(t, ctx, http.MethodGet, "/repos/o/r", nil))
		done <- err
	}()
	ev := <-b.events
	if ev.Kind != transport.WaitQuota {
		t.Fatalf("wait = %+v, want a quota wait", ev)
	}
	cancel()
	err := <-done
	if !errors.Is(err, context.Canceled) {
		t.Errorf("err = %v, want context.Canceled", err)
	}
	if b.calls() != 0 {
		t.Errorf("server saw %d requests after a cancelled wait", b.calls())
	}
}
