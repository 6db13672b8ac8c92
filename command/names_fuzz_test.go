package command_test

import (
	"reflect"
	"strings"
	"testing"

	"github.com/layoverhq/layover/command"
	"github.com/layoverhq/layover/internal/fuzzbound"
	"github.com/layoverhq/layover/provider/registry"
)

// checkOneLine fails t when err's message is empty or spans lines.
func checkOneLine(t *testing.T, what string, err error) {
	t.Helper()
	if msg := err.Error(); msg == "" || strings.ContainsAny(msg, "\r\n") {
		t.Fatalf("%s: error is not one line: %q", what, msg)
	}
}

// The --quota parser: what a user types is outside input (issue 8). It
// accepts a registered provider, alone when it has default resources or
// with one of its resources, reads back what it prints, and refuses
// anything else with one line.
func FuzzQuotaNames(f *testing.F) {
	for _, v := range []string{"github", "github:core", "github:CORE", " github:search ", "gitlab", "github:", "github:a:b",
		"anthropic", "anthropic:tokens", "openai:requests", "gemini", "gemini:requests-per-day:gemini-2.5-pro",
		"claude-code:five_hour", "gemini-cli:gemini-2.5-pro", "copilot:unified-5h"} {
		f.Add(v)
	}
	f.Fuzz(func(t *testing.T, v string) {
		fuzzbound.Run(t, func() {
			var q command.QuotaNames
			if err := q.Set(v); err != nil {
				checkOneLine(t, v, err)
				if len(q) != 0 {
					t.Fatalf("Set(%q) failed and kept %v", v, q)
				}
				return
			}
			p, ok := registry.Lookup(q[0].Provider)
			if len(q) != 1 || !ok || q[0].Resource != "" && p.CheckResource(q[0].Resource) != nil {
				t.Fatalf("Set(%q) = %+v", v, q)
			}
			var back command.QuotaNames
			if err := back.Set(q.String()); err != nil || !reflect.DeepEqual(back, q) {
				t.Fatalf("String() %q reads back as %+v, %v", q.String(), back, err)
			}
			if res := q.Resources(p.Name); len(res) == 0 {
				t.Fatalf("Set(%q) charges no resource", v)
			}
		})
	})
}
