package notify_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/layoverhq/layover/clock"
	"github.com/layoverhq/layover/notify"
)

var t0 = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

// fixedRand draws v, or n-1 when v is not below n.
type fixedRand int64

func (r fixedRand) Int64N(n int64) int64 { return min(int64(r), n-1) }

// request is one POST a receiver got, with the fake time it arrived at.
type request struct {
	at   time.Time
	body []byte
}

// receiver is a fake webhook: each POST is answered by answer (200 when
// nil) and reported on got.
type receiver struct {
	*httptest.Server
	got    chan request
	mu     sync.Mutex
	answer func(n int, w http.ResponseWriter, r *http.Request)
	n      int
}

func newReceiver(t *testing.T, clk clock.Clock, answer func(n int, w http.ResponseWriter, r *http.Request)) *receiver {
	rc := &receiver{got: make(chan request, 10000), answer: answer}
	rc.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if r.Method != http.MethodPost || r.Header.Get("Content-Type") != "application/json" {
			t.Errorf("%s with Content-Type %q, want a JSON POST", r.Method, r.Header.Get("Content-Type"))
		}
		rc.mu.Lock()
		n := rc.n
		rc.n++
		rc.mu.Unlock()
		rc.got <- request{at: clk.Now(), body: body}
		if rc.answer != nil {
			rc.answer(n, w, r)
		}
	}))
	t.Cleanup(rc.Close)
	return rc
}

// next is the receiver's next request, failing after a generous bound
// (a hang guard, not a timed assertion).
func (rc *receiver) next(t *testing.T) request {
	t.Helper()
	select {
	case r := <-rc.got:
		return r
	case <-time.After(20 * time.Second):
		t.Fatal("the receiver got no request")
	}
	return request{}
}

func (rc *receiver) nextBody(t *testing.T) notify.Body {
	t.Helper()
	r := rc.next(t)
	var b notify.Body
	if err := json.Unmarshal(r.body, &b); err != nil {
		t.Fatalf("body %s: %v", r.body, err)
	}
	return b
}

// none checks the receiver got nothing more.
func (rc *receiver) none(t *testing.T) {
	t.Helper()
	select {
	case r := <-rc.got:
		t.Errorf("an extra request: %s", r.body)
	default:
	}
}

func newNotifier(t *testing.T, cfg notify.Config) *notify.Notifier {
	t.Helper()
	n, err := notify.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(n.Close)
	return n
}

func event(i int) notify.Event {
	return notify.Event{Kind: notify.JobDeferred, JobID: fmt.Sprintf("job-%d", i%3), State: "deferred",
		Key: "api.github.com/octocat/core", Reset: t0.Add(time.Hour), WakeAt: t0.Add(time.Hour + time.Minute),
		Message: fmt.Sprintf("quota exhausted %d", i), At: t0}
}

// awaitTimer waits until the code under test has armed a timer on clk,
// and returns when the earliest pending one fires.
func awaitTimer(t *testing.T, clk *clock.Fake) time.Time {
	t.Helper()
	select {
	case <-clk.TimerAdded():
	case <-time.After(20 * time.Second):
		t.Fatal("no timer was armed")
	}
	next, _ := clk.Next()
	return next
}

// Each target gets every event once, in the order sent, with the same id
// at both; the body carries the documented fields.
func TestEventsArriveOnceInOrder(t *testing.T) {
	t.Parallel()
	clk := clock.NewFake(t0)
	a, b := newReceiver(t, clk, nil), newReceiver(t, clk, nil)
	n := newNotifier(t, notify.Config{Targets: []string{a.URL + "/hook/a-secret", b.URL + "/b?token=x"}, Clock: clk, Rand: fixedRand(7)})
	n.Start(t.Context())
	const events = 60
	for i := range events {
		n.Send(event(i))
	}
	n.Close()
	for i := range events {
		ba, bb := a.nextBody(t), b.nextBody(t)
		want := event(i)
		if ba.Message != want.Message || bb.Message != want.Message {
			t.Fatalf("event %d: a got %q, b %q, want %q (in order, once each)", i, ba.Message, bb.Message, want.Message)
		}
		if ba.ID == "" || ba.ID != bb.ID {
			t.Errorf("event %d: ids %q and %q, want one id at both targets", i, ba.ID, bb.ID)
		}
		if ba.Version != notify.BodyVersion || ba.Kind != notify.JobDeferred || ba.Job != want.JobID || ba.State != "deferred" ||
			ba.Key != want.Key || ba.Reset != "2026-11-30T13:00:00Z" || ba.WakeAt != "2026-11-30T13:01:00Z" || ba.Time != "2026-11-30T12:00:00Z" {
			t.Errorf("event %d: body %+v", i, ba)
		}
	}
	a.none(t)
	b.none(t)
	if n.Dropped() != 0 || n.Failed() != 0 {
		t.Errorf("Dropped %d, Failed %d, want none", n.Dropped(), n.Failed())
	}
}

