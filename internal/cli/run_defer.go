package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/layoverhq/layover/host"
	"github.com/layoverhq/layover/job"
	"github.com/layoverhq/layover/quota"
	"github.com/layoverhq/layover/receipt"
)

// refuseSubmitSecret refuses, before the command first runs, a run --submit
// whose command or resume command holds a secret (a recognisable one, or
// one of known): the store would keep it and jobs --json and show --json
// print it (docs/secrets.md). Without --submit nothing keeps the command
// but a masked line for status and the activity log.
func (o *RunOptions) refuseSubmitSecret(known []string) error {
	if !o.Submit {
		return nil
	}
	if err := (job.Spec{Argv: o.Command, ResumeCmd: o.ResumeCmd}).Validate(known...); errors.Is(err, job.ErrSecret) {
		return usageErr("run: --submit would store the job, and %v", err)
	}
	return nil
}

// maybeDefer ends run with a receipt (exit 6) instead of a wait until
// `until`, when --defer-after asks for it and the provider declared the
// reset. done reports that run must end with err. Without a declared reset,
// or with one more than 24 h away, it leaves the wait to the caller (which
// may refuse it under the cap) and says why.
func (r *runner) maybeDefer(ctx context.Context, key quota.Key, reset, until time.Time, secondary bool) (bool, error) {
	if r.opts.DeferAfter < 0 {
		return false, nil
	}
	now := r.env.Clock.Now()
	if until.Sub(now) <= r.opts.DeferAfter {
		return false, nil
	}
	if reset.After(now.Add(receipt.MaxWindow)) {
		fmt.Fprintf(r.env.Stderr, "layover: no receipt: the %s quota (%s) resets at %s, more than 24h away\n",
			providerLabel(key.Host), key.Resource, humanTime(reset))
		return false, nil
	}
	wd, _ := os.Getwd()
	names := r.opts.Quota.String()
	prov := "github"
	if key.Host != r.target.Host {
		prov = key.Host // an agent CLI's own quota
	}
	spec := job.Spec{Argv: r.opts.Command, Workdir: wd, Provider: prov, ResumeCmd: r.opts.ResumeCmd,
		Deadline: now.Add(24 * time.Hour).UTC().Truncate(time.Millisecond), MaxAttempts: host.DefaultMaxAttempts}
	keys := []quota.Key{key}
	if prov != "github" {
		// The host has no way to ask an agent CLI's quota: the job binds
		// no keys, and the resume probes by running it.
		keys = nil
	} else if names != "" {
		for _, q := range r.opts.Quota {
			spec.Quota = append(spec.Quota, (&quotaSpecs{q}).String())
		}
		keys = r.target.keys(r.opts.Quota.githubResources())
	} else {
		spec.Quota = []string{"github:" + key.Resource}
	}
	d := host.Deferral{Key: key, Provider: prov, Secondary: secondary, ResetAt: reset}
	o := host.DeferOptions{Now: now, Policy: r.opts.Policy, Rand: r.env.Rand, Env: r.env.Environ}
	id := host.NewID()
	var data []byte
	if r.opts.Submit {
		js, ok := r.st.(host.Store)
		if !ok {
			return true, internalErr("store: this backend keeps no jobs")
		}
		live, err := host.LiveHosts(ctx, js, now, host.DefaultLease)
		if err != nil {
			return true, internalErr("read store: %v", err)
		}
		o.Retained = len(live) > 0
		j, rc, err := host.SubmitDeferred(ctx, js, id, spec, d, keys, o)
		if err != nil {
			return true, jobError(err)
		}
		if data, err = receipt.Encode(rc); err != nil {
			return true, internalErr("%v", err)
		}
		how := "retained by the live durable host"
		if j.Ownership == job.Handoff {
			how = "handoff: no durable host is live; run `layover adopt " + j.ID + "` once one is"
		}
		fmt.Fprintf(r.env.Stderr, "layover: deferred as job %s until %s (%s)\n", j.ID, humanTime(j.RunAt), how)
	} else {
		j, _, encoded, err := host.PrepareDeferred(ctx, id, spec, d, keys, o)
		if err != nil {
			fmt.Fprintf(r.env.Stderr, "layover: no receipt: %v\n", err)
			return false, nil
		}
		data = encoded
		fmt.Fprintf(r.env.Stderr, "layover: deferred until %s; the receipt is the last line of stdout\n", humanTime(j.RunAt))
	}
	// The receipt is a line of its own, even after output that did not end
	// one (gh api prints a JSON body without a newline).
	if n := len(r.lastOut); n > 0 && r.lastOut[n-1] != '\n' {
		fmt.Fprintln(r.env.Stdout)
	}
	fmt.Fprintf(r.env.Stdout, "%s\n", data)
	return true, exitCode(ExitDeferred)
}
