package cli

import (
	"context"
	"flag"
	"fmt"
	"io"
	"runtime"
	"runtime/debug"
	"strings"
)

// helpEntry is what a command's help says besides its synopsis and flags.
type helpEntry struct {
	// summary is one line, shown in the general help and atop the
	// command's own.
	summary string
	// examples are command lines as a user types them, each starting with
	// "layover " and the command's name.
	examples []string
	// exits are the command's exit codes, each "CODE meaning".
	exits []string
}

// Exit-code lines shared by many commands (docs/design.md, Exit codes).
const (
	exitUsageLine    = "2    usage or input error: an unknown flag, a bad value, a bad store location"
	exitInternalLine = "125  layover itself failed: the store cannot be used"
	exitFailedJob    = "1    unknown job, or a transition the job's state refuses"
)

// helpTable is every command's help, keyed by the name its flag set
// carries: "run", "flow run", "receipt validate". Every command Main or a
// command group dispatches has an entry (TestEveryCommandHasHelp).
var helpTable = map[string]helpEntry{
	"pass": {
		summary:  "admit a scheduled pass only while its quota has room, else skip quietly",
		examples: []string{"layover pass --quota github -- ./triage.sh", "layover pass --quota github:graphql --reserve 1000 -- gh issue list"},
		exits:    []string{"0    the pass was skipped (one activity line), or the command exited 0", "N    the command's own exit code", exitUsageLine, exitInternalLine},
	},
	"run": {
		summary:  "run a command; wait out quota exhaustion instead of failing",
		examples: []string{"layover run --quota github -- gh pr list", "layover run --agent claude --max-total-wait 2h -- claude -p 'fix the tests'", "layover run --receipt-file r.json --defer-after 10m -- ./sync.sh"},
		exits:    []string{"N    the command's own exit code", "6    deferred: the receipt is stdout's last line", "75   not started: the wait would pass --max-total-wait", exitUsageLine, exitInternalLine, "126/127  the command could not be executed / was not found", "130/143  a wait was ended by SIGINT / SIGTERM"},
	},
	"status": {
		summary:  "show quota waits, waiting commands and the last state of every quota",
		examples: []string{"layover status", "layover status --json --store postgres://layover@db/fleet"},
		exits:    []string{"0    shown", exitUsageLine, exitInternalLine},
	},
	"activity": {
		summary:  "show the activity log",
		examples: []string{"layover activity --limit 20", "layover activity --json"},
		exits:    []string{"0    shown", exitUsageLine, exitInternalLine},
	},
	"classify": {
		summary:  "classify a provider response or a failed command's output",
		examples: []string{"layover classify --provider github --http response.txt", "layover classify --provider github --exit 1 --stderr err.txt"},
		exits:    []string{"0    classified, whatever the class", "2    usage error, an unreadable file, or input that is not an HTTP response"},
	},
	"receipt": {
		summary:  "validate or show a deferred receipt",
		examples: []string{"layover receipt validate receipt.json", "layover receipt show -"},
		exits:    []string{"0    valid", "1    read, but not a valid receipt (the reason on stderr)", "2    the file cannot be read, or a usage error"},
	},
	"receipt validate": {
		summary:  "check a deferred receipt's form and window; print a one-line summary",
		examples: []string{"layover receipt validate receipt.json", "layover run -- ./job.sh | tail -1 | layover receipt validate"},
		exits:    []string{"0    valid", "1    read, but not a valid receipt (the reason on stderr)", "2    the file cannot be read, or a usage error"},
	},
	"receipt show": {
		summary:  "print a deferred receipt as a person reads it",
		examples: []string{"layover receipt show receipt.json"},
		exits:    []string{"0    shown", "1    read, but not a valid receipt", "2    the file cannot be read, or a usage error"},
	},
	"serve": {
		summary:  "run the durable host: wake deferred jobs and run them fresh (not on Windows)",
		examples: []string{"layover serve", "layover serve --store postgres://layover@db/fleet --listen 127.0.0.1:9464", "layover serve --drain-timeout 2m --notify slack:https://hooks.slack.com/services/..."},
		exits:    []string{"0    stopped by SIGINT or SIGTERM (after the drain)", "2    usage error; also on Windows, which has no serve", exitInternalLine},
	},
	"gateway": {
		summary:  "proxy the LLM APIs for every agent and SDK on this host, sharing one quota ledger (docs/gateway.md)",
		examples: []string{"layover gateway", "layover gateway --listen 127.0.0.1:8089 --max-hold 10s --store postgres://layover@db/fleet", "layover gateway --upstream openai=https://proxy.example.com/openai"},
		exits:    []string{"0    stopped by SIGINT or SIGTERM (after in-flight requests, up to --drain-timeout)", "1    the --listen address cannot be bound", exitUsageLine + "; a --listen other than loopback without --allow-remote", exitInternalLine},
	},
	"gateway env": {
		summary:  "print the exports that point the SDKs and agent CLIs at a gateway",
		examples: []string{`eval "$(layover gateway env)"`, "layover gateway env --listen 127.0.0.1:9000 --shell fish | source", "layover gateway env --url http://127.0.0.1:9000"},
		exits:    []string{"0    printed", exitUsageLine},
	},
	"submit": {
		summary:  "queue a job for the durable host",
		examples: []string{"layover submit --quota github --id nightly-sync -- ./sync.sh", "layover submit --agent codex --resume-cmd 'codex resume {session_id}' -- codex exec 'upgrade deps'", "layover submit --in 2h -- ./sync.sh"},
		exits:    []string{"0    queued (or the same spec was queued already under --id)", "1    --id reused with a different spec", exitUsageLine + "; an --at or --in that is not ahead", exitInternalLine},
	},
	"jobs": {
		summary:  "list jobs",
		examples: []string{"layover jobs", "layover jobs --state deferred --json"},
		exits:    []string{"0    listed", exitUsageLine, exitInternalLine},
	},
	"show": {
		summary:  "show one job with its history",
		examples: []string{"layover show nightly-sync", "layover show nightly-sync --json"},
		exits:    []string{"0    shown", "1    unknown job", exitUsageLine, exitInternalLine},
	},
	"cancel": {
		summary:  "cancel a job",
		examples: []string{"layover cancel nightly-sync"},
		exits:    []string{"0    cancelled; prints the job's state", exitFailedJob, exitUsageLine, exitInternalLine},
	},
	"approve": {
		summary:  "approve a job's resume",
		examples: []string{"layover approve nightly-sync"},
		exits:    []string{"0    approved; prints the job's state", exitFailedJob, exitUsageLine, exitInternalLine},
	},
	"unblock": {
		summary:  "return a blocked job to ready",
		examples: []string{"layover unblock nightly-sync"},
		exits:    []string{"0    ready again; prints the job's state", exitFailedJob, exitUsageLine, exitInternalLine},
	},
	"adopt": {
		summary:  "hand a job deferred without a host to the live host",
		examples: []string{"layover adopt nightly-sync"},
		exits:    []string{"0    adopted; prints the job's state", exitFailedJob, exitUsageLine, exitInternalLine},
	},
	"schedule": {
		summary:  "add, list or remove the passes serve runs on a cron schedule, once across the fleet",
		examples: []string{"layover schedule add triage --cron '*/15 * * * *' --quota github -- ./triage.sh", "layover schedule list"},
		exits:    []string{"0    see each subcommand's help", "2    an unknown subcommand, or a usage error"},
	},
	"schedule add": {
		summary:  "add a pass serve runs at each slot of a cron expression (in --tz, default UTC), once across the fleet",
		examples: []string{"layover schedule add triage --cron '*/15 * * * *' --quota github -- ./triage.sh", "layover schedule add nightly --cron '0 3 * * *' --tz Europe/Berlin --missed skip -- ./sync.sh", "layover schedule add triage --replace --cron @hourly -- ./triage.sh"},
		exits:    []string{"0    added; prints the next slot", "2    a bad cron expression or time zone, a name taken (without --replace), or a usage error; nothing stored", exitInternalLine},
	},
	"schedule list": {
		summary:  "list the schedules with their next slot and their last slot's result",
		examples: []string{"layover schedule list", "layover schedule list --json"},
		exits:    []string{"0    shown", exitUsageLine, exitInternalLine},
	},
	"schedule remove": {
		summary:  "remove a schedule and its slots",
		examples: []string{"layover schedule remove triage"},
		exits:    []string{"0    removed", "1    no schedule of that name", exitUsageLine, exitInternalLine},
	},
	"flow": {
		summary:  "run a workflow file: a task graph that pauses on quota and resumes by run id",
		examples: []string{"layover flow run release.yaml --run-id v1.4", "layover flow status v1.4"},
		exits:    []string{"0    see each subcommand's help", "2    an unknown subcommand, or a usage error"},
	},
	"flow run": {
		summary:  "run a workflow file in this process; the same run id resumes it",
		examples: []string{"layover flow run release.yaml --run-id v1.4", "layover flow run release.yaml --dry-run"},
		exits:    []string{"0    complete", "6    paused on a quota: run the same run id again after the reset", "1    failed or blocked, or another process runs it", "2    a bad file, or a usage error", exitInternalLine},
	},
	"flow submit": {
		summary:  "hand a workflow file's run to the durable host (serve); prints the run id",
		examples: []string{"layover flow submit release.yaml --run-id v1.4"},
		exits:    []string{"0    submitted", "2    a bad file, or a usage error", exitInternalLine},
	},
	"flow status": {
		summary:  "list the workflow runs, or show one run's tasks",
		examples: []string{"layover flow status", "layover flow status v1.4 --json"},
		exits:    []string{"0    shown", "1    unknown run", exitUsageLine, exitInternalLine},
	},
	"flow cancel": {
		summary:  "cancel a run and its unfinished tasks",
		examples: []string{"layover flow cancel v1.4"},
		exits:    []string{"0    cancelled", "1    unknown run, or one that has ended", exitUsageLine, exitInternalLine},
	},
	"checkpoint": {
		summary:  "record a job's or workflow task's last verified stage (inside it)",
		examples: []string{"layover checkpoint --stage tests-pass", "layover checkpoint --stage uploaded --data '{\"files\":12}'"},
		exits:    []string{"0    recorded", "1    not inside a job or task, or its attempt is no longer current", exitUsageLine, exitInternalLine},
	},
	"sim": {
		summary:  "simulate layover on a virtual clock, through the real host, with fake providers",
		examples: []string{"layover sim lanes --resource 1000 --auth 1000 --seed 1"},
		exits:    []string{"0    see each subcommand's help", "2    an unknown subcommand, or a usage error"},
	},
	"sim lanes": {
		summary:  "run WAIT_RESOURCE and WAIT_AUTH lanes through the real host: each waits, resumes, is reconciled and verified",
		examples: []string{"layover sim lanes --resource 1000 --auth 1000", "layover sim lanes --resource 50 --auth 50 --seed 7 --store memory"},
		exits:    []string{"0    every lane complete, no invariant broken", "1    a lane ended in the wrong state or broke an invariant (run twice, an auth lane ended by a quota reset, a resource lane ended by new credentials)", exitUsageLine, "125  the harness could not run: its store, or the --budget passed"},
	},
	"sim fleet": {
		summary:  "run a fleet scenario (YAML) with no layover, layover's defaults and pacing, on a virtual clock against a fake quota",
		examples: []string{"layover sim fleet examples/sim/thirdshift.yaml", "layover sim fleet examples/sim/thirdshift.yaml --duration 2h --seed 7 --json", "layover sim fleet examples/sim/thirdshift.yaml --ledger sqlite"},
		exits:    []string{"0    the scenario ran", exitUsageLine + " (a fault of the file, at its line)", exitInternalLine},
	},
	"demo": {
		summary:  "show layover against an embedded fake GitHub in under a minute",
		examples: []string{"layover demo", "layover demo --window 30s"},
		exits:    []string{"0    the demo ran", "1    a step did not go as shown", exitUsageLine},
	},
	"version": {
		summary:  "print layover's version and the revision it was built from",
		examples: []string{"layover version", "layover --version"},
		exits:    []string{"0    printed", exitUsageLine},
	},
	"completion": {
		summary:  "print a shell completion script: bash, zsh or fish",
		examples: []string{"layover completion bash > /etc/bash_completion.d/layover", "layover completion zsh > \"${fpath[1]}/_layover\"", "layover completion fish > ~/.config/fish/completions/layover.fish"},
		exits:    []string{"0    printed", "2    an unknown shell, or a usage error"},
	},
}

