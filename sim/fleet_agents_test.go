package sim

import (
	"context"
	"os"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/layoverhq/layover/provider"
	"github.com/layoverhq/layover/provider/agentcli"
	"github.com/layoverhq/layover/quota"
	"github.com/layoverhq/layover/store"
)

// agentSmall is a fleet of agent jobs whose demand (600 turns a 5-hour
// window) is four times its window's 150: the window runs out early (a
// wait past the 2 h cap: deferred) and again for jobs started late in it
// (a wait within the cap: waited in the run).
const agentSmall = `quota:
  kind: agent
  limit: 150
  window: 5h
hosts: 2
duration: 10h
agents:
  count: 20
  units_per_minute: 2
  duration: 30m
`

func runAgents(t *testing.T, file string, seed uint64) FleetReport {
	t.Helper()
	s, err := ParseScenario([]byte(file))
	if err != nil {
		t.Fatal(err)
	}
	rep, err := Fleet(context.Background(), FleetConfig{Scenario: s, Seed: seed})
	if err != nil {
		t.Fatal(err)
	}
	rep.Wall = 0
	return rep
}

// Without layover an agent job that meets the exhausted window fails and
// its work is lost; with layover's defaults none is lost: each job that
// meets the limit waits or is deferred, and continues its session.
func TestFleetAgentJobs(t *testing.T) {
	t.Parallel()
	rep := runAgents(t, agentSmall, 1)
	none, def := rep.Strategies[0], rep.Strategies[1]
	if none.AgentsLost == 0 || none.AgentUnitsWasted == 0 || none.AgentsResumed != 0 || none.AgentLimitHits != int64(none.AgentsLost) {
		t.Errorf("none: %+v, want jobs lost, one limit hit each, their units wasted, nothing resumed", none)
	}
	for _, r := range rep.Strategies[1:] {
		if r.AgentsLost != 0 || r.AgentUnitsWasted != 0 {
			t.Errorf("%s: %d agent jobs lost, %d units wasted", r.Strategy, r.AgentsLost, r.AgentUnitsWasted)
		}
		waited := r.AgentsResumed - r.AgentsDeferred + r.AgentsHeld - r.AgentsHeldDeferred
		if r.AgentsResumed == 0 || r.AgentsResumed > int(r.AgentLimitHits) || r.AgentsDeferred > r.AgentsResumed ||
			r.AgentsDeferred+r.AgentsHeldDeferred == 0 || waited == 0 ||
			r.AgentsHeld == 0 || r.AgentWaiting == 0 || r.AgentDeferred == 0 {
			t.Errorf("%s: %+v, want sessions resumed (at most one a limit hit), runs held by the ledger, some waits in the run, some deferrals", r.Strategy, r)
		}
		if r.AgentsDone+r.AgentsUnfinished != 20 || r.AgentsDone <= none.AgentsDone-none.AgentsLost {
			t.Errorf("%s: %d done, %d under way of 20 (none: %d done)", r.Strategy, r.AgentsDone, r.AgentsUnfinished, none.AgentsDone)
		}
	}
	if none.AgentsDone+none.AgentsLost+none.AgentsUnfinished != 20 {
		t.Errorf("none: %d done, %d lost, %d under way of 20", none.AgentsDone, none.AgentsLost, none.AgentsUnfinished)
	}
	if def.RejectedCalls != def.AgentLimitHits || def.AcceptedCalls != 300 {
		t.Errorf("defaults: %d accepted, %d rejected, %d limit hits: want the two windows' 300 turns and each hit a rejection",
			def.AcceptedCalls, def.RejectedCalls, def.AgentLimitHits)
	}
	var b strings.Builder
	if err := rep.Write(&b); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "agent jobs: ") || !strings.Contains(b.String(), "agent sessions resumed: ") {
		t.Errorf("the report names no agent jobs:\n%s", b.String())
	}
	if again := runAgents(t, agentSmall, 1); !reflect.DeepEqual(rep, again) {
		t.Errorf("one seed, two reports:\n%+v\n%+v", rep, again)
	}
}