// A target that hangs delays nothing else: Send returns, the other target
// gets every event, and the hung one is retried on the backoff once its
// client timed out, receiving the same event (same id) and then the rest
// in order.
func TestHangingTargetDelaysNothingElse(t *testing.T) {
	t.Parallel()
	clk := clock.NewFake(t0)
	release := make(chan struct{})
	hung := newReceiver(t, clk, func(n int, w http.ResponseWriter, r *http.Request) {
		if n == 0 {
			<-release // past the client's timeout: the attempt fails
		}
	})
	fine := newReceiver(t, clk, nil)
	n := newNotifier(t, notify.Config{Targets: []string{hung.URL, fine.URL}, Clock: clk, Rand: fixedRand(0),
		Client: &http.Client{Timeout: 100 * time.Millisecond}})
	n.Start(t.Context())
	for i := range 5 {
		n.Send(event(i))
	}
	first := hung.nextBody(t)
	for i := range 5 {
		if b := fine.nextBody(t); b.Message != event(i).Message {
			t.Fatalf("the other target's event %d = %q, want %q", i, b.Message, event(i).Message)
		}
	}
	// The hung attempt times out (the client's timeout) and its retry is
	// armed at the first backoff.
	if at := awaitTimer(t, clk); !at.Equal(t0.Add(notify.RetryBase)) {
		t.Fatalf("the retry is armed for %s, want %s", at, t0.Add(notify.RetryBase))
	}
	close(release)
	clk.Advance(notify.RetryBase)
	again := hung.nextBody(t)
	if again.ID != first.ID || again.Message != event(0).Message {
		t.Errorf("the retry sent %+v, want the first event again (id %s)", again, first.ID)
	}
	for i := 1; i < 5; i++ {
		if b := hung.nextBody(t); b.Message != event(i).Message {
			t.Fatalf("the hung target's event %d = %q, want %q", i, b.Message, event(i).Message)
		}
	}
	n.Close()
	hung.none(t)
}

// A receiver answering 500 is retried with capped exponential backoff plus
// jitter on the injected clock and Rand; a 429's Retry-After is waited when
// longer. The next event waits for the one being retried, so order holds.
func TestRetrySchedule(t *testing.T) {
	t.Parallel()
	clk := clock.NewFake(t0)
	rc := newReceiver(t, clk, func(n int, w http.ResponseWriter, r *http.Request) {
		switch n {
		case 0, 1, 2:
			w.WriteHeader(http.StatusInternalServerError)
		case 3:
			w.Header().Set("Retry-After", "30")
			w.WriteHeader(http.StatusTooManyRequests)
		}
	})
	const jitter = 100 * time.Millisecond // fixedRand draws at most this
	n := newNotifier(t, notify.Config{Targets: []string{rc.URL}, Clock: clk, Rand: fixedRand(jitter)})
	n.Start(t.Context())
	n.Send(event(0))
	n.Send(event(1))
	at := t0
	// Waits: 1 s, 2 s, 4 s (each plus the jitter), then the 429's 30 s.
	for i, wait := range []time.Duration{time.Second + jitter, 2*time.Second + jitter, 4*time.Second + jitter, 30 * time.Second} {
		r := rc.next(t)
		if !r.at.Equal(at) || !strings.Contains(string(r.body), event(0).Message) {
			t.Fatalf("attempt %d at %s: %s; want the first event at %s", i+1, r.at, r.body, at)
		}
		next := awaitTimer(t, clk)
		if want := at.Add(wait); !next.Equal(want) {
			t.Fatalf("retry %d armed for %s, want %s (after %s)", i+1, next, want, wait)
		}
		at = next
		clk.Set(at)
	}
	if b := rc.nextBody(t); b.Message != event(0).Message {
		t.Fatalf("the fifth attempt sent %q", b.Message)
	}
	if b := rc.nextBody(t); b.Message != event(1).Message {
		t.Fatalf("then %q, want the second event", b.Message)
	}
	n.Close()
	rc.none(t)
	if n.Failed() != 0 || n.Dropped() != 0 {
		t.Errorf("Failed %d, Dropped %d, want none", n.Failed(), n.Dropped())
	}
}

