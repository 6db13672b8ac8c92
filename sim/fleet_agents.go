package sim

import (
	"cmp"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"time"

	"github.com/layoverhq/layover/command"
	"github.com/layoverhq/layover/provider"
	"github.com/layoverhq/layover/provider/agentcli"
	"github.com/layoverhq/layover/provider/registry"
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
	// onTurn, when set (tests), is told of every turn the quota was asked
	// for: the session, the time and whether the quota accepted it.
	onTurn func(id string, at time.Time, accepted bool)
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
	if a.onTurn != nil {
		a.onTurn(id, now, ok)
	}
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
	host  int
	first string // the session its first run started
	sid   string // the session the job's runs continue
	over  bool   // done or lost
	runs  int    // runs of the CLI that took a turn: the first, then one per resume
	// resuming: the job met the limit and its session has not taken a
	// turn since; resumingDeferred: it was deferred since
	resuming, resumingDeferred bool
	spent                      int64 // turns the quota accepted for it
	budget                     quota.Budget
	started                    time.Time // when the job was started (before any hold)
	base                       time.Time // when its current run of turns began
	k                          int       // turns of that run taken: the next is its k-th

	ended time.Time // when it was done or lost
}

// agentQuota is the quota name the agent jobs run under, as `layover run
// --quota claude-code -- claude -p …` names it.
const agentQuota = agentcli.ProviderClaudeCode

// resolveAgentKeys resolves the keys `layover run --quota claude-code
// --principal thirdshift` checks in the ledger before it starts the
// command (command.ResolveQuotas: host the CLI's name, the fleet's one
// principal, every resource Claude Code names), since the fleet's hosts
// share one subscription.
func (r *run) resolveAgentKeys() error {
	n, err := command.ParseQuotaName(agentQuota)
	if err != nil {
		return err
	}
	qs, err := command.ResolveQuotas(r.ctx, &command.QuotaConfig{Store: r.st, Principal: fleetUser,
		Getenv: func(string) string { return "" }}, command.QuotaNames{n})
	if err != nil {
		return err
	}
	r.agentKeys = command.KeysOf(qs)
	return nil
}

// agentExhaustion is the state `layover run` records in the ledger for an
// agent CLI's limit (command's recordAgentExhaustion, with --principal
// the fleet's): the key the outcome names (host the CLI's provider name,
// the resource its output names, else the registry's default), nothing
// remaining, rejected; the reset the output declared (one already passed
// read as now), else the policy's assumed reset. It is an error when the
// key is not among those `run --quota claude-code` checks.
func (r *run) agentExhaustion(o provider.Outcome, host int, now time.Time) (quota.State, error) {
	res := ""
	if p, ok := registry.Lookup(o.Provider); ok {
		res = p.DefaultResource
	}
	st := quota.State{Key: quota.Key{Host: o.Provider, Principal: fleetUser, Resource: cmp.Or(o.Resource, res, "usage")},
		Limit: o.Limit, Remaining: 0, Source: quota.SourceRejected, Cause: quota.CauseExhausted,
		ObservedAt: now, ObservedBy: "host-" + strconv.Itoa(host+1)}
	switch {
	case o.ResetAt.IsZero():
		st.ResetAt = r.policy.AssumedReset(now)
	case !o.ResetAt.After(now):
		st.ResetAt, st.ResetKnown = now, true
	default:
		st.ResetAt, st.ResetKnown, st.RawReset = o.ResetAt, true, o.ResetAt.Unix()
	}
	if !slices.Contains(r.agentKeys, st.Key) {
		return quota.State{}, fmt.Errorf("fleet: the agent's limit names key %s, which `run --quota %s` does not check", st.Key, agentQuota)
	}
	return st, nil
}

// ceilSecond is t rounded up to the second, the grain of every event.
func ceilSecond(t time.Time) time.Time {
	if f := t.Truncate(time.Second); f.Before(t) {
		return f.Add(time.Second)
	}
	return t
}

// agentSpacing is the time between two agent jobs' base starts: the
// count spread over the file's duration.
func (r *run) agentSpacing() time.Duration {
	return r.s.agentSpan() / time.Duration(r.s.Agents.Count)
}

// agentStarts pushes every agent job's start: job i at i spacings from
// the run's start plus a part of a spacing drawn from the seed (its own
// stream, streamAgentStarts, which no host's transport uses, so that the
// passes' and the hosts' draws are those of a scenario without agents),
// to the second, on host i mod hosts.
func (r *run) agentStarts(seed uint64) {
	rnd := rand.New(rand.NewPCG(seed, streamAgentStarts))
	sp := r.agentSpacing()
	for i := range r.s.Agents.Count {
		at := fleetStart.Add(time.Duration(i) * sp)
		if sp > time.Second {
			at = at.Add(time.Duration(rnd.Int64N(int64(sp))))
		}
		r.push(event{at: at.Truncate(time.Second), kind: evAgentStart, id: i})
	}
}

// agentTurnAt is when the k-th turn of a job's run of turns begins,
// counted from its first (k = 0) at base: k minutes over the scenario's
// units a minute, exact on the virtual clock (no rounding to the second,
// so that several turns may share one, and none drifts).
func (r *run) agentTurnAt(base time.Time, k int) time.Time {
	return base.Add(time.Duration(k) * time.Minute / time.Duration(r.s.Agents.UnitsPerMinute))
}

