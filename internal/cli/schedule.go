package cli

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/layoverhq/layover/command"
	"github.com/layoverhq/layover/host"
	"github.com/layoverhq/layover/job"
	"github.com/layoverhq/layover/quota"
	"github.com/layoverhq/layover/schedule"
	"github.com/layoverhq/layover/store"
)

// scheduleCommands are the subcommands of layover schedule
// (docs/schedules.md).
func scheduleCommands() []subcommand {
	return []subcommand{
		{"add", runScheduleAdd},
		{"list", runScheduleList},
		{"remove", runScheduleRemove},
	}
}

const scheduleUsageHead = `Usage: layover schedule <command> [flags]

A schedule is a pass that layover serve runs itself at each slot of a cron
expression: one host of the fleet claims each slot, under the admission of
layover pass (docs/schedules.md).

Commands:
`

func scheduleUsage(w io.Writer) {
	// As usage: when writing the usage fails there is nowhere left to say so.
	_, _ = io.WriteString(w, scheduleUsageHead)
	for _, c := range scheduleCommands() {
		fmt.Fprintf(w, "  %-7s %s\n", c.name, helpTable["schedule "+c.name].summary)
	}
	writeGroupHelp(w, "schedule")
	_, _ = io.WriteString(w, "\nRun 'layover schedule <command> -h' for a command's flags.\n")
}

// runSchedule dispatches layover schedule's subcommands.
func runSchedule(ctx context.Context, env *Env, args []string) error {
	if len(args) == 0 {
		scheduleUsage(env.Stderr)
		return exitCode(ExitUsage)
	}
	if name := args[0]; name == "-h" || name == "--help" || name == "help" {
		scheduleUsage(env.Stdout)
		return nil
	}
	for _, c := range scheduleCommands() {
		if c.name == args[0] {
			return c.run(ctx, env, args[1:])
		}
	}
	return usageErr("schedule: unknown command %q (run 'layover schedule help')", shown(args[0]))
}

func runScheduleAdd(ctx context.Context, env *Env, args []string) error {
	var (
		cron, tz, missed string
		names            command.QuotaNames
		replace, pace    bool
		policy           = quota.DefaultPolicy()
	)
	fs := newFlagSet("schedule add", "schedule add NAME --cron EXPR [--tz ZONE] [--quota PROVIDER[:RESOURCE]]... [--pace] [policy flags] [--missed run|skip] [--replace] -- CMD [ARGS...]")
	fs.StringVar(&cron, "cron", "", "when: five fields (minute hour day-of-month month day-of-week) or @hourly, @daily, @every 30m…")
	fs.StringVar(&tz, "tz", "UTC", "the IANA time zone the expression is read in")
	fs.Var(&names, "quota", "quota the pass draws on: PROVIDER or PROVIDER:RESOURCE ("+quotaProviders()+"), repeatable (default github: core and graphql)")
	policyFlags(fs, &policy)
	fs.StringVar(&missed, "missed", "run", "a slot no host was up for: run (once, the latest only) or skip")
	fs.BoolVar(&pace, "pace", false, "also skip a slot when the quota's recent burn would run it out before the reset (as pass --pace; docs/pacing.md)")
	fs.BoolVar(&replace, "replace", false, "replace a schedule of the same name")
	storeLoc := storeFlag(fs)
	i := indexOf(args, "--")
	if i < 0 {
		if err := fs.parse(env, args); err != nil {
			return err
		}
		return usageErr("schedule add: missing -- before the command (layover %s)", fs.synopsis)
	}
	if err := fs.parse(env, args[:i]); err != nil {
		return err
	}
	cmd := args[i+1:]
	switch {
	case fs.NArg() == 0:
		return usageErr("schedule add: missing NAME (layover %s)", fs.synopsis)
	case fs.NArg() > 1:
		return usageErr("schedule add: unexpected argument %q", shown(fs.Arg(1)))
	case len(cmd) == 0:
		return usageErr("schedule add: no command after --")
	case cron == "":
		return usageErr("schedule add: --cron is required")
	}
	name := fs.Arg(0)
	if !host.ValidID(name) {
		return usageErr("schedule add: name %q: use letters, digits, '.', '_' and '-' (at most 128)", shown(name))
	}
	if _, err := schedule.Parse(cron, tz); err != nil {
		return usageErr("schedule add: %s", shown(err.Error()))
	}
	if err := policy.Validate(); err != nil {
		return usageErr("schedule add: %v", err)
	}
	sc := store.Schedule{Name: name, Cron: cron, TZ: tz, Argv: cmd, CreatedAt: env.Clock.Now()}
	switch missed {
	case "run":
		sc.Missed = store.SlotRan
	case "skip":
		sc.Missed = store.SlotMissed
	default:
		return usageErr("schedule add: --missed %q: want run or skip", shown(missed))
	}
	for _, q := range names {
		sc.Quota = append(sc.Quota, q.String())
	}
	overrides := map[string][]string{}
	fs.Visit(func(f *flag.Flag) {
		if isPolicyFlag(f.Name) {
			overrides[f.Name] = strings.Split(f.Value.String(), ",")
		}
	})
	if pace {
		overrides[paceKey] = []string{"true"}
	}
	b, _ := json.Marshal(overrides) // a map of strings always marshals
	sc.Policy = string(b)
	// The store keeps and shows the command: no secret in it (docs/secrets.md).
	if err := (job.Spec{Argv: cmd}).Validate(knownSecrets(env, *storeLoc, githubToken(ctx, env))...); err != nil {
		return usageErr("schedule add: %v", err)
	}
	st, err := openStore(ctx, env, *storeLoc)
	if err != nil {
		return err
	}
	defer st.Close()
	if err := st.AddSchedule(ctx, sc, replace); errors.Is(err, store.ErrScheduleExists) {
		return usageErr("schedule add: schedule %s exists (--replace replaces it)", name)
	} else if err != nil {
		return internalErr("write store: %v", err)
	}
	e, _ := schedule.Parse(cron, tz) // parsed above
	fmt.Fprintf(env.Stdout, "schedule %s: next slot %s (%s, %s)\n", name, command.HumanTime(e.Next(env.Clock.Now())), cron, e.Location())
	return nil
}

