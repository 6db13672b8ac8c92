package quota_test

import (
	"encoding/binary"
	"math"
	"testing"
	"time"

	"github.com/layoverhq/layover/internal/fuzzbound"
	"github.com/layoverhq/layover/quota"
)

var paceNow = time.Date(2026, 12, 2, 14, 0, 0, 0, time.UTC)

// series makes one sample a minute ending at now (the last one at now),
// each remaining count in turn, all stating reset.
func series(now, reset time.Time, remaining ...int64) []quota.Sample {
	out := make([]quota.Sample, len(remaining))
	for i, r := range remaining {
		out[i] = quota.Sample{At: now.Add(-time.Duration(len(remaining)-1-i) * time.Minute), Remaining: r, ResetAt: reset}
	}
	return out
}

func TestBurnRate(t *testing.T) {
	t.Parallel()
	reset := paceNow.Add(20 * time.Minute)
	at := func(d time.Duration, r int64) quota.Sample {
		return quota.Sample{At: paceNow.Add(d), Remaining: r, ResetAt: reset}
	}
	tests := []struct {
		name      string
		samples   []quota.Sample
		known     bool
		perMinute float64
		n         int
	}{
		{"none", nil, false, 0, 0},
		{"3 samples over 2 min: 100/min", series(paceNow, reset, 4900, 4800, 4700), true, 100, 3},
		{"2 samples are too few", series(paceNow, reset, 4800, 4700), false, 0, 2},
		{"3 samples over 1m59s are too short", []quota.Sample{
			at(-119*time.Second, 4900), at(-time.Minute, 4800), at(0, 4700)}, false, 0, 3},
		{"any order", []quota.Sample{at(0, 4700), at(-2*time.Minute, 4900), at(-time.Minute, 4800)}, true, 100, 3},
		{"flat history burns 0", series(paceNow, reset, 4000, 4000, 4000), true, 0, 3},
		{"unknown counts are left out", []quota.Sample{
			at(-3*time.Minute, 4900), at(-2*time.Minute, -1), at(-time.Minute, 4800), at(0, 4600)}, true, 100, 3},
		{"samples after now are left out", []quota.Sample{
			at(-2*time.Minute, 4900), at(-time.Minute, 4800), at(0, 4700), at(time.Minute, 0)}, true, 100, 3},
		{"only the last 15 min", []quota.Sample{
			at(-16*time.Minute, 5000), at(-14*time.Minute, 4860), at(-7*time.Minute, 4790), at(0, 4720)}, true, 10, 3},
		// The reset between 13:57 and 13:58: a rise, with the next reset
		// stated, starts a new window, whose three samples burn 10/min;
		// the old window's fall is not counted.
		{"a rise starts a new window", append(series(paceNow.Add(-3*time.Minute), paceNow.Add(time.Hour), 400, 200, 100),
			series(paceNow, reset, 5000, 4990, 4980)...), true, 10, 3},
		{"a new window too short falls back", append(series(paceNow.Add(-2*time.Minute), paceNow.Add(time.Hour), 400, 200, 100),
			series(paceNow, reset, 5000, 4990)...), false, 0, 2},
		{"a rise with no reset stated starts a new window", []quota.Sample{
			{At: paceNow.Add(-3 * time.Minute), Remaining: 100}, {At: paceNow.Add(-2 * time.Minute), Remaining: 5000},
			{At: paceNow.Add(-time.Minute), Remaining: 4900}, {At: paceNow, Remaining: 4800}}, true, 100, 3},
		// Two hosts' responses arriving out of order: 4800 seen after
		// 4799 under one reset (4 s apart, two hosts' skews) is not a
		// reset.
		{"a rise under the same reset is arrival order", []quota.Sample{
			at(-3*time.Minute, 5000), at(-2*time.Minute, 4799),
			{At: paceNow.Add(-time.Minute), Remaining: 4800, ResetAt: reset.Add(4 * time.Second)}, at(0, 4700)}, true, 100, 4},
		{"a rise under a reset 6 s off starts a new window", []quota.Sample{
			at(-3*time.Minute, 5000), at(-2*time.Minute, 4799),
			{At: paceNow.Add(-time.Minute), Remaining: 4800, ResetAt: reset.Add(6 * time.Second)}, at(0, 4700)}, false, 0, 2},
		{"a last count above the first burns 0", []quota.Sample{
			at(-2*time.Minute, 4700), at(-time.Minute, 4699), at(0, 4701)}, true, 0, 3},
		// Equal counts but the previous sample's reset passed: new window.
		{"passing the stated reset starts a new window", []quota.Sample{
			{At: paceNow.Add(-4 * time.Minute), Remaining: 3000, ResetAt: paceNow.Add(-3 * time.Minute)},
			{At: paceNow.Add(-3 * time.Minute), Remaining: 2000, ResetAt: reset},
			at(-2*time.Minute, 1900), at(0, 1700)}, true, 100, 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b := quota.BurnRate(tt.samples, paceNow)
			if b.Known != tt.known || math.Abs(b.PerMinute-tt.perMinute) > 1e-9 || b.Samples != tt.n {
				t.Errorf("got %+v; want known %v, %v/min over %d samples", b, tt.known, tt.perMinute, tt.n)
			}
		})
	}
}