// startAgent starts agent job id on its host: its task's session (the
// CLI's own, fixed by the seed and the job, needing the scenario's turns
// a job), then the ledger check before its first turn.
func (r *run) startAgent(id int) {
	j := &agentJob{host: id % r.s.Hosts, runs: 1, budget: quota.Budget{Max: r.policy.MaxTotalWait}, started: r.clk.Now()}
	j.sid = r.agent.start(id, r.s.Agents.turns())
	j.first = j.sid
	r.agents[id] = j
	r.push(event{at: r.clk.Now(), kind: evAgentGate, id: id})
}

// agentGate is what `layover run --quota claude-code` does before it
// starts the command (command's waitBeforeStart), done before a job's
// first turn and before it continues its session after a wait or a
// deferral: it reads the keys' states from the fleet's ledger and asks
// quota.Policy.Blocking whether one holds running work back. When none
// does, the turn is taken at once; else the job waits until the blocking
// key's reset plus the margin and a jitter (Policy.Resume) when its
// budget allows it under the cap, or is deferred to that time, and reads
// the ledger again then. Without layover there is no ledger: the turn is
// taken.
func (r *run) agentGate(id int) error {
	j := r.agents[id]
	if !r.layer {
		return r.beginTurns(id, j)
	}
	states, err := r.st.States(r.ctx, r.agentKeys)
	if err != nil {
		return err
	}
	now := r.clk.Now()
	b, held := r.policy.Blocking(now, states, quota.Running)
	if !held {
		return r.beginTurns(id, j)
	}
	until := ceilSecond(r.policy.Resume(b.State.ResetAt, r.agentRnd).At())
	r.rep.AgentsHeld++
	r.waitOrDefer(id, j, now, until, &r.rep.AgentsHeldDeferred)
	return nil
}

// waitOrDefer has agent job id, held back at now until `until`, wait in
// its run when its budget still allows the wait under the cap, and read
// the ledger again then; else it is deferred to that time (counted in
// *deferrals when not nil), a fresh run then. The time counted is the
// part of it before the run's end.
func (r *run) waitOrDefer(id int, j *agentJob, now, until time.Time, deferrals *int) {
	spent := until.Sub(now)
	if until.After(r.end) { // the run's part of it
		spent = r.end.Sub(now)
	}
	if j.budget.Take(until.Sub(now)) == nil {
		r.rep.AgentWaiting = quota.SumSat(r.rep.AgentWaiting, spent)
		r.push(event{at: until, kind: evAgentGate, id: id})
		return
	}
	if deferrals != nil {
		*deferrals++
	}
	j.resumingDeferred = j.resumingDeferred || j.resuming
	r.rep.AgentDeferred = quota.SumSat(r.rep.AgentDeferred, spent)
	r.push(event{at: until, kind: evAgentResume, id: id})
}

// beginTurns starts agent job id's turns at now: its first, or the
// first after a wait or a deferral, from which the next are spaced.
func (r *run) beginTurns(id int, j *agentJob) error {
	j.base, j.k = r.clk.Now(), 0
	return r.agentTurn(id)
}

// agentTurn runs one turn of agent job id. A turn the limit refuses ends
// the CLI's run: without layover the job fails and its work is lost;
// with it, layover reads the CLI's output as `layover run --agent claude`
// does (agentcli's classifier for the reset, agentcli.SessionID for the
// session), records the exhaustion in the fleet's ledger as `run` does
// (agentExhaustion), then waits in the run while the wait fits its budget
// under the policy's cap, or else defers the job to the same resume time,
// and continues the captured session after it, once the ledger lets it
// (agentGate).
func (r *run) agentTurn(id int) error {
	j := r.agents[id]
	now := r.clk.Now()
	done, limited, out, err := r.agent.turn(j.sid, now)
	if err != nil {
		return err
	}
	if !limited {
		j.spent++
		if j.resuming { // the captured session continued: a resume
			r.rep.AgentsResumed++
			if j.resumingDeferred {
				r.rep.AgentsDeferred++
			}
			j.runs++
			j.resuming, j.resumingDeferred = false, false
		}
		if done {
			r.rep.AgentsDone++
			j.over, j.ended = true, now
			return nil
		}
		j.k++
		r.push(event{at: r.agentTurnAt(j.base, j.k), kind: evAgentTurn, id: id})
		return nil
	}
	r.rep.AgentLimitHits++
	if !r.layer {
		r.rep.AgentsLost++
		r.rep.AgentUnitsWasted += j.spent
		r.wasted += j.spent
		j.over, j.ended = true, now
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
	state, err := r.agentExhaustion(o, j.host, now)
	if err != nil {
		return err
	}
	if err := r.st.RecordStates(r.ctx, []quota.State{state}); err != nil {
		return err
	}
	until := ceilSecond(quota.RerunAt(now, r.policy.Resume(state.ResetAt, r.agentRnd).At()))
	j.sid = sid
	j.resuming = true
	r.waitOrDefer(id, j, now, until, nil)
	return nil
}

// agentResume is the fresh run of a deferred agent job at its resume
// time: it reconciles first (the check: the task already complete ends
// the job without a call), then, with its own budget as a new process
// has, reads the ledger (agentGate) and continues the captured session.
func (r *run) agentResume(id int) error {
	j := r.agents[id]
	if r.agent.finished(j.sid) {
		r.rep.AgentsDone++
		j.over, j.ended = true, r.clk.Now()
		return nil
	}
	j.budget = quota.Budget{Max: r.policy.MaxTotalWait}
	return r.agentGate(id)
}