// policyFlagNames are the flags policyFlags defines.
var policyFlagNames = func() []string {
	fs := newFlagSet("", "")
	var p quota.Policy
	policyFlags(fs, &p)
	var names []string
	fs.VisitAll(func(f *flag.Flag) { names = append(names, f.Name) })
	return names
}()

func isPolicyFlag(name string) bool { return slices.Contains(policyFlagNames, name) }

// paceKey is --pace in a schedule's policy overrides.
const paceKey = "pace"

// schedulePolicy is base (serve's policy) with a schedule's policy flags
// applied over it, as `layover pass` would read them, and whether the
// schedule paces its passes: its own --pace, or basePace (serve --pace).
func schedulePolicy(base quota.Policy, basePace bool, sc store.Schedule) (p quota.Policy, pace bool, err error) {
	var overrides map[string][]string
	if err := json.Unmarshal([]byte(sc.PolicyJSON()), &overrides); err != nil {
		return base, false, fmt.Errorf("policy: %v", err)
	}
	p, pace = base, basePace
	fs := newFlagSet("", "")
	policyFlags(fs, &p)
	for _, name := range slices.Sorted(maps.Keys(overrides)) {
		if name == paceKey {
			pace = pace || slices.Equal(overrides[name], []string{"true"})
			continue
		}
		if !isPolicyFlag(name) {
			return base, false, fmt.Errorf("policy: unknown flag %q", name)
		}
		if name == "reserve" {
			p.Reserve = quota.Reserve{} // the schedule's replaces serve's
		}
		for _, v := range overrides[name] {
			if err := fs.Set(name, v); err != nil {
				return base, false, fmt.Errorf("policy: --%s: %v", name, err)
			}
		}
	}
	return p, pace, p.Validate()
}

