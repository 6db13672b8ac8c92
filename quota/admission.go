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
}

// Admit decides whether a pass may start at now, given the latest states of
// the keys it names (states of other keys must not be passed). Expired
// states say nothing. An exhausted key refuses first; among several, the one
// whose reset is latest, since the pass cannot run before it. Otherwise a key
// below its reserve refuses, again the latest reset first.
func (p Policy) Admit(now time.Time, states []State) Decision {
	var d Decision
	d.Admit = true
	for _, s := range states {
		c := s.CauseAt(now, p.Reserve.For(s.Resource, s.Limit))
		if c == CauseNone {
			continue
		}
		if d.Admit || rank(c) > rank(d.Cause) ||
			(c == d.Cause && s.ResetAt.After(d.Blocking.ResetAt)) {
			d = Decision{Blocking: s, Cause: c}
		}
	}
	return d
}

func rank(c Cause) int {
	switch c {
	case CauseExhausted:
		return 2
	case CauseBelowReserve:
		return 1
	}
	return 0
}
