package transport

import (
	"cmp"
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/layoverhq/layover/provider"
	"github.com/layoverhq/layover/quota"
	"github.com/layoverhq/layover/redact"
)

// call is one RoundTrip: the request, its attempts, and its wait budget.
// It is used by one goroutine.
type call struct {
	t    *Transport
	p    *Provider
	req  *http.Request
	ctx  context.Context
	host string
	// tok is the request's token, "" when none: only to mask it in
	// reasons, never kept past the call.
	tok string
	fp  string // fingerprint of tok, "" when none or Principal is fixed
	// who is the principal of the request's keys, resolved before each
	// attempt and again when a response names an organisation.
	who string
	// charged is the resource the request is charged to ("" for none).
	charged                     string
	low, replayable, idempotent bool

	budget               quota.Budget
	sent                 int // attempts sent
	secondary, transient int // retries of each kind so far
	// pending is the wait a rejection asked for, already charged to the
	// budget; the next admission starts with it.
	pending *plannedWait
}

// plannedWait is one wait on a key's shared timer.
type plannedWait struct {
	key      quota.Key
	kind     WaitKind
	base, at time.Time // base: at without this request's jitter
	reason   string
}

// do runs the attempts.
func (c *call) do() (*http.Response, error) {
	for {
		c.who = c.principal()
		if err := c.admit(c.who); err != nil {
			if c.sent == 0 && c.req.Body != nil {
				_ = c.req.Body.Close() // RoundTrip must close the body, sent or not
			}
			return nil, err
		}
		out, err := c.outgoing()
		if err != nil {
			return nil, err
		}
		c.sent++
		resp, err := c.t.next.RoundTrip(out)
		if err != nil {
			if !c.mayRetryTransient() || !transientErr(c.ctx, err) {
				return nil, err
			}
			d := c.t.backoff.Next(c.transient)
			c.transient++
			if werr := c.sleep(c.who, d, "connection error: "+err.Error()); werr != nil {
				return nil, werr
			}
			continue
		}
		retry, backoff, reason := c.inspect(resp)
		if !retry {
			return resp, nil
		}
		discard(resp)
		if backoff >= 0 {
			if err := c.sleep(c.who, backoff, reason); err != nil {
				return nil, err
			}
		}
	}
}

// principal is the principal of the request's keys now.
func (c *call) principal() string {
	if c.t.principal != "" {
		return c.t.principal
	}
	return c.t.view.principal(c.ctx, c.host, c.fp)
}

// outgoing returns the request to send: req itself the first time, a
// clone with a fresh body (from GetBody) after that.
func (c *call) outgoing() (*http.Request, error) {
	if c.sent == 0 {
		return c.req, nil
	}
	r := c.req.Clone(c.ctx)
	if c.req.Body != nil && c.req.Body != http.NoBody {
		body, err := c.req.GetBody()
		if err != nil {
			return nil, fmt.Errorf("transport: read the request body again: %w", err)
		}
		r.Body = body
	}
	return r, nil
}

// admit returns when the request may be sent: after the wait a rejection
// asked for, and after every wait the ledger asks for. It returns a
// *quota.DeferralError when the request may not wait or the wait would pass
// the cap, and ctx.Err() when the context ends a wait.
func (c *call) admit(principal string) error {
	k := scopeKey{c.host, principal}
	if err := c.t.view.load(c.ctx, k); err != nil {
		return err
	}
	for {
		if w := c.pending; w != nil {
			c.pending = nil
			if err := c.wait(*w); err != nil {
				return err
			}
			continue
		}
		now := c.t.clock.Now()
		b, ok := c.t.view.blocking(k, c.p, c.req, c.charged, now, c.low, &c.t.policy)
		if !ok {
			if c.low && c.t.pacer != nil {
				return c.pace(k, now)
			}
			return nil
		}
		w := c.plan(b)
		if c.low || c.t.mode == ModeDefer {
			why := "deferral mode"
			if c.low {
				why = "low-priority request"
			}
			return c.deferral(b, w, why)
		}
		if err := c.budget.Take(w.at.Sub(now)); err != nil {
			return c.deferral(b, w, err.Error())
		}
		if err := c.wait(w); err != nil {
			return err
		}
	}
}

