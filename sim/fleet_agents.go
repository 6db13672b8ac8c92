package sim

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/layoverhq/layover/provider"
	"github.com/layoverhq/layover/provider/agentcli"
	"github.com/layoverhq/layover/quota"
)

// fakeAgent is the agent CLI of a fleet's agent jobs (Claude Code in
// print mode with stream-json output): it keeps each session's work and
// spends the window quota's units, one a turn. A turn the quota refuses
// ends the CLI's run as Claude Code's does, with exit 1 and its usage-limit
// message, whose reset layover reads (docs/simulator.md). Not safe for
// concurrent use: the simulation is one goroutine.
type fakeAgent struct {
	q        *windowQuota
	counted  func(accepted bool)
	seed     uint64
	sessions map[string]*agentSession
}

// agentSession is one conversation: the work its task needs and has done.
type agentSession struct {
	need, done int
}

// start begins a new session for a task of need turns and returns its id
// (a UUID, as Claude Code's; fixed by the seed and the job).
func (a *fakeAgent) start(job, need int) string {
	id := fmt.Sprintf("%08x-%04x-4%03x-8%03x-%012x", uint32(a.seed), uint16(a.seed>>32), job>>24&0xfff, job>>12&0xfff, job&0xfff)
	a.sessions[id] = &agentSession{need: need}
	return id
}

// turn runs the next turn of session id at now: done when the task's work
// is complete, else limited (with the CLI's output of the run that the
// limit ended) when the quota refused the turn. A session the agent does
// not know is an error: `claude --resume` of an unknown id fails.
func (a *fakeAgent) turn(id string, now time.Time) (done, limited bool, out []byte, err error) {
	s, ok := a.sessions[id]
	if !ok {
		return false, false, nil, fmt.Errorf("fleet: the agent has no session %q to continue", id)
	}
	ok = a.q.take(now)
	a.counted(ok)
	if !ok {
		return false, true, a.limitOutput(id, a.q.resetAt(now), now), nil
	}
	s.done++
	return s.done >= s.need, false, nil, nil
}

// finished is the job's check command: whether session id's task is
// already complete (the outcome holds).
func (a *fakeAgent) finished(id string) bool {
	s, ok := a.sessions[id]
	return ok && s.done >= s.need
}

// limitOutput is what `claude -p … --output-format stream-json --verbose`
// prints when the 5-hour limit refuses a turn: the session's init event,
// an assistant message whose error is rate_limit and whose text is the
// CLI's usage-limit message with its reset ("You've hit your limit ·
// resets 5am (UTC)", the reset to the minute, rounded up), and the
// result, is_error with api_error_status 429.
func (a *fakeAgent) limitOutput(id string, reset, now time.Time) []byte {
	t := reset.UTC()
	if f := t.Truncate(time.Minute); f.Before(t) {
		t = f.Add(time.Minute)
	}
	clock := t.Format("3pm")
	if t.Minute() != 0 {
		clock = t.Format("3:04pm")
	}
	if t.Sub(now) > 24*time.Hour {
		clock = t.Format("Jan 2") + " at " + clock
	}
	text := "You've hit your limit · resets " + clock + " (UTC)"
	lines := []map[string]any{
		{"type": "system", "subtype": "init", "session_id": id, "model": "claude-sonnet-4-5", "tools": []string{"Bash"}},
		{"type": "assistant", "session_id": id, "error": "rate_limit", "message": map[string]any{"role": "assistant",
			"model": "<synthetic>", "content": []any{map[string]any{"type": "text", "text": text}}}},
		{"type": "result", "subtype": "success", "is_error": true, "result": text, "session_id": id, "api_error_status": 429},
	}
	var b []byte
	for _, l := range lines {
		j, _ := json.Marshal(l) // maps of strings, numbers and bools: never fails
		b = append(append(b, j...), '\n')
	}
	return b
}

// agentJob is one agent job of a run, as layover (or, for StrategyNone,
// the bare CLI) runs it.
type agentJob struct {
	host   int
	first  string // the session its first run started
	sid    string // the session the job's runs continue
	over   bool   // done or lost
	runs   int    // runs of the CLI: the first, then one per resume
	spent  int64  // turns the quota accepted for it
	budget quota.Budget
}

// agentSpacing is the time between two agent jobs' base starts: the
// count spread over the file's duration.
func (r *run) agentSpacing() time.Duration {
	return r.s.agentSpan() / time.Duration(r.s.Agents.Count)
}

