package host_test

import (
	"context"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/layoverhq/layover/host"
	"github.com/layoverhq/layover/job"
	"github.com/layoverhq/layover/store/sqlite"
)

// logged is a slog handler that logs to the test and sends each record's
// message on msgs (dropping it when the buffer is full).
type logged struct {
	slog.Handler
	msgs chan string
}

func (l logged) Handle(ctx context.Context, r slog.Record) error {
	select {
	case l.msgs <- r.Message:
	default:
	}
	return l.Handler.Handle(ctx, r)
}

func (l logged) WithAttrs(as []slog.Attr) slog.Handler {
	return logged{l.Handler.WithAttrs(as), l.msgs}
}

func (l logged) WithGroup(g string) slog.Handler { return logged{l.Handler.WithGroup(g), l.msgs} }

// withLogged sends the host's log messages on msgs.
func withLogged(t *testing.T, msgs chan string) func(*host.Config) {
	return func(c *host.Config) {
		c.Logger = slog.New(logged{slog.NewTextHandler(testWriter{t}, nil), msgs})
	}
}

// awaitMessage waits for the host to log msg.
func awaitMessage(t *testing.T, msgs <-chan string, msg string) {
	t.Helper()
	timeout := time.After(10 * time.Second)
	for {
		select {
		case m := <-msgs:
			if m == msg {
				return
			}
		case <-timeout:
			t.Fatalf("the host never logged %q", msg)
		}
	}
}

// drain runs b.host.Drain in the background, returning what it returns
// once it has, after the host has logged the drain's start.
func (b *bundle) drain(ctx context.Context, msgs <-chan string, timeout time.Duration) <-chan int {
	b.t.Helper()
	done := make(chan int, 1)
	go func() { done <- b.host.Drain(ctx, timeout) }()
	awaitMessage(b.t, msgs, "draining")
	return done
}

func awaitDrain(t *testing.T, done <-chan int) int {
	t.Helper()
	select {
	case n := <-done:
		return n
	case <-time.After(10 * time.Second):
		t.Fatal("Drain never returned")
		return 0
	}
}

// A drain lets the attempt running finish (complete), and claims nothing
// meanwhile, not even a job due and submitted to this very host.
func TestDrainFinishesRunningAndClaimsNothing(t *testing.T) {
	t.Parallel()
	msgs := make(chan string, 64)
	b := setup(t, withLogged(t, msgs))
	started, finish := make(chan struct{}), make(chan struct{})
	release := sync.OnceFunc(func() { close(finish) })
	t.Cleanup(release) // before the host's Stop, should the test fail
	b.script.push(func(context.Context, host.Run) error { close(started); <-finish; return nil })
	b.submit("long", job.Spec{})
	<-started
	done := b.drain(t.Context(), msgs, 30*time.Second)

	// The submission nudges the scheduler: its next sleep (a timer) comes
	// after a pass that saw the job due.
	for len(b.clock.TimerAdded()) > 0 {
		<-b.clock.TimerAdded()
	}
	b.submit("due", job.Spec{})
	select {
	case <-b.clock.TimerAdded():
	case <-time.After(10 * time.Second):
		t.Fatal("the scheduler never went back to sleep after the submission")
	}
	if j, _ := b.st.Job(t.Context(), "due"); j.State != job.Ready || j.LeaseOwner != "" {
		t.Fatalf("a due job during the drain: %s, held by %q; want ready and unclaimed", j.State, j.LeaseOwner)
	}

	release()
	if n := awaitDrain(t, done); n != 0 {
		t.Errorf("Drain stopped %d attempts; want none (the job finished)", n)
	}
	if j, _ := b.st.Job(t.Context(), "long"); j.State != job.Complete {
		t.Errorf("the job running when the drain began is %s, want complete", j.State)
	}
	j, _ := b.st.Job(t.Context(), "due")
	if j.State != job.Ready || j.LeaseOwner != "" || b.script.count() != 1 {
		t.Errorf("after the drain the due job is %s held by %q, %d runs; want ready, unclaimed, one run (the first job's)",
			j.State, j.LeaseOwner, b.script.count())
	}
	if hosts, _ := b.st.Hosts(t.Context()); len(hosts) != 0 {
		t.Errorf("after the drain %d hosts registered; want the host gone, as after Stop", len(hosts))
	}
}

// An attempt still running when the drain's time is up (on the host's
// clock) is stopped as Stop stops it: its job goes back to ready, no
// attempt counted.
func TestDrainTimeoutStopsAsStop(t *testing.T) {
	t.Parallel()
	msgs := make(chan string, 64)
	b := setup(t, withLogged(t, msgs))
	started := make(chan struct{})
	b.script.push(func(ctx context.Context, _ host.Run) error { close(started); <-ctx.Done(); return ctx.Err() })
	b.submit("j", job.Spec{})
	<-started
	done := b.drain(t.Context(), msgs, 5*time.Second)
	b.clock.Advance(5*time.Second - time.Millisecond)
	select {
	case <-done:
		t.Fatal("the drain ended before its timeout")
	default:
	}
	b.clock.Advance(time.Millisecond)
	if n := awaitDrain(t, done); n != 1 {
		t.Errorf("Drain stopped %d attempts; want 1", n)
	}
	j, err := b.st.Job(t.Context(), "j")
	if err != nil || j.State != job.Ready || j.LeaseOwner != "" || j.Attempts != 0 {
		t.Fatalf("after the drain: %+v %v; want ready, unclaimed, no attempt counted (as Stop leaves it)", j, err)
	}
}

// The drain's context ending (a second signal) stops at once, before the
// timeout, as Stop does.
func TestDrainCancelledStopsAtOnce(t *testing.T) {
	t.Parallel()
	msgs := make(chan string, 64)
	b := setup(t, withLogged(t, msgs))
	started := make(chan struct{})
	b.script.push(func(ctx context.Context, _ host.Run) error { close(started); <-ctx.Done(); return ctx.Err() })
	b.submit("j", job.Spec{})
	<-started
	ctx, cancel := context.WithCancel(t.Context())
	done := b.drain(ctx, msgs, time.Hour)
	cancel()
	if n := awaitDrain(t, done); n != 1 {
		t.Errorf("Drain stopped %d attempts; want 1", n)
	}
	if !b.clock.Now().Equal(t0) {
		t.Fatalf("the clock moved")
	}
	j, err := b.st.Job(t.Context(), "j")
	if err != nil || j.State != job.Ready || j.Attempts != 0 {
		t.Fatalf("after a cancelled drain: %+v %v; want ready, no attempt counted", j, err)
	}
}

// A job another process submits (a second handle on the store) starts at
// once on an idle host: the store's watcher wakes the scheduler, with no
// heartbeat passing on the host's clock.
func TestSubmitFromAnotherHandleStartsPromptly(t *testing.T) {
	t.Parallel()
	b := setup(t)
	// Idle: the scheduler and the heartbeat each wait on a timer.
	for b.clock.Pending() < 2 {
		<-b.clock.TimerAdded()
	}
	other, err := sqlite.Open(t.Context(), b.st.(*sqlite.Store).Path())
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	cli, err := host.NewJobs(host.Config{Store: other, Clock: b.clock})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := cli.Submit(t.Context(), "elsewhere", job.Spec{Argv: []string{"true"}}); err != nil {
		t.Fatal(err)
	}
	b.awaitState("elsewhere", job.Complete)
	if !b.clock.Now().Equal(t0) {
		t.Fatalf("the clock moved")
	}
}
