package quota_test

import (
	"flag"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/layoverhq/layover/internal/fuzzbound"
	"github.com/layoverhq/layover/quota"
)

var _ flag.Value = (*quota.Reserve)(nil)

func TestDefaultPolicy(t *testing.T) {
	t.Parallel()

	p := quota.DefaultPolicy()
	tests := []struct {
		name      string
		got, want any
	}{
		{"reset margin", p.ResetMargin, 60 * time.Second},
		{"jitter", p.Jitter, 60 * time.Second},
		{"max total wait", p.MaxTotalWait, 2 * time.Hour},
		{"secondary wait", p.SecondaryWait, 60 * time.Second},
		{"secondary retries", p.SecondaryRetries, 5},
		{"unknown reset", p.UnknownReset, 15 * time.Minute},
		{"throttle quota cutoff", quota.ThrottleQuotaCutoff, 5 * time.Minute},
		{"reserve rule", p.Reserve.For("core", 5000), int64(500)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()

			if tt.got != tt.want {
				t.Errorf("got %v, want %v", tt.got, tt.want)
			}
		})
	}
	if err := p.Validate(); err != nil {
		t.Errorf("DefaultPolicy().Validate() = %v", err)
	}
}

func TestPolicyValidate(t *testing.T) {
	t.Parallel()

	neg := int64(-1)
	tests := []struct {
		name    string
		edit    func(*quota.Policy)
		wantErr string // substring; "" means valid
	}{
		{"defaults", func(*quota.Policy) {}, ""},
		{"all zero but unknown reset", func(p *quota.Policy) {
			*p = quota.Policy{UnknownReset: time.Minute}
		}, ""},
		{"zero policy", func(p *quota.Policy) { *p = quota.Policy{} }, "unknown reset"},
		{"negative margin", func(p *quota.Policy) { p.ResetMargin = -time.Second }, "margin"},
		{"negative jitter", func(p *quota.Policy) { p.Jitter = -time.Second }, "jitter"},
		{"negative max total wait", func(p *quota.Policy) { p.MaxTotalWait = -time.Second }, "max total wait"},
		{"negative secondary wait", func(p *quota.Policy) { p.SecondaryWait = -time.Second }, "secondary wait"},
		{"negative secondary retries", func(p *quota.Policy) { p.SecondaryRetries = -1 }, "secondary retries"},
		{"zero unknown reset", func(p *quota.Policy) { p.UnknownReset = 0 }, "unknown reset"},
		{"negative unknown reset", func(p *quota.Policy) { p.UnknownReset = -time.Minute }, "unknown reset"},
		{"negative reserve", func(p *quota.Policy) { p.Reserve.All = &neg }, "reserve"},
		{"negative resource reserve", func(p *quota.Policy) {
			p.Reserve.PerResource = map[string]int64{"core": 5, "search": -1}
		}, "search"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()

			p := quota.DefaultPolicy()
			tt.edit(&p)
			err := p.Validate()
			switch {
			case tt.wantErr == "" && err != nil:
				t.Errorf("Validate() = %v, want nil", err)
			case tt.wantErr != "" && err == nil:
				t.Errorf("Validate() = nil, want an error about %q", tt.wantErr)
			case tt.wantErr != "" && !strings.Contains(err.Error(), tt.wantErr):
				t.Errorf("Validate() = %q, want it to mention %q", err, tt.wantErr)
			}
		})
	}
}

func TestReserveFor(t *testing.T) {
	t.Parallel()

	tests := []struct {
		name     string
		flags    []string // --reserve values, in order
		resource string
		limit    int64
		want     int64
	}{
		{"core 5000", nil, "core", 5000, 500},
		{"graphql 5000", nil, "graphql", 5000, 500},
		{"search 30", nil, "search", 30, 3},
		{"unknown limit", nil, "core", quota.Unknown, 500},
		{"large limit capped", nil, "tokens", 2_000_000, 500},
		{"just under the cap", nil, "core", 4999, 499},
		{"rounds down", nil, "code_search", 10, 1},
		{"tiny limit", nil, "x", 9, 0},
		{"zero limit", nil, "x", 0, 0},
		{"N for every resource", []string{"100"}, "core", 5000, 100},
		{"N with unknown limit", []string{"100"}, "search", quota.Unknown, 100},
		{"N of zero", []string{"0"}, "core", 5000, 0},
		{"RES=N for that resource", []string{"search=1"}, "search", 30, 1},
		{"RES=N leaves others to the rule", []string{"search=1"}, "core", 5000, 500},
		{"RES=N beats N", []string{"100", "search=1"}, "search", 30, 1},
		{"RES=N beats N in either order", []string{"search=1", "100"}, "search", 30, 1},
		{"N applies beside RES=N", []string{"search=1", "100"}, "core", 5000, 100},
		{"later value wins", []string{"core=7", "core=9"}, "core", 5000, 9},
		{"spaces trimmed", []string{" core = 42 "}, "core", 5000, 42},
		{"above the cap allowed", []string{"core=4000"}, "core", 5000, 4000},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()

			var r quota.Reserve
			for _, v := range tt.flags {
				if err := r.Set(v); err != nil {
					t.Fatalf("Set(%q) = %v", v, err)
				}
			}
			if got := r.For(tt.resource, tt.limit); got != tt.want {
				t.Errorf("For(%q, %d) = %d, want %d", tt.resource, tt.limit, got, tt.want)
			}
		})
	}
}

