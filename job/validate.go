package job

import (
	"errors"
	"fmt"
	"regexp"
	"sync"
	"unicode"
	"unicode/utf8"

	"github.com/layoverhq/layover/internal/redact"
)

// MaxNameBytes bounds a job's name, in bytes.
const MaxNameBytes = 200

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
	if len(s.Name) > MaxNameBytes {
		return fmt.Errorf("the name is %d bytes; at most %d", len(s.Name), MaxNameBytes)
	}
	if !utf8.ValidString(s.Name) {
		return errors.New("the name is not valid UTF-8")
	}
	for i, r := range s.Name {
		if !unicode.IsPrint(r) {
			return fmt.Errorf("the name holds a control or non-printing character at byte %d", i)
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
