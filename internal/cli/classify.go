package cli

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"strings"
	"time"

	"github.com/layoverhq/layover/provider"
	"github.com/layoverhq/layover/provider/registry"
	"github.com/layoverhq/layover/redact"
)

// ClassifyOptions are the flags of layover classify.
type ClassifyOptions struct {
	Provider string
	HTTP     string
	Exit     int
	HasExit  bool
	Stderr   string
	Stdout   string
}

// maxInput bounds what classify reads from one file.
const maxInput = 16 << 20

// maxErrorLine bounds an error line about an input, in runes.
const maxErrorLine = 300

// inputErr is a usage error about an input whose message may quote it: the
// message is cleaned (provider.CleanText: one line, no control characters,
// secrets masked, at most maxErrorLine runes).
func inputErr(format string, a ...any) error {
	return usageErr("%s", provider.CleanText(fmt.Sprintf(format, a...), maxErrorLine))
}

func runClassify(ctx context.Context, env *Env, args []string) error {
	var opts ClassifyOptions
	fs := newFlagSet("classify", "classify --provider github (--http FILE | --exit N [--stderr FILE] [--stdout FILE])")
	fs.StringVar(&opts.Provider, "provider", "", "provider whose signals to read: "+knownProviders())
	fs.StringVar(&opts.HTTP, "http", "", "a raw HTTP response as `curl -i` prints it (- for stdin)")
	exit := fs.Int("exit", -1, "exit code of a failed command")
	fs.StringVar(&opts.Stderr, "stderr", "", "the command's stderr (- for stdin)")
	fs.StringVar(&opts.Stdout, "stdout", "", "the command's stdout (- for stdin)")
	if err := fs.parseNoArgs(env, args); err != nil {
		return err
	}
	fs.Visit(func(f *flag.Flag) {
		if f.Name == "exit" {
			opts.HasExit = true
		}
	})
	opts.Exit = *exit
	return opts.run(env)
}

type classifyJSON struct {
	Class       provider.Class `json:"class"`
	Provider    string         `json:"provider"`
	Resource    any            `json:"resource"`
	ResetAt     any            `json:"reset_at"`
	RetryAfterS any            `json:"retry_after_s"`
	Remaining   any            `json:"remaining"`
	Limit       any            `json:"limit"`
	Reason      string         `json:"reason"`
}

func knownProviders() string { return strings.Join(registry.Names(), ", ") }

func (o *ClassifyOptions) run(env *Env) error {
	p, known := registry.Lookup(o.Provider)
	isHTTP, isCLI := known && p.API != nil, known && p.CLI != nil
	switch {
	case o.Provider == "":
		return usageErr("classify: --provider is required (known: %s)", knownProviders())
	case !known:
		return usageErr("classify: unknown provider %q (known: %s)", o.Provider, knownProviders())
	case o.HTTP != "" && !isHTTP:
		return usageErr("classify: %s is a command, not an HTTP API: use --exit N with --stderr/--stdout", o.Provider)
	case o.HasExit && !isCLI:
		return usageErr("classify: %s is an HTTP API: use --http FILE", o.Provider)
	}
	if (o.HTTP != "") == o.HasExit {
		return usageErr("classify: give exactly one of --http FILE or --exit N")
	}
	if o.HTTP == "" && (o.Exit < 0 || o.Exit > 255) {
		return usageErr("classify: --exit must be 0..255")
	}
	if o.HTTP != "" && (o.Stderr != "" || o.Stdout != "") {
		return usageErr("classify: --stderr and --stdout go with --exit, not --http")
	}
	if o.Stderr == "-" && o.Stdout == "-" {
		return usageErr("classify: only one of --stderr and --stdout can read stdin")
	}
	now := env.Clock.Now()
	var out provider.Outcome
	if o.HTTP != "" {
		raw, err := readInput(env, o.HTTP)
		if err != nil {
			return err
		}
		resp, body, err := provider.ParseRawHTTP(raw)
		if err != nil {
			return inputErr("classify: %s: %v", o.HTTP, err)
		}
		out = p.API.Classify(resp, body, now)
	} else {
		var stdout, stderr []byte
		var err error
		if o.Stdout != "" {
			if stdout, err = readInput(env, o.Stdout); err != nil {
				return err
			}
		}
		if o.Stderr != "" {
			if stderr, err = readInput(env, o.Stderr); err != nil {
				return err
			}
		}
		// A time printed without a zone is read in the local zone.
		out = p.CLI(o.Exit, stdout, stderr, now, time.Local)
	}
	return json.NewEncoder(env.Stdout).Encode(outcomeJSON(out))
}

func outcomeJSON(out provider.Outcome) classifyJSON {
	j := classifyJSON{Class: out.Class, Provider: out.Provider, ResetAt: jsonTime(out.ResetAt),
		Remaining: known(out.Remaining), Limit: known(out.Limit),
		// The classifiers clean their reasons already; what classify
		// prints is cleaned here too, whichever classifier made it.
		Reason: provider.CleanText(out.Reason, provider.MaxReason)}
	if out.Resource != "" {
		j.Resource = out.Resource
	}
	if out.RetryAfter >= 0 {
		j.RetryAfterS = int64(math.Ceil(out.RetryAfter.Seconds()))
	}
	return j
}

// readInput reads a file, or stdin for "-", up to maxInput bytes. A file
// that cannot be read is a usage error.
func readInput(env *Env, name string) ([]byte, error) {
	var r io.Reader
	if name == "-" {
		r = env.Stdin
	} else {
		f, err := os.Open(name)
		if err != nil {
			return nil, inputErr("classify: %v", err)
		}
		defer f.Close()
		r = f
	}
	data, err := io.ReadAll(io.LimitReader(r, maxInput+1))
	if err != nil {
		return nil, inputErr("classify: read %s: %v", name, err)
	}
	if len(data) > maxInput {
		return nil, usageErr("classify: %s is larger than %d MiB", name, maxInput>>20)
	}
	// The secrets this environment knows (a 40-hex token has no shape to
	// find it by) never reach a classifier, so no reason or error quotes
	// them (docs/secrets.md).
	if known := knownSecrets(env, ""); len(known) > 0 {
		data = []byte(redact.Known(string(data), known...))
	}
	return data, nil
}