func TestReserveSetRejects(t *testing.T) {
	t.Parallel()

	for _, v := range []string{"", " ", "abc", "-1", "1.5", "5x", "=5", " =5", "core=", "core=-2",
		"core=x", "core=1=2", "99999999999999999999"} {
		t.Run(v, func(t *testing.T) {
			t.Parallel()

			var r quota.Reserve
			if err := r.Set(v); err == nil {
				t.Fatalf("Set(%q) = nil, want an error", v)
			} else if !strings.Contains(err.Error(), "reserve") {
				t.Errorf("Set(%q) = %q, want it to say it is about the reserve", v, err)
			}
			if r.All != nil || len(r.PerResource) != 0 {
				t.Errorf("Set(%q) failed but changed the reserve to %q", v, r.String())
			}
		})
	}
}

func TestReserveString(t *testing.T) {
	t.Parallel()

	tests := []struct {
		name  string
		flags []string
		want  string
	}{
		{"zero", nil, ""},
		{"N", []string{"7"}, "7"},
		{"resources sorted", []string{"search=1", "core=9", "graphql=3"}, "core=9,graphql=3,search=1"},
		{"N first", []string{"search=1", "7"}, "7,search=1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()

			var r quota.Reserve
			for _, v := range tt.flags {
				if err := r.Set(v); err != nil {
					t.Fatalf("Set(%q) = %v", v, err)
				}
			}
			if got := r.String(); got != tt.want {
				t.Errorf("String() = %q, want %q", got, tt.want)
			}
		})
	}
	t.Run("nil", func(t *testing.T) {
		t.Parallel()

		if got := (*quota.Reserve)(nil).String(); got != "" {
			t.Errorf("nil String() = %q, want empty", got)
		}
	})
}

// fixedRand is a quota.Rand that always draws the same offset from the top
// or bottom of the range it is asked for.
type fixedRand struct {
	top bool
	n   *int64 // records the n of the last call
}

func (r fixedRand) Int64N(n int64) int64 {
	*r.n = n
	if r.top {
		return n - 1
	}
	return 0
}

func TestResumeAtBounds(t *testing.T) {
	t.Parallel()

	reset := t0.Add(17 * time.Minute)
	tests := []struct {
		name   string
		jitter time.Duration
		margin time.Duration
		top    bool
		want   time.Time
	}{
		{"lowest draw", quota.DefaultJitter, quota.DefaultResetMargin, false, reset.Add(60 * time.Second)},
		{"highest draw is inclusive", quota.DefaultJitter, quota.DefaultResetMargin, true, reset.Add(120 * time.Second)},
		{"no jitter", 0, quota.DefaultResetMargin, true, reset.Add(60 * time.Second)},
		{"no jitter, no margin", 0, 0, true, reset},
		{"custom margin", 10 * time.Second, 5 * time.Second, true, reset.Add(15 * time.Second)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()

			p := quota.DefaultPolicy()
			p.Jitter, p.ResetMargin = tt.jitter, tt.margin
			var n int64
			if got := p.ResumeAt(reset, fixedRand{top: tt.top, n: &n}); !got.Equal(tt.want) {
				t.Errorf("ResumeAt = %s, want %s", got, tt.want)
			}
			if tt.jitter == 0 && n != 0 {
				t.Errorf("with no jitter the source was still drawn from (n=%d)", n)
			}
		})
	}
}