// The backoff doubles up to its cap; the attempts stop at MaxAttempts, and
// a 4xx other than 429 is not retried. Either way the next event goes on.
func TestRetriesEnd(t *testing.T) {
	t.Parallel()
	clk := clock.NewFake(t0)
	rc := newReceiver(t, clk, func(n int, w http.ResponseWriter, r *http.Request) {
		switch {
		case n < 12:
			w.WriteHeader(http.StatusBadGateway)
		case n == 12:
			w.WriteHeader(http.StatusNotFound)
		}
	})
	n := newNotifier(t, notify.Config{Targets: []string{rc.URL}, Clock: clk, Rand: fixedRand(0), MaxAttempts: 12})
	n.Start(t.Context())
	for i := range 3 {
		n.Send(event(i))
	}
	want := time.Second
	for i := range 11 {
		rc.next(t)
		next := awaitTimer(t, clk)
		if d := next.Sub(clk.Now()); d != want {
			t.Fatalf("wait %d = %s, want %s", i+1, d, want)
		}
		want = min(2*want, notify.RetryCap)
		clk.Set(next)
	}
	if b := rc.nextBody(t); b.Message != event(0).Message {
		t.Fatalf("attempt 12 sent %q", b.Message)
	}
	if b := rc.nextBody(t); b.Message != event(1).Message { // answered 404: given up at once
		t.Fatalf("after the last attempt: %q, want the second event", b.Message)
	}
	if b := rc.nextBody(t); b.Message != event(2).Message {
		t.Fatalf("after the 404: %q, want the third event", b.Message)
	}
	n.Close()
	rc.none(t)
	if n.Failed() != 2 {
		t.Errorf("Failed = %d, want 2 (out of attempts, 404)", n.Failed())
	}
}

// A full queue drops its oldest event and counts it; what is kept is
// delivered in order.
func TestFullQueueDropsOldest(t *testing.T) {
	t.Parallel()
	clk := clock.NewFake(t0)
	rc := newReceiver(t, clk, nil)
	n := newNotifier(t, notify.Config{Targets: []string{rc.URL}, Clock: clk, QueueSize: 3})
	for i := range 5 { // not started: the queue fills
		n.Send(event(i))
	}
	if n.Dropped() != 2 {
		t.Fatalf("Dropped = %d, want 2", n.Dropped())
	}
	n.Start(t.Context())
	n.Close()
	for i := 2; i < 5; i++ {
		if b := rc.nextBody(t); b.Message != event(i).Message {
			t.Fatalf("got %q, want %q (the oldest two dropped)", b.Message, event(i).Message)
		}
	}
	rc.none(t)
	n.Send(event(9)) // after Close: dropped
	if n.Dropped() != 3 {
		t.Errorf("Dropped = %d after a send past Close, want 3", n.Dropped())
	}
}

// Close waits only DrainTimeout on its clock for a target that does not
// answer, then drops what is left and counts it.
func TestCloseDrainsUpToItsBound(t *testing.T) {
	t.Parallel()
	clk := clock.NewFake(t0)
	unblock := make(chan struct{})
	rc := newReceiver(t, clk, func(_ int, w http.ResponseWriter, r *http.Request) {
		select {
		case <-unblock:
		case <-r.Context().Done():
		}
	})
	defer close(unblock)
	n := newNotifier(t, notify.Config{Targets: []string{rc.URL}, Clock: clk, DrainTimeout: 3 * time.Second})
	n.Start(t.Context())
	n.Send(event(0))
	n.Send(event(1))
	rc.next(t) // the first attempt hangs
	closed := make(chan struct{})
	go func() { n.Close(); close(closed) }()
	if at := awaitTimer(t, clk); !at.Equal(t0.Add(3 * time.Second)) {
		t.Fatalf("Close waits until %s, want %s", at, t0.Add(3*time.Second))
	}
	clk.Advance(3 * time.Second)
	select {
	case <-closed:
	case <-time.After(20 * time.Second):
		t.Fatal("Close did not return after its drain timeout")
	}
	if n.Dropped() != 2 {
		t.Errorf("Dropped = %d, want 2 (the one in flight and the one queued)", n.Dropped())
	}
}

