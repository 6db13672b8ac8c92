package quota

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Defaults from docs/design.md (Defaults). Every one is a flag of pass and run.
const (
	DefaultReserveCap       int64 = 500 // reserve is min(500, 10 % of the limit)
	DefaultReservePercent   int64 = 10
	DefaultResetMargin            = 60 * time.Second
	DefaultJitter                 = 60 * time.Second
	DefaultMaxTotalWait           = 2 * time.Hour
	DefaultSecondaryWait          = 60 * time.Second
	DefaultSecondaryRetries       = 5
	DefaultUnknownReset           = 15 * time.Minute
	// ThrottleQuotaCutoff: a throttle whose stated wait is longer than this is
	// treated as primary exhaustion (class quota), not a short throttle.
	ThrottleQuotaCutoff = 5 * time.Minute

	// MaxPolicyWait bounds every policy duration but MaxTotalWait (margin,
	// jitter, secondary wait, assumed reset): 24 h, the longest wait a
	// receipt can describe.
	MaxPolicyWait = 24 * time.Hour
	// MaxTotalWaitCap bounds MaxTotalWait: 7 days.
	MaxTotalWaitCap = 7 * 24 * time.Hour
	// MaxSecondaryRetries bounds SecondaryRetries.
	MaxSecondaryRetries = 100
	// MinRerunWait is the floor of every wait before a command runs again
	// after a quota or throttle failure, whatever the reset and the
	// margin say: a command is never re-run in a tight loop.
	MinRerunWait = time.Second
)

// Reserve is the number of units kept for running commands. The zero value
// applies the rule of docs/design.md, min(500, 10 % of the limit), to every resource.
type Reserve struct {
	// All, when set, replaces the rule for every resource without an entry in
	// PerResource.
	All *int64
	// PerResource maps a resource name to its reserve.
	PerResource map[string]int64
}

// For returns the reserve of resource, whose limit is limit (Unknown if not
// known; the rule then gives DefaultReserveCap).
func (r Reserve) For(resource string, limit int64) int64 {
	if n, ok := r.PerResource[resource]; ok {
		return n
	}
	if r.All != nil {
		return *r.All
	}
	if limit < 0 {
		return DefaultReserveCap
	}
	return min(DefaultReserveCap, limit*DefaultReservePercent/100)
}

// Set parses one --reserve value, "N" or "RESOURCE=N", into r. It implements
// flag.Value so the flag may be repeated.
func (r *Reserve) Set(v string) error {
	name, num, per := strings.Cut(v, "=")
	if !per {
		num, name = name, ""
	}
	n, err := strconv.ParseInt(strings.TrimSpace(num), 10, 64)
	if err != nil || n < 0 {
		return fmt.Errorf("reserve %q: want N or RESOURCE=N with N a whole number >= 0", v)
	}
	if !per {
		r.All = &n
		return nil
	}
	name = strings.TrimSpace(name)
	if !ValidResource(name) {
		return fmt.Errorf("reserve %q: resource must be a lowercase name like core, graphql or search", v)
	}
	if r.PerResource == nil {
		r.PerResource = map[string]int64{}
	}
	r.PerResource[name] = n
	return nil
}

// String renders r as its flag value: N first, then RESOURCE=N sorted by
// resource, comma-separated.
func (r *Reserve) String() string {
	if r == nil {
		return ""
	}
	var parts []string
	if r.All != nil {
		parts = append(parts, strconv.FormatInt(*r.All, 10))
	}
	for _, k := range slices.Sorted(maps.Keys(r.PerResource)) {
		parts = append(parts, k+"="+strconv.FormatInt(r.PerResource[k], 10))
	}
	return strings.Join(parts, ",")
}

// validate reports a negative reserve, which Set refuses but a literal can hold.
func (r Reserve) validate() error {
	if r.All != nil && *r.All < 0 {
		return errors.New("reserve must not be negative")
	}
	for _, k := range slices.Sorted(maps.Keys(r.PerResource)) {
		if r.PerResource[k] < 0 {
			return fmt.Errorf("reserve of %s must not be negative", k)
		}
	}
	return nil
}

// ValidResource reports whether s can name a resource: 1 to 64 of a-z,
// 0-9, '_' and '-'. Resource names are matched exactly, so "CORE" would
// match nothing and is refused rather than silently ignored.
func ValidResource(s string) bool {
	if s == "" || len(s) > 64 {
		return false
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '_' || r == '-') {
			return false
		}
	}
	return true
}

// Policy holds the numbers that govern admission and waiting. The zero value
// is not useful; start from DefaultPolicy.
type Policy struct {
	Reserve Reserve
	// ResetMargin is added to a known reset before a command resumes.
	ResetMargin time.Duration
	// Jitter is the width of the uniform random delay added after the margin,
	// so commands waiting on one key do not all resume in the same second.
	Jitter time.Duration
	// MaxTotalWait caps the total time one command spends in quota waits. A
	// wait that would pass it is not started.
	MaxTotalWait time.Duration
	// SecondaryWait is the wait after a secondary limit that states no
	// retry-after.
	SecondaryWait time.Duration
	// SecondaryRetries is how many times a command is run again after
	// secondary limits before it fails.
	SecondaryRetries int
	// UnknownReset is how far ahead an unknown reset is assumed to be.
	UnknownReset time.Duration
}

