package cli

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/layoverhq/layover/quota"
)

// flagSet is a flag.FlagSet that reports errors as usage errors instead of
// printing, and takes flags before and after positional arguments alike
// ("show ID --json" and "show --json ID"); "--" ends the flags.
type flagSet struct {
	*flag.FlagSet
	synopsis string
	// positional holds the arguments that are not flags, in order.
	positional []string
}

func newFlagSet(name, synopsis string) *flagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	return &flagSet{FlagSet: fs, synopsis: synopsis}
}

// errHelp is returned when -h was asked for; the usage was printed.
var errHelp = exitCode(ExitOK)

// parse parses args, flags and positional arguments interleaved; -h prints
// the command's usage to stdout. Then the flags a config file or the
// environment may set and args did not take their values from there
// (applyConfig); a command with such flags has --config.
func (fs *flagSet) parse(env *Env, args []string) error {
	fs.addConfigFlag()
	if err := fs.parseArgs(env, args); err != nil {
		return err
	}
	return fs.applyConfig(env)
}

// parseArgs parses args alone.
func (fs *flagSet) parseArgs(env *Env, args []string) error {
	fs.positional = nil
	for {
		// flag.FlagSet's Parse, not this method.
		err := fs.Parse(args)
		if errors.Is(err, flag.ErrHelp) {
			fs.printHelp(env) // help.go
			return errHelp
		}
		if err != nil {
			return usageErr("%s: %v", fs.Name(), err)
		}
		rest := fs.FlagSet.Args()
		if len(rest) == 0 {
			return nil
		}
		if consumed := len(args) - len(rest); consumed > 0 && args[consumed-1] == "--" {
			// The flags ended at "--": everything after it is positional.
			fs.positional = append(fs.positional, rest...)
			return nil
		}
		fs.positional = append(fs.positional, rest[0])
		args = rest[1:]
	}
}

// Args returns the positional arguments, as flag.FlagSet.Args would if
// flags could not follow them.
func (fs *flagSet) Args() []string { return fs.positional }

// NArg returns the number of positional arguments.
func (fs *flagSet) NArg() int { return len(fs.positional) }

// Arg returns the i'th positional argument, or "" if there is none.
func (fs *flagSet) Arg(i int) string {
	if i < 0 || i >= len(fs.positional) {
		return ""
	}
	return fs.positional[i]
}

// parseWithCommand parses flags up to "--" and returns what follows it,
// which must be a non-empty command.
func (fs *flagSet) parseWithCommand(env *Env, args []string) ([]string, error) {
	i := indexOf(args, "--")
	if i < 0 {
		if err := fs.parse(env, args); err != nil {
			return nil, err
		}
		return nil, usageErr("%s: missing -- before the command (layover %s)", fs.Name(), fs.synopsis)
	}
	if err := fs.parse(env, args[:i]); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, usageErr("%s: unexpected argument %q before --", fs.Name(), fs.Arg(0))
	}
	cmd := args[i+1:]
	if len(cmd) == 0 {
		return nil, usageErr("%s: no command after --", fs.Name())
	}
	return cmd, nil
}

// parseNoArgs parses flags and refuses positional arguments.
func (fs *flagSet) parseNoArgs(env *Env, args []string) error {
	if err := fs.parse(env, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usageErr("%s: unexpected argument %q", fs.Name(), fs.Arg(0))
	}
	return nil
}

func indexOf(args []string, s string) int {
	for i, a := range args {
		if a == s {
			return i
		}
	}
	return -1
}

// durationFlag is a duration flag with a range: a value outside [min, max]
// is refused when the flag is parsed, naming the flag and the range. Every
// duration flag of layover is one (docs/design.md, Defaults).
type durationFlag struct {
	p        *time.Duration
	min, max time.Duration
}

func (f durationFlag) String() string {
	if f.p == nil || *f.p < 0 { // a negative value means "not set"
		return ""
	}
	return f.p.String()
}

func (f durationFlag) Set(v string) error {
	d, err := time.ParseDuration(v)
	if err != nil || d < f.min || d > f.max {
		return fmt.Errorf("want a duration from %s to %s", shortDuration(f.min), shortDuration(f.max))
	}
	*f.p = d
	return nil
}

// durationVar defines a duration flag whose value must lie in [min, max];
// the range is added to the usage text.
func (fs *flagSet) durationVar(p *time.Duration, name string, value, min, max time.Duration, usage string) {
	*p = value
	fs.Var(durationFlag{p: p, min: min, max: max}, name,
		fmt.Sprintf("%s (a `duration` from %s to %s)", usage, shortDuration(min), shortDuration(max)))
}

// shortDuration renders d without trailing zero units: 24h, 1m30s, 100ms.
func shortDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

// policyFlags registers the policy flags on fs, defaulting to p, with the
// ranges quota.Policy.Validate enforces.
func policyFlags(fs *flagSet, p *quota.Policy) {
	fs.Var(&p.Reserve, "reserve", "units kept for running commands: `N` or RESOURCE=N, repeatable (default min(500, 10% of the limit))")
	fs.durationVar(&p.ResetMargin, "reset-margin", p.ResetMargin, 0, quota.MaxPolicyWait, "wait this long past a known reset")
	fs.durationVar(&p.Jitter, "jitter", p.Jitter, 0, quota.MaxPolicyWait, "add a uniform random 0..jitter to every reset wait")
	fs.durationVar(&p.MaxTotalWait, "max-total-wait", p.MaxTotalWait, 0, quota.MaxTotalWaitCap, "cap on one command's total waiting; a wait past it is not started")
	fs.durationVar(&p.SecondaryWait, "secondary-wait", p.SecondaryWait, 0, quota.MaxPolicyWait, "wait after a secondary limit that states no retry-after")
	fs.IntVar(&p.SecondaryRetries, "secondary-retries", p.SecondaryRetries, "runs again after secondary limits before failing")
	fs.durationVar(&p.UnknownReset, "unknown-reset", p.UnknownReset, time.Second, quota.MaxPolicyWait, "assume an unknown reset is this far ahead, then check again")
}
