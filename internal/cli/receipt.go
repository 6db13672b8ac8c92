package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/layoverhq/layover/receipt"
)

// ReceiptOptions are the arguments of layover receipt validate|show.
type ReceiptOptions struct {
	// Action is "validate" (a one-line summary) or "show" (a human summary).
	Action string
	// File is the receipt's path; "-" reads stdin.
	File string
}

const receiptSynopsis = "receipt validate [FILE|-] | receipt show FILE|-"

const receiptUsage = `Usage: layover receipt validate [FILE|-]
       layover receipt show FILE|-

validate checks a deferred receipt's form and its own window and prints a
one-line summary (saying "expired" when resume_by has passed); show prints a
human summary. FILE "-" or none (validate) reads stdin.
Exit 0: valid; 1: read, but not a valid receipt (the reason on stderr);
2: the file cannot be read, or a usage error.
`

func runReceipt(ctx context.Context, env *Env, args []string) error {
	if len(args) == 0 {
		return usageErr("receipt: missing subcommand (layover %s)", receiptSynopsis)
	}
	opts := ReceiptOptions{Action: args[0]}
	switch opts.Action {
	case "-h", "-help", "--help", "help":
		// Output to stdout: when that fails there is nowhere left to say so.
		_, _ = io.WriteString(env.Stdout, receiptUsage)
		writeGroupHelp(env.Stdout, "receipt")
		return nil
	case "validate":
	case "show":
	default:
		return usageErr("receipt: unknown subcommand %q (layover %s)", opts.Action, receiptSynopsis)
	}
	fs := newFlagSet("receipt "+opts.Action, receiptSynopsis)
	if err := fs.parse(env, args[1:]); err != nil {
		return err
	}
	switch {
	case fs.NArg() > 1:
		return usageErr("receipt %s: unexpected argument %q", opts.Action, fs.Arg(1))
	case fs.NArg() == 1:
		opts.File = fs.Arg(0)
	case opts.Action == "show":
		return usageErr("receipt show: missing FILE (layover receipt show FILE|-)")
	default:
		opts.File = "-"
	}
	return opts.run(env)
}

func (o *ReceiptOptions) run(env *Env) error {
	data, err := o.read(env)
	if err != nil {
		return err
	}
	name := o.File
	if name == "-" {
		name = "stdin"
	}
	now := env.Clock.Now()
	r, err := receipt.Decode(data)
	var st receipt.Status
	if err == nil {
		st, err = receipt.Validate(r, now)
	}
	if err != nil {
		var fe *receipt.FieldError
		if errors.As(err, &fe) && fe.Field != "" {
			return failErr("receipt %s: %s: not a valid receipt: %s: %s", o.Action, name, fe.Field, fe.Problem)
		}
		if errors.As(err, &fe) {
			return failErr("receipt %s: %s: not a valid receipt: %s", o.Action, name, fe.Problem)
		}
		return failErr("receipt %s: %s: not a valid receipt: %v", o.Action, name, err)
	}
	if o.Action == "validate" {
		fmt.Fprintf(env.Stdout, "valid %s\n", st)
		return nil
	}
	// As above: a failed write to stdout has nowhere to be reported.
	_, _ = io.WriteString(env.Stdout, showReceipt(st))
	return nil
}

// read reads the receipt file, or stdin for "-", up to one byte more than a
// receipt may hold (Decode refuses the excess). A file that cannot be read
// is a usage error.
func (o *ReceiptOptions) read(env *Env) ([]byte, error) {
	var r io.Reader
	if o.File == "-" {
		if env.Stdin == nil {
			return nil, usageErr("receipt %s: no stdin to read", o.Action)
		}
		r = env.Stdin
	} else {
		f, err := os.Open(o.File)
		if err != nil {
			return nil, usageErr("receipt %s: %v", o.Action, err)
		}
		defer f.Close()
		r = f
	}
	data, err := io.ReadAll(io.LimitReader(r, receipt.MaxSize+1))
	if err != nil {
		return nil, usageErr("receipt %s: read %s: %v", o.Action, o.File, err)
	}
	return data, nil
}

var reasonText = map[receipt.Reason]string{
	receipt.RESTReserve:            "GitHub REST quota at its reserve or exhausted",
	receipt.GraphQLReserve:         "GitHub GraphQL quota at its reserve or exhausted",
	receipt.ProviderSecondaryLimit: "a provider's short throttle (secondary limit)",
	receipt.ProviderQuota:          "a provider's primary quota exhausted",
}

// showReceipt renders a valid receipt for people.
func showReceipt(st receipt.Status) string {
	r := &st.Receipt
	var b strings.Builder
	line := func(label, format string, a ...any) {
		fmt.Fprintf(&b, "%-16s %s\n", label, fmt.Sprintf(format, a...))
	}
	when := func(t time.Time) string {
		return fmt.Sprintf("%s (%s)", t.UTC().Format(time.RFC3339Nano), receipt.Relative(t, st.Now))
	}
	line("receipt", "%s (schema %d), status %s", r.Version, r.Schema, r.Status)
	switch st.Phase {
	case receipt.Waiting:
		line("window", "waiting: a fresh run may start in %s", strings.TrimPrefix(receipt.Relative(r.ResumeAfter(), st.Now), "in "))
	case receipt.Resumable:
		line("window", "resumable now")
	default:
		line("window", "expired: resume by has passed; the job is not to be resumed from this receipt")
	}
	line("reason", "%s: %s", r.Reason, reasonText[r.Reason])
	line("issued", "%s", when(r.IssuedAt()))
	line("resume after", "%s", when(r.ResumeAfter()))
	line("resume by", "%s", when(r.ResumeBy()))
	if r.IsRetained() {
		line("ownership", "retained (%s): a live durable host recorded the wake-up and can cancel it", r.Ownership.Mode)
		line("  wake-up", "%s", r.Ownership.WakeupDigest)
		line("  cancellation", "%s", r.Ownership.CancellationDigest)
	} else {
		line("ownership", "handoff (%s): no live host holds a wake-up; 'layover adopt ID' hands the job to one", r.Ownership.Mode)
	}
	b.WriteString("bindings\n")
	line("  scope", "%s", r.Bindings.ScopeDigest)
	line("  request", "%s", r.Bindings.RequestDigest)
	if r.Bindings.PlanDigest == "" {
		line("  plan", "none (null: the job has no plan)")
	} else {
		line("  plan", "%s", r.Bindings.PlanDigest)
	}
	if r.FreshApprovalRequired {
		line("fresh approval", "required: the next run must obtain new approval before any mutation")
	} else {
		line("fresh approval", "not required")
	}
	return b.String()
}