// A job that meets the limit continues the session layover read from the
// CLI's output: the same session id on every run, and only the work left
// (no turn of the task made twice, none started anew). A session resumed
// is one the fake agent saw take a turn after its limit hit; one the run
// ended before it continued is not.
func TestFleetAgentResumeSession(t *testing.T) {
	t.Parallel()
	agentday, err := os.ReadFile("../examples/sim/agentday.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name, file string
		seed       uint64
	}{{"small", agentSmall, 2}, {"agentday", string(agentday), 1}} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			s, err := ParseScenario([]byte(c.file))
			if err != nil {
				t.Fatal(err)
			}
			cfg := FleetConfig{Scenario: s, Seed: c.seed}
			r := newRun(context.Background(), cfg, StrategyDefaults)
			hit, continued := map[string]bool{}, map[string]int{}
			r.agent.onTurn = func(id string, _ time.Time, ok bool) {
				switch {
				case !ok:
					hit[id] = true
				case hit[id]:
					hit[id] = false
					continued[id]++
				}
			}
			net := guardFleetNetwork(map[string]*fakeGitHub{fleetAPIHost(StrategyDefaults): r.gh})
			rep, err := r.run(cfg)
			net.restore()
			if err != nil {
				t.Fatal(err)
			}
			if len(r.agent.sessions) != len(r.agents) {
				t.Errorf("%d sessions for %d jobs: a resume started a new one", len(r.agent.sessions), len(r.agents))
			}
			resumed, turns := 0, int64(0)
			for id, j := range r.agents {
				sess := r.agent.sessions[j.sid]
				if j.sid != j.first || sess == nil {
					t.Errorf("job %d: started session %s, continued %s", id, j.first, j.sid)
					continue
				}
				if int64(sess.done) != j.spent || sess.done > sess.need || j.over != (sess.done == sess.need) {
					t.Errorf("job %d: %d turns accepted, the session did %d of %d (over %v)", id, j.spent, sess.done, sess.need, j.over)
				}
				if j.runs-1 != continued[j.sid] {
					t.Errorf("job %d: %d runs, the agent saw its session continue %d times", id, j.runs, continued[j.sid])
				}
				resumed += continued[j.sid]
				turns += j.spent
			}
			if resumed == 0 || resumed != rep.AgentsResumed || rep.AgentsDeferred > resumed {
				t.Errorf("the agent saw %d sessions continue after a limit hit, the report says %d resumed (%d after a deferral)",
					resumed, rep.AgentsResumed, rep.AgentsDeferred)
			}
			if turns != rep.AcceptedCalls {
				t.Errorf("the jobs' turns are %d, the quota accepted %d", turns, rep.AcceptedCalls)
			}
		})
	}
}

