package host

// Waiting for credentials (docs/lifecycle.md, Waiting for credentials): an
// attempt that failed for authentication moves its job to auth-wait, apart
// from the quota waits. The host re-checks the credentials cheaply on
// the backoff of Host.authWaitAfter and makes the job ready when they work; `layover unblock`
// does too. A quota reset never ends auth-wait.

import (
	"context"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/layoverhq/layover/job"
	"github.com/layoverhq/layover/provider/agentcli"
	"github.com/layoverhq/layover/quota"
)

// Credentials re-checks the credentials a job's quota keys use, with a
// call that costs next to nothing (GitHub's GET /user, an LLM API's model
// list).
type Credentials interface {
	// CheckCredentials reports whether the credentials of keys work now.
	// known is false when none of keys has such a check; err is a check
	// that could not be made (the network), which is tried again later.
	CheckCredentials(ctx context.Context, keys []quota.Key) (ok, known bool, err error)
}

// waitingForCredentials starts the stage of a job in auth-wait.
const waitingForCredentials = "Waiting for credentials since "

// authCheckTimeout bounds one credentials check.
const authCheckTimeout = time.Minute

// authWait moves a job whose attempt failed for authentication to
// auth-wait, its next credentials check on the backoff. The backoff goes
// on from where the job's last wait for credentials left it (Probes is
// kept): when a check passes but the run still fails for credentials
// (the check reads another credential than the run uses), each round
// waits longer, rather than re-running the job every minute.
func (h *Host) authWait(ctx context.Context, j job.Job, why string, att *job.Attempt, mutate func(*job.Job)) {
	now := h.cfg.Clock.Now()
	next := now.Add(h.authWaitAfter(j.Probes))
	h.apply(ctx, j, job.Change{To: job.AuthWait, Reason: "authentication: " + why, Attempt: att, Mutate: func(x *job.Job) {
		mutate(x)
		x.RunAt, x.Secondaries = next, 0
		x.Ownership, x.ResumeBy = job.NoOwnership, time.Time{}
		x.Stage = waitingForCredentials + stageTime(now) + " (authentication: " + why + ")"
		releaseLease(x)
	}})
	h.noteAuthWait(next)
}

// maybeRecheckCredentials starts a round of credentials checks in the
// background when one is due and none is running.
func (h *Host) maybeRecheckCredentials(ctx context.Context, now time.Time) {
	h.mu.Lock()
	due := !h.authBusy && !now.Before(h.authLook)
	if due {
		h.authBusy, h.authLook = true, now.Add(h.cfg.Heartbeat)
	}
	h.mu.Unlock()
	if !due {
		return
	}
	h.loops.Add(1)
	h.workStarted()
	go func() {
		defer h.loops.Done()
		defer h.workEnded()
		next := h.recheckCredentials(ctx, now)
		h.mu.Lock()
		h.authBusy = false
		if !next.IsZero() && next.Before(h.authLook) {
			h.authLook = next
		}
		h.mu.Unlock()
		if !next.IsZero() {
			h.nudgeIfSooner(job.Job{State: job.AuthWait, RunAt: next})
		}
	}()
}

// noteAuthWait makes the scheduler look at the auth-wait jobs by at.
func (h *Host) noteAuthWait(at time.Time) {
	h.mu.Lock()
	if at.Before(h.authLook) {
		h.authLook = at
	}
	h.mu.Unlock()
}

