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
package quota
