package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/layoverhq/layover/command"
	"github.com/layoverhq/layover/internal/view"
	"github.com/layoverhq/layover/job"
	"github.com/layoverhq/layover/platform"
	"github.com/layoverhq/layover/provider/github"
	"github.com/layoverhq/layover/provider/registry"
	"github.com/layoverhq/layover/quota"
	"github.com/layoverhq/layover/store"
)

// StatusOptions are the flags of layover status.
type StatusOptions struct {
	JSON  bool
	Store string
	// Reserve is what below-reserve is shown against: a state records
	// what was observed, never a cause that depends on a reserve.
	Reserve quota.Reserve
}

func runStatus(ctx context.Context, env *Env, args []string) error {
	var opts StatusOptions
	fs := newFlagSet("status", "status [--json] [--reserve N|RESOURCE=N]... [--store LOCATION]")
	fs.BoolVar(&opts.JSON, "json", false, "print JSON (the status contract of docs/design.md)")
	fs.Var(&opts.Reserve, "reserve", "show below-reserve against `N` or RESOURCE=N, repeatable (default min(500, 10% of the limit))")
	fs.StringVar(&opts.Store, "store", "", storeUsage)
	if err := fs.parseNoArgs(env, args); err != nil {
		return err
	}
	return opts.run(ctx, env)
}