func TestProjectExhaustion(t *testing.T) {
	t.Parallel()
	key := quota.Key{Host: "api.github.com", Principal: "octo", Resource: "core"}
	state := func(remaining int64, observed, reset time.Duration) quota.State {
		return quota.State{Key: key, Limit: 5000, Remaining: remaining, ResetAt: paceNow.Add(reset),
			ResetKnown: true, ObservedAt: paceNow.Add(observed)}
	}
	rate := func(perMin float64) quota.Burn { return quota.Burn{PerMinute: perMin, Known: true, Samples: 3} }
	tests := []struct {
		name string
		s    quota.State
		b    quota.Burn
		want time.Duration // from now; -1: none
	}{
		{"1000 at 100/min: 10 min", state(1000, 0, 20*time.Minute), rate(100), 10 * time.Minute},
		{"counted from the observation", state(1000, -2*time.Minute, 20*time.Minute), rate(100), 8 * time.Minute},
		{"never before now", state(100, -10*time.Minute, 20*time.Minute), rate(100), 0},
		{"exactly at the reset is none", state(1000, 0, 10*time.Minute), rate(100), -1},
		{"after the reset is none", state(1000, 0, 5*time.Minute), rate(100), -1},
		{"a rate not known is none", state(1000, 0, 20*time.Minute), quota.Burn{}, -1},
		{"a rate of 0 is none", state(1000, 0, 20*time.Minute), rate(0), -1},
		{"an unknown count is none", state(-1, 0, 20*time.Minute), rate(100), -1},
		{"an expired state is none", state(1000, -time.Hour, -time.Minute), rate(100), -1},
		{"a tiny rate saturates to none", state(math.MaxInt64, 0, 20*time.Minute), rate(1e-300), -1},
		{"already 0 is now", state(0, 0, 20*time.Minute), rate(100), 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			at, ok := quota.ProjectExhaustion(tt.s, tt.b, paceNow)
			switch {
			case tt.want < 0 && ok:
				t.Errorf("projected %v; want none", at)
			case tt.want >= 0 && (!ok || !at.Equal(paceNow.Add(tt.want))):
				t.Errorf("projected %v (ok %v); want %v", at, ok, paceNow.Add(tt.want))
			}
		})
	}
}

