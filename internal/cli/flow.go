package cli

import (
	"context"
	"fmt"
	"io"
)

// flowCommands are the subcommands of layover flow (docs/workflows.md,
// Commands).
func flowCommands() []subcommand {
	return []subcommand{
		{"run", runFlowRun},
		{"submit", runFlowSubmit},
		{"status", runFlowStatus},
		{"cancel", runFlowCancel},
	}
}

const flowUsageHead = `Usage: layover flow <command> [flags]

A workflow is a named graph of tasks in a YAML or JSON file; a run of it
has a run id, and its state lives in the store, so running the same run id
again resumes it: completed tasks never run again (docs/workflows.md).

Commands:
`

const flowUsageTail = `
Run 'layover flow <command> -h' for a command's flags.
`

func flowUsage(w io.Writer) {
	// As usage: when writing the usage fails there is nowhere left to say so.
	_, _ = io.WriteString(w, flowUsageHead)
	for _, c := range flowCommands() {
		fmt.Fprintf(w, "  %-7s %s\n", c.name, helpTable["flow "+c.name].summary)
	}
	writeGroupHelp(w, "flow")
	_, _ = io.WriteString(w, flowUsageTail)
}

// runFlow dispatches layover flow's subcommands.
func runFlow(ctx context.Context, env *Env, args []string) error {
	if len(args) == 0 {
		flowUsage(env.Stderr)
		return exitCode(ExitUsage)
	}
	name := args[0]
	if name == "-h" || name == "--help" || name == "help" {
		flowUsage(env.Stdout)
		return nil
	}
	for _, c := range flowCommands() {
		if c.name == name {
			return c.run(ctx, env, args[1:])
		}
	}
	return usageErr("flow: unknown command %q (run 'layover flow help')", shown(name))
}

// parseArg parses flags around exactly one positional argument, what it
// is named in the error when it is missing.
func (fs *flagSet) parseArg(env *Env, args []string, what string) (string, error) {
	if err := fs.parse(env, args); err != nil {
		return "", err
	}
	switch fs.NArg() {
	case 0:
		return "", usageErr("%s: missing %s (layover %s)", fs.Name(), what, fs.synopsis)
	case 1:
		return fs.Arg(0), nil
	default:
		return "", usageErr("%s: unexpected argument %q", fs.Name(), shown(fs.Arg(1)))
	}
}
