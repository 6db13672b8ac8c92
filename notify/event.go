package notify

import (
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/layoverhq/layover/host"
	"github.com/layoverhq/layover/job"
	"github.com/layoverhq/layover/textsafe"
	"github.com/layoverhq/layover/workflow/record"
)

// Kind names what happened.
type Kind string

// The kinds of events (docs/notifications.md, Events).
const (
	// QuotaWaitStarted: the first job deferred on a quota key until a
	// given reset; jobs deferred on the same wait after it are
	// JobDeferred only (QuotaWaits).
	QuotaWaitStarted Kind = "quota-wait-started"
	JobDeferred      Kind = "job-deferred"  // a job waits for a quota's reset
	JobBlocked       Kind = "job-blocked"   // a job needs an operator
	JobAuthWait      Kind = "job-auth-wait" // a job waits for working credentials
	JobFailed        Kind = "job-failed"    // a job ended failed
	FlowPaused       Kind = "flow-paused"   // a workflow run waits for a quota's reset
	FlowComplete     Kind = "flow-complete" // every task of a workflow run completed
)

// MaxMessage bounds, in bytes, an event's message: it quotes a provider's
// text, which layover did not write.
const MaxMessage = 500

// Event is one thing a target is told. The zero values of its optional
// fields are left out of the body.
type Event struct {
	Kind Kind
	// JobID names the job; "" for a flow event. RunID names the workflow
	// run: a flow event's, or the run whose task the job runs.
	JobID, RunID string
	// State is the job's state (job.State) or the run's status
	// (record.RunStatus) after the event.
	State string
	// Key is the quota key waited on ("api.github.com/octocat/core", or a
	// workflow task's "provider/resource"); Reset the reset its provider
	// declared (zero: unknown), WakeAt when the job runs again.
	Key           string
	Reset, WakeAt time.Time
	// Message says why, in the words of the transition's reason. It is
	// made one safe line of at most MaxMessage bytes before it is sent.
	Message string
	// At is when it happened, from the clock of the host that did it.
	At time.Time
}

// Notable reports whether a host event is one a target is told of
// (FromJob yields an Event for it): a job's move into deferred, blocked,
// auth-wait or failed.
func Notable(ev host.Event) bool {
	_, ok := jobKind(ev)
	return ok
}

func jobKind(ev host.Event) (Kind, bool) {
	if ev.JobID == "" || ev.From == ev.To {
		return "", false
	}
	switch ev.To {
	case job.Deferred:
		return JobDeferred, true
	case job.Blocked:
		return JobBlocked, true
	case job.AuthWait:
		return JobAuthWait, true
	case job.Failed:
		return JobFailed, true
	}
	return "", false
}

// FromJob is the event a host event makes, with j the job as read from the
// store after it (for the workflow run it belongs to; a j of another id is
// not used). false: the host event is not one targets are told of
// (Notable).
func FromJob(ev host.Event, j job.Job) (Event, bool) {
	kind, ok := jobKind(ev)
	if !ok {
		return Event{}, false
	}
	e := Event{Kind: kind, JobID: ev.JobID, State: string(ev.To), Message: textsafe.Line(ev.Reason, MaxMessage), At: ev.At}
	if kind == JobDeferred {
		if ev.Key.Resource != "" || ev.Key.Host != "" {
			e.Key = ev.Key.String()
		}
		e.Reset, e.WakeAt = ev.Reset, ev.WakeAt
	}
	if j.ID == ev.JobID && j.Spec.Flow != nil {
		e.RunID = j.Spec.Flow.Run
	}
	return e, true
}

// FromRun is the event of a workflow run whose status changed to r.Status,
// with tasks its tasks as stored: a paused run names the quota of its
// paused task with the earliest known reset. false: targets are not told
// of this status (only paused and complete are events).
func FromRun(r record.Run, tasks []record.Task) (Event, bool) {
	e := Event{RunID: r.ID, State: string(r.Status), At: r.UpdatedAt}
	switch r.Status {
	case record.RunComplete:
		e.Kind, e.Message = FlowComplete, "every task completed"
		return e, true
	case record.RunPaused:
		e.Kind = FlowPaused
	default:
		return Event{}, false
	}
	var first *record.Quota
	for _, t := range tasks {
		q := t.Quota
		if t.State != record.TaskPaused || q == nil {
			continue
		}
		if first == nil || !q.ResetAt.IsZero() && (first.ResetAt.IsZero() || q.ResetAt.Before(first.ResetAt)) {
			first = q
		}
	}
	if first != nil {
		e.Key, e.Reset = first.Provider+"/"+first.Resource, first.ResetAt
		e.Message = textsafe.Line(first.Message, MaxMessage)
	}
	return e, true
}

