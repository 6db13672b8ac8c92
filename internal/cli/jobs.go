package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/layoverhq/layover/command"
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
		out := []jobJSON{}
		for _, j := range jobs {
			out = append(out, toJobJSON(j))
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

// jobJSON is the show contract of docs/design.md (Output contracts). The
// history is there exactly when its pointers are set: show sets them, to
// arrays empty or not; jobs --json leaves them nil, which leaves the three
// keys out.
type jobJSON struct {
	ID          string             `json:"id"`
	Name        string             `json:"name"`
	State       job.State          `json:"state"`
	Stage       string             `json:"stage"`
	Ownership   any                `json:"ownership"`
	Spec        specJSON           `json:"spec"`
	Attempts    *[]attemptJSON     `json:"attempts,omitempty"`
	Receipts    *[]json.RawMessage `json:"receipts,omitempty"`
	Transitions *[]transitionJSON  `json:"transitions,omitempty"`
	Checkpoint  *job.Checkpoint    `json:"checkpoint"`
}

// attemptJSON is one attempt of the show contract; ended_at is null while
// the attempt runs.
type attemptJSON struct {
	ID        string  `json:"attempt_id"`
	Fence     int64   `json:"fence"`
	StartedAt any     `json:"started_at"`
	EndedAt   any     `json:"ended_at"`
	Outcome   any     `json:"outcome"`
	ExitCode  *int    `json:"exit_code"`
	WaitedS   float64 `json:"waited_s"`
}

// transitionJSON is one transition; from is null for the submission.
type transitionJSON struct {
	From   any       `json:"from"`
	To     job.State `json:"to"`
	At     any       `json:"at"`
	Reason string    `json:"reason"`
}

// jsonTimeMS renders t as RFC 3339 UTC to the millisecond the store keeps,
// or nil for the zero time.
func jsonTimeMS(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return t.UTC().Format("2006-01-02T15:04:05.000Z")
}

type specJSON struct {
	Argv                  []string `json:"argv"`
	EnvNames              []string `json:"env_names"`
	Quota                 []string `json:"quota"`
	Priority              int      `json:"priority"`
	Deadline              any      `json:"deadline"`
	ResumeCmd             any      `json:"resume_cmd"`
	CheckCmd              any      `json:"check_cmd"`
	VerifyCmd             any      `json:"verify_cmd"`
	PlanCmd               any      `json:"plan_cmd"`
	FreshApprovalRequired bool     `json:"fresh_approval_required"`
	MaxAttempts           int      `json:"max_attempts"`
	ProgressTimeout       any      `json:"progress_timeout"`
	Provider              string   `json:"provider"`
}

func nullable(s string) any {
	if s == "" {
		return nil
	}
	return s
}

func toJobJSON(j job.Job) jobJSON {
	out := jobJSON{ID: j.ID, Name: j.Spec.Name, State: j.State, Stage: j.Stage, Ownership: nullable(string(j.Ownership)),
		Checkpoint: j.Checkpoint, Spec: specJSON{
			Argv: j.Spec.Argv, EnvNames: nonNil(j.Spec.EnvNames), Quota: nonNil(j.Spec.Quota), Priority: j.Spec.Priority,
			Deadline: jsonTime(j.Spec.Deadline), ResumeCmd: nullable(j.Spec.ResumeCmd), CheckCmd: nullable(j.Spec.CheckCmd),
			VerifyCmd: nullable(j.Spec.VerifyCmd), PlanCmd: nullable(j.Spec.PlanCmd),
			FreshApprovalRequired: j.Spec.FreshApprovalRequired, MaxAttempts: j.Spec.MaxAttempts, Provider: j.Spec.Provider}}
	if j.Spec.ProgressTimeout > 0 {
		out.Spec.ProgressTimeout = j.Spec.ProgressTimeout.String()
	}
	return out
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
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
	out := toJobJSON(j)
	attempts, transitions, receipts := []attemptJSON{}, []transitionJSON{}, []json.RawMessage{}
	for _, a := range hist.Attempts {
		attempts = append(attempts, attemptJSON{ID: a.ID, Fence: a.Fence, StartedAt: jsonTimeMS(a.StartedAt),
			EndedAt: jsonTimeMS(a.EndedAt), Outcome: nullable(a.Outcome), ExitCode: a.ExitCode, WaitedS: a.WaitedS})
	}
	for _, tr := range hist.Transitions {
		transitions = append(transitions, transitionJSON{From: nullable(string(tr.From)), To: tr.To,
			At: jsonTimeMS(tr.At), Reason: tr.Reason})
	}
	for _, r := range hist.Receipts {
		receipts = append(receipts, json.RawMessage(r.JSON))
	}
	out.Attempts, out.Transitions, out.Receipts = &attempts, &transitions, &receipts
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
	if len(hist.Receipts) > 0 {
		fmt.Fprintf(w, "Receipts: %d (layover show %s --json prints them)\n", len(hist.Receipts), shown(j.ID))
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