func (o *StatusOptions) run(ctx context.Context, env *Env) error {
	st, err := openStoreReadOnly(ctx, env, o.Store)
	if err != nil {
		return err
	}
	defer st.Close()
	states, err := st.AllStates(ctx)
	if err != nil {
		return internalErr("read store: %v", err)
	}
	waiters, err := liveWaiters(ctx, env, st)
	if err != nil {
		return internalErr("read store: %v", err)
	}
	now := env.Clock.Now()
	policy := quota.DefaultPolicy()
	policy.Reserve = o.Reserve
	counts, err := st.CountJobs(ctx)
	if err != nil {
		return internalErr("read store: %v", err)
	}
	durable, err := st.Hosts(ctx)
	if err != nil {
		return internalErr("read store: %v", err)
	}
	history := map[quota.Key][]quota.Sample{}
	for _, s := range states {
		obs, err := st.Observations(ctx, s.Key, now.Add(-quota.BurnSpan), 0)
		if err != nil {
			return internalErr("read store: %v", err)
		}
		history[s.Key] = store.Samples(obs)
	}
	out := view.NewStatus(states, history, waiters, counts, durable, policy, now)
	if o.JSON {
		enc := json.NewEncoder(env.Stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(out)
	}

	hosts := registry.NewHosts(env.Getenv)
	for i, s := range states {
		switch {
		case s.Exhausted(now):
			fmt.Fprintf(env.Stdout, "%s Quota wait until %s (%s %s: %s left)\n", hostLabel(hosts, s.Host),
				command.HumanTime(s.ResetAt), shown(s.Principal), shown(s.Resource), count(s.Remaining))
		case out.Quota[i].Cause == string(quota.CauseBelowReserve) && s.ResetKnown:
			fmt.Fprintf(env.Stdout, "%s Quota wait until %s for scheduled work (%s %s: %s left, below its reserve; commands go on)\n",
				hostLabel(hosts, s.Host), command.HumanTime(s.ResetAt), shown(s.Principal), shown(s.Resource), count(s.Remaining))
		case out.Quota[i].ExhaustsAt != nil:
			fmt.Fprintf(env.Stdout, "%s quota (%s %s: %s left, burning %s) would run out at %s, before its reset at %s\n",
				hostLabel(hosts, s.Host), shown(s.Principal), shown(s.Resource), count(s.Remaining), burnRate(out.Quota[i]),
				exhaustsAt(out.Quota[i]), command.HumanTime(s.ResetAt))
		}
	}
	if len(waiters) > 0 {
		fmt.Fprintln(env.Stdout, "\nWaiting commands:")
		tw := tabwriter.NewWriter(env.Stdout, 2, 8, 2, ' ', 0)
		for _, w := range waiters {
			fmt.Fprintf(tw, "  pid %d\t%s\t%s\t%s\n", w.PID, shown(w.Key.String()), shown(w.Stage), shown(w.Command))
		}
		tw.Flush()
	}
	for _, h := range out.Hosts {
		live := "not live"
		if h.Live {
			live = "live"
		}
		fmt.Fprintf(env.Stdout, "Durable host %s on %s: %s, last seen %s\n", shown(h.ID), shown(h.Hostname), live, h.LastSeen)
	}
	if len(out.Jobs) > 0 {
		var parts []string
		for _, state := range job.States {
			if n := out.Jobs[string(state)]; n > 0 {
				parts = append(parts, fmt.Sprintf("%d %s%s", n, state, waitNote[state]))
			}
		}
		fmt.Fprintf(env.Stdout, "Jobs: %s\n", strings.Join(parts, ", "))
	}
	if len(states) == 0 {
		fmt.Fprintln(env.Stdout, "No quota observed yet.")
		return nil
	}
	fmt.Fprintln(env.Stdout, "\nQuotas:")
	tw := tabwriter.NewWriter(env.Stdout, 2, 8, 2, ' ', 0)
	fmt.Fprintln(tw, "  HOST\tPRINCIPAL\tRESOURCE\tREMAINING\tRESET\tOBSERVED\tSTATE\tBURN")
	for i, s := range states {
		reset := command.HumanTime(s.ResetAt)
		if !s.ResetKnown {
			reset += " (assumed)"
		}
		state := "ok"
		if b, ok := policy.Blocks(s, now); ok {
			state = string(b.Cause)
		} else if s.Expired(now) {
			state = "expired"
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s/%s\t%s\t%s by %s (%s)\t%s\t%s\n", shown(s.Host), shown(s.Principal), shown(s.Resource),
			count(s.Remaining), count(s.Limit), reset, command.HumanTime(s.ObservedAt), shown(s.ObservedBy), shown(string(s.Source)), state,
			burnText(out.Quota[i]))
	}
	return tw.Flush()
}

// liveWaiters lists registered waiters, leaving out those whose process on
// this machine is gone, as after a SIGKILL. status only reads the store, so
// their rows stay.
func liveWaiters(ctx context.Context, env *Env, st store.Store) ([]store.Waiter, error) {
	all, err := st.Waiters(ctx)
	if err != nil {
		return nil, err
	}
	var live []store.Waiter
	for _, w := range all {
		if w.Hostname == env.Hostname && !platform.Alive(w.PID) {
			continue
		}
		live = append(live, w)
	}
	return live, nil
}

func known(n int64) any { return view.Known(n) }

// hostLabel names the provider of a quota host for people: an API's label
// when its base-URL variable names the host (ANTHROPIC_BASE_URL, …), else
// command.Label, which knows the public hosts, the agent CLIs and GitHub
// Enterprise.
func hostLabel(hosts *registry.Hosts, host string) string {
	if p, ok := hosts.Provider(host); ok && p.Name != github.Provider {
		return p.Label
	}
	return command.Label(host)
}

// waitNote names the two waits apart in status's job counts: a quota wait
// ends at a reset, a wait for credentials when they work again
// (docs/lifecycle.md).
var waitNote = map[job.State]string{
	job.Deferred: " (in a Quota wait)",
	job.AuthWait: " (waiting for credentials)",
}

// burnText is a quota row's BURN column: "?" while the history is too
// short for a rate, else the rate in calls a minute and, when it comes
// before the reset, the projected exhaustion: "190.5/min, exhausts
// 2026-12-02 14:05:00 UTC".
func burnText(q view.Quota) string {
	rate := burnRate(q)
	if at := exhaustsAt(q); at != "" {
		return rate + ", exhausts " + at
	}
	return rate
}

// burnRate is q's burn rate, "190.5/min", or "?" when not known.
func burnRate(q view.Quota) string {
	rate, ok := q.BurnPerMin.(float64)
	if !ok {
		return "?"
	}
	return strconv.FormatFloat(rate, 'f', -1, 64) + "/min"
}

// exhaustsAt is q's projected exhaustion as people read times, "" when
// none.
func exhaustsAt(q view.Quota) string {
	at, ok := q.ExhaustsAt.(string)
	if !ok {
		return ""
	}
	t, err := time.Parse(time.RFC3339, at)
	if err != nil {
		return ""
	}
	return command.HumanTime(t)
}
