package cli

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

	"github.com/layoverhq/layover/internal/clock"
	"github.com/layoverhq/layover/quota"
	"github.com/layoverhq/layover/store/sqlite"
)

type waitBundle struct {
	env    *Env
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

func setupWait(t *testing.T, terminal bool) (*waitBundle, chan<- syscall.Signal) {
	t.Helper()
	st, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "l.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	clk := clock.NewFake(time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC))
	sigs := make(chan syscall.Signal, 1)
	osSigs := make(chan os.Signal, 1)
	go func() {
		for s := range sigs {
			osSigs <- s
		}
	}()
	t.Cleanup(func() { close(sigs) })
	buf := &lockedBuffer{}
	env := &Env{Stderr: buf, Clock: clk, Signals: osSigs, Hostname: "h1", Terminal: terminal, Getenv: func(string) string { return "" }}
	return &waitBundle{env: env, clock: clk, stderr: buf, store: st}, sigs
}

var key = quota.Key{Host: "api.github.com", Principal: "octocat", Resource: "core"}

type waitResult struct {
	d   time.Duration
	err error
}

func (b *waitBundle) start(until time.Time) <-chan waitResult {
	done := make(chan waitResult, 1)
	go func() {
		d, err := visibleWait(context.Background(), b.env, b.store, waitSpec{Key: key, Until: until, What: "Quota wait", Command: "gh api /user"})
		done <- waitResult{d, err}
	}()
	return done
}

func TestVisibleWaitRegistersAndEndsAtDeadline(t *testing.T) {
	t.Parallel()
	b, _ := setupWait(t, false)
	until := b.clock.Now().Add(47 * time.Minute)
	done := b.start(until)
	<-b.clock.TimerAdded()

	ws, err := b.store.Waiters(context.Background())
	if err != nil || len(ws) != 1 {
		t.Fatalf("waiters %v %v; want the wait registered", ws, err)
	}
	if !strings.HasPrefix(ws[0].Stage, "Quota wait until ") || ws[0].Key != key || !ws[0].WaitUntil.Equal(until) || ws[0].Command != "gh api /user" {
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

func TestVisibleWaitCountsDownOnTerminal(t *testing.T) {
	t.Parallel()
	b, _ := setupWait(t, true)
	done := b.start(b.clock.Now().Add(3 * time.Second))
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

func TestVisibleWaitEndsOnSignal(t *testing.T) {
	t.Parallel()
	for sig, want := range map[syscall.Signal]int{syscall.SIGINT: ExitSIGINT, syscall.SIGTERM: ExitSIGTERM} {
		t.Run(sig.String(), func(t *testing.T) {
			t.Parallel()
			b, sigs := setupWait(t, false)
			done := b.start(b.clock.Now().Add(time.Hour))
			<-b.clock.TimerAdded()
			b.clock.Advance(5 * time.Minute)
			sigs <- sig
			r := <-done
			var code exitCode
			if !errors.As(r.err, &code) || int(code) != want {
				t.Fatalf("err %v, want exit %d", r.err, want)
			}
			if r.d != 5*time.Minute {
				t.Errorf("waited %v, want the 5m that passed", r.d)
			}
			if ws, _ := b.store.Waiters(context.Background()); len(ws) != 0 {
				t.Fatalf("waiter left behind after %v: %+v", sig, ws)
			}
		})
	}
}