// A slack: target receives Slack's {"text"} form: one line naming the job,
// its key and reset, with Slack's markup characters escaped and control
// characters gone.
func TestSlackForm(t *testing.T) {
	t.Parallel()
	clk := clock.NewFake(t0)
	rc := newReceiver(t, clk, nil)
	n := newNotifier(t, notify.Config{Targets: []string{"slack:" + rc.URL + "/services/T0/B0/secret"}, Clock: clk})
	n.Start(t.Context())
	e := event(0)
	e.Message = "limit <@channel> & \x1b[31mred\x1b[0m\nnext"
	n.Send(e)
	n.Close()
	var body map[string]any
	if err := json.Unmarshal(rc.next(t).body, &body); err != nil {
		t.Fatal(err)
	}
	text, _ := body["text"].(string)
	if len(body) != 1 {
		t.Errorf("body %v, want only text", body)
	}
	want := "layover: job job-0 deferred on api.github.com/octocat/core, reset at 2026-11-30T13:00:00Z, " +
		"runs again at 2026-11-30T13:01:00Z: limit &lt;@channel&gt; &amp; red next"
	if text != want {
		t.Errorf("text = %q\nwant   %q", text, want)
	}
}

// A target that is not an http(s) URL is an error that names it by scheme
// and host at most, never by the secret in its path, query or user info.
func TestBadTargetLeaksNoSecret(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ target, shown string }{
		{"ftp://hooks.example.com/T000/hunter2secret", "ftp://hooks.example.com"},
		{"slack:hooks.slack.com/services/hunter2secret", "slack:"},
		{"slack:file:///hunter2secret", "slack:file://"},
		{"https://user:hunter2secret@/path", "https://"},
		{"http://[::1/hunter2secret", ""},
		{"hunter2secret", ""},
		{"https:hunter2secret", "https://"},
	} {
		_, err := notify.New(notify.Config{Targets: []string{"https://ok.example.com/x", tc.target}})
		if err == nil {
			t.Errorf("%q: no error", tc.target)
			continue
		}
		msg := err.Error()
		if strings.Contains(msg, "hunter2") || !strings.Contains(msg, "target 2") || !strings.Contains(msg, tc.shown) {
			t.Errorf("%q: error %q; want it to name target 2 as %q and hold no secret", tc.target, msg, tc.shown)
		}
	}
	n, err := notify.New(notify.Config{Targets: []string{"https://user:pw-secret@hooks.example.com:8443/p/secret?k=secret", "slack:http://127.0.0.1:9/x"}})
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(n.Targets(), " "); got != "https://hooks.example.com:8443 slack:http://127.0.0.1:9" {
		t.Errorf("Targets = %q", got)
	}
}

// BenchmarkSend is the cost to the host of one event for two targets:
// Send only queues (here into full queues, dropping the oldest, as under
// a receiver that is down).
func BenchmarkSend(b *testing.B) {
	n, err := notify.New(notify.Config{Targets: []string{"https://a.example.com/x", "slack:https://b.example.com/y"}, QueueSize: 1000})
	if err != nil {
		b.Fatal(err)
	}
	e := event(1)
	b.ReportAllocs()
	for b.Loop() {
		n.Send(e)
	}
}

// BenchmarkDeliver is one event's delivery to a local receiver that
// answers 200 at once: encoding, the POST over loopback, the answer.
func BenchmarkDeliver(b *testing.B) {
	var got sync.WaitGroup
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		got.Done()
	}))
	defer srv.Close()
	n, err := notify.New(notify.Config{Targets: []string{srv.URL}, QueueSize: b.N + 1})
	if err != nil {
		b.Fatal(err)
	}
	n.Start(b.Context())
	e := event(1)
	got.Add(b.N)
	b.ResetTimer()
	for range b.N {
		n.Send(e)
	}
	got.Wait()
	b.StopTimer()
	n.Close()
}
