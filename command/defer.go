package command

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/layoverhq/layover/host"
	"github.com/layoverhq/layover/job"
	"github.com/layoverhq/layover/provider/github"
	"github.com/layoverhq/layover/quota"
	"github.com/layoverhq/layover/receipt"
)

// refuseSubmitSecret refuses, before the command first runs, a Submit
// whose command or resume command holds a secret (a recognisable one, or
// one of Secrets): the store would keep it and `jobs --json` and `show
// --json` print it (docs/secrets.md). Without Submit nothing keeps the
// command but a masked line for status and the activity log.
func (c *Config) refuseSubmitSecret() error {
	if !c.Submit {
		return nil
	}
	if err := (job.Spec{Argv: c.Command, ResumeCmd: c.ResumeCmd}).Validate(c.Secrets...); errors.Is(err, job.ErrSecret) {
		return &InputError{Err: fmt.Errorf("--submit would store the job, and %w", err)}
	}
	return nil
}

// providerOf names the provider of key: the one --quota resolved it for
// (named), else GitHub for the GitHub target's host, else the agent CLI
// whose own quota it is (its host).
func (r *runner) providerOf(key quota.Key) (name string, named bool) {
	for _, q := range r.quotas {
		if q.Key == key {
			return q.Provider.Name, true
		}
	}
	if key.Host == r.gh.Host {
		return github.Provider, false
	}
	return key.Host, false
}

// maybeDefer ends the run with a receipt instead of a wait until `until`,
// when Defer asks for it and the provider declared the reset (resume.Reset;
// the receipt's window takes resume's jitter, the one drawn for the wait,
// so a receipt never describes a wait other than the one weighed against
// DeferAfter): done reports
// that the run must end with err, a *DeferredError on success. Without a
// declared reset, or with one more than 24 h away, it leaves the wait to
// the caller (which may refuse it under the cap) and says why.
func (r *runner) maybeDefer(ctx context.Context, key quota.Key, resume quota.Resume, until time.Time, secondary bool) (bool, error) {
	c := r.c
	reset := resume.Reset
	if !c.Defer {
		return false, nil
	}
	now := c.Clock.Now()
	if until.Sub(now) <= c.DeferAfter {
		return false, nil
	}
	if reset.After(now.Add(receipt.MaxWindow)) {
		fmt.Fprintf(c.Stderr, "layover: no receipt: the %s quota (%s) resets at %s, more than 24h away\n",
			r.label(key), key.Resource, HumanTime(reset))
		return false, nil
	}
	wd, _ := os.Getwd()
	prov, named := r.providerOf(key)
	spec := job.Spec{Argv: c.Command, Workdir: wd, Provider: prov, ResumeCmd: c.ResumeCmd,
		Deadline: now.Add(24 * time.Hour).UTC().Truncate(time.Millisecond), MaxAttempts: host.DefaultMaxAttempts}
	keys := []quota.Key{key}
	switch {
	case named || prov == github.Provider && len(c.Quota) > 0:
		for _, q := range c.Quota {
			spec.Quota = append(spec.Quota, q.String())
		}
		keys = KeysOf(r.quotas)
	case prov != github.Provider:
		// The host has no way to ask an agent CLI's quota: the job binds
		// no keys, and the resume probes by running it.
		keys = nil
	default:
		spec.Quota = []string{github.Provider + ":" + key.Resource}
	}
	// The receipt's jitter is the one drawn for this wait (until holds it
	// too), handed over as data: never a second draw.
	d := host.Deferral{Key: key, Provider: prov, Secondary: secondary, ResetAt: reset, Jitter: resume.Jitter}
	jobs, err := host.NewJobs(host.Config{Store: c.Store, Clock: c.Clock, Policy: r.p, Rand: c.Rand, Env: c.Environ})
	if err != nil {
		return true, err
	}
	id := host.NewID()
	de := &DeferredError{}
	if c.Submit {
		// Retained when the store has a live durable host, else handoff.
		j, rc, err := jobs.SubmitDeferred(ctx, id, spec, d, keys)
		if err != nil {
			return true, &SubmitError{Err: err}
		}
		if de.Receipt, err = receipt.Encode(rc); err != nil {
			return true, err
		}
		de.JobID, de.ResumeAt = j.ID, j.RunAt
		how := "retained by the live durable host"
		if j.Ownership == job.Handoff {
			how = "handoff: no durable host is live; run `layover adopt " + j.ID + "` once one is"
		}
		fmt.Fprintf(c.Stderr, "layover: deferred as job %s until %s (%s)\n", j.ID, HumanTime(j.RunAt), how)
	} else {
		j, _, encoded, err := jobs.PrepareDeferred(ctx, id, spec, d, keys)
		if err != nil {
			fmt.Fprintf(c.Stderr, "layover: no receipt: %v\n", err)
			return false, nil
		}
		de.Receipt, de.ResumeAt = encoded, j.RunAt
		fmt.Fprintf(c.Stderr, "layover: deferred until %s; the receipt is the last line of stdout\n", HumanTime(j.RunAt))
	}
	// This run ends the Run: its stdout comes before the receipt, which
	// is a line of its own, even after output that did not end one (gh api
	// prints a JSON body without a newline).
	r.passOnLast()
	if n := len(r.lastOut); n > 0 && r.lastOut[n-1] != '\n' {
		fmt.Fprintln(c.Stdout)
	}
	fmt.Fprintf(c.Stdout, "%s\n", de.Receipt)
	return true, de
}