// plan turns a block into a wait: to the reset plus margin plus jitter for
// a quota, to the hold's end for a throttle.
func (c *call) plan(b block) plannedWait {
	w := plannedWait{key: b.key, kind: b.kind, reason: b.reason}
	if b.kind == WaitSecondary {
		w.base, w.at = b.until, b.until
		return w
	}
	s := b.quota.State
	r := c.t.policy.Resume(s.ResetAt, c.t.rand)
	w.base, w.at = r.Base(), r.At()
	reset := s.ResetAt.UTC().Format(time.RFC3339)
	if !s.ResetKnown {
		reset += " (assumed)"
	}
	switch b.cause() {
	case quota.CauseBelowReserve:
		w.reason = fmt.Sprintf("%s below its reserve (%d left, reserve %d) until %s",
			s.Resource, s.Remaining, b.quota.Reserve, reset)
	default:
		w.reason = fmt.Sprintf("%s exhausted until %s", s.Resource, reset)
	}
	return w
}

// deferral makes the error of a request that is not sent.
func (c *call) deferral(b block, w plannedWait, why string) error {
	err := &quota.DeferralError{Key: b.key, ResumeAt: w.at, Cause: b.cause(), Reason: c.clean(w.reason + "; " + why)}
	c.t.log.Info("layover: deferred", "key", b.key.String(), "cause", string(b.cause()),
		"resume_at", w.at.UTC().Format(time.RFC3339), "reason", err.Reason)
	return err
}

// wait waits on w's key until w.at, visibly; a context that ends first
// refunds the rest of the wait and returns ctx.Err().
func (c *call) wait(w plannedWait) error {
	now := c.t.clock.Now()
	reg := c.t.gates.add(w.key, w.base, w.at)
	defer c.t.register(c.ctx, w)()
	c.t.notify(WaitEvent{Kind: w.kind, Key: w.key, Start: now, Until: w.at, Wait: w.at.Sub(now),
		Attempt: c.sent, Method: c.req.Method, Reason: c.clean(w.reason)})
	if err := c.t.gates.block(c.ctx, reg); err != nil {
		c.budget.Refund(w.at.Sub(c.t.clock.Now()))
		return err
	}
	return nil
}

// sleep waits d before a transient retry, visibly and interruptibly.
func (c *call) sleep(principal string, d time.Duration, reason string) error {
	now := c.t.clock.Now()
	key := quota.Key{Host: c.host, Principal: principal, Resource: c.charged}
	timer := c.t.clock.After(d)
	c.t.notify(WaitEvent{Kind: WaitTransient, Key: key, Start: now, Until: now.Add(d), Wait: d,
		Attempt: c.sent, Method: c.req.Method, Reason: c.clean(reason)})
	select {
	case <-timer:
		return nil
	case <-c.ctx.Done():
		return c.ctx.Err()
	}
}

// mayWait reports whether a rejected request may wait and go again: in
// ModeWait, not low priority, and with a body that can be read again.
func (c *call) mayWait() bool {
	return c.t.mode == ModeWait && !c.low && c.replayable
}

// mayRetryTransient reports whether a transient failure may be retried:
// an idempotent request whose body can be read again, with retries left.
func (c *call) mayRetryTransient() bool {
	return c.idempotent && c.replayable && c.transient < c.t.transientRetries && c.ctx.Err() == nil
}

