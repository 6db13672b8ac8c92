package quota_test

import (
	"testing"
	"time"

	"github.com/layoverhq/layover/quota"
)

// st builds a state for the admission tests: limit 5000 unless the resource
// is search (30), reset in resetIn from t0.
func st(host, principal, resource string, remaining int64, resetIn time.Duration) quota.State {
	limit := int64(5000)
	if resource == "search" {
		limit = 30
	}
	return quota.State{
		Key:        quota.Key{Host: host, Principal: principal, Resource: resource},
		Limit:      limit,
		Remaining:  remaining,
		ResetAt:    t0.Add(resetIn),
		ResetKnown: true,
		ObservedAt: t0.Add(-time.Minute),
		Source:     quota.SourceRateLimit,
	}
}

func rejectedState(host, principal, resource string, resetIn time.Duration) quota.State {
	s := st(host, principal, resource, quota.Unknown, resetIn)
	s.Limit, s.Source, s.Cause = quota.Unknown, quota.SourceRejected, quota.CauseExhausted
	return s
}

const gh, ghe = "api.github.com", "ghe.example.com"

func TestAdmit(t *testing.T) {
	t.Parallel()

	tests := []struct {
		name      string
		reserve   []string // --reserve values
		states    []quota.State
		wantAdmit bool
		wantKey   quota.Key // the blocking key when refused
		wantCause quota.Cause
	}{
		{name: "nothing known", states: nil, wantAdmit: true},
		{name: "all have room", states: []quota.State{
			st(gh, "octocat", "core", 4000, 30*time.Minute),
			st(gh, "octocat", "graphql", 501, 30*time.Minute),
			st(gh, "octocat", "search", 3, time.Minute),
		}, wantAdmit: true},
		{name: "exhausted", states: []quota.State{
			st(gh, "octocat", "core", 0, 30*time.Minute),
		}, wantKey: quota.Key{gh, "octocat", "core"}, wantCause: quota.CauseExhausted},
		{name: "rejected call counts as exhausted", states: []quota.State{
			st(gh, "octocat", "core", 4000, 30*time.Minute),
			rejectedState(gh, "octocat", "graphql", 10*time.Minute),
		}, wantKey: quota.Key{gh, "octocat", "graphql"}, wantCause: quota.CauseExhausted},
		{name: "below reserve", states: []quota.State{
			st(gh, "octocat", "core", 4000, 30*time.Minute),
			st(gh, "octocat", "graphql", 499, 30*time.Minute),
		}, wantKey: quota.Key{gh, "octocat", "graphql"}, wantCause: quota.CauseBelowReserve},
		{name: "search reserve is 3", states: []quota.State{
			st(gh, "octocat", "search", 2, time.Minute),
		}, wantKey: quota.Key{gh, "octocat", "search"}, wantCause: quota.CauseBelowReserve},
		{name: "exhausted beats below reserve listed first", states: []quota.State{
			st(gh, "octocat", "graphql", 10, 50*time.Minute),
			st(gh, "octocat", "core", 0, 5*time.Minute),
		}, wantKey: quota.Key{gh, "octocat", "core"}, wantCause: quota.CauseExhausted},
		{name: "exhausted beats below reserve listed last", states: []quota.State{
			st(gh, "octocat", "core", 0, 5*time.Minute),
			st(gh, "octocat", "graphql", 10, 50*time.Minute),
		}, wantKey: quota.Key{gh, "octocat", "core"}, wantCause: quota.CauseExhausted},
		{name: "latest reset wins among exhausted", states: []quota.State{
			st(gh, "octocat", "core", 0, 5*time.Minute),
			st(gh, "octocat", "graphql", 0, 40*time.Minute),
			st(gh, "octocat", "search", 0, time.Minute),
		}, wantKey: quota.Key{gh, "octocat", "graphql"}, wantCause: quota.CauseExhausted},
		{name: "latest reset wins among exhausted, reversed", states: []quota.State{
			st(gh, "octocat", "search", 0, time.Minute),
			st(gh, "octocat", "graphql", 0, 40*time.Minute),
			st(gh, "octocat", "core", 0, 5*time.Minute),
		}, wantKey: quota.Key{gh, "octocat", "graphql"}, wantCause: quota.CauseExhausted},
		{name: "latest reset wins among below reserve", states: []quota.State{
			st(gh, "octocat", "graphql", 100, 50*time.Minute),
			st(gh, "octocat", "core", 100, 55*time.Minute),
		}, wantKey: quota.Key{gh, "octocat", "core"}, wantCause: quota.CauseBelowReserve},
		{name: "expired exhaustion ignored", states: []quota.State{
			st(gh, "octocat", "core", 0, -time.Second),
			st(gh, "octocat", "graphql", 4000, 30*time.Minute),
		}, wantAdmit: true},
		{name: "exhaustion resetting now is expired", states: []quota.State{
			st(gh, "octocat", "core", 0, 0),
		}, wantAdmit: true},
		{name: "expired exhaustion does not hide a live below reserve", states: []quota.State{
			st(gh, "octocat", "core", 0, -time.Minute),
			st(gh, "octocat", "graphql", 100, 30*time.Minute),
		}, wantKey: quota.Key{gh, "octocat", "graphql"}, wantCause: quota.CauseBelowReserve},
		{name: "expired with later reset never blocks", states: []quota.State{
			st(gh, "octocat", "core", 100, -time.Hour),
			st(gh, "octocat", "graphql", 0, time.Minute),
		}, wantKey: quota.Key{gh, "octocat", "graphql"}, wantCause: quota.CauseExhausted},
		{name: "reserve flag lowers the reserve", reserve: []string{"graphql=10"}, states: []quota.State{
			st(gh, "octocat", "graphql", 100, 30*time.Minute),
		}, wantAdmit: true},
		{name: "reserve flag raises the reserve", reserve: []string{"1000"}, states: []quota.State{
			st(gh, "octocat", "core", 999, 30*time.Minute),
		}, wantKey: quota.Key{gh, "octocat", "core"}, wantCause: quota.CauseBelowReserve},
		{name: "zero reserve still refuses exhaustion", reserve: []string{"0"}, states: []quota.State{
			st(gh, "octocat", "core", 0, 30*time.Minute),
		}, wantKey: quota.Key{gh, "octocat", "core"}, wantCause: quota.CauseExhausted},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()

			p := quota.DefaultPolicy()
			for _, v := range tt.reserve {
				if err := p.Reserve.Set(v); err != nil {
					t.Fatalf("Reserve.Set(%q) = %v", v, err)
				}
			}
			checkDecision(t, p.Admit(t0, tt.states), tt.wantAdmit, tt.wantKey, tt.wantCause)
		})
	}
}