// agentStarts pushes every agent job's start: job i at i spacings from
// the run's start plus a part of a spacing drawn from the seed (its own
// source, so that the passes' draws are those of a scenario without
// agents), to the second, on host i mod hosts.
func (r *run) agentStarts(seed uint64) {
	rnd := rand.New(rand.NewPCG(seed, 3))
	sp := r.agentSpacing()
	for i := range r.s.Agents.Count {
		at := fleetStart.Add(time.Duration(i) * sp)
		if sp > time.Second {
			at = at.Add(time.Duration(rnd.Int64N(int64(sp))))
		}
		r.push(event{at: at.Truncate(time.Second), kind: evAgentStart, id: i})
	}
}

// agentEvery is the time between two turns of an agent job.
func (r *run) agentEvery() time.Duration {
	return max(time.Minute/time.Duration(r.s.Agents.UnitsPerMinute), time.Second).Truncate(time.Second)
}

// startAgent starts agent job id: a new session on its host.
func (r *run) startAgent(id int) {
	a := r.s.Agents
	need := max(int(a.Length.Duration/r.agentEvery()), 1)
	j := &agentJob{host: id % r.s.Hosts, runs: 1, budget: quota.Budget{Max: r.policy.MaxTotalWait}}
	j.sid = r.agent.start(id, need)
	j.first = j.sid
	r.agents[id] = j
	r.push(event{at: r.clk.Now(), kind: evAgentTurn, id: id})
}

// agentTurn runs one turn of agent job id. A turn the limit refuses ends
// the CLI's run: without layover the job fails and its work is lost;
// with it, layover reads the CLI's output as `layover run --agent claude`
// does (agentcli's classifier for the reset, agentcli.SessionID for the
// session), then waits in the run while the wait fits its budget under
// the policy's cap, or else defers the job to the same resume time, and
// continues the captured session after it.
func (r *run) agentTurn(id int) error {
	j := r.agents[id]
	now := r.clk.Now()
	done, limited, out, err := r.agent.turn(j.sid, now)
	if err != nil {
		return err
	}
	if !limited {
		j.spent++
		if done {
			r.rep.AgentsDone++
			j.over = true
			return nil
		}
		r.push(event{at: now.Add(r.agentEvery()), kind: evAgentTurn, id: id})
		return nil
	}
	r.rep.AgentLimitHits++
	if !r.layer {
		r.rep.AgentsLost++
		r.rep.AgentUnitsWasted += j.spent
		r.wasted += j.spent
		j.over = true
		return nil
	}
	o := agentcli.ClassifyClaudeCode(1, out, nil, now, time.UTC)
	if o.Class != provider.ClassQuota {
		return fmt.Errorf("fleet: the agent's limit message read as %s (%s), not a quota", o.Class, o.Reason)
	}
	sid := agentcli.SessionID(out, nil)
	if sid == "" {
		return fmt.Errorf("fleet: no session id in the agent's output")
	}
	reset := o.ResetAt
	if reset.IsZero() {
		reset = r.policy.AssumedReset(now)
	}
	until := quota.RerunAt(now, r.policy.Resume(reset, r.agentRnd).At())
	if f := until.Truncate(time.Second); f.Before(until) {
		until = f.Add(time.Second)
	}
	j.sid = sid
	r.rep.AgentsResumed++
	j.runs++
	if j.budget.Take(until.Sub(now)) == nil {
		r.rep.AgentWaiting = quota.SumSat(r.rep.AgentWaiting, until.Sub(now))
		r.push(event{at: until, kind: evAgentTurn, id: id})
		return nil
	}
	r.rep.AgentsDeferred++
	r.rep.AgentDeferred = quota.SumSat(r.rep.AgentDeferred, until.Sub(now))
	r.push(event{at: until, kind: evAgentResume, id: id})
	return nil
}

// agentResume is the fresh run of a deferred agent job at its resume
// time: it reconciles first (the check: the task already complete ends
// the job without a call), then continues the captured session with its
// own budget, as a new process has.
func (r *run) agentResume(id int) error {
	j := r.agents[id]
	if r.agent.finished(j.sid) {
		r.rep.AgentsDone++
		j.over = true
		return nil
	}
	j.budget = quota.Budget{Max: r.policy.MaxTotalWait}
	return r.agentTurn(id)
}
