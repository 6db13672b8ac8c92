package quota

import "time"

// Decision is the outcome of admitting a pass.
type Decision struct {
	// Admit is true when every named key has room above its reserve.
	Admit bool
	// Blocking is the state that refused admission; zero when admitted.
	Blocking State
	// Cause is why Blocking refused: CauseExhausted or CauseBelowReserve.
	Cause Cause
	// Reserve is the reserve Blocking was held against.
	Reserve int64
}

// Admit decides whether a pass may start at now, given the latest states of
// the keys it names (states of other keys must not be passed): the pass is
// Scheduled work, so Blocking decides. Expired states say nothing. An
// exhausted key refuses first; among several, the one whose reset is
// latest, since the pass cannot run before it. Otherwise a key below its
// reserve refuses, again the latest reset first.
func (p Policy) Admit(now time.Time, states []State) Decision {
	i, c, reserve := p.blocking(now, states, Scheduled)
	if i < 0 {
		return Decision{Admit: true}
	}
	return Decision{Blocking: states[i], Cause: c, Reserve: reserve}
}