// TestAdmitSeparatesKeys puts one exhausted key among keys that differ from
// it in exactly one part: host, principal or resource. Only the exhausted key
// is named, whichever part separates it.
func TestAdmitSeparatesKeys(t *testing.T) {
	t.Parallel()

	tests := []struct {
		name    string
		blocked quota.Key
	}{
		{"host", quota.Key{ghe, "octocat", "core"}},
		{"principal", quota.Key{gh, "hubot", "core"}},
		{"resource", quota.Key{gh, "octocat", "graphql"}},
		{"token principal", quota.Key{gh, quota.TokenPrincipal("ghp_x"), "core"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()

			keys := []quota.Key{
				{gh, "octocat", "core"},
				{ghe, "octocat", "core"},
				{gh, "hubot", "core"},
				{gh, "octocat", "graphql"},
				{gh, quota.TokenPrincipal("ghp_x"), "core"},
			}
			var states []quota.State
			for _, k := range keys {
				remaining := int64(4500)
				if k == tt.blocked {
					remaining = 0
				}
				states = append(states, st(k.Host, k.Principal, k.Resource, remaining, 20*time.Minute))
			}
			p := quota.DefaultPolicy()
			checkDecision(t, p.Admit(t0, states), false, tt.blocked, quota.CauseExhausted)

			// Without the blocked key's state, the others all admit.
			var others []quota.State
			for _, s := range states {
				if s.Key != tt.blocked {
					others = append(others, s)
				}
			}
			checkDecision(t, p.Admit(t0, others), true, quota.Key{}, quota.CauseNone)
		})
	}
}

func checkDecision(t *testing.T, d quota.Decision, wantAdmit bool, wantKey quota.Key, wantCause quota.Cause) {
	t.Helper()
	if wantAdmit {
		if !d.Admit || d.Cause != quota.CauseNone || d.Blocking != (quota.State{}) {
			t.Errorf("Admit = %+v, want admitted with no blocking state", d)
		}
		return
	}
	if d.Admit {
		t.Fatalf("Admit = admitted, want refused by %s (%s)", wantKey, wantCause)
	}
	if d.Blocking.Key != wantKey || d.Cause != wantCause {
		t.Errorf("Admit refused by %s (%s), want %s (%s)", d.Blocking.Key, d.Cause, wantKey, wantCause)
	}
}

// BenchmarkAdmit measures the admission decision of a pass over the two
// states a GitHub pass reads from the ledger (core and graphql). The target
// is 20 µs; it is far under.
func BenchmarkAdmit(b *testing.B) {
	p := quota.DefaultPolicy()
	states := []quota.State{
		st(gh, "octocat", "core", 4000, 30*time.Minute),
		st(gh, "octocat", "graphql", 400, 30*time.Minute),
	}
	var d quota.Decision
	for b.Loop() {
		d = p.Admit(t0, states)
	}
	if d.Admit || d.Cause != quota.CauseBelowReserve {
		b.Fatalf("unexpected decision %+v", d)
	}
}
