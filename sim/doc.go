// Package sim runs layover's real machinery on a virtual clock with fake
// providers, to show at scale what it does (docs/simulator.md).
//
// # Lanes
//
// Lanes is the harness of the lane experiment: each lane is one job of a
// real host (host.New on a temporary SQLite store, a clock.Fake, fake
// runners, quotas and credentials) that hits a wait, is resumed,
// reconciled by its check command and verified against the store's
// history. A resource lane's first attempt meets an exhausted quota with
// a declared reset (the job is deferred, WAIT_RESOURCE); an auth lane's
// fails on its credentials (auth-wait, WAIT_AUTH). The fakes make no call
// that leaves the process, and each lane's script allows exactly two
// attempts: the one that waits and the one that completes. Lanes reports
// the invariants any lane broke: a lane run more often than its script
// allows, an auth lane ended by a quota reset, a resource lane ended by
// new credentials, a lane that did not end complete.
//
// # Time
//
// The driver moves the fake clock only while no lane is running or due:
// then it sets the clock to the store's next due time (at least a step
// ahead), so a simulated hour takes as long as the work in it, and no
// lease runs out under a running attempt.
package sim
