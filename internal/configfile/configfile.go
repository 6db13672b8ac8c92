// Package configfile reads layover's config files (docs/configuration.md):
// a TOML or a YAML file, chosen by its extension, whose keys are flag
// names, at the top level or in a table named for a command ([serve],
// [flow.run]). It knows nothing of flags: the caller names the keys and
// the command scopes a file may hold, and sets each value through the
// flag it names. Reading is bounded: a file over MaxSize is refused.
package configfile

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"unicode"

	"github.com/BurntSushi/toml"
	"github.com/layoverhq/layover/redact"
	"github.com/layoverhq/layover/yamlerr"
	"go.yaml.in/yaml/v3"
)

// MaxSize is the largest config file read, in bytes (64 KiB): a config
// file is a few dozen lines.
const MaxSize = 64 << 10

// Schema is what a file may hold.
type Schema struct {
	// Keys are the keys a file may set, by name; true marks a key that
	// takes a list (a repeatable flag).
	Keys map[string]bool
	// Scopes are the command tables a file may hold, by command name as
	// typed ("serve", "flow run"; "flow" for every flow command): in TOML
	// [serve] and [flow.run], in YAML a mapping under serve: or flow: run:.
	Scopes map[string]bool
}

// Value is one key's value in a file.
type Value struct {
	// Items is the value as flag text: one item, or a list's in order.
	// Numbers and booleans are in their plain form (4, 2.5, true).
	Items []string
	// List reports whether the file gave a list.
	List bool
	// Line is the key's line in the file, or 0 where it is not known (a
	// TOML key on more than one line, or in an inline table).
	Line int
}

// File is a config file read.
type File struct {
	// Path is the file's name as given.
	Path string
	// values holds the values by scope ("" the top level) and key.
	values map[string]map[string]Value
	// secrets are the URLs the file holds and their passwords, masked in
	// every error about it (urlSecrets).
	secrets []string
}

// Error is a fault of a config file: one line, naming the file, the line
// when known and the key.
type Error struct {
	Path string
	Line int    // 0: not known
	Key  string // dotted as in the file ("serve.concurrency"); "" for the file as a whole
	Msg  string
}

// Error returns "PATH:LINE: KEY: MSG", without the parts not known, on one
// line.
func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString(e.Path)
	if e.Line > 0 {
		fmt.Fprintf(&b, ":%d", e.Line)
	}
	b.WriteString(": ")
	if e.Key != "" {
		b.WriteString(e.Key + ": ")
	}
	b.WriteString(e.Msg)
	return strings.Map(func(r rune) rune {
		if unicode.IsControl(r) {
			return ' '
		}
		return r
	}, b.String())
}

// Read reads and parses the file at path (Parse). A file that cannot be
// read is the os error.
func Read(path string, schema Schema) (*File, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, MaxSize+1))
	if err != nil {
		return nil, err
	}
	return Parse(path, data, schema)
}

// Parse parses data as the config file path: TOML for a name ending in
// .toml, YAML for .yaml or .yml. Every key must be one of schema's, at the
// top level or in one of its scopes' tables, each given once; a value is a
// string, a number, a boolean, or (for a list key) a list of them. A fault
// is an *Error, in which no URL of data, nor its password, appears.
func Parse(path string, data []byte, schema Schema) (*File, error) {
	f := &File{Path: path, values: map[string]map[string]Value{}, secrets: urlSecrets(data)}
	if len(data) > MaxSize {
		return nil, f.fault(0, "", fmt.Sprintf("larger than %d bytes", MaxSize))
	}
	var err error
	switch strings.ToLower(filepath.Ext(path)) {
	case ".toml":
		err = f.parseTOML(data, schema)
	case ".yaml", ".yml":
		err = f.parseYAML(data, schema)
	default:
		err = f.fault(0, "", "a config file's name ends in .toml, .yaml or .yml")
	}
	if err != nil {
		return nil, err
	}
	return f, nil
}

// Lookup returns key's value from the most specific of scopes (the order
// is least to most specific, "" the top level first) that sets it, with
// that scope.
func (f *File) Lookup(scopes []string, key string) (v Value, scope string, ok bool) {
	for _, s := range slices.Backward(scopes) {
		if v, ok := f.values[s][key]; ok {
			return v, s, true
		}
	}
	return Value{}, "", false
}

