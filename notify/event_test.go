package notify_test

import (
	"strings"
	"testing"
	"time"

	"github.com/layoverhq/layover/host"
	"github.com/layoverhq/layover/job"
	"github.com/layoverhq/layover/notify"
	"github.com/layoverhq/layover/quota"
	"github.com/layoverhq/layover/workflow/record"
)

// A job's move into deferred, blocked, auth-wait or failed is an event;
// any other change is not. A deferral names its key, reset and wake-up; a
// job of a workflow run names the run; the reason is one bounded safe line.
func TestFromJob(t *testing.T) {
	t.Parallel()
	key := quota.Key{Host: "api.github.com", Principal: "octocat", Resource: "core"}
	deferral := host.Event{JobID: "j", From: job.Running, To: job.Deferred, Reason: "quota exhausted: \x1b[2Jcore\n" + strings.Repeat("x", 1000),
		At: t0, Key: key, Reset: t0.Add(time.Hour), WakeAt: t0.Add(61 * time.Minute)}
	e, ok := notify.FromJob(deferral, job.Job{ID: "j", Spec: job.Spec{Flow: &job.FlowRef{Run: "r1", Task: "build"}}})
	if !ok || e.Kind != notify.JobDeferred || e.JobID != "j" || e.RunID != "r1" || e.State != "deferred" ||
		e.Key != "api.github.com/octocat/core" || !e.Reset.Equal(t0.Add(time.Hour)) || !e.WakeAt.Equal(t0.Add(61*time.Minute)) || !e.At.Equal(t0) {
		t.Errorf("deferral = %+v, %v", e, ok)
	}
	if len(e.Message) > notify.MaxMessage || strings.ContainsAny(e.Message, "\x1b\n") || !strings.HasPrefix(e.Message, "quota exhausted: core ") {
		t.Errorf("message %q: want one safe line of at most %d bytes", e.Message, notify.MaxMessage)
	}
	if e, _ := notify.FromJob(deferral, job.Job{ID: "other", Spec: job.Spec{Flow: &job.FlowRef{Run: "r2"}}}); e.RunID != "" {
		t.Errorf("another job's run %q was used", e.RunID)
	}
	for _, tc := range []struct {
		ev   host.Event
		want notify.Kind
	}{
		{host.Event{JobID: "j", From: job.Running, To: job.Blocked, Reason: "check-cmd exit 3"}, notify.JobBlocked},
		{host.Event{JobID: "j", From: job.Running, To: job.AuthWait}, notify.JobAuthWait},
		{host.Event{JobID: "j", From: job.Running, To: job.Failed}, notify.JobFailed},
		{host.Event{JobID: "j", To: job.Deferred, Reason: job.ReasonSubmitted}, notify.JobDeferred},
		{host.Event{JobID: "j", From: job.Ready, To: job.Running}, ""},
		{host.Event{JobID: "j", From: job.Running, To: job.Complete}, ""},
		{host.Event{JobID: "j", From: job.Deferred, To: job.Deferred, Reason: "adopted by a live host"}, ""},
		{host.Event{JobID: "j", From: job.AuthWait, To: job.AuthWait}, ""},
		{host.Event{Swept: host.Event{}.Swept}, ""},
	} {
		e, ok := notify.FromJob(tc.ev, job.Job{})
		if ok != (tc.want != "") || e.Kind != tc.want || ok != notify.Notable(tc.ev) {
			t.Errorf("%s -> %s: %q %v, want %q", tc.ev.From, tc.ev.To, e.Kind, ok, tc.want)
		}
		if ok && e.Key != "" {
			t.Errorf("%s: key %q on an event that is not a deferral", tc.want, e.Key)
		}
	}
}

// A paused run names the paused task's quota with the earliest known
// reset; a complete run is an event; other statuses are not.
func TestFromRun(t *testing.T) {
	t.Parallel()
	later, sooner := t0.Add(2*time.Hour), t0.Add(time.Hour)
	tasks := []record.Task{
		{Name: "a", State: record.TaskComplete},
		{Name: "b", State: record.TaskPaused, Quota: &record.Quota{Provider: "claude-code", Resource: "five_hour", ResetAt: later, Message: "later"}},
		{Name: "c", State: record.TaskPaused, Quota: &record.Quota{Provider: "github", Resource: "core", ResetAt: sooner, Message: "limit\x07 hit"}},
		{Name: "d", State: record.TaskPaused, Quota: &record.Quota{Provider: "x", Resource: "y"}},
	}
	e, ok := notify.FromRun(record.Run{ID: "r", Status: record.RunPaused, UpdatedAt: t0}, tasks)
	if !ok || e.Kind != notify.FlowPaused || e.RunID != "r" || e.JobID != "" || e.State != "paused" || e.Key != "github/core" ||
		!e.Reset.Equal(sooner) || e.Message != "limit hit" || !e.At.Equal(t0) {
		t.Errorf("paused run = %+v, %v", e, ok)
	}
	if e, ok := notify.FromRun(record.Run{ID: "r", Status: record.RunComplete}, nil); !ok || e.Kind != notify.FlowComplete || e.State != "complete" {
		t.Errorf("complete run = %+v, %v", e, ok)
	}
	for _, s := range []record.RunStatus{record.RunRunning, record.RunFailed, record.RunCancelled} {
		if _, ok := notify.FromRun(record.Run{ID: "r", Status: s}, tasks); ok {
			t.Errorf("a %s run made an event", s)
		}
	}
}

// The first deferral on a key and reset starts a quota wait; the next on
// the same wait does not, a new reset on the key does, and a wait whose
// reset passed is forgotten.
func TestQuotaWaits(t *testing.T) {
	t.Parallel()
	var w notify.QuotaWaits
	defer1 := notify.Event{Kind: notify.JobDeferred, JobID: "a", Key: "k", Reset: t0.Add(time.Hour), At: t0}
	s, ok := w.Started(defer1)
	if !ok || s.Kind != notify.QuotaWaitStarted || s.Key != "k" || !s.Reset.Equal(defer1.Reset) || s.JobID != "a" {
		t.Fatalf("first deferral: %+v %v", s, ok)
	}
	second := defer1
	second.JobID, second.At = "b", t0.Add(time.Minute)
	if _, ok := w.Started(second); ok {
		t.Error("a second job on the same wait started it again")
	}
	other := second
	other.Key = "k2"
	if _, ok := w.Started(other); !ok {
		t.Error("a deferral on another key started no wait")
	}
	after := defer1
	after.Reset, after.At = t0.Add(3*time.Hour), t0.Add(2*time.Hour)
	if _, ok := w.Started(after); !ok {
		t.Error("a deferral after the reset passed, on a new reset, started no wait")
	}
	if _, ok := w.Started(notify.Event{Kind: notify.JobBlocked, Key: "k3"}); ok {
		t.Error("a blocked job started a wait")
	}
	if _, ok := w.Started(notify.Event{Kind: notify.JobDeferred}); ok {
		t.Error("a deferral without a key started a wait")
	}
}