// printHelp writes fs's help to env's stdout: synopsis, summary, flags,
// examples and exit codes; with collectFlags set it hands fs over instead.
func (fs *flagSet) printHelp(env *Env) {
	if env.collectFlags != nil {
		env.collectFlags(fs)
		return
	}
	w := env.Stdout
	fmt.Fprintf(w, "Usage: layover %s\n", fs.synopsis)
	if e, ok := helpTable[fs.Name()]; ok {
		fmt.Fprintf(w, "\n%s.\n", e.summary)
	}
	n := 0
	fs.VisitAll(func(*flag.Flag) { n++ })
	if n > 0 {
		fmt.Fprint(w, "\nFlags:\n")
		fs.SetOutput(w)
		fs.PrintDefaults()
	}
	writeHelpSections(w, fs.Name())
}

// writeHelpSections writes the examples and exit codes of the command
// named name.
func writeHelpSections(w io.Writer, name string) {
	e := helpTable[name]
	if len(e.examples) > 0 {
		fmt.Fprint(w, "\nExamples:\n")
		for _, x := range e.examples {
			fmt.Fprintf(w, "  %s\n", x)
		}
	}
	if len(e.exits) > 0 {
		fmt.Fprint(w, "\nExit codes:\n")
		for _, x := range e.exits {
			fmt.Fprintf(w, "  %s\n", x)
		}
	}
}

