// Package host is layover's durable host: it keeps jobs in the store, runs
// them through a Runner, defers them with receipts when a quota runs out,
// wakes them at their resume time, and resumes each as a fresh run after a
// preflight. The store is the truth: a host that dies loses nothing, and
// another host (or the same one restarted) takes its jobs over once their
// leases expire.
//
// # Front door
//
// Jobs is the one way in: Submit, SubmitDeferred, PrepareDeferred and the
// operator's actions (Cancel, Approve, Unblock, Adopt, Checkpoint,
// LiveHosts), built from a Config. A Host embeds its own Jobs. Subscribe
// delivers the job events a Jobs and its Host apply, without ever making
// the host wait for a slow subscriber (docs/lifecycle.md).
//
// # Lifecycle
//
// The states and moves are those of docs/lifecycle.md (see package job). A host claims due
// jobs (a new fence per claim), renews its leases by heartbeat, and kills a
// job's process as soon as it loses the lease. Quota waits never count as
// attempts. A job another process submits or makes due starts at once
// when the store offers store.Changes, else at the next heartbeat. Drain
// stops a host gracefully: no more claims, the running attempts may end
// by themselves for a while, then Stop (docs/lifecycle.md, Draining and
// Prompt start).
//
// # Resume preflight
//
// A resumable job is never replayed. Before its command runs again the host
// validates the receipt, holds a fresh claim, reads fresh quota state,
// recomputes the bindings, honours fresh_approval_required, and runs the
// job's check command; any mismatch blocks the job.
//
// # Time
//
// Every time comes from Config.Clock and every random draw from
// Config.Rand, so tests drive a host with a fake clock.
package host
