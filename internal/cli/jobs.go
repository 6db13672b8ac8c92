package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"text/tabwriter"

	"github.com/layoverhq/layover/command"
	"github.com/layoverhq/layover/internal/view"
	"github.com/layoverhq/layover/job"
	"github.com/layoverhq/layover/textsafe"
)

// JobsOptions are the flags of layover jobs.
type JobsOptions struct {
	State string
	JSON  bool
	Store string
}

func runJobs(ctx context.Context, env *Env, args []string) error {
	var o JobsOptions
	fs := newFlagSet("jobs", "jobs [--state S] [--json]")
	fs.StringVar(&o.State, "state", "", "only jobs in this state")
	fs.BoolVar(&o.JSON, "json", false, "print JSON")
	storeLoc := storeFlag(fs)
	if err := fs.parseNoArgs(env, args); err != nil {
		return err
	}
	if o.State != "" && !job.State(o.State).Valid() {
		return usageErr("jobs: unknown state %q (known: %v)", o.State, job.States)
	}
	st, err := openJobStoreReadOnly(ctx, env, *storeLoc)
	if err != nil {
		return err
	}
	defer st.Close()
	jobs, err := st.ListJobs(ctx, job.State(o.State))
	if err != nil {
		return internalErr("read store: %v", err)
	}
	if o.JSON {
		out := []view.Job{}
		for _, j := range jobs {
			out = append(out, view.NewJob(j))
		}
		return writeJSON(env, out)
	}
	if len(jobs) == 0 {
		fmt.Fprintln(env.Stdout, "No jobs.")
		return nil
	}
	tw := tabwriter.NewWriter(env.Stdout, 2, 8, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tSTATE\tSTAGE\tNAME\tPRIORITY\tUPDATED")
	for _, j := range jobs {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%s\n", shown(j.ID), shown(string(j.State)), shown(j.Stage), shown(j.Spec.Name),
			j.Spec.Priority, command.HumanTime(j.UpdatedAt))
	}
	return tw.Flush()
}

func writeJSON(env *Env, v any) error {
	enc := json.NewEncoder(env.Stdout)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// ShowOptions are the flags of layover show.
type ShowOptions struct {
	JSON  bool
	Store string
}

func runShow(ctx context.Context, env *Env, args []string) error {
	var o ShowOptions
	fs := newFlagSet("show", "show ID [--json]")
	fs.BoolVar(&o.JSON, "json", false, "print JSON (the show contract of docs/design.md)")
	storeLoc := storeFlag(fs)
	id, err := fs.parseID(env, args)
	if err != nil {
		return err
	}
	st, err := openJobStoreReadOnly(ctx, env, *storeLoc)
	if err != nil {
		return err
	}
	defer st.Close()
	j, err := st.Job(ctx, id)
	if err != nil {
		return jobError(err)
	}
	hist, err := st.JobHistory(ctx, id)
	if err != nil {
		return jobError(err)
	}
	out := view.NewJobDetail(j, hist)
	hist = hist.WithWaits()
	if o.JSON {
		return writeJSON(env, out)
	}
	w := env.Stdout
	fmt.Fprintf(w, "Job %s", shown(j.ID))
	if j.Spec.Name != "" {
		fmt.Fprintf(w, " (%s)", shown(j.Spec.Name))
	}
	fmt.Fprintf(w, "\n  state:     %s\n  stage:     %s\n", shown(string(j.State)), shown(j.Stage))
	if j.Ownership != job.NoOwnership {
		fmt.Fprintf(w, "  ownership: %s\n", shown(string(j.Ownership)))
	}
	fmt.Fprintf(w, "  command:   %s\n  priority:  %d\n  deadline:  %s\n", textsafe.Line(fmt.Sprint(j.Spec.Argv), maxMessage),
		j.Spec.Priority, command.HumanTime(j.Spec.Deadline))
	if j.Checkpoint != nil {
		fmt.Fprintf(w, "  checkpoint: %s at %s\n", shown(j.Checkpoint.Stage), command.HumanTime(j.Checkpoint.At))
	}
	if j.SessionID != "" {
		fmt.Fprintf(w, "  session:   %s\n", shown(j.SessionID))
	}
	if j.Cleanup != "" {
		fmt.Fprintf(w, "  cleanup:   %s\n", shown(j.Cleanup))
	}
	fmt.Fprintln(w, "Transitions:")
	for _, t := range hist.Transitions {
		from := string(t.From)
		if from == "" {
			from = "-"
		}
		fmt.Fprintf(w, "  %s  %s -> %s  %s\n", command.HumanTime(t.At), shown(from), shown(string(t.To)), shown(t.Reason))
	}
	if len(hist.Attempts) > 0 {
		fmt.Fprintln(w, "Attempts:")
		for _, a := range hist.Attempts {
			code := "-"
			if a.ExitCode != nil {
				code = fmt.Sprint(*a.ExitCode)
			}
			fmt.Fprintf(w, "  %s  fence %d  started %s  outcome %s  exit %s\n", shown(a.ID), a.Fence, command.HumanTime(a.StartedAt),
				shown(a.Outcome), code)
		}
	}
	if len(*out.Checks) > 0 {
		fmt.Fprintln(w, "Checks:")
		for _, c := range hist.Checks {
			code := "-"
			if c.ExitCode != nil {
				code = fmt.Sprint(*c.ExitCode)
			}
			fmt.Fprintf(w, "  %s  fence %d  before the %s  exit %s  %s: %s\n", command.HumanTime(c.At), c.Fence, shown(c.Trigger), code,
				shown(c.Result), shown(c.Detail))
		}
	}
	if len(hist.Receipts) > 0 {
		fmt.Fprintf(w, "Receipts: %d (layover show %s --json prints them)\n", len(hist.Receipts), shown(j.ID))
		for _, o := range *out.Owners {
			verdict := "its digests match"
			if !o.Matches {
				verdict = "its digests do NOT match"
			}
			fmt.Fprintf(w, "  receipt %d: wake-up recorded by host %s (fence %d) for %s: %s\n", o.Seq, shown(o.Host), o.Fence,
				o.WakeAt, verdict)
		}
	}
	return nil
}

// parseID parses flags around exactly one positional job id.
func (fs *flagSet) parseID(env *Env, args []string) (string, error) {
	if err := fs.parse(env, args); err != nil {
		return "", err
	}
	switch fs.NArg() {
	case 0:
		return "", usageErr("%s: missing job id (layover %s)", fs.Name(), fs.synopsis)
	case 1:
		return fs.Arg(0), nil
	default:
		return "", usageErr("%s: unexpected argument %q", fs.Name(), fs.Arg(1))
	}
}
