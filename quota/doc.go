// Package quota holds layover's model of provider quotas: the key a quota is
// known by, the state last observed for it, and the policy that decides whether
// a scheduled pass is admitted and how long a running command waits.
//
// # Keys and states
//
// A quota is identified by a [Key]: the provider host, the principal whose
// quota it is, and the provider's resource name (GitHub's "core", "graphql",
// "search", ...). A [State] is what layover last saw for a key. Counts are in
// the provider's own units; -1 means unknown. Times are wall-clock times on
// this machine, already corrected for the provider's clock skew.
//
// # Policy
//
// [Policy] carries every number of the defaults in docs/design.md. Its methods are pure:
// they take the current time and a random source as arguments, so tests drive
// them with a fake clock and a fixed source.
//
// # What blocks
//
// [Policy.Blocks] is the one test of whether a state holds work back: while
// it is [State.Exhausted] (a Quota wait), or while its known remaining count
// is below the policy's reserve. [Policy.Blocking] picks, among several
// states, the one that holds back a kind of [Work] longest, and
// [Policy.Admit] is that question for a pass. A pass's admission, the
// transport, run, the durable host and the status all ask it; none compares
// counts itself. Below the reserve depends on the reader's reserve, so it is
// decided when asked and never recorded with an observation.
//
// # Pacing
//
// [BurnRate] measures how fast a key's remaining count falls over the
// recent history of its current window (every host's observations, see
// [Sample]); [ProjectExhaustion] and [ProjectLevel] say when it would run
// out or reach the reserve at that rate, if before the reset; [Pace] and
// [Policy.PaceKey] skip scheduled work whose key would run out before the
// reset at that rate (its reserve reached too early to last until the
// reset), falling back to the plain reserve rule on too little history
// (docs/pacing.md).
//
// # Waits
//
// [Policy.Resume] draws the jitter of one wait once; the [Resume] value then
// flows to whatever needs the wait's end (the wait itself, a decision to
// defer, a receipt's window), so no one draws it again.
package quota
