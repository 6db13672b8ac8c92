package quota

import (
	"fmt"
	"math"
	"slices"
	"time"
)

// Pacing numbers (docs/pacing.md). They are not flags: the rule is on or
// off (pass --pace, the config key pace).
const (
	// BurnSpan is how far back from now a burn rate reads the current
	// window's observations: 15 minutes.
	BurnSpan = 15 * time.Minute
	// MinBurnSamples is the fewest observations (of the current window,
	// within BurnSpan) a burn rate is measured from: 3. With fewer, the
	// rate is not known and pacing falls back to the plain reserve rule.
	MinBurnSamples = 3
	// MinBurnSpan is the shortest time between the first and the last of
	// those observations for a rate to be known: 2 minutes.
	MinBurnSpan = 2 * time.Minute
	// SameResetTolerance is how far apart two observations' stated resets
	// may be and still name one window: 5 seconds, for hosts whose skew
	// corrections differ. A rise in remaining between two such
	// observations is the order in which concurrent responses arrived, not
	// a reset.
	SameResetTolerance = 5 * time.Second
)

// Sample is one point of a key's history of observations (the store's
// Observation without its key): the remaining count at a time, and the
// reset the provider stated then. Remaining is in the provider's units,
// Unknown (-1) when not observed; a sample with an unknown count is left
// out of every rate.
type Sample struct {
	At        time.Time
	Remaining int64
	ResetAt   time.Time
}

// Burn is a key's burn rate: how fast its remaining count fell over the
// recent history of its current window, from every host's observations.
type Burn struct {
	// PerMinute is the rate, in the provider's units per minute; >= 0 and
	// finite. 0 when not Known.
	PerMinute float64
	// Known is false when the history is too short to say (fewer than
	// MinBurnSamples observations, or spanning less than MinBurnSpan).
	Known bool
	// Samples is how many observations the rate was measured over, and
	// From and To the first and the last of them.
	Samples  int
	From, To time.Time
}

// BurnRate measures the burn rate at now over samples, in any order (the
// store gives them oldest first). It is pure.
//
// The samples with a known count observed no later than now are taken in
// time order. A sample starts a new window when it was observed at or
// after the reset the one before stated, or when its count is higher than
// the one before (the quota was reset, or refilled) unless both state
// resets within SameResetTolerance of each other (then the rise is the
// order in which two hosts' concurrent responses arrived). The rate is
// read over the current (last) window's samples observed within BurnSpan
// of now: the fall in remaining from the first of them to the last,
// divided by the time between them, and 0 when that is not a fall; so it
// is never negative. It is Known only from MinBurnSamples samples spanning
// at least MinBurnSpan.
func BurnRate(samples []Sample, now time.Time) Burn {
	// Only the samples within BurnSpan of now are read, and the latest one
	// before them, to tell whether the first of them starts a window.
	cut := now.Add(-BurnSpan)
	var before Sample
	hasBefore := false
	pts := make([]Sample, 1, 1+min(len(samples), 96)) // 15 min of 10 s buckets, and slack
	for _, s := range samples {
		switch {
		case s.Remaining < 0 || s.At.After(now):
		case s.At.Before(cut):
			if !hasBefore || !s.At.Before(before.At) {
				before, hasBefore = s, true
			}
		default:
			pts = append(pts, s)
		}
	}
	if hasBefore {
		pts[0] = before
	} else {
		pts = pts[1:]
	}
	byTime := func(a, b Sample) int { return a.At.Compare(b.At) }
	if !slices.IsSortedFunc(pts, byTime) {
		slices.SortStableFunc(pts, byTime)
	}
	start := 0
	for i := 1; i < len(pts); i++ {
		if newWindow(pts[i-1], pts[i]) {
			start = i
		}
	}
	win := pts[start:]
	for len(win) > 0 && win[0].At.Before(cut) {
		win = win[1:]
	}
	b := Burn{Samples: len(win)}
	if len(win) == 0 {
		return b
	}
	first, last := win[0], win[len(win)-1]
	b.From, b.To = first.At, last.At
	span := last.At.Sub(first.At)
	if len(win) < MinBurnSamples || span < MinBurnSpan {
		return b
	}
	b.Known = true
	if fall := first.Remaining - last.Remaining; fall > 0 {
		b.PerMinute = float64(fall) / span.Minutes()
	}
	return b
}

// newWindow reports whether s, observed after prev, starts a new window
// (see BurnRate).
func newWindow(prev, s Sample) bool {
	if !prev.ResetAt.IsZero() && !s.At.Before(prev.ResetAt) {
		return true
	}
	if s.Remaining <= prev.Remaining {
		return false
	}
	if prev.ResetAt.IsZero() || s.ResetAt.IsZero() {
		return true
	}
	d := s.ResetAt.Sub(prev.ResetAt)
	return d > SameResetTolerance || d < -SameResetTolerance
}

// ProjectExhaustion is when s's remaining count would reach 0 at rate,
// counted from s's observation: ok is false when it would not before s's
// reset (or the rate is not known or 0, or s's count is unknown, or s has
// expired at now). The time is never before now.
func ProjectExhaustion(s State, rate Burn, now time.Time) (time.Time, bool) {
	return ProjectLevel(s, rate, 0, now)
}