// recheckCredentials checks the credentials of the auth-wait jobs whose
// next check is due at now and makes ready those whose credentials work.
// Jobs that share a credential (the same quota keys, or the same agent
// check command in the same directory) share one check per round: its
// answer moves each of them, each on its own backoff, and each still runs
// (and reconciles) on its own. The writes of a round are made
// concurrently, so that the store commits them together (a group commit)
// rather than one commit per job. A job without a check stays until
// `layover unblock` (it is looked at again at the backoff's last step).
// It returns the earliest check still ahead (zero: none).
func (h *Host) recheckCredentials(ctx context.Context, now time.Time) (next time.Time) {
	waiting, err := h.st.ListJobs(ctx, job.AuthWait)
	if err != nil {
		if ctx.Err() == nil {
			h.cfg.Logger.Error("list jobs waiting for credentials", "err", err)
		}
		return time.Time{}
	}
	var mu sync.Mutex
	ahead := func(t time.Time) {
		mu.Lock()
		if next.IsZero() || t.Before(next) {
			next = t
		}
		mu.Unlock()
	}
	due := make([]job.Job, 0, len(waiting))
	for _, j := range waiting {
		if j.RunAt.IsZero() || j.RunAt.After(now) {
			ahead(j.RunAt)
			continue
		}
		due = append(due, j)
	}
	// Take each check: its next time moves past the check's bound, so
	// neither the scheduler (which sees the job due) nor another host
	// looks at it while it runs. A job another host took first keeps
	// that host's time.
	taken := make([]*job.Job, len(due))
	eachOf(ctx, len(due), authWrites, func(i int) {
		j, due, at := due[i], due[i].RunAt, now.Add(authCheckTimeout).Truncate(time.Millisecond)
		j2, applied := h.apply(ctx, j, job.Change{From: []job.State{job.AuthWait}, Mutate: func(x *job.Job) {
			if x.RunAt.Equal(due) {
				x.RunAt = at
			}
		}})
		if applied && j2.RunAt.Equal(at) {
			taken[i] = &j2
		}
	})
	// One check per credential.
	type check struct {
		first      job.Job
		ok, known  bool
		err        error
		at         time.Time
		unanswered bool
	}
	var checks []*check
	byCred := map[string]*check{}
	of := make([]*check, len(taken))
	for i, j := range taken {
		if j == nil {
			continue
		}
		id := h.credentialOf(ctx, *j)
		c := byCred[id]
		if c == nil || id == "" {
			c = &check{first: *j}
			checks = append(checks, c)
			if id != "" {
				byCred[id] = c
			}
		}
		of[i] = c
	}
	eachOf(ctx, len(checks), authChecks, func(i int) {
		c := checks[i]
		c.ok, c.known, c.err = h.credentialsWork(ctx, c.first)
		// Stopping: the check says nothing; RunAt comes again.
		c.unanswered = ctx.Err() != nil
		c.at = h.cfg.Clock.Now()
		if c.err != nil && !c.ok && c.known && !c.unanswered {
			h.cfg.Logger.Warn("credentials check", "job", c.first.ID, "err", c.err)
		}
	})
	eachOf(ctx, len(taken), authWrites, func(i int) {
		c := of[i]
		if c == nil || c.unanswered {
			return
		}
		j := *taken[i]
		switch {
		case c.ok:
			h.apply(ctx, j, job.Change{To: job.Ready, From: []job.State{job.AuthWait}, Reason: reasonCredentials,
				Mutate: func(x *job.Job) { x.Stage, x.RunAt, x.Probes = "ready", time.Time{}, x.Probes+1 }})
		case !c.known:
			at := c.at.Add(h.authWaitAfter(len(authSteps)))
			ahead(at)
			h.apply(ctx, j, job.Change{From: []job.State{job.AuthWait}, Mutate: func(x *job.Job) {
				x.RunAt = at
				if !strings.Contains(x.Stage, "layover unblock") {
					x.Stage += "; no credentials check for this job: layover unblock " + x.ID + " once they are fixed"
				}
			}})
		default:
			at := c.at.Add(h.authWaitAfter(j.Probes + 1))
			ahead(at)
			h.apply(ctx, j, job.Change{From: []job.State{job.AuthWait}, Mutate: func(x *job.Job) {
				x.RunAt, x.Probes = at, x.Probes+1
			}})
		}
	})
	return next
}

// How many of a round's writes (authWrites) and credentials checks
// (authChecks) run at once: enough writes to fill the store's group
// commits, few enough checks not to flood a provider or the machine with
// agent CLIs.
const (
	authWrites = 64
	authChecks = 8
)

// eachOf runs fn(0) … fn(n-1), at most limit at a time, and returns once
// all have returned; once ctx ends it starts no more.
func eachOf(ctx context.Context, n, limit int, fn func(int)) {
	var wg sync.WaitGroup
	sem := make(chan struct{}, limit)
	for i := range n {
		if ctx.Err() != nil {
			break
		}
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			fn(i)
		}()
	}
	wg.Wait()
}

// credentialOf names the credential a job's check reads, so that jobs
// sharing it share the check: the agent's check command and the directory
// it runs in, or the job's quota keys. "" is a job whose check is its own
// (its keys could not be resolved: its check says so).
func (h *Host) credentialOf(ctx context.Context, j job.Job) string {
	if a, found := agentcli.AgentNamed(j.Spec.Agent); found && len(a.AuthCheck) > 0 {
		return "agent\x00" + strings.Join(a.AuthCheck, "\x00") + "\x00" + j.Spec.Workdir
	}
	if h.cfg.Credentials == nil {
		return "none"
	}
	keys, err := h.keysOf(ctx, j)
	if err != nil || len(keys) == 0 {
		return ""
	}
	names := make([]string, len(keys))
	for i, k := range keys {
		names[i] = k.Host + "\x00" + k.Principal + "\x00" + k.Resource
	}
	slices.Sort(names)
	return "keys\x00" + strings.Join(slices.Compact(names), "\x01")
}

// credentialsWork runs a job's credentials check: for an agent job, its
// CLI's own status command; else the check of its quota keys.
func (h *Host) credentialsWork(ctx context.Context, j job.Job) (ok, known bool, err error) {
	cctx, cancel := context.WithTimeout(ctx, authCheckTimeout)
	defer cancel()
	if a, found := agentcli.AgentNamed(j.Spec.Agent); found && len(a.AuthCheck) > 0 {
		quoted := make([]string, len(a.AuthCheck))
		for i, arg := range a.AuthCheck {
			quoted[i] = agentcli.ShellQuote(arg)
		}
		code, _, err := h.shell(cctx, j, strings.Join(quoted, " "), nil)
		return err == nil && code == 0, true, err
	}
	if h.cfg.Credentials == nil {
		return false, false, nil
	}
	keys, err := h.keysOf(cctx, j)
	if err != nil || len(keys) == 0 {
		return false, false, err
	}
	return h.cfg.Credentials.CheckCredentials(cctx, keys)
}
