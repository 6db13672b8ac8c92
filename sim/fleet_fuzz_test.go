package sim

import (
	"os"
	"testing"
	"time"

	"github.com/layoverhq/layover/internal/fuzzbound"
)

// FuzzParseScenario: any input is a scenario within its bounds or a
// *ScenarioError, never a panic.
func FuzzParseScenario(f *testing.F) {
	if data, err := os.ReadFile("../examples/sim/thirdshift.yaml"); err == nil {
		f.Add(data)
	}
	if data, err := os.ReadFile("../examples/sim/agentday.yaml"); err == nil {
		f.Add(data)
	}
	f.Add([]byte(small))
	f.Add([]byte(agentSmall))
	f.Add([]byte("quota: {kind: agent, limit: 50}\nagents: {count: 3, units_per_minute: 600, duration: 168h}\nduration: 2h\n"))
	f.Add([]byte("quota: {kind: github}\nagents:\n  count: 1\n  units_per_minute: 1\n  duration: 1m\n  extra: 1\n"))
	f.Add([]byte("passes:\n  every: 1m\n  per_slot: 3\n  calls: 2\nstrategies: [pacing]\n"))
	f.Add([]byte("quota: {kind: agent, window: 5h, limit: 1}\nduration: 1h\n"))
	f.Add([]byte("hosts: 4\npasses: {cron: '*/2 9-17 * * 1-5', per_slot: 3, calls: 4}\n"))
	f.Add([]byte("agents: {units_per_minute: -5, duration: 1h}\ncommands: {calls_per_minute: 700}\n"))
	f.Add([]byte("quota: {kind: agent}\nagents:\n  count: 0\n  units_per_minute: 2\n  duration: 1h\ncommands:\n  duration: 2h\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		fuzzbound.Run(t, func() {
			s, err := ParseScenario(data)
			if err != nil {
				if _, ok := err.(*ScenarioError); !ok {
					t.Fatalf("%T %v, want a *ScenarioError", err, err)
				}
				return
			}
			if s.Hosts < 1 || s.Hosts > MaxFleetHosts || s.Quota.Limit < 1 || s.demand() > MaxFleetCalls ||
				s.Agents.Count > 0 && (s.Quota.Kind != QuotaAgent || s.Agents.UnitsPerMinute < 1 || s.Agents.Length.Duration < time.Minute) || len(s.Strategies) == 0 ||
				s.Agents.UnitsPerMinute < 0 || s.Agents.UnitsPerMinute > MaxUnitsPerMinute || s.Agents.Length.Duration > MaxCommandLength ||
				s.Commands.CallsPerMinute < 0 || s.Commands.CallsPerMinute > MaxCallsPerMinute || s.Commands.Length.Duration > MaxCommandLength {
				t.Fatalf("accepted out of bounds: %+v", s)
			}
		})
	})
}