// A job whose wait or deferral outlasts the run is not resumed, and only
// the part of its wait within the run is counted: one job meets the limit
// five minutes into a 1-hour run whose window resets after 5 hours.
func TestFleetAgentWaitClipped(t *testing.T) {
	t.Parallel()
	s, err := ParseScenario([]byte("quota: {kind: agent, limit: 5}\nduration: 1m\nagents:\n  count: 1\n  units_per_minute: 1\n  duration: 30m\n"))
	if err != nil {
		t.Fatal(err)
	}
	if s, err = s.WithDuration(time.Hour); err != nil {
		t.Fatal(err)
	}
	rep, err := Fleet(context.Background(), FleetConfig{Scenario: s, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rep.Strategies[1:] {
		if r.AgentLimitHits != 1 || r.AgentsResumed != 0 || r.AgentsDeferred != 0 || r.AgentsUnfinished != 1 ||
			r.AgentWaiting+r.AgentDeferred > 56*time.Minute || r.AgentWaiting+r.AgentDeferred < 54*time.Minute {
			t.Errorf("%s: %+v, want one limit hit, no resume, the job under way, 55 min of waiting or deferral", r.Strategy, r)
		}
	}
}

// The agents section is as strict as the rest of the file.
func TestParseScenarioAgentFaults(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ file, want string }{
		{"quota:\n  kind: agent\n  limit: 10\nagents:\n  count: 2\n  turns: 3\n", "6: field turns not found"},
		{"agents:\n  count: 2\n  units_per_minute: 1\n  duration: 1h\n", "2: agents.count: agent jobs spend an agent quota: want quota.kind agent"},
		{"quota: {kind: agent, limit: 10}\nagents:\n  count: 10001\n", "3: agents.count: want a number from 0 to 10000"},
		{"quota: {kind: agent, limit: 10}\nagents:\n  count: 2\n  duration: 1h\n", "2: agents.units_per_minute: want a number from 1 to 600"},
		{"quota: {kind: agent, limit: 10}\nagents:\n  count: 2\n  units_per_minute: 601\n  duration: 1h\n", "4: agents.units_per_minute: want a number from 1 to 600"},
		{"quota: {kind: agent, limit: 10}\nagents:\n  count: 2\n  units_per_minute: 1\n  duration: 30s\n", "5: agents.duration: want a duration from 1m to 168h0m0s"},
		{"quota: {kind: agent, limit: 10}\nagents:\n  count: 2\n  units_per_minute: 1\n  duration: soon\n", `5: "soon": want a duration like 90s or 1h`},
		{"quota: {kind: agent, limit: 10}\nduration: 168h\nagents:\n  count: 10000\n  units_per_minute: 600\n  duration: 168h\n", "2: duration: the scenario's work would make"},
		{"quota: {kind: agent, limit: 10}\nagents:\n  count: 2\n  units_per_minute: 1\n  duration: 1h\n", ""},
		// a rate or duration is checked whenever given, and needs a count
		{"agents: {units_per_minute: -5, duration: 1h}\n", "1: agents.units_per_minute: want a number from 1 to 600"},
		{"quota: {kind: agent, limit: 10}\nagents:\n  units_per_minute: 2\n  duration: 30s\n", "4: agents.duration: want a duration from 1m to 168h0m0s"},
		{"agents:\n  count: 0\n  units_per_minute: 601\n", "3: agents.units_per_minute: want a number from 1 to 600"},
		{"quota: {kind: agent, limit: 10}\nagents:\n  units_per_minute: 2\n  duration: 1h\n", "3: agents.count: required with units_per_minute/duration"},
		{"agents:\n  duration: 1h\n", "2: agents.count: required with units_per_minute/duration"},
		{"agents:\n  count: 0\n  units_per_minute: 2\n  duration: 1h\n", ""},
	} {
		_, err := ParseScenario([]byte(c.file))
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%q: %v", c.file, err)
		case c.want != "" && (err == nil || !strings.HasPrefix(err.Error(), c.want)):
			t.Errorf("%q: got %v, want %q…", c.file, err, c.want)
		}
	}
}

// agentday's demand exceeds its 5-hour window.
func TestParseScenarioAgentDay(t *testing.T) {
	t.Parallel()
	s, err := ParseScenarioFile("../examples/sim/agentday.yaml")
	if err != nil {
		t.Fatal(err)
	}
	windows := s.Duration.Duration / s.Quota.Window.Duration
	if s.Quota.Kind != QuotaAgent || s.Quota.Window.Duration != 5*time.Hour || s.Agents.Count == 0 ||
		s.demand() <= float64(s.Quota.Limit)*float64(windows) {
		t.Errorf("agentday read as %+v, demand %.0f", s, s.demand())
	}
	// --duration keeps the jobs' spacing: a shorter run is the first part
	// of the same day.
	if cut, err := s.WithDuration(s.Duration.Duration / 4); err != nil || cut.agentsStarted() != float64(s.Agents.Count)/4 ||
		cut.demand() != s.demand()/4 {
		t.Errorf("cut to a quarter: %v, %v jobs of %d, demand %.0f of %.0f", err, cut.agentsStarted(), s.Agents.Count, cut.demand(), s.demand())
	}
}

// The fake agent's limit message is Claude Code's: layover's own
// classifier reads it as the quota with its reset (to the minute, rounded
// up), and the session id from it.
func TestFakeAgentLimitMessage(t *testing.T) {
	t.Parallel()
	a := &fakeAgent{seed: 7, sessions: map[string]*agentSession{}}
	id := a.start(12345, 10)
	now := fleetStart.Add(90 * time.Minute)
	for _, c := range []struct{ reset, want time.Time }{
		{fleetStart.Add(5 * time.Hour), fleetStart.Add(5 * time.Hour)},
		{fleetStart.Add(2*time.Hour + 30*time.Second), fleetStart.Add(2*time.Hour + time.Minute)},
		{fleetStart.Add(23*time.Hour + 59*time.Minute), fleetStart.Add(23*time.Hour + 59*time.Minute)},
	} {
		out := a.limitOutput(id, c.reset, now)
		o := agentcli.ClassifyClaudeCode(1, out, nil, now, time.UTC)
		if o.Class != provider.ClassQuota || !o.ResetAt.Equal(c.want) {
			t.Errorf("reset %s: classified %s, reset %s (%s), want quota at %s", c.reset, o.Class, o.ResetAt, o.Reason, c.want)
		}
		if got := agentcli.SessionID(out, nil); got != id {
			t.Errorf("session %q, want %q", got, id)
		}
	}
}

