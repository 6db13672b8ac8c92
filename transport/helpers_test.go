package transport_test

import (
	"bytes"
	"context"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/layoverhq/layover/clock"
	"github.com/layoverhq/layover/internal/fake"
	"github.com/layoverhq/layover/quota"
	"github.com/layoverhq/layover/store"
	"github.com/layoverhq/layover/store/postgres"
	"github.com/layoverhq/layover/store/postgres/pgtest"
	"github.com/layoverhq/layover/store/sqlite"
	"github.com/layoverhq/layover/transport"
)

// t0 is every test's start time: a whole second, as GitHub's headers are.
var t0 = time.Date(2026, 5, 1, 10, 0, 0, 0, time.UTC)

const token = "ghp_testtoken"

// tokPrincipal is the principal of token before any login is learned.
var tokPrincipal = quota.TokenPrincipal(token)

// testPolicy is the default policy of docs/design.md: a 60 s margin, 0–60 s jitter, a 2 h cap,
// 60 s secondary wait and 5 retries.
func testPolicy() *quota.Policy {
	p := quota.DefaultPolicy()
	return &p
}

// testBundle is one test's fake world: a fake clock, a fake GitHub behind
// a loopback server that records each request's body and fake start time,
// and a Transport on them.
type testBundle struct {
	clock  *clock.Fake
	gh     *fake.GitHub
	srv    *httptest.Server
	host   string // key host of srv
	tr     *transport.Transport
	client *http.Client
	events chan transport.WaitEvent

	mu     sync.Mutex
	starts []time.Time // fake time at which the server saw each request
	bodies []string
}

type setupOpts struct {
	// follow: OnWait moves the fake clock to the end of every wait, so a
	// waiting test runs straight through.
	follow bool
	opts   transport.Options
}

func setup(t *testing.T, so setupOpts) *testBundle {
	t.Helper()
	b := &testBundle{clock: clock.NewFake(t0), events: make(chan transport.WaitEvent, 1000)}
	b.gh = fake.NewGitHub(fake.GitHubConfig{Now: b.clock.Now})
	b.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		b.mu.Lock()
		b.starts = append(b.starts, b.clock.Now())
		b.bodies = append(b.bodies, string(body))
		b.mu.Unlock()
		r.Body = io.NopCloser(bytes.NewReader(body))
		b.gh.ServeHTTP(w, r)
	}))
	t.Cleanup(b.srv.Close)
	u, _ := url.Parse(b.srv.URL)
	b.host = u.Host

	opts := so.opts
	if opts.Provider == nil {
		opts.Provider = transport.GitHub()
	}
	if opts.Policy == nil {
		opts.Policy = testPolicy()
	}
	opts.Clock = b.clock
	if opts.Rand == nil {
		opts.Rand = rand.New(rand.NewPCG(1, 2))
	}
	opts.Hostname = "test-host"
	follow := so.follow
	opts.OnWait = func(ev transport.WaitEvent) {
		b.events <- ev
		if follow {
			b.clock.Set(ev.Until)
		}
	}
	tr, err := transport.New(b.srv.Client().Transport, &opts)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() { _ = tr.Close() })
	b.tr = tr
	b.client = &http.Client{Transport: tr}
	return b
}

// key is the quota key of resource for the test token on the fake server.
func (b *testBundle) key(resource string) quota.Key {
	return quota.Key{Host: b.host, Principal: tokPrincipal, Resource: resource}
}

// request makes a request to the fake with the test token.
func (b *testBundle) request(t *testing.T, ctx context.Context, method, path string, body io.Reader) *http.Request {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, method, b.srv.URL+path, body)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	return req
}

// do sends req with the bundle's client and returns the status and body.
func (b *testBundle) do(t *testing.T, req *http.Request) (int, string, error) {
	t.Helper()
	resp, err := b.client.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("read body: %v", err)
	}
	return resp.StatusCode, string(body), nil
}

// calls is how many requests reached the server.
func (b *testBundle) calls() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.starts)
}

func (b *testBundle) recorded() ([]time.Time, []string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return slices.Clone(b.starts), slices.Clone(b.bodies)
}

// drainEvents returns the wait events so far.
func (b *testBundle) drainEvents() []transport.WaitEvent {
	var out []transport.WaitEvent
	for {
		select {
		case ev := <-b.events:
			out = append(out, ev)
		default:
			return out
		}
	}
}

// stateOf returns the view's state of key.
func stateOf(tr *transport.Transport, key quota.Key) (quota.State, bool) {
	for _, s := range tr.States() {
		if s.Key == key {
			return s, true
		}
	}
	return quota.State{}, false
}

