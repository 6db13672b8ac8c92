package quota

import "time"

// Work says what kind of work is asked about when a quota may hold it back
// (docs/design.md, Glossary: Quota wait).
type Work int

const (
	// Running is work already under way: a command, a request of normal
	// priority. Only an exhausted key holds it back; below the reserve it
	// goes on.
	Running Work = iota
	// Scheduled is work that can start later instead: a pass, a durable
	// job's resume, a low-priority request. A key below its reserve holds
	// it back too.
	Scheduled
)

// Block is a quota key that holds work back at some moment, and why.
type Block struct {
	// State is the key's state that holds the work back.
	State State
	// Cause is CauseExhausted (a Quota wait) or CauseBelowReserve.
	Cause Cause
	// Reserve is the reserve of State's resource under the policy that
	// decided, so a message about the block quotes the number that was
	// compared.
	Reserve int64
}

// Holds reports whether b holds back work of kind w: an exhaustion holds
// back everything, a key below its reserve only Scheduled work.
func (b Block) Holds(w Work) bool {
	return b.Cause == CauseExhausted || w == Scheduled
}

// Outranks reports whether b binds longer than o: an exhaustion before a
// key below its reserve, then the later reset, since the work cannot go on
// before it.
func (b Block) Outranks(o Block) bool {
	return outranks(b.Cause, b.State.ResetAt, o.Cause, o.State.ResetAt)
}

// outranks is Outranks on a block's cause and reset, for a choice made
// without building the blocks.
func outranks(c Cause, reset time.Time, oc Cause, oreset time.Time) bool {
	if r, or := rank(c), rank(oc); r != or {
		return r > or
	}
	return reset.After(oreset)
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

// Blocks is the one test of whether a quota state holds work back at now,
// used by every decision (a pass's admission, the transport, run, the
// durable host, the status): ok is false for a state that has expired, has
// room above its reserve, or whose remaining count is unknown and was never
// rejected. Otherwise the block's Cause is CauseExhausted while the state is
// Exhausted, else CauseBelowReserve: its known remaining count is below
// p.Reserve.For its resource and limit (an unknown limit gives
// DefaultReserveCap). Remaining equal to the reserve is room. A
// CauseBelowReserve recorded with the state is not read: the reserve is the
// caller's.
func (p Policy) Blocks(s State, now time.Time) (Block, bool) {
	c, reserve := p.cause(&s, now)
	if c == CauseNone {
		return Block{}, false
	}
	return Block{State: s, Cause: c, Reserve: reserve}, true
}

// cause is Blocks' answer without copying the state: the cause (CauseNone
// when nothing blocks) and the reserve compared.
func (p Policy) cause(s *State, now time.Time) (Cause, int64) {
	if s.Expired(now) {
		return CauseNone, 0
	}
	reserve := p.Reserve.For(s.Resource, s.Limit)
	switch {
	case s.Depleted():
		return CauseExhausted, reserve
	case s.Remaining >= 0 && s.Remaining < reserve:
		return CauseBelowReserve, reserve
	}
	return CauseNone, 0
}

// Blocking returns the block among states that holds back work of kind w at
// now for longest (Block.Outranks): an exhausted key first, the latest reset
// among several. ok is false when none holds it back.
func (p Policy) Blocking(now time.Time, states []State, w Work) (Block, bool) {
	i, c, reserve := p.blocking(now, states, w)
	if i < 0 {
		return Block{}, false
	}
	return Block{State: states[i], Cause: c, Reserve: reserve}, true
}

// blocking is Blocking's choice as an index into states (-1 for none), its
// cause and its reserve, so no state is copied until one is chosen.
func (p Policy) blocking(now time.Time, states []State, w Work) (best int, cause Cause, reserve int64) {
	best = -1
	for i := range states {
		c, r := p.cause(&states[i], now)
		if c == CauseNone || !(Block{Cause: c}).Holds(w) {
			continue
		}
		if best < 0 || outranks(c, states[i].ResetAt, cause, states[best].ResetAt) {
			best, cause, reserve = i, c, r
		}
	}
	return best, cause, reserve
}
