package command

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/layoverhq/layover/clock"
	"github.com/layoverhq/layover/quota"
	"github.com/layoverhq/layover/store/sqlite"
)

type waitBundle struct {
	cfg    *Config
	clock  *clock.Fake
	stderr *lockedBuffer
	store  *sqlite.Store
}

// lockedBuffer is a bytes.Buffer safe for a writer and a reader goroutine.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func setupWait(t *testing.T, terminal bool) (*waitBundle, chan<- os.Signal) {
	t.Helper()
	st, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "l.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	clk := clock.NewFake(time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC))
	sigs := make(chan os.Signal, 1)
	buf := &lockedBuffer{}
	cfg := (&Config{Store: st, Stderr: buf, Clock: clk, Signals: sigs, Hostname: "h1", Terminal: terminal}).withDefaults()
	return &waitBundle{cfg: cfg, clock: clk, stderr: buf, store: st}, sigs
}

var key = quota.Key{Host: "api.github.com", Principal: "octocat", Resource: "core"}

type waitResult struct {
	d   time.Duration
	err error
}

func (b *waitBundle) start(k quota.Key, until time.Time) <-chan waitResult {
	done := make(chan waitResult, 1)
	go func() {
		d, err := b.cfg.wait(context.Background(), waitSpec{Key: k, Until: until, What: "Quota wait", Command: "gh api /user"})
		done <- waitResult{d, err}
	}()
	return done
}

func TestWaitRegistersAndEndsAtDeadline(t *testing.T) {
	t.Parallel()
	b, _ := setupWait(t, false)
	until := b.clock.Now().Add(47 * time.Minute)
	done := b.start(key, until)
	<-b.clock.TimerAdded()

	ws, err := b.store.Waiters(context.Background())
	if err != nil || len(ws) != 1 {
		t.Fatalf("waiters %v %v; want the wait registered", ws, err)
	}
	if !strings.HasPrefix(ws[0].Stage, "Quota wait until ") || ws[0].Key != key || !ws[0].WaitUntil.Equal(until) ||
		ws[0].Command != "gh api /user" || ws[0].Hostname != "h1" || ws[0].PID != os.Getpid() {
		t.Fatalf("waiter %+v", ws[0])
	}
	b.clock.Advance(47 * time.Minute)
	r := <-done
	if r.err != nil || r.d != 47*time.Minute {
		t.Fatalf("wait returned %v %v; want 47m and no error", r.d, r.err)
	}
	if ws, _ := b.store.Waiters(context.Background()); len(ws) != 0 {
		t.Fatalf("waiter left behind: %+v", ws)
	}
	if got := b.stderr.String(); strings.Count(got, "\n") != 1 || !strings.Contains(got, "Quota wait until") {
		t.Fatalf("stderr off a terminal should be one line, got %q", got)
	}
}

func TestWaitCountsDownOnTerminal(t *testing.T) {
	t.Parallel()
	b, _ := setupWait(t, true)
	done := b.start(key, b.clock.Now().Add(3*time.Second))
	for i := 0; i < 3; i++ {
		<-b.clock.TimerAdded()
		b.clock.Advance(time.Second)
	}
	if r := <-done; r.err != nil {
		t.Fatal(r.err)
	}
	got := b.stderr.String()
	for _, want := range []string{"3s left", "2s left", "1s left", ": done\n"} {
		if !strings.Contains(got, want) {
			t.Errorf("countdown %q lacks %q", got, want)
		}
	}
}

func TestWaitEndsOnSignal(t *testing.T) {
	t.Parallel()
	for _, sig := range []os.Signal{syscall.SIGINT, syscall.SIGTERM} {
		t.Run(sig.String(), func(t *testing.T) {
			t.Parallel()
			b, sigs := setupWait(t, false)
			done := b.start(key, b.clock.Now().Add(time.Hour))
			<-b.clock.TimerAdded()
			b.clock.Advance(5 * time.Minute)
			sigs <- sig
			r := <-done
			var ie *InterruptedError
			if !errors.As(r.err, &ie) || ie.Signal != sig || ie.What != "Quota wait" {
				t.Fatalf("err %v, want the Quota wait ended by %v", r.err, sig)
			}
			if r.d != 5*time.Minute {
				t.Errorf("waited %v, want the 5m that passed", r.d)
			}
			if ws, _ := b.store.Waiters(context.Background()); len(ws) != 0 {
				t.Fatalf("waiter left behind after %v: %+v", sig, ws)
			}
			if got := b.stderr.String(); !strings.Contains(got, "layover: Quota wait ended by "+sig.String()) {
				t.Errorf("stderr %q does not say what ended the wait", got)
			}
		})
	}
}

func TestWaitEndsWithTheContext(t *testing.T) {
	t.Parallel()
	b, _ := setupWait(t, false)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := b.cfg.wait(ctx, waitSpec{Key: key, Until: b.clock.Now().Add(time.Hour), What: "Quota wait"})
		done <- err
	}()
	<-b.clock.TimerAdded()
	cancel()
	var ie *InterruptedError
	if err := <-done; !errors.As(err, &ie) || ie.Signal != nil || !errors.Is(err, context.Canceled) {
		t.Fatalf("err %v, want an InterruptedError wrapping context.Canceled", err)
	}
	if ws, _ := b.store.Waiters(context.Background()); len(ws) != 0 {
		t.Fatalf("waiter left behind: %+v", ws)
	}
}

// Issue 8 finding 7: a wait's lines on stderr name the quota's host and
// resource; whatever they hold, the lines hold nothing a terminal acts on.
func TestWaitLineIsTerminalSafe(t *testing.T) {
	t.Parallel()
	b, sigs := setupWait(t, false)
	k := quota.Key{Host: "ghe.example\x1b]0;pwned\x07", Principal: "octocat\x1b[2J", Resource: "core\x1b[31m\u202e"}
	done := b.start(k, b.clock.Now().Add(time.Hour))
	<-b.clock.TimerAdded()
	sigs <- syscall.SIGINT
	if r := <-done; r.err == nil {
		t.Error("the wait ended without an error")
	}
	got := b.stderr.String()
	if strings.ContainsAny(got, "\x1b\x07\u202e") || !strings.Contains(got, "ghe.example") || !strings.Contains(got, "core") {
		t.Errorf("wait lines %q: want the host and resource without escapes", got)
	}
	if l := Label(strings.Repeat("h", 1000)); len(l) > maxShown+len("GitHub ()") {
		t.Errorf("Label of a long host is %d bytes", len(l))
	}
}