// exhausted is a stored state saying key is exhausted until reset.
func exhausted(key quota.Key, reset time.Time) quota.State {
	return quota.State{Key: key, Limit: 5000, Remaining: 0, ResetAt: reset, ResetKnown: true,
		RawReset: reset.Unix(), ObservedAt: t0.Add(-time.Minute), ObservedBy: "other-host",
		Source: quota.SourceHeaders, Cause: quota.CauseExhausted}
}

// memStore is an in-memory store.Store that counts reads and records each
// RecordStates call. With hold set, each RecordStates call first signals
// entered and then waits for release. Only the ledger methods are
// implemented.
type memStore struct {
	store.Store // nil: other methods panic

	hold    bool
	entered chan struct{}
	release chan struct{}

	mu        sync.Mutex
	states    map[quota.Key]quota.State
	writes    [][]quota.State
	allReads  int
	loginRead int
	logins    map[string]string // fingerprint → login
	waiters   map[int64]store.Waiter
	nextID    int64
	listed    int // waiters ever registered
}

func newMemStore(seed ...quota.State) *memStore {
	m := &memStore{states: map[quota.Key]quota.State{}, logins: map[string]string{}, waiters: map[int64]store.Waiter{},
		entered: make(chan struct{}, 100), release: make(chan struct{})}
	for _, s := range seed {
		m.states[s.Key] = s
	}
	return m
}

func (m *memStore) RecordStates(ctx context.Context, states []quota.State) error {
	if m.hold {
		m.entered <- struct{}{}
		select {
		case <-m.release:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.writes = append(m.writes, slices.Clone(states))
	for _, s := range states {
		if old, ok := m.states[s.Key]; ok && old.ObservedAt.After(s.ObservedAt) {
			continue
		}
		m.states[s.Key] = s
	}
	return nil
}

func (m *memStore) States(_ context.Context, keys []quota.Key) ([]quota.State, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []quota.State
	for _, k := range keys {
		if s, ok := m.states[k]; ok {
			out = append(out, s)
		}
	}
	return out, nil
}

func (m *memStore) AllStates(context.Context) ([]quota.State, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.allReads++
	var out []quota.State
	for _, s := range m.states {
		out = append(out, s)
	}
	return out, nil
}

func (m *memStore) Login(_ context.Context, _, fingerprint string) (string, bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.loginRead++
	l, ok := m.logins[fingerprint]
	return l, ok, nil
}

// LearnLogin records login for the fingerprint and moves the states kept
// under its token principal on host to login.
func (m *memStore) LearnLogin(_ context.Context, host, fingerprint, login string, _ time.Time) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.logins[fingerprint] = login
	for k, s := range m.states {
		if k.Host == host && k.Principal == "tok:"+fingerprint {
			delete(m.states, k)
			s.Principal = login
			m.states[s.Key] = s
		}
	}
	return nil
}

func (m *memStore) RegisterWaiter(_ context.Context, w store.Waiter) (int64, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.nextID++
	m.listed++
	w.ID = m.nextID
	m.waiters[w.ID] = w
	return w.ID, nil
}

func (m *memStore) RemoveWaiter(_ context.Context, id int64) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.waiters, id)
	return nil
}

func (m *memStore) Waiters(context.Context) ([]store.Waiter, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []store.Waiter
	for _, w := range m.waiters {
		out = append(out, w)
	}
	slices.SortFunc(out, func(a, b store.Waiter) int { return int(a.ID - b.ID) })
	return out, nil
}

func (m *memStore) state(key quota.Key) (quota.State, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	s, ok := m.states[key]
	return s, ok
}

func (m *memStore) recordedWrites() [][]quota.State {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.writes)
}

func (m *memStore) reads() (all, login int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.allReads, m.loginRead
}

// closeRecorder is a request body without GetBody that records Close.
type closeRecorder struct {
	io.Reader
	mu     sync.Mutex
	closed bool
}

func newCloseRecorder(s string) *closeRecorder { return &closeRecorder{Reader: strings.NewReader(s)} }

func (c *closeRecorder) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.closed = true
	return nil
}

func (c *closeRecorder) isClosed() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.closed
}

// roundTripFunc adapts a function to http.RoundTripper.
type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// eachStore runs f, in parallel, on a new SQLite store and on a PostgreSQL
// schema of its own (skipped without LAYOVER_TEST_POSTGRES, see pgtest).
func eachStore(t *testing.T, f func(t *testing.T, st store.Store)) {
	for _, kind := range []string{"sqlite", "postgres"} {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			var st store.Store
			var err error
			if kind == "sqlite" {
				st, err = sqlite.Open(t.Context(), filepath.Join(t.TempDir(), "layover.db"))
			} else {
				st, err = postgres.Open(t.Context(), pgtest.Schema(t))
			}
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = st.Close() })
			f(t, st)
		})
	}
}
