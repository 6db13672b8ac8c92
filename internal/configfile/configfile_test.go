package configfile

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/layoverhq/layover/internal/fuzzbound"
	"github.com/layoverhq/layover/redact"
)

var schema = Schema{
	Keys:   map[string]bool{"reserve": true, "max-total-wait": false, "store": false, "concurrency": false},
	Scopes: map[string]bool{"serve": true, "pass": true, "flow": true, "flow run": true},
}

// The same settings in TOML and in YAML read the same, each key with its
// line.
func TestParseTOMLAndYAML(t *testing.T) {
	t.Parallel()
	files := map[string]string{
		"f.toml": `
reserve = [100, "graphql=50"]
max-total-wait = "2h"

[serve]
concurrency = 4

[flow.run]
store = "flows.db"
`,
		"f.yaml": `
reserve: [100, graphql=50]
max-total-wait: 2h

serve:
  concurrency: 4

flow:
  run:
    store: flows.db
`,
	}
	for name, text := range files {
		f, err := Parse(name, []byte(text), schema)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		// The lines are the same but for store's: YAML nests flow.run
		// a line deeper.
		storeLine := 9
		if strings.HasSuffix(name, ".yaml") {
			storeLine = 10
		}
		line := func(n int) int { return n }
		checks := []struct {
			scopes []string
			key    string
			want   Value
			scope  string
		}{
			{[]string{"", "pass"}, "reserve", Value{Items: []string{"100", "graphql=50"}, List: true, Line: line(2)}, ""},
			{[]string{"", "serve"}, "max-total-wait", Value{Items: []string{"2h"}, Line: line(3)}, ""},
			{[]string{"", "serve"}, "concurrency", Value{Items: []string{"4"}, Line: line(6)}, "serve"},
			{[]string{"", "flow", "flow run"}, "store", Value{Items: []string{"flows.db"}, Line: storeLine}, "flow run"},
		}
		for _, c := range checks {
			v, scope, ok := f.Lookup(c.scopes, c.key)
			if !ok || scope != c.scope || !reflect.DeepEqual(v, c.want) {
				t.Errorf("%s: Lookup(%q, %s) = %+v in %q, %v; want %+v in %q", name, c.scopes, c.key, v, scope, ok, c.want, c.scope)
			}
		}
		if _, _, ok := f.Lookup([]string{"", "pass"}, "concurrency"); ok {
			t.Errorf("%s: serve's concurrency applies to pass", name)
		}
		if _, _, ok := f.Lookup([]string{"", "flow", "flow status"}, "store"); ok {
			t.Errorf("%s: flow run's store applies to flow status", name)
		}
	}
}

// A more specific table wins over the top level.
func TestLookupMostSpecific(t *testing.T) {
	t.Parallel()
	f, err := Parse("f.toml", []byte("concurrency = 1\n[serve]\nconcurrency = 8\n"), schema)
	if err != nil {
		t.Fatal(err)
	}
	if v, scope, _ := f.Lookup([]string{"", "serve"}, "concurrency"); v.Items[0] != "8" || scope != "serve" {
		t.Errorf("serve's concurrency = %v from %q; want 8 from serve", v.Items, scope)
	}
	if v, scope, _ := f.Lookup([]string{"", "pass"}, "concurrency"); v.Items[0] != "1" || scope != "" {
		t.Errorf("pass's concurrency = %v from %q; want 1 from the top level", v.Items, scope)
	}
}

// Each fault is one line naming the file, the line when the library tells
// it, and the key.
func TestParseFaults(t *testing.T) {
	t.Parallel()
	cases := []struct{ name, text, want string }{
		{"f.toml", "max-wait = \"2h\"\n", `f.toml:1: max-wait: unknown key`},
		{"f.yaml", "reserve: 1\nmax-wait: 2h\n", `f.yaml:2: max-wait: unknown key`},
		{"f.toml", "[serve]\nbogus = 1\n", `f.toml:2: serve.bogus: unknown key`},
		{"f.toml", "store = 1\nserve.bogus = 1\n", `f.toml:2: serve.bogus: unknown key`},
		{"f.toml", "x = \"\"\"\nbogus = 1\n\"\"\"\nbogus = 2\n", `f.toml:4: bogus: unknown key`},
		{"f.toml", "serve = { bogus = 1 }\n", `f.toml: serve.bogus: unknown key`},
		{"f.toml", "[nosuch]\nstore = \"x\"\n", `f.toml:1: nosuch: unknown command table`},
		{"f.yaml", "flow:\n  walk:\n    store: x\n", `f.yaml:2: flow.walk: unknown command table`},
		{"f.toml", "store = [\"a\", \"b\"]\n", `f.toml:1: store: takes one value, not a list`},
		{"f.yaml", "store: a\nstore: b\n", `f.yaml:2: store: given twice`},
		{"f.toml", "store = \"a\"\nstore = \"b\"\n", `f.toml:2: TOML: `},
		{"f.toml", "reserve = 1\n\nstore = 1979-05-27\n", `f.toml:3: store: want a string, a number or a boolean`},
		{"f.toml", "store = \"unterminated\n", `f.toml:1: TOML: `},
		{"f.yaml", "store: [a\n", `f.yaml:2: YAML: `},
		{"f.yaml", "store:\n", `f.yaml:1: store: no value`},
		{"f.yaml", "reserve: &x [1]\nstore: *x\n", `f.yaml:2: store: YAML aliases are not read`},
		{"f.yaml", "store: a\n---\nstore: b\n", `f.yaml:2: YAML: a second document`},
		{"f.yaml", "- a\n- b\n", `f.yaml:1: YAML: want a mapping`},
		{"f.json", "{}", `f.json: a config file's name ends in .toml, .yaml or .yml`},
		{"f.toml", strings.Repeat("#", MaxSize+1), `f.toml: larger than 65536 bytes`},
	}
	for _, c := range cases {
		_, err := Parse(c.name, []byte(c.text), schema)
		var fe *Error
		if !errors.As(err, &fe) {
			t.Errorf("%s %q: err %v; want an *Error", c.name, c.text, err)
			continue
		}
		if msg := err.Error(); !strings.HasPrefix(msg, c.want) || strings.ContainsAny(msg, "\r\n") {
			t.Errorf("%s %q:\n got %q\nwant %q...", c.name, c.text, msg, c.want)
		}
	}
}