// QuotaWaits makes the quota-wait-started events: one per quota key and
// declared reset, made of the first job deferral that names them. It keeps
// a key until its reset passes (a wait of unknown reset for an hour). Safe
// for concurrent use; the zero value is ready.
type QuotaWaits struct {
	mu      sync.Mutex
	started map[string]startedWait
}

type startedWait struct{ reset, at time.Time }

// unknownResetMemory is how long a wait whose reset is unknown is taken
// to last, for QuotaWaits.
const unknownResetMemory = time.Hour

// Started returns the quota-wait-started event of e, a JobDeferred event,
// when e is the first to name its key and reset; false otherwise (not a
// deferral, no key, or a wait already announced).
func (w *QuotaWaits) Started(e Event) (Event, bool) {
	if e.Kind != JobDeferred || e.Key == "" {
		return Event{}, false
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.started == nil {
		w.started = map[string]startedWait{}
	}
	for k, s := range w.started {
		if s.reset.IsZero() && e.At.Sub(s.at) > unknownResetMemory || !s.reset.IsZero() && s.reset.Before(e.At) {
			delete(w.started, k)
		}
	}
	if s, ok := w.started[e.Key]; ok && s.reset.Equal(e.Reset) {
		return Event{}, false
	}
	w.started[e.Key] = startedWait{reset: e.Reset, at: e.At}
	return Event{Kind: QuotaWaitStarted, JobID: e.JobID, RunID: e.RunID, State: "waiting", Key: e.Key,
		Reset: e.Reset, WakeAt: e.WakeAt, Message: e.Message, At: e.At}, true
}

// BodyVersion is the version of the JSON body. It grows when a field
// changes meaning or goes away; a new field keeps the version.
const BodyVersion = 1

// Body is the JSON a URL target receives (docs/notifications.md, Body).
// Times are RFC 3339 in UTC; an optional field that is empty is absent.
type Body struct {
	Version int    `json:"version"`
	ID      string `json:"id"` // the same for every target and every retry: deduplicate on it
	Kind    Kind   `json:"kind"`
	Time    string `json:"time"`
	Job     string `json:"job,omitempty"`
	Run     string `json:"run,omitempty"`
	State   string `json:"state,omitempty"`
	Key     string `json:"key,omitempty"`
	Reset   string `json:"reset,omitempty"`
	WakeAt  string `json:"wake_at,omitempty"`
	Message string `json:"message,omitempty"`
}

// body is e as the JSON body, its text made safe.
func body(id string, e Event) Body {
	return Body{Version: BodyVersion, ID: id, Kind: Kind(safe(string(e.Kind), 64)), Time: stamp(e.At),
		Job: safe(e.JobID, 200), Run: safe(e.RunID, 200), State: safe(e.State, 64), Key: safe(e.Key, 300),
		Reset: stamp(e.Reset), WakeAt: stamp(e.WakeAt), Message: safe(e.Message, MaxMessage)}
}

func safe(s string, n int) string { return textsafe.Line(s, n) }

func stamp(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(time.RFC3339)
}

// encode is the request body of e for a target of form f.
func encode(f Form, id string, e Event) ([]byte, error) {
	b := body(id, e)
	if f == FormSlack {
		return json.Marshal(struct {
			Text string `json:"text"`
		}{slackText(b)})
	}
	return json.Marshal(b)
}

// slackText is the one line a Slack target shows, with Slack's control
// characters (&, <, >) escaped so no text in it becomes a link or a
// mention.
func slackText(b Body) string {
	var s strings.Builder
	s.WriteString("layover: ")
	switch {
	case b.Kind == QuotaWaitStarted:
		s.WriteString("quota wait started")
		if b.Job != "" {
			fmt.Fprintf(&s, " (job %s)", b.Job)
		}
	case b.Job != "":
		fmt.Fprintf(&s, "job %s %s", b.Job, words(b.Kind))
	default:
		fmt.Fprintf(&s, "workflow run %s %s", b.Run, words(b.Kind))
	}
	if b.Key != "" {
		fmt.Fprintf(&s, " on %s", b.Key)
	}
	if b.Reset != "" {
		fmt.Fprintf(&s, ", reset at %s", b.Reset)
	}
	if b.WakeAt != "" {
		fmt.Fprintf(&s, ", runs again at %s", b.WakeAt)
	}
	if b.Message != "" {
		fmt.Fprintf(&s, ": %s", b.Message)
	}
	return slackEscape.Replace(s.String())
}

var slackEscape = strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;")

// words is a kind as a Slack line says it.
func words(k Kind) string {
	switch k {
	case JobDeferred:
		return "deferred"
	case JobBlocked:
		return "blocked (needs an operator)"
	case JobAuthWait:
		return "waits for working credentials"
	case JobFailed:
		return "failed"
	case FlowPaused:
		return "paused"
	case FlowComplete:
		return "complete"
	}
	return string(k)
}
