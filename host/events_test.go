package host_test

import (
	"context"
	"reflect"
	"testing"
	"time"

	"github.com/layoverhq/layover/host"
	"github.com/layoverhq/layover/job"
	"github.com/layoverhq/layover/quota"
)

// next returns the next event of sub for job id, skipping others.
func next(t *testing.T, sub *host.Subscription, id string) host.Event {
	t.Helper()
	timeout := time.After(10 * time.Second)
	for {
		select {
		case ev, ok := <-sub.C():
			if !ok {
				t.Fatal("the subscription was closed")
			}
			if ev.JobID == id {
				return ev
			}
		case <-timeout:
			t.Fatalf("no event for job %s", id)
		}
	}
}

// A subscriber sees each move the host makes, in order, with its states,
// stage, reason and time; an operator's front door publishes its own.
func TestSubscribeDeliversEveryMove(t *testing.T) {
	t.Parallel()
	b := setup(t)
	sub := b.host.Subscribe(0)
	defer sub.Close()
	ops := b.ops.Subscribe(0)
	defer ops.Close()
	reset := t0.Add(10 * time.Minute)
	b.script.push(func(context.Context, host.Run) error { return host.Quota("github", "core", reset) }, ok)
	b.submit("j", job.Spec{Quota: []string{"github"}})
	want := []host.Event{
		{JobID: "j", To: job.Ready, Stage: "ready", Reason: job.ReasonSubmitted, At: t0},
		{JobID: "j", From: job.Ready, To: job.Running, Stage: "running", Reason: "started", At: t0},
		{JobID: "j", From: job.Running, To: job.Deferred, Stage: "Quota wait until 2026-11-30T12:11:00Z", At: t0,
			Key: quota.Key{Host: "api.github.com", Principal: "octocat", Resource: "core"}, Reset: reset, WakeAt: reset.Add(time.Minute)},
	}
	for i, w := range want {
		got := next(t, sub, "j")
		if w.Reason == "" {
			w.Reason = got.Reason // the outcome's words
		}
		if !got.Reset.Equal(w.Reset) || !got.WakeAt.Equal(w.WakeAt) {
			t.Errorf("event %d: reset %s, wake-up %s; want %s, %s", i, got.Reset, got.WakeAt, w.Reset, w.WakeAt)
		}
		got.Reset, got.WakeAt = w.Reset, w.WakeAt
		if !reflect.DeepEqual(got, w) {
			t.Errorf("event %d = %+v, want %+v", i, got, w)
		}
	}
	j, err := b.ops.Cancel(context.Background(), "j")
	if err != nil {
		t.Fatal(err)
	}
	if got := next(t, ops, "j"); got.From != job.Deferred || got.To != job.Cancelled || got.Stage != j.Stage ||
		got.Reason != "cancelled by the operator" || !got.At.Equal(t0) {
		t.Errorf("the operator's event = %+v", got)
	}
}

// A subscriber that reads nothing never holds up the host: the events past
// its buffer are dropped and counted, and the host goes on.
func TestSlowSubscriberDropsAndCounts(t *testing.T) {
	t.Parallel()
	b := setup(t)
	slow := b.host.Subscribe(1)
	defer slow.Close()
	b.submit("a", job.Spec{})
	b.awaitState("a", job.Complete)
	b.host.Stop() // every write, and so every event, is made once Stop returns
	if n := slow.Dropped(); n != 2 {
		t.Errorf("Dropped = %d, want 2 (submitted, running, complete into a buffer of one)", n)
	}
	if ev := <-slow.C(); ev.JobID != "a" || ev.To != job.Ready {
		t.Errorf("the buffered event = %+v, want the submission", ev)
	}
	slow.Close()
	slow.Close() // a second Close is a no-op
	if _, open := <-slow.C(); open {
		t.Error("C is open after Close")
	}
}

// A sweep's moves come as one event with no job, counting them.
func TestSweepIsAnEvent(t *testing.T) {
	t.Parallel()
	b := setup(t)
	sub := b.host.Subscribe(0)
	defer sub.Close()
	b.submit("j", job.Spec{Deadline: t0.Add(time.Minute), EnvNames: []string{"DEPLOY_KEY"}}) // the host lacks it
	b.awaitState("j", job.Blocked)
	b.clock.Advance(2 * time.Minute) // past its deadline: the sweep cancels it
	ev := next(t, sub, "")
	for ev.Swept.PastDue == 0 {
		ev = next(t, sub, "")
	}
	if ev.Swept.PastDue != 1 || !ev.At.Equal(t0.Add(2*time.Minute)) {
		t.Errorf("sweep event %+v, want one job past its deadline at %s", ev, t0.Add(2*time.Minute))
	}
	b.awaitState("j", job.Cancelled) // woken by that event, not by polling
}

// The front door a Host embeds wakes its scheduler: a job it submits, or
// unblocks, runs at once, the fake clock standing still (before, only a
// Submit method of the Host's own woke it; Jobs.Submit, reached as
// h.Jobs.Submit, and Unblock left the job to the next heartbeat).
func TestEmbeddedFrontDoorWakesTheHost(t *testing.T) {
	t.Parallel()
	b := setup(t)
	if _, _, err := b.host.Submit(context.Background(), "direct", job.Spec{Argv: []string{"true"}}); err != nil {
		t.Fatal(err)
	}
	b.awaitState("direct", job.Complete)

	b.script.push(func(context.Context, host.Run) error { return host.Auth("expired") })
	b.submit("auth", job.Spec{})
	b.awaitState("auth", job.AuthWait)
	if _, err := b.host.Unblock(context.Background(), "auth"); err != nil {
		t.Fatal(err)
	}
	b.awaitState("auth", job.Complete)
}

// Stop ends the host's subscriptions: a subscriber ranging over C returns
// once the host has stopped, after the events it made.
func TestStopClosesSubscriptions(t *testing.T) {
	t.Parallel()
	b := setup(t)
	sub := b.host.Subscribe(0)
	b.submit("a", job.Spec{})
	b.awaitState("a", job.Complete)
	b.host.Stop()
	var last host.Event
	timeout := time.After(10 * time.Second)
	for open := true; open; {
		select {
		case ev, ok := <-sub.C():
			if ok {
				last = ev
			}
			open = ok
		case <-timeout:
			t.Fatal("C still open after Stop")
		}
	}
	if last.JobID != "a" || last.To != job.Complete {
		t.Errorf("the last event before C closed = %+v, want a's completion", last)
	}
	sub.Close() // closing after Stop is a no-op
}