// TestResumeAtSpread draws many waits from one seeded source: every one lies
// in [reset+60s, reset+120s], and together they reach both the lowest and
// the highest tenth of that range, so waiting commands do not resume at once.
func TestResumeAtSpread(t *testing.T) {
	t.Parallel()

	for _, seed := range []uint64{1, 2, 42, 1 << 40} {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			t.Parallel()

			p := quota.DefaultPolicy()
			rnd := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
			reset := t0.Add(42 * time.Minute)
			lo, hi := reset.Add(60*time.Second), reset.Add(120*time.Second)
			tenth := 6 * time.Second

			const draws = 1000
			var low, high int
			seen := map[time.Time]bool{}
			for range draws {
				at := p.ResumeAt(reset, rnd)
				if at.Before(lo) || at.After(hi) {
					t.Fatalf("ResumeAt = reset+%s, want within [reset+60s, reset+120s]", at.Sub(reset))
				}
				seen[at] = true
				if at.Before(lo.Add(tenth)) {
					low++
				}
				if at.After(hi.Add(-tenth)) {
					high++
				}
			}
			// With a uniform draw each tenth expects ~100 of 1000; 20 is far
			// below any plausible seed and far above a skewed one's zero.
			if low < 20 || high < 20 {
				t.Errorf("draws in lowest tenth = %d, highest tenth = %d; want both >= 20 of %d", low, high, draws)
			}
			if len(seen) < draws*9/10 {
				t.Errorf("only %d distinct resume times in %d draws", len(seen), draws)
			}
		})
	}
}

func TestResumeAtNoJitterIsExact(t *testing.T) {
	t.Parallel()

	p := quota.DefaultPolicy()
	p.Jitter = 0
	rnd := rand.New(rand.NewPCG(7, 7))
	reset := t0.Add(5 * time.Minute)
	for range 100 {
		if got, want := p.ResumeAt(reset, rnd), reset.Add(time.Minute); !got.Equal(want) {
			t.Fatalf("ResumeAt with no jitter = %s, want %s", got, want)
		}
	}
}

func TestNewRand(t *testing.T) {
	t.Parallel()

	rnd := quota.NewRand()
	for range 100 {
		if v := rnd.Int64N(10); v < 0 || v >= 10 {
			t.Fatalf("Int64N(10) = %d", v)
		}
	}
}

func TestAssumedReset(t *testing.T) {
	t.Parallel()

	tests := []struct {
		name    string
		unknown time.Duration
		want    time.Time
	}{
		{"default 15 minutes", quota.DefaultUnknownReset, t0.Add(15 * time.Minute)},
		{"custom", 2 * time.Minute, t0.Add(2 * time.Minute)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()

			p := quota.DefaultPolicy()
			p.UnknownReset = tt.unknown
			got := p.AssumedReset(t0)
			if !got.Equal(tt.want) {
				t.Errorf("AssumedReset(%s) = %s, want %s", t0, got, tt.want)
			}
			// An assumed reset is a real wait: a state that uses it is in
			// force now and has expired once it arrives.
			s := state(0, got)
			s.ResetKnown = false
			if !s.Exhausted(t0) || !s.Expired(got) {
				t.Errorf("state with assumed reset: exhausted now = %v, expired at reset = %v; want true, true",
					s.Exhausted(t0), s.Expired(got))
			}
		})
	}
}

func TestSecondaryDelay(t *testing.T) {
	t.Parallel()

	tests := []struct {
		name       string
		wait       time.Duration // Policy.SecondaryWait
		retryAfter time.Duration
		want       time.Duration
	}{
		{"no retry-after: 60 s", quota.DefaultSecondaryWait, -1, 60 * time.Second},
		{"any negative means none", quota.DefaultSecondaryWait, -time.Hour, 60 * time.Second},
		{"stated retry-after wins", quota.DefaultSecondaryWait, 17 * time.Second, 17 * time.Second},
		{"stated longer than default wins", quota.DefaultSecondaryWait, 3 * time.Minute, 3 * time.Minute},
		{"stated zero: retry now", quota.DefaultSecondaryWait, 0, 0},
		{"custom default", 5 * time.Second, -1, 5 * time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()

			p := quota.DefaultPolicy()
			p.SecondaryWait = tt.wait
			if got := p.SecondaryDelay(tt.retryAfter); got != tt.want {
				t.Errorf("SecondaryDelay(%s) = %s, want %s", tt.retryAfter, got, tt.want)
			}
		})
	}
}

