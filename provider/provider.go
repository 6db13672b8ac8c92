// Package provider holds what every provider's classifier returns: the
// outcome class of a response or a failed command, with the evidence for it
// and the quota observations it carried.
package provider

import (
	"time"

	"github.com/layoverhq/layover/quota"
)

// Class is the outcome class of the glossary in docs/design.md.
type Class string

const (
	ClassOK        Class = "ok"        // the call succeeded
	ClassQuota     Class = "quota"     // primary exhaustion; reset known or unknown
	ClassSecondary Class = "secondary" // a short throttle; retry-after known or not
	ClassAuth      Class = "auth"      // credentials missing, expired or refused
	ClassTransient Class = "transient" // overload, 5xx, network
	ClassPermanent Class = "permanent" // anything a wait cannot fix
)

// Outcome is a classified response or command result.
//
// Counts are Unknown (-1) when the evidence did not give them; RetryAfter is
// -1 when no wait was stated; ResetAt is the zero time when no reset was
// given. A classifier never invents a reset or a wait.
type Outcome struct {
	Class    Class
	Provider string // "github", ...
	// Resource is the provider's name for the quota concerned ("core",
	// "graphql", ...), "" when the evidence does not say.
	Resource string
	// ResetAt is when the quota concerned refills, on this machine's clock.
	ResetAt time.Time
	// RetryAfter is the wait the provider stated for a throttle.
	RetryAfter time.Duration
	Remaining  int64
	Limit      int64
	// Reason is a short text naming the evidence, e.g.
	// "403 with x-ratelimit-remaining: 0".
	Reason string
	// Observations are the quota states the evidence carried, with only
	// Key.Resource of their keys set: the caller knows the host and principal.
	Observations []quota.State
}

// Unknown returns an Outcome of class c for provider p with every number
// unknown.
func Unknown(p string, c Class, reason string) Outcome {
	return Outcome{Class: c, Provider: p, Remaining: quota.Unknown, Limit: quota.Unknown, RetryAfter: -1, Reason: reason}
}