// The pacing rule, pinned at its thresholds: 1,500 left, a reserve of
// 500 and a burn of 100/min reach the reserve in 10 minutes, and the
// reserve lasts 5 more at that burn: the key would run out in exactly 15.
func TestPaceRule(t *testing.T) {
	t.Parallel()
	key := quota.Key{Host: "api.github.com", Principal: "octo", Resource: "core"}
	p := quota.DefaultPolicy() // reserve min(500, 10% of 5000) = 500
	state := func(remaining int64, reset time.Duration) quota.State {
		return quota.State{Key: key, Limit: 5000, Remaining: remaining, ResetAt: paceNow.Add(reset),
			ResetKnown: true, ObservedAt: paceNow}
	}
	burn := func(last int64, reset time.Duration) []quota.Sample {
		return series(paceNow, paceNow.Add(reset), last+200, last+100, last)
	}
	tests := []struct {
		name     string
		s        quota.State
		samples  []quota.Sample
		admit    bool
		fallback bool
		reason   string
	}{
		{"out 1s before the reset: skip", state(1500, 15*time.Minute+time.Second), burn(1500, 15*time.Minute+time.Second),
			false, false, "pacing: core would run out at 14:15, before its reset at 14:15"},
		// Reaching the reserve before the reset is admitted while the
		// reserve lasts until the reset at the burn.
		{"out at the reset, the reserve reached 5 min before: admit", state(1500, 15*time.Minute), burn(1500, 15*time.Minute),
			true, false, ""},
		{"reserve reached 1s before the reset: admit", state(1500, 10*time.Minute+time.Second), burn(1500, 10*time.Minute+time.Second),
			true, false, ""},
		{"reserve reached well before the reset: skip", state(1500, 20*time.Minute), burn(1500, 20*time.Minute),
			false, false, "pacing: core would run out at 14:15, before its reset at 14:20"},
		{"one unit above the reserve, burning: skip", state(501, 20*time.Minute), burn(501, 20*time.Minute),
			false, false, "pacing: core would run out at 14:05, before its reset at 14:20"},
		{"at the reserve, not burning: admit", state(500, 20*time.Minute), series(paceNow, paceNow.Add(20*time.Minute), 500, 500, 500),
			true, false, ""},
		{"below the reserve: the plain rule skips", state(499, 20*time.Minute), burn(499, 20*time.Minute),
			false, false, "core below the reserve of 500, reset 14:20"},
		{"exhausted: the plain rule skips", state(0, 20*time.Minute), nil, false, true, "core exhausted until 14:20"},
		{"too little history: the plain rule admits", state(1500, 20*time.Minute),
			series(paceNow, paceNow.Add(20*time.Minute), 1600, 1500), true, true, ""},
		{"too little history below the reserve: the plain rule skips", state(100, 20*time.Minute),
			series(paceNow, paceNow.Add(20*time.Minute), 200, 100), false, true, "core below the reserve of 500, reset 14:20"},
		// A fast burn before the reset at 13:58 says nothing of the new
		// window, which is too short: the plain rule admits.
		{"a fast burn before a reset in the history", state(4990, 60*time.Minute),
			append(series(paceNow.Add(-3*time.Minute), paceNow.Add(-2*time.Minute), 2000, 1000, 600),
				series(paceNow, paceNow.Add(60*time.Minute), 5000, 4990)...), true, true, ""},
		// Only the old window's history is left (another host's newer
		// observations, stamped after now, are not read), but the state is
		// of the new window: it starts its own, too short for a rate.
		{"a state newer than its history's window", state(4990, 60*time.Minute),
			series(paceNow.Add(-time.Minute), paceNow.Add(-30*time.Second), 1400, 1000, 600), true, true, ""},
		{"an expired state: admit", state(1500, -time.Second), burn(1500, -time.Second), true, false, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			d := p.PaceKey(tt.s, tt.samples, paceNow)
			if d.Admit != tt.admit || d.Reason() != tt.reason {
				t.Errorf("admit %v %q; want %v %q (%+v)", d.Admit, d.Reason(), tt.admit, tt.reason, d)
			}
			if tt.fallback && !d.Fallback && d.Block == nil {
				t.Errorf("want the plain rule to decide: %+v", d)
			}
			if admit, reason := quota.Pace(tt.s, tt.samples, p, paceNow); admit != tt.admit || reason != tt.reason {
				t.Errorf("Pace: %v %q; PaceKey: %v %q", admit, reason, tt.admit, tt.reason)
			}
		})
	}
}

func TestPaceAllFirstRefusalDecides(t *testing.T) {
	t.Parallel()
	p := quota.DefaultPolicy()
	reset := paceNow.Add(30 * time.Minute)
	core := quota.State{Key: quota.Key{Host: "h", Principal: "p", Resource: "core"}, Limit: 5000, Remaining: 4000,
		ResetAt: reset, ResetKnown: true, ObservedAt: paceNow}
	gql := core
	gql.Resource = "graphql"
	gql.Remaining = 1000
	hist := map[quota.Key][]quota.Sample{
		core.Key: series(paceNow, reset, 4002, 4001, 4000), // 0.5/min: far past the reset
		gql.Key:  series(paceNow, reset, 1100, 1050, 1000), // 50/min: the reserve at 14:10
	}
	d := p.PaceAll([]quota.State{core, gql}, func(k quota.Key) []quota.Sample { return hist[k] }, paceNow)
	if d.Admit || d.State.Resource != "graphql" || !d.ReservedAt.Equal(paceNow.Add(10*time.Minute)) {
		t.Errorf("got %+v; want graphql refusing at 14:10", d)
	}
	hist[gql.Key] = series(paceNow, reset, 1002, 1001, 1000)
	if d := p.PaceAll([]quota.State{core, gql}, func(k quota.Key) []quota.Sample { return hist[k] }, paceNow); !d.Admit {
		t.Errorf("got %+v; want admitted", d)
	}
}