// A limit hit is recorded in the fleet's ledger as `layover run` records
// Claude Code's (memory and SQLite alike), and every job's start or
// continuation reads it first, as `run --quota claude-code` does: a job
// that starts after a window's first hit takes no turn before its reset,
// so the window's hits are those of the jobs already running then, one
// each. Without layover nothing reads a ledger: the same jobs are lost as
// before.
func TestFleetAgentLedger(t *testing.T) {
	t.Parallel()
	s, err := ParseScenario([]byte(agentSmall))
	if err != nil {
		t.Fatal(err)
	}
	none := runAgents(t, agentSmall, 1).Strategies[0]
	if none.AgentsDone != 4 || none.AgentsLost != 16 || none.AgentLimitHits != 16 || none.AgentUnitsWasted != 60 ||
		none.AcceptedCalls != 300 || none.AgentsHeld != 0 {
		t.Errorf("none: %+v, want 4 done, 16 lost with 60 units, 16 limit hits, as without the ledger", none)
	}
	for _, ledger := range []string{LedgerMemory, LedgerSQLite} {
		t.Run(ledger, func(t *testing.T) {
			t.Parallel()
			cfg := FleetConfig{Scenario: s, Seed: 1, Ledger: ledger, Dir: t.TempDir()}
			r := newRun(context.Background(), cfg, StrategyDefaults)
			type turn struct {
				id string
				at time.Time
				ok bool
			}
			var turns []turn
			r.agent.onTurn = func(id string, at time.Time, ok bool) { turns = append(turns, turn{id, at, ok}) }
			var stored []quota.State
			r.inspect = func(st store.Store) (err error) {
				stored, err = st.States(context.Background(), r.agentKeys)
				return err
			}
			net := guardFleetNetwork(map[string]*fakeGitHub{fleetAPIHost(StrategyDefaults): r.gh})
			rep, err := r.run(cfg)
			net.restore()
			if err != nil {
				t.Fatal(err)
			}
			window := s.Quota.Window.Duration
			windowOf := func(at time.Time) int64 { return int64(at.Sub(fleetStart) / window) }
			job := map[string]*agentJob{}
			for _, j := range r.agents {
				job[j.first] = j
			}
			firstHit := map[int64]time.Time{}
			var last turn
			for _, tu := range turns {
				if w := windowOf(tu.at); !tu.ok {
					if _, ok := firstHit[w]; !ok {
						firstHit[w] = tu.at
					}
					last = tu
				}
			}
			if len(firstHit) == 0 {
				t.Fatalf("no window ran out (%+v): the scenario tests nothing", rep)
			}
			if rep.AgentsHeld == 0 {
				t.Errorf("no run was held by the ledger: %+v", rep)
			}
			hitsOf := map[int64]map[string]int{}
			for _, tu := range turns {
				w := windowOf(tu.at)
				hit, ok := firstHit[w]
				if !ok || tu.at.Before(hit) {
					continue
				}
				if j := job[tu.id]; j.started.After(hit) {
					t.Errorf("job of session %s started at %s, after window %d's hit at %s, and took a turn at %s, before the reset",
						tu.id, j.started.Format(time.TimeOnly), w, hit.Format(time.TimeOnly), tu.at.Format(time.TimeOnly))
				}
				if !tu.ok {
					if hitsOf[w] == nil {
						hitsOf[w] = map[string]int{}
					}
					hitsOf[w][tu.id]++
				}
			}
			var hits int64
			for w, by := range hitsOf {
				running := 0
				for _, j := range r.agents {
					if !j.started.After(firstHit[w]) && (!j.over || !j.ended.Before(firstHit[w])) {
						running++
					}
				}
				for id, n := range by {
					hits += int64(n)
					if n > 1 {
						t.Errorf("window %d: session %s met the limit %d times", w, id, n)
					}
				}
				if len(by) > running {
					t.Errorf("window %d: %d jobs met the limit, %d were running at its first hit", w, len(by), running)
				}
			}
			if hits != rep.AgentLimitHits || hits >= none.AgentLimitHits {
				t.Errorf("%d limit hits seen, %d reported, none %d", hits, rep.AgentLimitHits, none.AgentLimitHits)
			}
			want := quota.State{Key: quota.Key{Host: "claude-code", Principal: fleetUser, Resource: "usage"}, Limit: -1,
				ResetAt: fleetStart.Add(time.Duration(windowOf(last.at)+1) * window), ResetKnown: true,
				ObservedAt: last.at, ObservedBy: "host-" + strconv.Itoa(job[last.id].host+1),
				Source: quota.SourceRejected, Cause: quota.CauseExhausted}
			want.RawReset = want.ResetAt.Unix()
			if len(stored) != 1 || !stored[0].ResetAt.Equal(want.ResetAt) || !stored[0].ObservedAt.Equal(want.ObservedAt) {
				t.Fatalf("the ledger holds %+v, want %+v", stored, want)
			}
			got := stored[0]
			got.ResetAt, got.ObservedAt = want.ResetAt, want.ObservedAt
			if got != want {
				t.Errorf("the ledger holds %+v, want %+v", got, want)
			}
		})
	}
}