// DefaultPolicy returns the defaults of docs/design.md.
func DefaultPolicy() Policy {
	return Policy{
		ResetMargin:      DefaultResetMargin,
		Jitter:           DefaultJitter,
		MaxTotalWait:     DefaultMaxTotalWait,
		SecondaryWait:    DefaultSecondaryWait,
		SecondaryRetries: DefaultSecondaryRetries,
		UnknownReset:     DefaultUnknownReset,
	}
}

// Validate reports the first number that cannot be used: every duration
// lies in [0, MaxPolicyWait] (MaxTotalWait in [0, MaxTotalWaitCap],
// UnknownReset above 0) and SecondaryRetries in [0, MaxSecondaryRetries].
func (p Policy) Validate() error {
	for _, d := range []struct {
		name string
		v    time.Duration
		max  time.Duration
	}{
		{"reset margin", p.ResetMargin, MaxPolicyWait},
		{"jitter", p.Jitter, MaxPolicyWait},
		{"max total wait", p.MaxTotalWait, MaxTotalWaitCap},
		{"secondary wait", p.SecondaryWait, MaxPolicyWait},
		{"unknown reset", p.UnknownReset, MaxPolicyWait},
	} {
		if d.v < 0 || d.v > d.max {
			return fmt.Errorf("%s %s: want a duration from 0 to %s", d.name, d.v, d.max)
		}
	}
	switch {
	case p.UnknownReset <= 0:
		return errors.New("unknown reset must be positive")
	case p.SecondaryRetries < 0 || p.SecondaryRetries > MaxSecondaryRetries:
		return fmt.Errorf("secondary retries %d: want a number from 0 to %d", p.SecondaryRetries, MaxSecondaryRetries)
	}
	return p.Reserve.validate()
}

// Rand is the random source waits draw jitter from; *rand.Rand satisfies it.
type Rand interface {
	Int64N(n int64) int64
}

// NewRand returns a Rand seeded from the runtime's random source.
func NewRand() Rand { return rand.New(rand.NewPCG(rand.Uint64(), rand.Uint64())) }

// jitter draws a uniform duration in [0, p.Jitter].
func (p Policy) jitter(rnd Rand) time.Duration {
	if p.Jitter <= 0 {
		return 0
	}
	if p.Jitter == math.MaxInt64 {
		return time.Duration(rnd.Int64N(math.MaxInt64))
	}
	return time.Duration(rnd.Int64N(int64(p.Jitter) + 1))
}

// DrawJitter draws the jitter of one wait: a uniform duration in
// [0, p.Jitter]. A caller that needs the jitter as a value (a receipt's
// window) draws it once here, or with Resume, and passes it on.
func (p Policy) DrawJitter(rnd Rand) time.Duration { return p.jitter(rnd) }

// Resume is the end of one wait on a quota: its reset, the margin after it
// and the jitter drawn for this wait. It is drawn once (Policy.Resume) and
// passed on as a value, so a wait, the decision to defer it and the receipt
// that describes it all read the same jitter; nobody draws again or
// recovers the jitter from a time.
type Resume struct {
	Reset  time.Time
	Margin time.Duration
	Jitter time.Duration
}

// Resume draws the jitter of a wait on a quota that resets at reset.
func (p Policy) Resume(reset time.Time, rnd Rand) Resume {
	return Resume{Reset: reset, Margin: p.ResetMargin, Jitter: p.jitter(rnd)}
}

// At is when the wait ends: Reset + Margin + Jitter.
func (r Resume) At() time.Time { return AddSat(r.Base(), r.Jitter) }

// Base is At without the jitter: Reset + Margin, the same for every wait on
// one reset.
func (r Resume) Base() time.Time { return AddSat(r.Reset, r.Margin) }

// ResumeAt is when a command waiting on a quota that resets at reset may run
// again: reset + ResetMargin + a uniform 0..Jitter, p.Resume(reset, rnd).At().
func (p Policy) ResumeAt(reset time.Time, rnd Rand) time.Time {
	return p.Resume(reset, rnd).At()
}

// RerunAt is when a command that failed on a quota or throttle at now runs
// again, given the planned time until: never sooner than now +
// MinRerunWait, so a reset in the past (or a zero margin) cannot re-run a
// command in a tight loop.
func RerunAt(now, until time.Time) time.Time {
	if floor := AddSat(now, MinRerunWait); until.Before(floor) {
		return floor
	}
	return until
}

// AddSat returns t+d with a negative d taken as 0, so a wait computed from
// a flag or a provider value never lies before t. (time.Time.Add itself
// cannot wrap for any Duration; it is sums of durations that can, see
// SumSat.)
func AddSat(t time.Time, d time.Duration) time.Time {
	return t.Add(max(d, 0))
}

// SumSat returns a+b for non-negative durations, saturating at the largest
// Duration instead of wrapping to a negative one.
func SumSat(a, b time.Duration) time.Duration {
	a, b = max(a, 0), max(b, 0)
	if a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}

// AssumedReset is the reset assumed when the provider gives none: now +
// UnknownReset. The caller checks again when it arrives.
func (p Policy) AssumedReset(now time.Time) time.Time {
	return AddSat(now, p.UnknownReset)
}

// SecondaryDelay is the wait after a secondary limit: the provider's
// retry-after when it stated one (retryAfter >= 0), else SecondaryWait.
func (p Policy) SecondaryDelay(retryAfter time.Duration) time.Duration {
	if retryAfter >= 0 {
		return retryAfter
	}
	return p.SecondaryWait
}