// FuzzBurnRate: over any sequence of observations, no panic, a rate that
// is finite and not negative, and a projection never before now (nor at or
// after the reset).
func FuzzBurnRate(f *testing.F) {
	f.Add([]byte{0, 10, 0, 100, 1, 10, 0, 90, 2, 10, 0, 80}, int64(1000), int64(600e9))
	f.Add([]byte{255, 255, 255, 255, 0, 0, 0, 0, 128, 0, 0, 1}, int64(math.MaxInt64), int64(math.MaxInt64))
	f.Add([]byte{}, int64(-1), int64(math.MinInt64))
	f.Fuzz(func(t *testing.T, data []byte, remaining, resetOff int64) {
		fuzzbound.Run(t, func() {
			var samples []quota.Sample
			for len(data) >= 4 && len(samples) < 600 {
				// Two bytes of seconds back from now, two of remaining.
				back := time.Duration(binary.BigEndian.Uint16(data)) * time.Second
				rem := int64(binary.BigEndian.Uint16(data[2:])) - 1
				samples = append(samples, quota.Sample{At: paceNow.Add(-back + 30*time.Second), Remaining: rem,
					ResetAt: paceNow.Add(time.Duration(resetOff))})
				data = data[4:]
			}
			b := quota.BurnRate(samples, paceNow)
			if b.PerMinute < 0 || math.IsNaN(b.PerMinute) || math.IsInf(b.PerMinute, 0) {
				t.Fatalf("rate %v", b.PerMinute)
			}
			if b.Known && (b.Samples < quota.MinBurnSamples || b.To.Sub(b.From) < quota.MinBurnSpan) {
				t.Fatalf("known from %d samples over %v", b.Samples, b.To.Sub(b.From))
			}
			s := quota.State{Key: quota.Key{Resource: "core"}, Limit: quota.Unknown, Remaining: remaining,
				ResetAt: paceNow.Add(time.Duration(resetOff)), ResetKnown: true, ObservedAt: paceNow.Add(-time.Minute)}
			if at, ok := quota.ProjectExhaustion(s, b, paceNow); ok && (at.Before(paceNow) || !at.Before(s.ResetAt)) {
				t.Fatalf("projected %v; now %v, reset %v", at, paceNow, s.ResetAt)
			}
			d := quota.DefaultPolicy().PaceKey(s, samples, paceNow)
			if !d.Admit && d.Block == nil && (d.ReservedAt.Before(paceNow) || !d.ReservedAt.Before(s.ResetAt)) {
				t.Fatalf("refused at %v; now %v, reset %v", d.ReservedAt, paceNow, s.ResetAt)
			}
		})
	})
}

// BenchmarkBurnRate reads the most history a key keeps: 512 samples,
// 10 s apart, in the store's order.
func BenchmarkBurnRate(b *testing.B) {
	reset := paceNow.Add(20 * time.Minute)
	samples := make([]quota.Sample, 512)
	for i := range samples {
		samples[i] = quota.Sample{At: paceNow.Add(-time.Duration(511-i) * 10 * time.Second), Remaining: int64(6000 - i), ResetAt: reset}
	}
	state := quota.State{Key: quota.Key{Resource: "core"}, Limit: 5000, Remaining: 5489, ResetAt: reset, ResetKnown: true, ObservedAt: paceNow}
	p := quota.DefaultPolicy()
	b.ReportAllocs()
	for b.Loop() {
		if d := p.PaceKey(state, samples, paceNow); !d.Burn.Known {
			b.Fatal("no rate")
		}
	}
}