// ProjectLevel is when s's remaining count would fall to level at rate,
// as ProjectExhaustion for level 0: ok is false when not before s's reset.
// A count already at or below level gives now. The arithmetic saturates: a
// projection too far ahead to be a time is after any reset.
func ProjectLevel(s State, rate Burn, level int64, now time.Time) (time.Time, bool) {
	if !rate.Known || !(rate.PerMinute > 0) || s.Remaining < 0 || s.Expired(now) {
		return time.Time{}, false
	}
	from := s.ObservedAt
	if from.IsZero() || from.After(now) {
		from = now
	}
	at := now
	if units := s.Remaining - max(level, 0); units > 0 {
		mins := float64(units) / rate.PerMinute
		if mins*float64(time.Minute) >= math.MaxInt64 {
			return time.Time{}, false
		}
		at = AddSat(from, time.Duration(mins*float64(time.Minute)))
		if at.Before(now) {
			at = now
		}
	}
	if !at.Before(s.ResetAt) {
		return time.Time{}, false
	}
	return at, true
}

// Pacing is the outcome of pacing one key, or the keys of a pass.
type Pacing struct {
	// Admit is false when the work is to be skipped.
	Admit bool
	// State is the key decided on: the one that refused, else the last
	// one paced (zero when no state was given).
	State State
	// Burn is State's burn rate.
	Burn Burn
	// Block is set when the plain reserve rule refused (Policy.Blocks, for
	// Scheduled work): an exhausted key, or one below its reserve.
	Block *Block
	// ReservedAt is when State would reach its reserve at Burn, set when
	// pacing refused (before State's reset, and at least the time the
	// reserve lasts at Burn before it).
	ReservedAt time.Time
	// ExhaustedAt is when State would run out at Burn, set when pacing
	// refused (before State's reset: why it refused).
	ExhaustedAt time.Time
	// Reserve is the reserve State is paced against.
	Reserve int64
	// Fallback is true when State's history is too short for a rate, so
	// only the plain reserve rule decided.
	Fallback bool
}

// Pace decides whether scheduled work on the key of s may start at now,
// given the key's history (samples, from every host). It is
// Policy.PaceKey as a yes or no and the reason in words; see there.
func Pace(s State, samples []Sample, p Policy, now time.Time) (admit bool, reason string) {
	d := p.PaceKey(s, samples, now)
	return d.Admit, d.Reason()
}

// PaceKey decides whether scheduled work on s's key may start at now.
// First the plain rule: a key that Blocks Scheduled work (exhausted, or
// below its reserve) refuses. Then pacing: with a Known burn rate, a key
// that would reach its reserve too early for the reserve to last until
// the reset at that rate refuses: one whose remaining count would run out
// before its reset (ProjectExhaustion). The plain rule keeps the reserve
// for the work pacing does not hold back, which spends it more slowly. A key whose history is too short for a rate
// (Fallback), whose count is unknown or whose state has expired is
// admitted by the plain rule alone.
func (p Policy) PaceKey(s State, samples []Sample, now time.Time) Pacing {
	reserve := p.Reserve.For(s.Resource, s.Limit)
	d := Pacing{Admit: true, State: s, Reserve: reserve, Burn: BurnRate(withState(samples, s, now), now)}
	if b, ok := p.Blocks(s, now); ok && b.Holds(Scheduled) {
		d.Admit, d.Block, d.Reserve = false, &b, b.Reserve
		return d
	}
	if !d.Burn.Known {
		d.Fallback = true
		return d
	}
	// The reserve is kept for the work pacing does not hold back: the plain
	// rule stops passes there, so that work alone spends it, at no more than
	// the burn of all. So the reserve is reached early enough when it would
	// last until the reset at that burn: the key is not exhausted before.
	if out, ok := ProjectExhaustion(s, d.Burn, now); ok {
		d.ExhaustedAt = out
		d.ReservedAt, _ = ProjectLevel(s, d.Burn, reserve, now)
		d.Admit = false
	}
	return d
}

// withState returns samples with s itself among them (at its observation
// time, never after now), so that a state from a newer window than the
// history (a reset another host saw first) starts its own window rather
// than being judged by the old one's burn. A sample already holding s's
// observation is not repeated.
func withState(samples []Sample, s State, now time.Time) []Sample {
	if s.ObservedAt.IsZero() || s.Remaining < 0 {
		return samples
	}
	at := s.ObservedAt
	if at.After(now) {
		at = now
	}
	for _, x := range samples {
		if x.At.Equal(at) && x.Remaining == s.Remaining {
			return samples
		}
	}
	return append(slices.Clip(samples), Sample{At: at, Remaining: s.Remaining, ResetAt: s.ResetAt})
}

// PaceAll paces every state of a pass (states of other keys must not be
// passed), each with its own history (history returns a key's samples).
// The first key that refuses, in the order given, decides; else the
// outcome admits, with the last state's numbers.
func (p Policy) PaceAll(states []State, history func(Key) []Sample, now time.Time) Pacing {
	out := Pacing{Admit: true}
	for _, s := range states {
		d := p.PaceKey(s, history(s.Key), now)
		if !d.Admit {
			return d
		}
		out = d
	}
	return out
}

// Reason says in words why d refused, with times as UTC clock times:
// "pacing: core would run out at 14:12, before its reset at 14:20" or, for
// the plain rule, "core exhausted until 14:20" and "core below the reserve
// of 500, reset 14:20". "" when d admits.
func (d Pacing) Reason() string {
	return d.ReasonAt(func(t time.Time) string { return t.UTC().Format("15:04") })
}

// ReasonAt is Reason with times rendered by clock.
func (d Pacing) ReasonAt(clock func(time.Time) string) string {
	s := d.State
	switch {
	case d.Admit:
		return ""
	case d.Block != nil && d.Block.Cause == CauseExhausted:
		return fmt.Sprintf("%s exhausted until %s", s.Resource, clock(s.ResetAt))
	case d.Block != nil:
		return fmt.Sprintf("%s below the reserve of %d, reset %s", s.Resource, d.Reserve, clock(s.ResetAt))
	}
	return fmt.Sprintf("pacing: %s would run out at %s, before its reset at %s", s.Resource, clock(d.ExhaustedAt), clock(s.ResetAt))
}