// A job takes its work's minutes at units_per_minute turns, evenly
// spaced on the virtual clock, whatever the rate: one 10-minute job
// takes 10, 70, 450 and 6,000 turns at 1, 7, 45 and 600 a minute, the
// k-th k minutes over the rate after the first, and the demand cap
// counts the same turns.
func TestFleetAgentRate(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ upm, want int }{{1, 10}, {7, 70}, {45, 450}, {600, 6000}} {
		file := "quota: {kind: agent, limit: 1000000}\nduration: 1m\nagents:\n  count: 1\n  units_per_minute: " +
			strconv.Itoa(c.upm) + "\n  duration: 10m\n"
		s, err := ParseScenario([]byte(file))
		if err != nil {
			t.Fatal(err)
		}
		if s, err = s.WithDuration(time.Hour); err != nil { // the job starts in the first minute and ends in the hour
			t.Fatal(err)
		}
		if s.demand() != float64(c.want) {
			t.Errorf("%d a minute: demand %.0f, want %d", c.upm, s.demand(), c.want)
		}
		cfg := FleetConfig{Scenario: s, Seed: 1}
		r := newRun(context.Background(), cfg, StrategyNone)
		var at []time.Time
		r.agent.onTurn = func(_ string, t time.Time, ok bool) {
			if ok {
				at = append(at, t)
			}
		}
		rep, err := r.run(cfg)
		if err != nil {
			t.Fatal(err)
		}
		if len(at) != c.want || rep.AgentsDone != 1 {
			t.Errorf("%d a minute: %d turns, %d jobs done; want %d turns, 1 done", c.upm, len(at), rep.AgentsDone, c.want)
			continue
		}
		for k, tu := range at {
			if want := at[0].Add(time.Duration(k) * time.Minute / time.Duration(c.upm)); !tu.Equal(want) {
				t.Errorf("%d a minute: turn %d at %s, want %s", c.upm, k, tu.Sub(at[0]), want.Sub(at[0]))
				break
			}
		}
	}
}

// Every random source of a run has its own stream: the agent jobs' starts
// and jitter share none with the workload or any host a scenario may
// have, so that agents leave the other draws as they were.
func TestFleetStreams(t *testing.T) {
	t.Parallel()
	seen := map[uint64]string{streamWorkload: "workload"}
	add := func(stream uint64, name string) {
		if other, ok := seen[stream]; ok {
			t.Fatalf("stream %d: %s and %s", stream, other, name)
		}
		seen[stream] = name
	}
	for h := range MaxFleetHosts {
		add(hostStream(h), "host "+strconv.Itoa(h+1))
	}
	add(streamAgentStarts, "agent starts")
	add(streamAgentJitter, "agent jitter")
}
