package sim

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"
)

// small is a fleet whose demand (about 220 calls a window) exceeds its
// quota (150 a window), simulated for three windows.
const small = `quota:
  kind: github
  limit: 150
  window: 5m
hosts: 2
duration: 15m
passes:
  per_hour: 480
  calls: 4
  spread: 12s
  jitter: 5s
commands:
  count: 2
  calls_per_minute: 6
  duration: 6m
`

func TestParseScenarioExample(t *testing.T) {
	t.Parallel()
	s, err := ParseScenarioFile("../examples/sim/thirdshift.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if s.Hosts != 5 || s.Quota.Limit != 5000 || s.Quota.Window.Duration != time.Hour || s.passes() != 840*24 ||
		s.Duration.Duration != 24*time.Hour || !reflect.DeepEqual(s.Strategies, Strategies) {
		t.Errorf("thirdshift read as %+v", s)
	}
	if d := s.demand() / 24; d <= 5000 {
		t.Errorf("thirdshift's demand is %.0f calls an hour, want more than its quota of 5000", d)
	}
}

func TestParseScenarioDefaults(t *testing.T) {
	t.Parallel()
	s, err := ParseScenario([]byte("quota:\n  kind: agent\n  limit: 900\npasses:\n  every: 1m\n  calls: 2\n"))
	if err != nil {
		t.Fatal(err)
	}
	if s.Quota.Window.Duration != 5*time.Hour || s.Hosts != 1 || s.Duration.Duration != 24*time.Hour ||
		s.Passes.PerSlot != 1 || s.passes() != 24*60 {
		t.Errorf("defaults: %+v", s)
	}
}

// Every fault of a file names its line and, for a number out of bounds,
// its field.
func TestParseScenarioFaults(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ file, want string }{
		{"hosts: 3\npasses:\n  per_hour: 10\n  calls: 2\n  colour: red\n", "5: field colour not found"},
		{"hosts: three\n", "1: cannot unmarshal !!str `three` into int"},
		{"hosts: 2\nduration: -1h\n", `2: "-1h": want a duration like 90s or 1h`},
		{"hosts: 2\nhosts: 3\n", `2: mapping key "hosts" already defined at line 1`},
		{"hosts: 0\n", ""}, // 0 is the default
		{"hosts: 1001\n", "1: hosts: want a number from 1 to 1000"},
		{"quota:\n  kind: gitlab\n", `2: quota.kind: "gitlab": want github or agent`},
		{"quota:\n  limit: -5\n", "2: quota.limit: want a number from 1 to 10000000"},
		{"\nquota:\n  window: 30s\n", "3: quota.window: want a duration from 1m0s to 24h0m0s"},
		{"duration: 9000h\n", "1: duration: want a duration from 1m to 168h0m0s"},
		{"passes:\n  per_hour: 10\n", "1: passes.calls: want the calls each pass makes (1 or more)"},
		{"passes:\n  per_hour: 10\n  every: 1m\n  calls: 1\n", "3: passes.every: give one of per_hour, every and cron"},
		{"hosts: 1000\nduration: 168h\npasses:\n  cron: '* * * * *'\n  per_slot: 1000\n  calls: 10000\n", "2: duration: the scenario's work would make"},
		{"passes:\n  per_slot: 2\n", "2: passes.per_slot: only with every or cron"},
		{"passes:\n  cron: '61 * * * *'\n  calls: 1\n", "2: passes.cron: cron expression"},
		{"passes:\n  cron: '* * * * *'\n  every: 1m\n  calls: 1\n", "2: passes.cron: give one of per_hour, every and cron"},
		{"commands:\n  count: 2\n  duration: 1h\n", "1: commands.calls_per_minute: want a number from 1 to 600"},
		// a rate or duration is checked whenever given, and needs a count
		{"commands: {calls_per_minute: -5, duration: 1h}\n", "1: commands.calls_per_minute: want a number from 1 to 600"},
		{"commands:\n  calls_per_minute: 5\n  duration: 30s\n", "3: commands.duration: want a duration from 1m to 168h0m0s"},
		{"commands:\n  count: 0\n  calls_per_minute: 601\n", "3: commands.calls_per_minute: want a number from 1 to 600"},
		{"hosts: 2\ncommands:\n  duration: 1h\n  calls_per_minute: 5\n", "3: commands.count: required with calls_per_minute/duration"},
		{"commands:\n  count: 0\n  calls_per_minute: 5\n  duration: 1h\n", ""},
		{"strategies: [none, fast]\n", `1: strategies: "fast": want none, defaults or pacing`},
		{"strategies: [none, none]\n", `1: strategies: "none" given twice`},
		{"hosts: 1000\nduration: 168h\npasses:\n  per_hour: 100000\n  calls: 10000\n", "2: duration: the scenario's work would make"},
		{"- 1\n", "1: want a mapping of the scenario's fields"},
		{"", "1: want a mapping"},
		{"hosts: [\n", "2: did not find expected node content"},
	} {
		_, err := ParseScenario([]byte(c.file))
		if c.want == "" {
			if err != nil {
				t.Errorf("%q: %v", c.file, err)
			}
			continue
		}
		var se *ScenarioError
		if !errors.As(err, &se) {
			t.Errorf("%q: got %v, want a *ScenarioError", c.file, err)
			continue
		}
		if !strings.HasPrefix(err.Error(), c.want) {
			t.Errorf("%q: got %q, want %q…", c.file, err, c.want)
		}
	}
}

