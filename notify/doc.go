// Package notify tells people outside layover what its jobs and workflow
// runs are doing: `layover serve --notify URL` POSTs one JSON body per
// lifecycle event (a quota wait started, a job deferred, blocked, waiting
// for credentials or failed, a workflow run paused or complete) to each
// target, or Slack's {"text": ...} form for a "slack:URL" target
// (docs/notifications.md).
//
// A Notifier never holds its caller back: Send only queues, each target
// has its own bounded queue and its own worker, which delivers that
// target's events one at a time in the order they were sent, so a slow or
// dead receiver delays only its own events. A delivery that timed out, or
// was answered 429 or 5xx, is retried with capped exponential backoff and
// jitter, drawn from the injected clock and Rand; any other answer is
// final. When a queue is full its oldest event is dropped and counted.
//
// A webhook URL carries its secret in its path or query: the package names
// a target only by its scheme and host, in its errors and its logs.
package notify