// Keys returns the keys scope sets, sorted.
func (f *File) Keys(scope string) []string {
	keys := make([]string, 0, len(f.values[scope]))
	for k := range f.values[scope] {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// Fault returns an *Error about key (in scope) of the file, at its line
// when known, with every secret of the file masked in msg.
func (f *File) Fault(scope, key string, line int, msg string) error {
	return f.fault(line, DottedKey(scope, key), msg)
}

// DottedKey names key in scope as the file does: "concurrency",
// "serve.concurrency", "flow.run.store".
func DottedKey(scope, key string) string {
	if scope == "" {
		return key
	}
	return strings.ReplaceAll(scope, " ", ".") + "." + key
}

func (f *File) fault(line int, key, msg string) error {
	return &Error{Path: f.Path, Line: line, Key: redact.String(key, f.secrets...), Msg: redact.String(msg, f.secrets...)}
}

// set records key's value in scope, refusing what the schema does not
// allow.
func (f *File) set(schema Schema, scope, key string, v Value) error {
	list, known := schema.Keys[key]
	switch {
	case !known:
		return f.fault(v.Line, DottedKey(scope, key), "unknown key (the keys are the flags of docs/configuration.md)")
	case v.List && !list:
		return f.fault(v.Line, DottedKey(scope, key), "takes one value, not a list")
	}
	if f.values[scope] == nil {
		f.values[scope] = map[string]Value{}
	}
	if _, dup := f.values[scope][key]; dup {
		return f.fault(v.Line, DottedKey(scope, key), "given twice")
	}
	f.values[scope][key] = v
	return nil
}

// section reports whether name, within scope, names a command table.
func section(schema Schema, scope, name string) (string, bool) {
	s := name
	if scope != "" {
		s = scope + " " + name
	}
	return s, schema.Scopes[s]
}

func (f *File) parseTOML(data []byte, schema Schema) error {
	var m map[string]any
	if _, err := toml.NewDecoder(bytes.NewReader(data)).Decode(&m); err != nil {
		var pe toml.ParseError
		if errors.As(err, &pe) {
			return f.fault(pe.Position.Line, "", "TOML: "+pe.Message)
		}
		return f.fault(0, "", "TOML: "+strings.TrimPrefix(err.Error(), "toml: "))
	}
	t := &tomlReader{f: f, schema: schema, lines: tomlKeyLines(data)}
	return t.table("", m)
}

// tomlReader reads a decoded TOML file's tables.
type tomlReader struct {
	f      *File
	schema Schema
	// lines are the lines each key path was found on (tomlKeyLines).
	lines map[string][]int
}

// line is the line of key in scope, or 0 unless the file names it on
// exactly one line.
func (t *tomlReader) line(scope, key string) int {
	path := strings.Join(append(strings.Fields(scope), key), "\x00")
	if l := t.lines[path]; len(l) == 1 {
		return l[0]
	}
	return 0
}

func (t *tomlReader) table(scope string, m map[string]any) error {
	for _, k := range sortedKeys(m) {
		line := t.line(scope, k)
		if sub, ok := m[k].(map[string]any); ok {
			s, known := section(t.schema, scope, k)
			if !known {
				return t.f.fault(line, DottedKey(scope, k), "unknown command table (a table is named for a command: [serve], [flow.run])")
			}
			if err := t.table(s, sub); err != nil {
				return err
			}
			continue
		}
		v, err := tomlValue(m[k])
		if err != nil {
			return t.f.fault(line, DottedKey(scope, k), err.Error())
		}
		v.Line = line
		if err := t.f.set(t.schema, scope, k, v); err != nil {
			return err
		}
	}
	return nil
}

// tomlKeyLines finds, for each key path (its parts joined by NUL), the
// lines a table header or a key names it on, reading the lines as a
// person does: [a.b] opens a table, `key =` and `a.key =` name a key in
// it, and the lines inside a multi-line string are skipped. The TOML
// library tells no key's line; this is for errors only, and a path found
// on more than one line, or on none, is given no line.
func tomlKeyLines(data []byte) map[string][]int {
	out := map[string][]int{}
	var table []string
	inString := "" // the delimiter of the multi-line string open, if any
	for i, raw := range strings.Split(string(data), "\n") {
		line := strings.TrimSpace(raw)
		if inString != "" {
			if strings.Count(line, inString)%2 == 1 {
				inString = ""
			}
			continue
		}
		switch {
		case line == "" || line[0] == '#':
			continue
		case strings.HasPrefix(line, "[["):
			table = []string{"\x01"} // an array of tables: never one of ours
			continue
		case line[0] == '[':
			if end := strings.IndexByte(line, ']'); end > 0 {
				table = tomlKeyParts(line[1:end])
				key := strings.Join(table, "\x00")
				out[key] = append(out[key], i+1)
			}
			continue
		}
		eq := strings.IndexByte(line, '=')
		if eq <= 0 {
			continue
		}
		path := strings.Join(append(slices.Clone(table), tomlKeyParts(line[:eq])...), "\x00")
		out[path] = append(out[path], i+1)
		for _, d := range []string{`"""`, `'''`} {
			if strings.Count(line[eq+1:], d)%2 == 1 {
				inString = d
				break
			}
		}
	}
	return out
}

// tomlKeyParts splits a dotted key at its dots, each part unquoted.
func tomlKeyParts(key string) []string {
	parts := strings.Split(key, ".")
	for i, p := range parts {
		parts[i] = strings.Trim(strings.TrimSpace(p), `"'`)
	}
	return parts
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// tomlValue is a TOML value as flag text.
func tomlValue(x any) (Value, error) {
	if list, ok := x.([]any); ok {
		v := Value{List: true}
		for _, e := range list {
			s, err := tomlScalar(e)
			if err != nil {
				return Value{}, err
			}
			v.Items = append(v.Items, s)
		}
		return v, nil
	}
	s, err := tomlScalar(x)
	return Value{Items: []string{s}}, err
}

var errScalar = errors.New("want a string, a number or a boolean")

func tomlScalar(x any) (string, error) {
	switch v := x.(type) {
	case string:
		return v, nil
	case int64:
		return strconv.FormatInt(v, 10), nil
	case float64:
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return "", errors.New("want a finite number")
		}
		return strconv.FormatFloat(v, 'g', -1, 64), nil
	case bool:
		return strconv.FormatBool(v), nil
	default: // a date, a time, an array of tables
		return "", errScalar
	}
}

func (f *File) parseYAML(data []byte, schema Schema) (err error) {
	defer func() {
		if r := recover(); r != nil { // the library's own fault: still a bad file
			err = f.fault(0, "", "YAML: the parser failed on this file")
		}
	}()
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if err == io.EOF {
			return nil // an empty file sets nothing
		}
		return f.yamlFault(err)
	}
	var next yaml.Node
	switch err := dec.Decode(&next); {
	case err == nil:
		return f.fault(next.Line, "", "YAML: a second document; a config file holds one")
	case err != io.EOF:
		return f.yamlFault(err)
	}
	if len(doc.Content) != 1 || doc.Content[0].Tag == "!!null" {
		return nil
	}
	root := doc.Content[0]
	if root.Kind != yaml.MappingNode {
		return f.fault(root.Line, "", "YAML: want a mapping of keys to values")
	}
	return f.yamlMapping(schema, "", root)
}

// yamlFault turns the YAML library's error into an *Error at its line.
func (f *File) yamlFault(err error) error {
	line, msg := yamlerr.Place(err)
	return f.fault(line, "", "YAML: "+msg)
}

func (f *File) yamlMapping(schema Schema, scope string, m *yaml.Node) error {
	seen := map[string]bool{}
	for i := 0; i+1 < len(m.Content); i += 2 {
		kn, vn := m.Content[i], m.Content[i+1]
		if kn.Kind != yaml.ScalarNode {
			return f.fault(kn.Line, DottedKey(scope, ""), "YAML: a key must be a plain name")
		}
		k := kn.Value
		if seen[k] {
			return f.fault(kn.Line, DottedKey(scope, k), "given twice")
		}
		seen[k] = true
		if vn.Kind == yaml.MappingNode {
			s, known := section(schema, scope, k)
			if !known {
				return f.fault(kn.Line, DottedKey(scope, k), "unknown command table (a table is named for a command: serve:, flow: run:)")
			}
			if err := f.yamlMapping(schema, s, vn); err != nil {
				return err
			}
			continue
		}
		v, err := yamlValue(vn)
		if err != nil {
			return f.fault(kn.Line, DottedKey(scope, k), err.Error())
		}
		v.Line = kn.Line
		if err := f.set(schema, scope, k, v); err != nil {
			return err
		}
	}
	return nil
}

// yamlValue is a YAML value as flag text: a scalar as written (so 2h, 10
// and 0.5 read as the flag would), a sequence of scalars as a list.
func yamlValue(n *yaml.Node) (Value, error) {
	switch n.Kind {
	case yaml.ScalarNode:
		if n.Tag == "!!null" {
			return Value{}, errors.New("no value")
		}
		return Value{Items: []string{n.Value}}, nil
	case yaml.SequenceNode:
		v := Value{List: true}
		for _, e := range n.Content {
			if e.Kind != yaml.ScalarNode || e.Tag == "!!null" {
				return Value{}, errors.New("a list holds strings, numbers or booleans")
			}
			v.Items = append(v.Items, e.Value)
		}
		return v, nil
	case yaml.AliasNode:
		return Value{}, errors.New("YAML aliases are not read in a config file")
	default:
		return Value{}, errScalar
	}
}

// urlSecrets returns what may be secret in the URLs of data: each URL
// whole (a webhook's path is its secret) and its password (a store's). A
// URL is, in each run of text between spaces, quotes and brackets, a
// scheme, "://" and what follows, less a trailing colon or comma.
func urlSecrets(data []byte) []string {
	var out []string
	add := func(v string) {
		if v != "" && !slices.Contains(out, v) {
			out = append(out, v)
		}
	}
	fields := strings.FieldsFunc(string(data), func(r rune) bool {
		return unicode.IsSpace(r) || strings.ContainsRune("\"'`[]{}", r)
	})
	for _, s := range fields {
		i := strings.Index(s, "://")
		if i < 0 {
			continue
		}
		start := i
		for start > 0 && isSchemeByte(s[start-1]) {
			start--
		}
		if start == i { // no scheme: not a URL
			continue
		}
		// A YAML key's colon, a list's comma: not the URL's.
		u := strings.TrimRight(s[start:], ":,;")
		add(redact.URLPassword(u))
		add(u)
	}
	return out
}

// isSchemeByte reports whether c may be part of a URL's scheme.
func isSchemeByte(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '+' || c == '-' || c == '.'
}