func runSmall(t *testing.T, seed uint64, ledger string) FleetReport {
	t.Helper()
	s, err := ParseScenario([]byte(small))
	if err != nil {
		t.Fatal(err)
	}
	rep, err := Fleet(context.Background(), FleetConfig{Scenario: s, Seed: seed, Ledger: ledger, Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	rep.Wall = 0
	return rep
}

// Two runs with one seed give the same figures; another seed moves them.
func TestFleetDeterministic(t *testing.T) {
	t.Parallel()
	a, b := runSmall(t, 3, LedgerMemory), runSmall(t, 3, LedgerMemory)
	if !reflect.DeepEqual(a, b) {
		t.Errorf("one seed, two reports:\n%+v\n%+v", a, b)
	}
	if c := runSmall(t, 4, LedgerMemory); reflect.DeepEqual(a, c) {
		t.Errorf("seeds 3 and 4 gave one report: %+v", a)
	}
}

// The in-memory ledger reports what the real SQLite store does: a run on
// each, with one seed, gives the same figures.
func TestFleetLedgers(t *testing.T) {
	t.Parallel()
	for _, seed := range []uint64{1, 2} {
		mem, db := runSmall(t, seed, LedgerMemory), runSmall(t, seed, LedgerSQLite)
		if !reflect.DeepEqual(mem, db) {
			t.Errorf("seed %d: memory and sqlite ledgers differ:\n%+v\n%+v", seed, mem, db)
		}
	}
}

// On a fleet whose demand exceeds its quota, the naive fleet loses
// commands and fails passes mid-work; layover's defaults lose none, fail
// none and take fewer rejections; pacing takes no more than the defaults.
func TestFleetStrategies(t *testing.T) {
	t.Parallel()
	rep := runSmall(t, 1, LedgerMemory)
	if len(rep.Strategies) != 3 {
		t.Fatalf("%d strategies", len(rep.Strategies))
	}
	none, def, pace := rep.Strategies[0], rep.Strategies[1], rep.Strategies[2]
	if none.Strategy != StrategyNone || def.Strategy != StrategyDefaults || pace.Strategy != StrategyPacing {
		t.Fatalf("strategies in the order %s, %s, %s", none.Strategy, def.Strategy, pace.Strategy)
	}
	if none.CommandsLost == 0 || none.PassesFailed == 0 || none.PassesSkipped != 0 {
		t.Errorf("none: %+v, want commands lost and passes failed", none)
	}
	for _, r := range []StrategyReport{def, pace} {
		if r.CommandsLost != 0 || r.PassesFailed != 0 || r.PassesSkipped == 0 {
			t.Errorf("%s: %+v, want no command lost, no pass failed, some skipped", r.Strategy, r)
		}
		if r.RejectedCalls >= none.RejectedCalls {
			t.Errorf("%s: %d rejected calls, none %d", r.Strategy, r.RejectedCalls, none.RejectedCalls)
		}
	}
	if rep.ProviderCalls != 0 {
		t.Errorf("%d requests tried to leave the process", rep.ProviderCalls)
	}
	if def.Waiting == 0 {
		t.Errorf("defaults: no command waited for a reset: %+v", def)
	}
	if pace.RejectedCalls > def.RejectedCalls {
		t.Errorf("pacing: %d rejected calls, defaults %d", pace.RejectedCalls, def.RejectedCalls)
	}
	if def.WorkPercent <= none.WorkPercent {
		t.Errorf("quota on work: defaults %.1f%%, none %.1f%%", def.WorkPercent, none.WorkPercent)
	}
}

// A cron schedule starts per_slot passes on every host at each of its
// slots.
func TestFleetCron(t *testing.T) {
	t.Parallel()
	s, err := ParseScenario([]byte("hosts: 2\nduration: 1h\npasses:\n  cron: '*/5 * * * *'\n  per_slot: 2\n  calls: 1\n  jitter: 30s\nstrategies: [none, defaults]\n"))
	if err != nil {
		t.Fatal(err)
	}
	if n := s.passes(); n != 48 {
		t.Fatalf("passes() = %v, want 12 slots × 2 hosts × 2", n)
	}
	rep, err := Fleet(context.Background(), FleetConfig{Scenario: s, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rep.Strategies {
		if r.PassesRun != 48 || r.AcceptedCalls != 48 || r.PassesSkipped != 0 {
			t.Errorf("%s: %+v, want 48 passes of one call each", r.Strategy, r)
		}
	}
}
