package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/layoverhq/layover/command"
	"github.com/layoverhq/layover/job"
	"github.com/layoverhq/layover/receipt"
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
// arrays empty or not; jobs --json leaves them nil, which leaves those keys
// out.
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
	// Checks are the reconcile checks run before re-runs; Owners the
	// evidence of each retained receipt's wake-up (show only).
	Checks *[]checkJSON `json:"checks,omitempty"`
	Owners *[]ownerJSON `json:"receipt_owners,omitempty"`
	// SessionID is the agent session a resume continues, null when none
	// was captured.
	SessionID any `json:"session_id"`
	// Cleanup is the state of the job's cleanup command (job.Job.Cleanup),
	// null when it has none (show only).
	Cleanup *any `json:"cleanup,omitempty"`
}

// checkJSON is one reconcile check: what started it, its exit code (null:
// it could not run) and what the host did.
type checkJSON struct {
	Fence    int64  `json:"fence"`
	At       any    `json:"at"`
	Trigger  string `json:"trigger"`
	ExitCode *int   `json:"exit_code"`
	Result   string `json:"result"`
	Detail   string `json:"detail"`
}

// ownerJSON proves which wake-up a retained receipt names: the host and
// fence the store kept with it, and whether the receipt's ownership
// digests are theirs (receipt.Owner).
type ownerJSON struct {
	Seq     int    `json:"seq"`
	Host    string `json:"host"`
	Fence   int64  `json:"fence"`
	WakeAt  any    `json:"wake_at"`
	Matches bool   `json:"matches"`
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
	CleanupCmd            any      `json:"cleanup_cmd"`
	Agent                 any      `json:"agent"`
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
		Checkpoint: j.Checkpoint, SessionID: nullable(j.SessionID), Spec: specJSON{
			Argv: j.Spec.Argv, EnvNames: nonNil(j.Spec.EnvNames), Quota: nonNil(j.Spec.Quota), Priority: j.Spec.Priority,
			Deadline: jsonTime(j.Spec.Deadline), ResumeCmd: nullable(j.Spec.ResumeCmd), CheckCmd: nullable(j.Spec.CheckCmd),
			VerifyCmd: nullable(j.Spec.VerifyCmd), PlanCmd: nullable(j.Spec.PlanCmd),
			CleanupCmd: nullable(j.Spec.CleanupCmd), Agent: nullable(j.Spec.Agent),
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
	hist = hist.WithWaits()
	out := toJobJSON(j)
	attempts, transitions, receipts := []attemptJSON{}, []transitionJSON{}, []json.RawMessage{}
	checks, owners := []checkJSON{}, []ownerJSON{}
	for _, c := range hist.Checks {
		checks = append(checks, checkJSON{Fence: c.Fence, At: jsonTimeMS(c.At), Trigger: c.Trigger, ExitCode: c.ExitCode,
			Result: c.Result, Detail: c.Detail})
	}
	for _, r := range hist.Receipts {
		if o, ok := receiptOwner(j.ID, r); ok {
			owners = append(owners, o)
		}
	}
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
	out.Checks, out.Owners = &checks, &owners
	cleanup := nullable(j.Cleanup)
	out.Cleanup = &cleanup
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
	if len(checks) > 0 {
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
		for _, o := range owners {
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

// receiptOwner is the wake-up evidence of a stored receipt with retained
// ownership; ok is false for a handoff receipt, one that does not decode,
// and one stored before receipts kept their host (show prints them as
// stored all the same).
func receiptOwner(jobID string, r job.Receipt) (ownerJSON, bool) {
	rc, err := receipt.Decode(r.JSON)
	if err != nil || !rc.IsRetained() || r.HostID == "" {
		// A receipt stored before layover kept its host (migration 005)
		// has digests of a random handle: nothing to prove them by.
		return ownerJSON{}, false
	}
	o := receipt.Owner{JobID: jobID, HostID: r.HostID, Fence: r.Fence, WakeAt: rc.ResumeAfter()}
	return ownerJSON{Seq: r.Seq, Host: r.HostID, Fence: r.Fence, WakeAt: jsonTimeMS(rc.ResumeAfter()), Matches: o.Names(rc)}, true
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