// inspect classifies a response, records what it says, and decides
// whether to send the request again; backoff >= 0 is the transient wait
// to take first (a quota or throttle wait is left in c.pending), and
// reason the classification's evidence.
func (c *call) inspect(resp *http.Response) (retry bool, backoff time.Duration, reason string) {
	now := c.t.clock.Now()
	code := resp.StatusCode
	var out provider.Outcome
	switch {
	case code >= 200 && code < 300 && c.p.RejectsIn2xx != nil && c.p.RejectsIn2xx(c.req, resp):
		out = c.p.Classify(resp, readBack(resp, maxInspectBody), now)
	case code >= 200 && code < 300 || code == http.StatusNotModified:
		out = provider.Outcome{Class: provider.ClassOK, Observations: c.p.observations(resp, now)}
	case code >= 400:
		out = c.p.Classify(resp, readBack(resp, maxInspectBody), now)
	default:
		// 1xx (a 101's body is the upgraded connection) and 3xx: the
		// body is the caller's alone.
		out = c.p.Classify(resp, nil, now)
	}
	if c.fp != "" && c.t.principal == "" && c.p.Principal != nil {
		if org, ok := c.p.Principal(resp.Header); ok && c.t.view.learnOrg(c.host, c.fp, org) {
			c.who = c.principal()
			c.t.rememberOrg(c.ctx, c.host, c.fp, org, now)
		}
	}
	principal := c.who
	states := out.Observations
	if out.Class == provider.ClassAuth {
		// A refused credential's headers describe the caller's
		// unauthenticated quota, not the token's (GitHub): keep none.
		states = nil
	}
	for i := range states {
		s := &states[i]
		s.Host, s.Principal = c.host, principal
		if s.ObservedAt.IsZero() {
			s.ObservedAt = now
		}
		if s.ObservedBy == "" {
			s.ObservedBy = c.t.hostname
		}
	}
	key := quota.Key{Host: c.host, Principal: principal, Resource: cmp.Or(out.Resource, c.charged, DefaultResource)}
	var resetAt time.Time
	if out.Class == provider.ClassQuota {
		states, resetAt = c.rejected(states, key, out, now)
	}
	c.t.view.record(states)
	if c.t.pacer != nil {
		c.t.pacer.observe(states)
	}
	c.t.persist(states, out.Class == provider.ClassQuota)

	switch out.Class {
	case provider.ClassQuota:
		if !c.mayWait() {
			return false, -1, out.Reason
		}
		reset := resetAt
		if reset.Before(now) {
			reset = now
		}
		r := c.t.policy.Resume(reset, c.t.rand)
		w := plannedWait{key: key, kind: WaitQuota, base: r.Base(), at: r.At(), reason: out.Reason}
		w.at = later(w.at, now.Add(minRejectionWait))
		if err := c.budget.Take(w.at.Sub(now)); err != nil {
			c.t.log.Info("layover: not waiting", "key", key.String(), "reason", c.clean(out.Reason), "err", err.Error())
			return false, -1, out.Reason
		}
		c.pending = &w
		return true, -1, out.Reason
	case provider.ClassSecondary:
		until := now.Add(c.t.policy.SecondaryDelay(out.RetryAfter))
		c.t.view.setHold(key, until, out.Reason)
		if !c.mayWait() || c.secondary >= c.t.policy.SecondaryRetries {
			return false, -1, out.Reason
		}
		if err := c.budget.Take(until.Sub(now)); err != nil {
			c.t.log.Info("layover: not waiting", "key", key.String(), "reason", c.clean(out.Reason), "err", err.Error())
			return false, -1, out.Reason
		}
		c.secondary++
		c.pending = &plannedWait{key: key, kind: WaitSecondary, base: until, at: until, reason: out.Reason}
		return true, -1, out.Reason
	case provider.ClassTransient:
		if !c.mayRetryTransient() {
			return false, -1, out.Reason
		}
		d := c.t.backoff.Next(c.transient)
		if ra, ok := retryAfter(resp.Header, now); ok {
			if ra > MaxTransientRetryAfter {
				return false, -1, out.Reason
			}
			d = max(d, ra)
		}
		c.transient++
		return true, d, out.Reason
	}
	return false, -1, out.Reason
}

// rejected makes sure the states of a quota rejection hold its key
// exhausted: an observation of the key that says so is kept, else a
// rejected state is added (replacing one that says otherwise), its reset
// the outcome's or, when unknown, Policy.AssumedReset. It returns the
// states and the key's reset.
func (c *call) rejected(states []quota.State, key quota.Key, out provider.Outcome, now time.Time) ([]quota.State, time.Time) {
	for _, s := range states {
		if s.Key == key && s.Exhausted(now) {
			return states, s.ResetAt
		}
	}
	s := quota.State{
		Key: key, Limit: out.Limit, Remaining: 0, ResetAt: out.ResetAt, ResetKnown: true,
		ObservedAt: now, ObservedBy: c.t.hostname, Source: quota.SourceRejected, Cause: quota.CauseExhausted,
	}
	switch {
	case s.ResetAt.IsZero():
		s.ResetAt, s.ResetKnown = c.t.policy.AssumedReset(now), false
	case !s.ResetAt.After(now):
		s.ResetAt = now // the stated reset has just passed
	}
	kept := states[:0:0]
	for _, o := range states {
		if o.Key != key {
			kept = append(kept, o)
		}
	}
	return append(kept, s), s.ResetAt
}

// clean masks the request's token, and anything shaped like a secret, in
// a reason that is shown or logged (a provider's message may echo a key).
func (c *call) clean(reason string) string {
	return redact.String(reason, c.tok)
}

// later returns the later of a and b.
func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}
