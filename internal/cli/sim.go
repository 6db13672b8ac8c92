package cli

import (
	"context"
	"io"
	"time"

	"github.com/layoverhq/layover/sim"
)

// simCommands are layover sim's subcommands.
func simCommands() []subcommand {
	return []subcommand{{"lanes", runSimLanes}, {"fleet", runSimFleet}}
}

// runSim dispatches layover sim's subcommands.
func runSim(ctx context.Context, env *Env, args []string) error {
	if len(args) == 0 {
		simUsage(env.Stderr)
		return exitCode(ExitUsage)
	}
	name := args[0]
	if name == "-h" || name == "--help" || name == "help" {
		simUsage(env.Stdout)
		return nil
	}
	for _, c := range simCommands() {
		if c.name == name {
			return c.run(ctx, env, args[1:])
		}
	}
	return usageErr("sim: unknown simulation %q (run 'layover sim help')", shown(name))
}

func simUsage(w io.Writer) {
	_, _ = io.WriteString(w, "Usage: layover sim lanes --resource N --auth N [--seed S] [--store sqlite|memory]\n")
	_, _ = io.WriteString(w, "       layover sim fleet FILE [--seed N] [--duration D] [--ledger memory|sqlite] [--json]\n")
	writeGroupHelp(w, "sim")
	_, _ = io.WriteString(w, "\nRuns layover's real host on a virtual clock with fake providers (docs/simulator.md).\n")
}

// SimLanesOptions are the flags of layover sim lanes.
type SimLanesOptions struct {
	Resource, Auth int
	Seed           uint64
	Store          string
	Budget         time.Duration
}

func runSimLanes(ctx context.Context, env *Env, args []string) error {
	var opts SimLanesOptions
	fs := newFlagSet("sim lanes", "sim lanes --resource N --auth N [--seed S] [--store sqlite|memory]")
	fs.IntVar(&opts.Resource, "resource", 0, "lanes that wait for a quota reset (WAIT_RESOURCE)")
	fs.IntVar(&opts.Auth, "auth", 0, "lanes that wait for their credentials (WAIT_AUTH)")
	fs.Uint64Var(&opts.Seed, "seed", 1, "seed of the lanes' reset and credentials times")
	fs.StringVar(&opts.Store, "store", sim.StoreSQLite, "store: sqlite (a temporary file) or memory (the same on /dev/shm)")
	fs.durationVar(&opts.Budget, "budget", 10*time.Minute, time.Second, 24*time.Hour, "give up after this much wall time")
	// A simulation reads no config file and no environment: its store is
	// its own, never LAYOVER_STORE's.
	if err := fs.parseArgs(env, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usageErr("sim lanes: unexpected argument %q", fs.Arg(0))
	}
	if opts.Resource < 0 || opts.Auth < 0 || opts.Resource > sim.MaxLanes || opts.Auth > sim.MaxLanes {
		return usageErr("sim lanes: --resource and --auth must be 0 to %d", sim.MaxLanes)
	}
	if opts.Resource+opts.Auth == 0 {
		return usageErr("sim lanes: give --resource N, --auth N or both")
	}
	if opts.Store != sim.StoreSQLite && opts.Store != sim.StoreMemory {
		return usageErr("sim lanes: --store is sqlite or memory, not %q", opts.Store)
	}
	rep, err := sim.Lanes(ctx, sim.LanesConfig{Resource: opts.Resource, Auth: opts.Auth, Seed: opts.Seed,
		Store: opts.Store, Budget: opts.Budget})
	if err != nil {
		return internalErr("sim lanes: %v", err)
	}
	if err := rep.Write(env.Stdout); err != nil {
		return internalErr("sim lanes: %v", err)
	}
	if !rep.OK() {
		return failErr("sim lanes: %d lanes in the wrong state, %d invariants broken", rep.WrongState, len(rep.Violations))
	}
	return nil
}

// SimFleetOptions are the flags of layover sim fleet.
type SimFleetOptions struct {
	Seed     uint64
	Duration time.Duration
	Ledger   string
	JSON     bool
}

// runSimFleet runs a fleet scenario file under its strategies
// (docs/simulator.md, layover sim fleet). Any fault of the file or the
// flags is a usage error (exit 2), placed at its line.
func runSimFleet(ctx context.Context, env *Env, args []string) error {
	var opts SimFleetOptions
	fs := newFlagSet("sim fleet", "sim fleet FILE [--seed N] [--duration D] [--ledger memory|sqlite] [--json]")
	fs.Uint64Var(&opts.Seed, "seed", 1, "seed of the passes' jitter and layover's wait jitter")
	fs.durationVar(&opts.Duration, "duration", 0, 0, sim.MaxFleetDuration, "simulate this long instead of the file's duration")
	fs.StringVar(&opts.Ledger, "ledger", sim.LedgerMemory, "the fleet's ledger: memory, or sqlite (the real store on a temporary file, slower)")
	fs.BoolVar(&opts.JSON, "json", false, "print the report as one JSON object")
	if err := fs.parseArgs(env, args); err != nil {
		return err
	}
	if len(fs.Args()) != 1 {
		return usageErr("sim fleet: give one scenario file (docs/simulator.md)")
	}
	if opts.Ledger != sim.LedgerMemory && opts.Ledger != sim.LedgerSQLite {
		return usageErr("sim fleet: --ledger is memory or sqlite, not %q", shown(opts.Ledger))
	}
	s, err := sim.ParseScenarioFile(fs.Args()[0])
	if err != nil { // a *sim.ScenarioError at its line, or a file that cannot be read
		return usageErr("sim fleet: %s", shown(err.Error()))
	}
	if opts.Duration > 0 {
		if s, err = s.WithDuration(opts.Duration); err != nil {
			return usageErr("sim fleet: %s", shown(err.Error()))
		}
	}
	rep, err := sim.Fleet(ctx, sim.FleetConfig{Scenario: s, Seed: opts.Seed, Ledger: opts.Ledger})
	if err != nil {
		return internalErr("sim fleet: %v", err)
	}
	if opts.JSON {
		return writeJSON(env, rep)
	}
	if err := rep.Write(env.Stdout); err != nil {
		return internalErr("sim fleet: %v", err)
	}
	return nil
}
