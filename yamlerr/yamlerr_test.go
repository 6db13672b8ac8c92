package yamlerr_test

import (
	"errors"
	"testing"

	"github.com/layoverhq/layover/yamlerr"
	"go.yaml.in/yaml/v3"
)

// Each fault is placed at the line a person finds it on, whichever part of
// the library (scanner or parser) found it.
func TestPlace(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name, doc string
		line      int
	}{
		{"a scanner fault", "a: 1\nb: 2\nc: \"open\n", 3},
		{"a parser fault, at the line of the list it ends", "a: 1\nb: [1, 2\nc: 3\n", 2},
		{"a tab", "a:\n\tb: 1\n", 2},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var v any
			err := yaml.Unmarshal([]byte(tt.doc), &v)
			if err == nil {
				t.Fatalf("%q parsed", tt.doc)
			}
			line, msg := yamlerr.Place(err)
			if line != tt.line || msg == "" || len(msg) >= len(err.Error()) {
				t.Errorf("Place(%q) = %d, %q; want line %d and the message without its prefix", err, line, msg, tt.line)
			}
		})
	}
	if line, msg := yamlerr.Place(errors.New("yaml: unmarshal errors")); line != 1 || msg != "unmarshal errors" {
		t.Errorf("an error naming no line: %d, %q; want 1, %q", line, msg, "unmarshal errors")
	}
}
