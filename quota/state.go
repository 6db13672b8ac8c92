package quota

import "time"

// Cause says why a key holds back work.
type Cause string

const (
	// CauseNone: the key has room above its reserve, or nothing is known.
	CauseNone Cause = ""
	// CauseExhausted: remaining is 0 or a call was rejected for quota. Every
	// pass skips and every command waits until the reset.
	CauseExhausted Cause = "exhausted"
	// CauseBelowReserve: the key has fewer units left than its reserve.
	// Passes skip; commands go on. It depends on the reader's reserve, so
	// it is never an observation: Policy.Blocks decides it when asked.
	CauseBelowReserve Cause = "below-reserve"
	// CausePacing: the key has room above its reserve, but its recent
	// burn would take it to the reserve before the reset (Policy.PaceKey).
	// Only a deferral says it (a paced low-priority request); no state
	// holds it.
	CausePacing Cause = "pacing"
)

// Source says where an observation came from.
type Source string

const (
	SourceHeaders   Source = "headers"    // x-ratelimit-* headers of a response
	SourceRateLimit Source = "rate_limit" // GitHub's free GET /rate_limit
	SourceRejected  Source = "rejected"   // a call the provider rejected for quota
)

// Unknown marks a count that was not observed.
const Unknown int64 = -1

// State is what layover last observed of one quota.
//
// Limit and Remaining are in the provider's units, Unknown (-1) when not
// observed. ResetAt is when the provider said the quota refills, on this
// machine's clock (skew-corrected); when the provider gave no reset it is an
// assumed time and ResetKnown is false. RawReset is the provider's own reset
// value (epoch seconds for GitHub), 0 when unknown; it keys the activity log's
// skip reasons because it does not move as the clock does.
//
// Cause is what the observation itself said: CauseExhausted when the
// provider rejected a call for quota or said nothing remains, else
// CauseNone. It never holds CauseBelowReserve, which depends on whoever
// reads the state (Policy.Blocks); one found in an older store is ignored.
type State struct {
	Key
	Limit      int64
	Remaining  int64
	ResetAt    time.Time
	ResetKnown bool
	RawReset   int64
	ObservedAt time.Time
	ObservedBy string
	Source     Source
	Cause      Cause
}

// Expired reports whether the state no longer says anything at now: its reset
// has passed. An expired state is ignored by every decision.
func (s State) Expired(now time.Time) bool {
	return !s.ResetAt.After(now)
}

// Depleted reports whether the observation itself says the quota is used
// up: nothing remains, or a call was rejected for quota. It does not ask
// whether that still holds (Exhausted does) nor what any reserve says
// (Policy.Blocks does).
func (s State) Depleted() bool {
	return s.Remaining == 0 || s.Cause == CauseExhausted
}

// Exhausted reports whether the key is in a Quota wait at now: not expired,
// and Depleted. It is the one definition of exhausted; Policy.Blocks adds
// the reserve.
func (s State) Exhausted(now time.Time) bool {
	return !s.Expired(now) && s.Depleted()
}

// HasRoom reports whether the observation itself says units remain: a
// known remaining count above 0, and no rejection.
func (s State) HasRoom() bool {
	return s.Remaining > 0 && s.Cause != CauseExhausted
}
