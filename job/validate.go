package job

import (
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"sync"
	"unicode"
	"unicode/utf8"

	"github.com/layoverhq/layover/redact"
)

// MaxNameBytes bounds a job's name, and MaxStageBytes a checkpoint's stage,
// in bytes; MaxCheckpointData bounds a checkpoint's JSON data.
const (
	MaxNameBytes      = 200
	MaxStageBytes     = 200
	MaxCheckpointData = 64 << 10
)

// ErrSecret is returned when a spec would make the store keep a secret.
var ErrSecret = errors.New("holds what looks like a secret")

var envNamePattern = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`) })

// Validate reports why s cannot be submitted, or nil. A job has a command;
// its name is at most MaxNameBytes of printable UTF-8 (letters, marks,
// numbers, punctuation, symbols, the ASCII space); its variable names are
// names; and no text the store keeps and shows (the name, the command and
// the resume, check, verify and plan commands) holds a secret: one package
// redact recognises, or one of known (the caller's token, the values of the
// job's variables; see docs/secrets.md). A secret error wraps ErrSecret and
// never quotes the secret.
func (s Spec) Validate(known ...string) error {
	if len(s.Argv) == 0 {
		return errors.New("a job needs a command")
	}
	if err := printable("the name", s.Name, MaxNameBytes); err != nil {
		return err
	}
	if err := printable("the agent", s.Agent, MaxNameBytes); err != nil {
		return err
	}
	if f := s.Flow; f != nil {
		if f.Run == "" || f.Task == "" {
			return errors.New("a flow job names its run and its task")
		}
		if err := printable("the flow run", f.Run, MaxNameBytes); err != nil {
			return err
		}
		if err := printable("the flow task", f.Task, MaxNameBytes); err != nil {
			return err
		}
	}
	for _, n := range s.EnvNames {
		if !envNamePattern().MatchString(n) {
			return fmt.Errorf("variable name %q: use letters, digits and '_', not starting with a digit", n)
		}
	}
	texts := []struct{ what, text string }{
		{"the name", s.Name},
		{"the resume command", s.ResumeCmd},
		{"the check command", s.CheckCmd},
		{"the verify command", s.VerifyCmd},
		{"the plan command", s.PlanCmd},
		{"the cleanup command", s.CleanupCmd},
	}
	for _, a := range s.Argv {
		texts = append(texts, struct{ what, text string }{"the command", a})
	}
	for _, t := range texts {
		if redact.Contains(t.text, known...) {
			return fmt.Errorf("%s %w; pass secrets to the job through its environment", t.what, ErrSecret)
		}
	}
	return nil
}

// printable reports why text (what) is not at most max bytes of printable
// UTF-8, or nil.
func printable(what, text string, max int) error {
	if len(text) > max {
		return fmt.Errorf("%s is %d bytes; at most %d", what, len(text), max)
	}
	if !utf8.ValidString(text) {
		return fmt.Errorf("%s is not valid UTF-8", what)
	}
	for i, r := range text {
		if !unicode.IsPrint(r) {
			return fmt.Errorf("%s holds a control or non-printing character at byte %d", what, i)
		}
	}
	return nil
}

// ValidateCheckpoint reports why a checkpoint cannot be recorded, or nil: its
// stage is 1 to MaxStageBytes of printable UTF-8 and its data, when given,
// is JSON of at most MaxCheckpointData bytes; neither holds a secret that
// package redact recognises or one of known (docs/secrets.md). Secrets in
// the data are looked for as written and in every string it decodes to,
// so an escaped token ("\u0067hp_…") is one too. A secret error wraps
// ErrSecret and never quotes the secret.
func ValidateCheckpoint(stage string, data []byte, known ...string) error {
	if stage == "" {
		return errors.New("a checkpoint needs a stage")
	}
	if err := printable("the stage", stage, MaxStageBytes); err != nil {
		return err
	}
	if len(data) > MaxCheckpointData {
		return fmt.Errorf("the data is %d bytes; at most %d", len(data), MaxCheckpointData)
	}
	if redact.Contains(stage, known...) {
		return fmt.Errorf("the stage %w", ErrSecret)
	}
	if len(data) == 0 {
		return nil
	}
	var v any
	if err := json.Unmarshal(data, &v); err != nil {
		return errors.New("the data is not JSON")
	}
	if redact.Contains(string(data), known...) || slices.ContainsFunc(jsonStrings(v), func(s string) bool { return redact.Contains(s, known...) }) {
		return fmt.Errorf("the data %w; a resumed run reads secrets from its environment", ErrSecret)
	}
	return nil
}

// jsonStrings returns every string of a decoded JSON value, object keys
// included.
func jsonStrings(v any) []string {
	switch x := v.(type) {
	case string:
		return []string{x}
	case []any:
		var out []string
		for _, e := range x {
			out = append(out, jsonStrings(e)...)
		}
		return out
	case map[string]any:
		var out []string
		for k, e := range x {
			out = append(append(out, k), jsonStrings(e)...)
		}
		return out
	}
	return nil
}
