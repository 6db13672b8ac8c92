package record

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/layoverhq/layover/job"
)

// Bounds of what a record may hold, in bytes. Every text field is at most
// MaxTextBytes of valid UTF-8 without NUL bytes (a stage, a reason, a quota's message, a
// name), but a working directory, at most MaxWorkdirBytes; a run's
// definition is at most MaxDefinitionBytes of JSON. A checkpoint keeps
// job.ValidateCheckpoint's bounds.
const (
	MaxTextBytes       = 1 << 10
	MaxWorkdirBytes    = 4 << 10
	MaxDefinitionBytes = 1 << 20
)

// ErrInvalid is a record the stores refuse to write: a field empty that
// must not be, an unknown state or status, a text too long or not UTF-8, a
// negative counter. The error wrapping it names the record and the field.
var ErrInvalid = errors.New("invalid workflow record")

// Validate reports why r cannot be stored, or nil: its ID and Name are
// set, its Status is known, its Definition is JSON and its counters are
// not negative. Control characters in text are the writer's to strip: a
// record keeps what it is given.
func (r Run) Validate() error {
	if err := r.validate(); err != nil {
		return fmt.Errorf("%w: run %q: %w", ErrInvalid, r.ID, err)
	}
	return nil
}

func (r Run) validate() error {
	if err := name("id", r.ID); err != nil {
		return err
	}
	if err := name("name", r.Name); err != nil {
		return err
	}
	if !r.Status.Known() {
		return fmt.Errorf("unknown status %q", r.Status)
	}
	switch {
	case len(r.Definition) > MaxDefinitionBytes:
		return fmt.Errorf("the definition is %d bytes; at most %d", len(r.Definition), MaxDefinitionBytes)
	case !json.Valid(r.Definition):
		return errors.New("the definition is not JSON")
	case r.Starts < 0:
		return fmt.Errorf("starts is %d", r.Starts)
	case r.Version < 0:
		return fmt.Errorf("version is %d", r.Version)
	}
	return nil
}

// Validate reports why t cannot be stored, or nil: its RunID and Name are
// set, its State is known, every text is within bounds, a quota has a
// provider, its counters are not negative and its checkpoint is one
// job.ValidateCheckpoint accepts.
func (t Task) Validate() error {
	if err := t.validate(); err != nil {
		return fmt.Errorf("%w: task %q of run %q: %w", ErrInvalid, t.Name, t.RunID, err)
	}
	return nil
}

func (t Task) validate() error {
	if err := name("run id", t.RunID); err != nil {
		return err
	}
	if err := name("name", t.Name); err != nil {
		return err
	}
	if !t.State.Known() {
		return fmt.Errorf("unknown state %q", t.State)
	}
	texts := []field{
		{"the stage", t.Stage, MaxTextBytes},
		{"the candidate", t.Candidate, MaxTextBytes},
		{"the session id", t.SessionID, MaxTextBytes},
		{"the working directory", t.Workdir, MaxWorkdirBytes},
		{"the wait's cause", t.WaitingOn, MaxTextBytes},
		{"the job id", t.JobID, MaxTextBytes},
	}
	if q := t.Quota; q != nil {
		if q.Provider == "" {
			return errors.New("a quota needs a provider")
		}
		texts = append(texts, field{"the quota's provider", q.Provider, MaxTextBytes},
			field{"the quota's resource", q.Resource, MaxTextBytes},
			field{"the quota's message", q.Message, MaxTextBytes})
	}
	for c := range t.Limited {
		if c == "" {
			return errors.New("a limited candidate needs a name")
		}
		texts = append(texts, field{"a limited candidate", c, MaxTextBytes})
	}
	for _, x := range texts {
		if err := text(x.what, x.text, x.max); err != nil {
			return err
		}
	}
	switch {
	case t.Attempts < 0:
		return fmt.Errorf("attempts is %d", t.Attempts)
	case t.Starts < 0:
		return fmt.Errorf("starts is %d", t.Starts)
	case t.Version < 0:
		return fmt.Errorf("version is %d", t.Version)
	}
	if cp := t.Checkpoint; cp != nil {
		if err := job.ValidateCheckpoint(cp.Stage, cp.Data); err != nil {
			return fmt.Errorf("checkpoint: %w", err)
		}
	}
	return nil
}

// Validate reports why e cannot be appended, or nil: To is a known state,
// From a known one or "" (no state before), and every text is within
// bounds. RunID, Task and Seq are the store's to set.
func (e TaskEvent) Validate() error {
	if err := e.validate(); err != nil {
		return fmt.Errorf("%w: event of task %q of run %q: %w", ErrInvalid, e.Task, e.RunID, err)
	}
	return nil
}

func (e TaskEvent) validate() error {
	if !e.To.Known() {
		return fmt.Errorf("unknown state %q", e.To)
	}
	if e.From != "" && !e.From.Known() {
		return fmt.Errorf("unknown state %q", e.From)
	}
	for _, x := range []field{
		{"the reason", e.Reason, MaxTextBytes},
		{"the attempt id", e.AttemptID, MaxTextBytes},
		{"the outcome", e.Outcome, MaxTextBytes},
		{"the candidate", e.Candidate, MaxTextBytes},
	} {
		if err := text(x.what, x.text, x.max); err != nil {
			return err
		}
	}
	return nil
}

// field is a text of a record, named as errors say it, and its bound.
type field struct {
	what, text string
	max        int
}

// name reports why a name (what) is not 1 to MaxTextBytes of UTF-8.
func name(what, s string) error {
	if s == "" {
		return fmt.Errorf("no %s", what)
	}
	return text("the "+what, s, MaxTextBytes)
}

// text reports why s (what) is not at most max bytes of UTF-8 without a
// NUL (which PostgreSQL's text cannot hold, so neither store keeps it).
func text(what, s string, max int) error {
	switch {
	case len(s) > max:
		return fmt.Errorf("%s is %d bytes; at most %d", what, len(s), max)
	case !utf8.ValidString(s):
		return fmt.Errorf("%s is not valid UTF-8", what)
	case strings.IndexByte(s, 0) >= 0:
		return fmt.Errorf("%s holds a NUL byte", what)
	}
	return nil
}
