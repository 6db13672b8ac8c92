package command

import (
	"cmp"
	"context"
	"fmt"
	"os"
	"slices"
	"time"

	"github.com/layoverhq/layover/provider/registry"
	"github.com/layoverhq/layover/quota"
	"github.com/layoverhq/layover/store"
	"github.com/layoverhq/layover/textsafe"
)

// maxShown bounds, in bytes, one field of text from outside layover (a
// quota host, a resource) in a line shown to a person.
const maxShown = 200

// shown is text layover did not write itself as a terminal may print it:
// one line of at most maxShown bytes, without control characters or escape
// sequences (textsafe).
func shown(s string) string { return textsafe.Line(s, maxShown) }

// HumanTime renders t for people, as every line of layover does: local date
// and time to the second, with the zone.
func HumanTime(t time.Time) string {
	return t.Local().Format("2006-01-02 15:04:05 MST")
}

// HumanDuration renders d rounded to the second, e.g. "47m12s"; "0s" for
// anything under half a second.
func HumanDuration(d time.Duration) string {
	d = d.Round(time.Second)
	if d <= 0 {
		return "0s"
	}
	return d.String()
}

// Label names a provider, or a quota host, for people, on one safe line:
// the provider's label (provider/registry) by its name or its public API
// host ("GitHub", "Anthropic", "Claude Code"); "GitHub" for github.com; any
// other host as the GitHub Enterprise API it mostly is, "GitHub (HOST)".
// LabelOf knows better for the keys a command resolved.
func Label(hostOrProvider string) string {
	switch hostOrProvider {
	case "", "github.com":
		return "GitHub"
	}
	if p, ok := registry.Lookup(hostOrProvider); ok {
		return p.Label
	}
	for _, p := range registry.All() {
		if p.API != nil && slices.Contains(p.API.Hosts, hostOrProvider) {
			return p.Label
		}
	}
	return "GitHub (" + shown(hostOrProvider) + ")"
}

// waitSpec describes one visible wait.
type waitSpec struct {
	Key quota.Key
	// Label names the key's provider; "" means Label of its host.
	Label   string
	Until   time.Time
	What    string // "Quota wait" or "Secondary limit wait"
	Command string // the masked command line, for status
	// Stage, when set, names the wait in status and on Stderr instead of
	// "What until Until", e.g. "waiting for its resume turn until 14:20:31".
	Stage string
}

// wait blocks until spec.Until on c.Clock. It registers the wait in the
// store so that `layover status` lists it, shows it on Stderr (a live
// countdown on a terminal, one line otherwise), and ends at once on SIGINT
// or SIGTERM from c.Signals, or the end of ctx, with an *InterruptedError.
// It returns how long it waited.
func (c *Config) wait(ctx context.Context, spec waitSpec) (time.Duration, error) {
	start := c.Clock.Now()
	stage := cmp.Or(spec.Stage, fmt.Sprintf("%s until %s", spec.What, HumanTime(spec.Until)))
	id, err := c.Store.RegisterWaiter(ctx, store.Waiter{
		Hostname: c.Hostname, PID: os.Getpid(), Command: spec.Command, Key: spec.Key,
		Stage: stage, WaitUntil: spec.Until, StartedAt: start,
	})
	if err != nil {
		return 0, &StoreError{Op: "write", Err: err}
	}
	defer func() {
		// The wait is over either way; a row left behind would list it in
		// status while the command runs on, so say so.
		if err := c.Store.RemoveWaiter(context.WithoutCancel(ctx), id); err != nil {
			fmt.Fprintf(c.Stderr, "layover: remove the wait from the store: %v\n", err)
		}
	}()

	label := fmt.Sprintf("%s (%s %s)", stage, cmp.Or(spec.Label, Label(spec.Key.Host)), shown(spec.Key.Resource))
	if !c.Terminal {
		fmt.Fprintf(c.Stderr, "layover: %s\n", label)
	}
	for {
		now := c.Clock.Now()
		left := spec.Until.Sub(now)
		if left <= 0 {
			if c.Terminal {
				fmt.Fprintf(c.Stderr, "\r\033[Klayover: %s: done\n", label)
			}
			return now.Sub(start), nil
		}
		tick := left
		if c.Terminal {
			fmt.Fprintf(c.Stderr, "\r\033[Klayover: %s, %s left", label, HumanDuration(left))
			tick = min(left, time.Second)
		}
		select {
		case <-c.Clock.After(tick):
		case sig := <-c.Signals:
			if c.Terminal {
				fmt.Fprintln(c.Stderr)
			}
			fmt.Fprintf(c.Stderr, "layover: %s ended by %v\n", spec.What, sig)
			return c.Clock.Now().Sub(start), &InterruptedError{Signal: sig, What: spec.What}
		case <-ctx.Done():
			return c.Clock.Now().Sub(start), &InterruptedError{What: spec.What, Err: ctx.Err()}
		}
	}
}