// An empty file, or one of comments only, sets nothing.
func TestParseEmpty(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"f.toml", "f.yaml", "f.yml"} {
		for _, text := range []string{"", "# nothing\n", "\n\n"} {
			f, err := Parse(name, []byte(text), schema)
			if err != nil {
				t.Fatalf("%s %q: %v", name, text, err)
			}
			if keys := f.Keys(""); len(keys) != 0 {
				t.Errorf("%s %q sets %v", name, text, keys)
			}
		}
	}
}

// The password of a store URL in the file, or a webhook URL's path, never
// appears in an error about it, whichever key or syntax fault the error is
// about.
func TestFaultsMaskURLPasswords(t *testing.T) {
	t.Parallel()
	const pw = "hunter2-very-secret"
	for name, text := range map[string]string{
		"a.toml": "store = \"postgres://layover:" + pw + "@db:5432/layover\"\nconcurrency = \"x\"\nbogus = 1\n",
		"b.toml": "store = postgres://layover:" + pw + "@db/layover\n",
		"c.toml": "store = \"postgres://layover:" + pw + "@db/layover\n",
		"d.yaml": "store: postgres://layover:" + pw + "@db/layover\npostgres://layover:" + pw + "@db/x: 1\n",
		"e.yaml": "store: [postgres://layover:" + pw + "@db/layover\n",
		"f.toml": "[serve]\nstore = \"postgres://db/layover?password=" + pw + "\"\n\"postgres://u:" + pw + "@h\" = 1\n",
		"g.toml": "store = [\"https://hooks.example/services/" + pw + "\"\n",
		"h.yaml": "store: {https://hooks.example/" + pw + ": 1\n",
	} {
		f, err := Parse(name, []byte(text), schema)
		if err == nil {
			// The value itself is fine: a fault the caller reports.
			v, scope, _ := f.Lookup([]string{"", "serve"}, "store")
			err = f.Fault(scope, "store", v.Line, "cannot use "+v.Items[0])
		}
		if strings.Contains(err.Error(), pw) {
			t.Errorf("%s: error shows the password: %v", name, err)
		}
	}
}

func FuzzParse(f *testing.F) {
	f.Add([]byte("reserve = [100, \"graphql=50\"]\nmax-total-wait = \"2h\"\n[serve]\nconcurrency = 4\n[flow.run]\nstore = \"x\"\n"), false)
	f.Add([]byte("reserve: [100, graphql=50]\nserve:\n  concurrency: 4\nflow:\n  run:\n    store: x\n"), true)
	f.Add([]byte("store = \"postgres://u:secretpassword@h/db\"\nbogus = 1\n"), false)
	f.Add([]byte("store: postgres://u:secretpassword@h/db\nstore: x\n"), true)
	f.Add([]byte("a: &a [*a, *a]\nb: *a\n"), true)
	f.Add([]byte("[[serve]]\nx = 1\n"), false)
	f.Fuzz(func(t *testing.T, data []byte, isYAML bool) {
		if len(data) > 4096 {
			return
		}
		fuzzbound.Run(t, func() {
			name := "f.toml"
			if isYAML {
				name = "f.yaml"
			}
			file, err := Parse(name, data, schema)
			if err != nil {
				var fe *Error
				if !errors.As(err, &fe) {
					t.Fatalf("not an *Error: %v", err)
				}
				msg := err.Error()
				if !strings.HasPrefix(msg, name) || strings.ContainsAny(msg, "\r\n") {
					t.Fatalf("error %q: want one line naming %s", msg, name)
				}
				for _, p := range urlSecrets(data) {
					if len(p) >= redact.MinKnown && strings.Contains(msg, p) {
						t.Fatalf("error %q shows the URL or password %q", msg, p)
					}
				}
				return
			}
			// What is accepted is only the schema's keys, in its scopes,
			// each with a value; a list only for a list key.
			for scope, keys := range file.values {
				if scope != "" && !schema.Scopes[scope] {
					t.Fatalf("accepted the table %q", scope)
				}
				for key, v := range keys {
					list, ok := schema.Keys[key]
					if !ok || (v.List && !list) || (!v.List && len(v.Items) != 1) {
						t.Fatalf("accepted %q in %q as %+v", key, scope, v)
					}
				}
			}
		})
	})
}
