package cli

import (
	"context"
	"io"
	"log/slog"

	"github.com/layoverhq/layover/host"
	"github.com/layoverhq/layover/job"
	"github.com/layoverhq/layover/notify"
	"github.com/layoverhq/layover/store"
	"github.com/layoverhq/layover/workflow/record"
)

// The values of serve --log-format.
const (
	logFormatText = "text"
	logFormatJSON = "json"
)

// logHandler is serve's slog handler for --log-format over out (the
// redacting writer, so masking applies to either format).
func logHandler(format string, out io.Writer) slog.Handler {
	if format == logFormatJSON {
		return slog.NewJSONHandler(out, nil)
	}
	return slog.NewTextHandler(out, nil)
}

// notifyEventBuffer is the buffer of serve's notify subscription, in
// events: forwarding reads each event's job from the store, so a burst
// of transitions waits here rather than being dropped.
const notifyEventBuffer = 4096

// notifyLost counts, for layover_notify_dropped_total, the notifications
// lost: those n dropped from a full queue, and the events sub (the
// subscription that feeds n) dropped from its full buffer before n saw
// them.
func notifyLost(n *notify.Notifier, sub *host.Subscription) func() float64 {
	return func() float64 { return float64(n.Dropped() + sub.Dropped()) }
}

// notifyURLs are the full URLs of serve's --notify targets, secrets that
// its log masks; a target that does not parse was refused before.
func notifyURLs(targets []string) []string {
	var out []string
	for _, s := range targets {
		if t, err := notify.ParseTarget(s); err == nil {
			out = append(out, t.URL())
		}
	}
	return out
}

// forwardJobEvents hands the notifier the events of sub it tells its
// targets of (notify.FromJob), each job read from st for its workflow run,
// with a quota-wait-started event before the first deferral on a wait. It
// returns when sub is closed (the host stopped) or ctx ends.
func forwardJobEvents(ctx context.Context, st store.Store, sub *host.Subscription, n *notify.Notifier, logger *slog.Logger) {
	var waits notify.QuotaWaits
	for {
		var ev host.Event
		select {
		case <-ctx.Done():
			return
		case e, ok := <-sub.C():
			if !ok {
				return
			}
			ev = e
		}
		for _, ev := range sweptFailures(ev) {
			if !notify.Notable(ev) {
				continue
			}
			j, err := st.Job(ctx, ev.JobID)
			if err != nil && ctx.Err() == nil {
				// The event is sent without its job's workflow run.
				logger.Warn("notify: read job", "job", ev.JobID, "err", err)
			}
			e, _ := notify.FromJob(ev, j)
			if started, ok := waits.Started(e); ok {
				n.Send(started)
			}
			n.Send(e)
		}
	}
}

// sweptFailures is ev itself, or for a sweep's event the failure of each
// job it names as failed (auth-wait past the job's deadline; at most
// store.MaxSweptFailed of them), so that each is told as job-failed.
func sweptFailures(ev host.Event) []host.Event {
	if ev.JobID != "" {
		return []host.Event{ev}
	}
	out := make([]host.Event, 0, len(ev.Swept.Failed))
	for _, id := range ev.Swept.Failed {
		out = append(out, host.Event{JobID: id, From: job.AuthWait, To: job.Failed, Reason: job.ReasonPastDue, At: ev.At})
	}
	return out
}

// notifyRun hands the notifier the event of a workflow run whose status
// the coordinator changed, if it is one (notify.FromRun).
func notifyRun(ctx context.Context, st store.Store, n *notify.Notifier, r record.Run, logger *slog.Logger) {
	if r.Status != record.RunPaused && r.Status != record.RunComplete {
		return
	}
	tasks, err := st.RunTasks(ctx, r.ID)
	if err != nil && ctx.Err() == nil {
		logger.Warn("notify: read run tasks", "run", r.ID, "err", err)
	}
	if e, ok := notify.FromRun(r, tasks); ok {
		n.Send(e)
	}
}