// Issue 8: a policy that would overflow a wait is refused, and the wait
// arithmetic saturates for the values Validate admits and for literals that
// skip it.
func TestPolicyValidateRanges(t *testing.T) {
	t.Parallel()
	huge := time.Duration(math.MaxInt64)
	for name, mutate := range map[string]func(*quota.Policy){
		"margin max int":     func(p *quota.Policy) { p.ResetMargin = huge },
		"jitter max int":     func(p *quota.Policy) { p.Jitter = huge },
		"margin past 24h":    func(p *quota.Policy) { p.ResetMargin = 24*time.Hour + 1 },
		"cap past 7 days":    func(p *quota.Policy) { p.MaxTotalWait = 7*24*time.Hour + 1 },
		"secondary past 24h": func(p *quota.Policy) { p.SecondaryWait = 25 * time.Hour },
		"unknown past 24h":   func(p *quota.Policy) { p.UnknownReset = 25 * time.Hour },
		"retries past 100":   func(p *quota.Policy) { p.SecondaryRetries = 101 },
	} {
		p := quota.DefaultPolicy()
		mutate(&p)
		if err := p.Validate(); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	p := quota.DefaultPolicy()
	p.ResetMargin, p.Jitter, p.MaxTotalWait = 24*time.Hour, 24*time.Hour, 7*24*time.Hour
	if err := p.Validate(); err != nil {
		t.Errorf("the largest values are refused: %v", err)
	}
}

func TestReserveSetRefusesResourceNamesThatMatchNothing(t *testing.T) {
	t.Parallel()
	for _, v := range []string{"CORE=5", "Core=1", "co re=1", "=3", strings.Repeat("a", 65) + "=1"} {
		var r quota.Reserve
		if err := r.Set(v); err == nil {
			t.Errorf("%q accepted", v)
		}
	}
}

// The wait planner's arithmetic over extreme values, with or without
// Validate: a resume never lies before the reset, a re-run never comes
// sooner than MinRerunWait, and a budget never passes its cap or wraps.
func TestWaitArithmeticSaturates(t *testing.T) {
	t.Parallel()
	huge := time.Duration(math.MaxInt64)
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	for _, p := range []quota.Policy{
		{ResetMargin: huge, Jitter: huge, UnknownReset: huge, MaxTotalWait: huge},
		{ResetMargin: huge - 1, Jitter: 1, UnknownReset: 1},
		{ResetMargin: -time.Hour, Jitter: -1, UnknownReset: -1},
	} {
		for _, reset := range []time.Time{now.Add(-time.Hour), now, now.Add(time.Hour)} {
			at := p.ResumeAt(reset, drawRand(math.MaxInt64-1))
			if at.Before(reset) {
				t.Errorf("policy %+v: resume %v before the reset %v", p, at, reset)
			}
			if r := quota.RerunAt(now, at); r.Before(now.Add(quota.MinRerunWait)) {
				t.Errorf("policy %+v: re-run at %v, sooner than the floor", p, r)
			}
		}
		if got := p.AssumedReset(now); got.Before(now) {
			t.Errorf("policy %+v: assumed reset %v before now", p, got)
		}
	}
	b := quota.Budget{Max: 2 * time.Hour}
	for _, d := range []time.Duration{time.Hour, huge, huge - time.Hour, time.Hour, 1} {
		// Some of these takes pass the cap and are refused; what is checked
		// is that Spent stays within [0, Max] whatever the outcome.
		_ = b.Take(d)
		if b.Spent < 0 || b.Spent > b.Max {
			t.Fatalf("budget spent %v after taking %v (cap %v)", b.Spent, d, b.Max)
		}
	}
	if got := quota.SumSat(huge, huge); got != huge {
		t.Errorf("SumSat(max, max) = %v", got)
	}
}

// drawRand answers every draw with its value, or the largest allowed.
type drawRand int64

func (f drawRand) Int64N(n int64) int64 { return min(int64(f), n-1) }

// FuzzWaitPlan: the planner's invariants over any margin, jitter, reset,
// cap and draw.
func FuzzWaitPlan(f *testing.F) {
	f.Add(int64(60e9), int64(60e9), int64(3600e9), int64(7200e9), int64(5))
	f.Add(int64(math.MaxInt64), int64(math.MaxInt64), int64(-1), int64(math.MaxInt64), int64(math.MaxInt64))
	f.Add(int64(0), int64(0), int64(math.MinInt64), int64(0), int64(0))
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, margin, jitter, resetOff, maxWait, draw int64) {
		fuzzbound.Run(t, func() {
			p := quota.Policy{ResetMargin: time.Duration(margin), Jitter: time.Duration(jitter),
				MaxTotalWait: time.Duration(maxWait), UnknownReset: time.Minute}
			reset := now.Add(time.Duration(resetOff))
			at := p.ResumeAt(reset, drawRand(max(draw, 0)))
			if at.Before(reset) {
				t.Fatalf("resume %v before the reset %v", at, reset)
			}
			rerun := quota.RerunAt(now, at)
			if rerun.Before(now.Add(quota.MinRerunWait)) {
				t.Fatalf("re-run at %v sooner than the floor", rerun)
			}
			b := quota.Budget{Max: max(p.MaxTotalWait, 0)}
			// Each wait is at least the floor, so a command can wait at most
			// Max/MinRerunWait times before the cap refuses it.
			runs := 0
			for runs <= 1000 && b.Take(rerun.Sub(now)) == nil {
				runs++
			}
			if b.Spent > b.Max || b.Spent < 0 {
				t.Fatalf("spent %v of a %v cap", b.Spent, b.Max)
			}
			if limit := int64(b.Max / quota.MinRerunWait); int64(runs) > limit {
				t.Fatalf("%d waits within a %v cap, more than %d", runs, b.Max, limit)
			}
		})
	})
}
