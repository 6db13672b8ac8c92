package host

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/layoverhq/layover/job"
	"github.com/layoverhq/layover/quota"
	"github.com/layoverhq/layover/store"
	"github.com/layoverhq/layover/textsafe"
)

// Event is one change a Jobs (or the Host that embeds it) made to a job, or
// one sweep of the Host's that moved jobs.
type Event struct {
	// JobID names the job; "" for a sweep's event.
	JobID string
	// From and To are the job's states before and after: From is "" for a
	// submission, and equal to To for a change that moves no state (an
	// approval, a checkpoint, a stage or session recorded).
	From, To job.State
	// Stage is the job's stage after the change; Reason the transition's
	// reason ("" when the change records none).
	Stage, Reason string
	// At is the change's time, from the clock of the Jobs that made it.
	At time.Time
	// Key and Reset are the quota wait of a deferral this process made:
	// the key it waits on and the reset its provider declared (zero when
	// none was declared; the zero Key for any other change). WakeAt is a
	// deferred job's wake-up (Job.RunAt), zero in any other state.
	Key    quota.Key
	Reset  time.Time
	WakeAt time.Time
	// Swept counts what a sweep moved, for an event with no JobID. The
	// store makes the sweep's moves in bulk and names no job: a subscriber
	// that follows a job reads it again on such an event.
	Swept store.SweepResult
}

// DefaultEventBuffer is the buffer of a subscription that names none.
const DefaultEventBuffer = 256

// Subscription receives the events of one Jobs on C: those one goroutine
// makes arrive in the order it made them, while changes made at the same
// time (an operator's cancel during an attempt, two jobs' attempts) may
// arrive in either order, so a subscriber that needs a job's state reads it
// from the store. Events are never waited for: when C's buffer is full, an
// event is dropped for this subscription (and counted by Dropped), so a
// slow subscriber never holds up the host. Close ends it, and so does the
// Stop of the Host that embeds the Jobs. Safe for concurrent use.
type Subscription struct {
	c       chan Event
	jobs    *Jobs
	dropped atomic.Int64
	once    sync.Once
}

// C delivers the events; it is closed by Close (or the Host's Stop).
func (s *Subscription) C() <-chan Event { return s.c }

// Dropped counts the events this subscription missed because its buffer
// was full.
func (s *Subscription) Dropped() int64 { return s.dropped.Load() }

// Close ends the subscription and closes C. Closing twice is a no-op.
func (s *Subscription) Close() {
	s.once.Do(func() {
		h := &s.jobs.hub
		h.mu.Lock()
		delete(h.subs, s)
		close(s.c)
		h.mu.Unlock()
	})
}

// hub holds a Jobs' subscriptions.
type hub struct {
	mu   sync.Mutex
	subs map[*Subscription]struct{}
}

// Subscribe returns a subscription to the events this Jobs makes from now
// on, buffered for buffer events (DefaultEventBuffer when buffer <= 0).
// Only this process's changes are events: another process's (a `layover
// cancel`) reaches the store, not this subscription.
func (f *Jobs) Subscribe(buffer int) *Subscription {
	if buffer <= 0 {
		buffer = DefaultEventBuffer
	}
	s := &Subscription{c: make(chan Event, buffer), jobs: f}
	f.hub.mu.Lock()
	if f.hub.subs == nil {
		f.hub.subs = map[*Subscription]struct{}{}
	}
	f.hub.subs[s] = struct{}{}
	f.hub.mu.Unlock()
	return s
}

// closeAll ends every subscription (the Host is stopping).
func (h *hub) closeAll() {
	h.mu.Lock()
	subs := make([]*Subscription, 0, len(h.subs))
	for s := range h.subs {
		subs = append(subs, s)
	}
	h.mu.Unlock()
	for _, s := range subs {
		s.Close()
	}
}

// publish hands ev to every subscription without waiting.
func (f *Jobs) publish(ev Event) {
	f.hub.mu.Lock()
	defer f.hub.mu.Unlock()
	for s := range f.hub.subs {
		select {
		case s.c <- ev:
		default:
			s.dropped.Add(1)
		}
	}
}

// applyJob is the one way a Jobs (and its Host) changes a stored job: the
// store applies ch, and the change is published as an event.
func (f *Jobs) applyJob(ctx context.Context, id string, fence int64, ch job.Change) (job.Job, error) {
	return f.applyWait(ctx, id, fence, ch, wait{})
}

// applyWait is applyJob for a change that defers the job on the quota wait
// w (the zero wait for any other change), which the event and the log line
// name.
//
// The log line is written here, not by a subscriber: every change this
// process makes passes through here, while a subscription drops events
// when its buffer is full.
func (f *Jobs) applyWait(ctx context.Context, id string, fence int64, ch job.Change, w wait) (job.Job, error) {
	var from job.State
	mutate := ch.Mutate
	ch.Mutate = func(x *job.Job) {
		// Mutate sees the job as stored, before the change's state.
		from = x.State
		if mutate != nil {
			mutate(x)
		}
	}
	out, err := f.st.ApplyJob(ctx, id, fence, ch)
	if err == nil {
		ev := Event{JobID: id, From: from, To: out.State, Stage: out.Stage, Reason: ch.Reason, At: ch.Now,
			Key: w.Key, Reset: w.ResetAt}
		if out.State == job.Deferred {
			ev.WakeAt = out.RunAt
		}
		f.logTransition(ev, out.Fence)
		f.publish(ev)
	}
	return out, err
}

// submitted publishes a new job's submission, made at now (from the clock,
// as every event's At is); key is the quota wait of a job submitted
// deferred (the zero Key otherwise).
func (f *Jobs) submitted(j job.Job, now time.Time, w wait) {
	ev := Event{JobID: j.ID, To: j.State, Stage: j.Stage, Reason: job.ReasonSubmitted, At: now, Key: w.Key, Reset: w.ResetAt}
	if j.State == job.Deferred {
		ev.WakeAt = j.RunAt
	}
	f.logTransition(ev, j.Fence)
	f.publish(ev)
}

// MaxLoggedReason bounds, in bytes, the reason a transition's log line
// quotes: a provider's message can be long and is not layover's own text.
const MaxLoggedReason = 300

// logTransition writes the one log line of a job's move from one state to
// another: its id, the states, the fence after the change, and for a
// deferral the quota key, the declared reset and the wake-up. A change
// that moves no state logs nothing. The reason is bounded and made one
// safe line (textsafe); secrets in it are the logger's writer's to mask.
func (f *Jobs) logTransition(ev Event, fence int64) {
	if ev.From == ev.To {
		return
	}
	attrs := []any{"job", ev.JobID, "from", string(ev.From), "to", string(ev.To), "fence", fence}
	if ev.Key != (quota.Key{}) {
		attrs = append(attrs, "key", ev.Key.String())
	}
	if !ev.Reset.IsZero() {
		attrs = append(attrs, "reset", ev.Reset.UTC())
	}
	if !ev.WakeAt.IsZero() {
		attrs = append(attrs, "wake_at", ev.WakeAt.UTC())
	}
	if ev.Reason != "" {
		attrs = append(attrs, "reason", textsafe.Line(ev.Reason, MaxLoggedReason))
	}
	f.cfg.Logger.Info("job transition", attrs...)
}