// scheduleView is one schedule as schedule list --json prints it.
type scheduleView struct {
	Name     string    `json:"name"`
	Cron     string    `json:"cron"`
	TZ       string    `json:"tz"`
	Command  []string  `json:"command"`
	Quota    []string  `json:"quota"`
	Missed   string    `json:"missed"`
	NextSlot any       `json:"next_slot"`
	LastSlot *slotView `json:"last_slot"`
	Error    string    `json:"error,omitempty"`
}

type slotView struct {
	At     any    `json:"at"`
	Result string `json:"result"`
	Detail string `json:"detail"`
	Late   bool   `json:"late"`
	Host   string `json:"host"`
}

func runScheduleList(ctx context.Context, env *Env, args []string) error {
	var asJSON bool
	fs := newFlagSet("schedule list", "schedule list [--json]")
	fs.BoolVar(&asJSON, "json", false, "print JSON: a list of schedules with next_slot and last_slot")
	storeLoc := storeFlag(fs)
	if err := fs.parseNoArgs(env, args); err != nil {
		return err
	}
	st, err := openStoreReadOnly(ctx, env, *storeLoc)
	if err != nil {
		return err
	}
	defer st.Close()
	scheds, err := st.Schedules(ctx)
	if err != nil {
		return internalErr("read store: %v", err)
	}
	hosts, err := st.Hosts(ctx)
	if err != nil {
		return internalErr("read store: %v", err)
	}
	views, lasts := []scheduleView{}, make([]store.Slot, len(scheds))
	now := env.Clock.Now()
	for i, sc := range scheds {
		v := scheduleView{Name: sc.Name, Cron: sc.Cron, TZ: sc.TZ, Command: sc.Argv, Quota: sc.Quota,
			Missed: map[store.SlotResult]string{store.SlotRan: "run", store.SlotMissed: "skip"}[sc.Missed]}
		if v.Quota == nil {
			v.Quota = []string{}
		}
		if e, err := schedule.Parse(sc.Cron, sc.TZ); err != nil {
			v.Error = err.Error()
		} else {
			v.NextSlot = jsonTime(e.Next(now))
		}
		last, ok, err := st.LastSlot(ctx, sc.Name)
		if err != nil {
			return internalErr("read store: %v", err)
		}
		if ok {
			last = schedule.Shown(last, hosts, now)
			lasts[i] = last
			v.LastSlot = &slotView{At: jsonTime(last.At), Result: string(last.Result), Detail: last.Detail, Late: last.Late, Host: last.HostID}
		}
		views = append(views, v)
	}
	if asJSON {
		return writeJSON(env, views)
	}
	if len(views) == 0 {
		fmt.Fprintln(env.Stdout, "No schedules.")
		return nil
	}
	tw := tabwriter.NewWriter(env.Stdout, 2, 8, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tCRON\tTZ\tNEXT\tLAST\tRESULT\tCOMMAND")
	for i, v := range views {
		next, lastAt, result := "-", "-", "-"
		if v.Error != "" {
			next = "never: " + v.Error
		} else if e, _ := schedule.Parse(scheds[i].Cron, scheds[i].TZ); !e.Next(now).IsZero() {
			next = command.HumanTime(e.Next(now))
		}
		if v.LastSlot != nil {
			last := lasts[i]
			lastAt, result = command.HumanTime(last.At), string(last.Result)
			if last.Late {
				result += " (late)"
			}
			if last.Detail != "" {
				result += ": " + last.Detail
			}
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", shown(v.Name), shown(v.Cron), shown(v.TZ), shown(next), lastAt,
			shown(result), shown(strings.Join(v.Command, " ")))
	}
	return tw.Flush()
}

func runScheduleRemove(ctx context.Context, env *Env, args []string) error {
	fs := newFlagSet("schedule remove", "schedule remove NAME")
	storeLoc := storeFlag(fs)
	name, err := fs.parseArg(env, args, "NAME")
	if err != nil {
		return err
	}
	st, err := openStore(ctx, env, *storeLoc)
	if err != nil {
		return err
	}
	defer st.Close()
	if err := st.RemoveSchedule(ctx, name); errors.Is(err, job.ErrNotFound) {
		return failErr("schedule remove: no schedule %s", shown(name))
	} else if err != nil {
		return internalErr("write store: %v", err)
	}
	return nil
}
