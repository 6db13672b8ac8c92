package quota

import (
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Defaults from DESIGN.md. Every one is a flag of pass and run.
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
)

// Reserve is the number of units kept for running commands. The zero value
// applies DESIGN.md's rule, min(500, 10 % of the limit), to every resource.
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
	if name == "" {
		return fmt.Errorf("reserve %q: resource name is empty", v)
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

// DefaultPolicy returns DESIGN.md's defaults.
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

// Validate reports the first number that cannot be used.
func (p Policy) Validate() error {
	switch {
	case p.ResetMargin < 0:
		return errors.New("reset margin must not be negative")
	case p.Jitter < 0:
		return errors.New("jitter must not be negative")
	case p.MaxTotalWait < 0:
		return errors.New("max total wait must not be negative")
	case p.SecondaryWait < 0:
		return errors.New("secondary wait must not be negative")
	case p.SecondaryRetries < 0:
		return errors.New("secondary retries must not be negative")
	case p.UnknownReset <= 0:
		return errors.New("unknown reset must be positive")
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
	return time.Duration(rnd.Int64N(int64(p.Jitter) + 1))
}

// DrawJitter draws the jitter of one wait: a uniform duration in
// [0, p.Jitter]. A caller that needs the jitter as a value (a receipt's
// window) draws it once here and passes it on.
func (p Policy) DrawJitter(rnd Rand) time.Duration { return p.jitter(rnd) }

// ResumeAt is when a command waiting on a quota that resets at reset may run
// again: reset + ResetMargin + a uniform 0..Jitter.
func (p Policy) ResumeAt(reset time.Time, rnd Rand) time.Time {
	return reset.Add(p.ResetMargin + p.jitter(rnd))
}

// AssumedReset is the reset assumed when the provider gives none: now +
// UnknownReset. The caller checks again when it arrives.
func (p Policy) AssumedReset(now time.Time) time.Time {
	return now.Add(p.UnknownReset)
}

// SecondaryDelay is the wait after a secondary limit: the provider's
// retry-after when it stated one (retryAfter >= 0), else SecondaryWait.
func (p Policy) SecondaryDelay(retryAfter time.Duration) time.Duration {
	if retryAfter >= 0 {
		return retryAfter
	}
	return p.SecondaryWait
}