// writeGroupHelp writes a command group's summary, examples and exit
// codes, after its own usage text (flow, receipt).
func writeGroupHelp(w io.Writer, name string) {
	fmt.Fprintf(w, "\n%s.\n", helpTable[name].summary)
	writeHelpSections(w, name)
}

// helpTopic is `layover help CMD [SUB]`: CMD's -h, exit 0, or exit 2 for a
// topic that is no command.
func helpTopic(ctx context.Context, env *Env, topic []string) int {
	key := strings.Join(topic, " ")
	if _, ok := helpTable[key]; !ok {
		fmt.Fprintf(env.Stderr, "layover: help: no command %q (run 'layover help')\n", shown(key))
		return ExitUsage
	}
	return Main(ctx, env, append(append([]string(nil), topic...), "-h"))
}

// runVersion prints the version line.
func runVersion(_ context.Context, env *Env, args []string) error {
	fs := newFlagSet("version", "version")
	if err := fs.parseNoArgs(env, args); err != nil {
		return err
	}
	bi, ok := debug.ReadBuildInfo()
	fmt.Fprintln(env.Stdout, versionLine(bi, ok))
	return nil
}

// versionLine renders build information: the module version ("(devel)"
// when unknown), then the VCS revision, its time and "modified" when the
// tree had changes, then the Go version and the target.
func versionLine(bi *debug.BuildInfo, ok bool) string {
	version := "(devel)"
	var vcs []string
	goVersion := runtime.Version()
	if ok && bi != nil {
		if bi.Main.Version != "" {
			version = bi.Main.Version
		}
		if bi.GoVersion != "" {
			goVersion = bi.GoVersion
		}
		set := map[string]string{}
		for _, s := range bi.Settings {
			set[s.Key] = s.Value
		}
		if r := set["vcs.revision"]; r != "" {
			vcs = append(vcs, "revision "+r)
		}
		if t := set["vcs.time"]; t != "" {
			vcs = append(vcs, t)
		}
		if set["vcs.modified"] == "true" {
			vcs = append(vcs, "modified")
		}
	}
	line := "layover " + version
	if len(vcs) > 0 {
		line += " (" + strings.Join(vcs, ", ") + ")"
	}
	return line + " " + goVersion + " " + runtime.GOOS + "/" + runtime.GOARCH
}
