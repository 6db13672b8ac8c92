package workflow

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/layoverhq/layover/textsafe"
	"github.com/layoverhq/layover/yamlerr"
	"go.yaml.in/yaml/v3"
)

// MaxFileSize is the largest workflow file read: 1 MiB (a prompt file is
// at most MaxPromptBytes).
const MaxFileSize = 1 << 20

// FileError is a bad file: where and what.
type FileError struct {
	// Path is the file as ParseFile was given it; "" from Parse.
	Path string
	// Line and Column locate the fault, from 1; 0 when it is about the
	// file as a whole (its size).
	Line, Column int
	// Field is the key at fault as a path, e.g. "tasks.review.needs"; ""
	// for the file as a whole.
	Field string
	// Msg says what is wrong, in one line.
	Msg string
}

// Error returns the error as one line: "nightly.yaml:7:
// tasks.review.needs: no task "fecth" (known: …)".
func (e *FileError) Error() string {
	var b strings.Builder
	switch {
	case e.Path != "" && e.Line > 0:
		fmt.Fprintf(&b, "%s:%d: ", e.Path, e.Line)
	case e.Path != "":
		b.WriteString(e.Path + ": ")
	case e.Line > 0:
		fmt.Fprintf(&b, "line %d: ", e.Line)
	}
	if e.Field != "" {
		b.WriteString(e.Field + ": ")
	}
	b.WriteString(e.Msg)
	return strings.Map(func(r rune) rune {
		if unicode.IsControl(r) {
			return ' '
		}
		return r
	}, b.String())
}

// ParseFile reads a workflow file: YAML for a name ending in .yaml or
// .yml, JSON for .json, else JSON when the content is valid JSON and YAML
// otherwise. A file over MaxFileSize is refused. A fault of the file is a
// *FileError with Path set; a file that cannot be read is the os error.
func ParseFile(path string) (Definition, error) {
	f, err := os.Open(path)
	if err != nil {
		return Definition{}, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, MaxFileSize+1))
	if err != nil {
		return Definition{}, err
	}
	format := "yaml"
	switch strings.ToLower(filepath.Ext(path)) {
	case ".yaml", ".yml":
	case ".json":
		format = "json"
	default:
		if t := bytes.TrimLeft(bytes.TrimPrefix(data, bom), " \t\r\n"); len(t) > 0 && t[0] == '{' && json.Valid(t) {
			format = "json"
		}
	}
	d, err := Parse(data, filepath.Dir(path), format)
	if fe, ok := errors.AsType[*FileError](err); ok {
		fe.Path = path
	}
	return d, err
}

// bom is the UTF-8 byte-order mark, which a file may begin with.
var bom = []byte("\ufeff")

// Parse reads a workflow from data in format "yaml" or "json", reading
// each prompt_file relative to dir, and returns it with its defaults set
// (WithDefaults) once Validate accepts it. Both formats follow the same
// rules (docs/workflows.md): keys exactly as documented, each once; every
// fault is a *FileError naming its line and field.
func Parse(data []byte, dir, format string) (Definition, error) {
	if len(data) > MaxFileSize {
		return Definition{}, &FileError{Msg: fmt.Sprintf("larger than %d bytes (1 MiB)", MaxFileSize)}
	}
	if format != "yaml" && format != "json" {
		return Definition{}, fmt.Errorf("workflow: unknown format %q (yaml or json)", format)
	}
	data = bytes.TrimPrefix(data, bom)
	if err := checkText(data); err != nil {
		return Definition{}, err
	}
	var root *yaml.Node
	var err error
	if format == "json" {
		root, err = jsonRoot(data)
	} else {
		root, err = yamlRoot(data)
	}
	if err != nil {
		return Definition{}, err
	}
	p := &parser{dir: dir, pos: map[string]*yaml.Node{"": root}}
	d, err := p.definition(root)
	if err != nil {
		return Definition{}, err
	}
	d = d.WithDefaults()
	if pr := d.validate(); pr != nil {
		return Definition{}, p.locate(pr)
	}
	return d, nil
}

// checkText refuses what is not UTF-8 text, or holds a control character
// other than tab, line feed and carriage return, or a line or paragraph
// separator (which would make YAML's lines differ from everyone's).
func checkText(data []byte) error {
	line, col := 1, 1
	for i := 0; i < len(data); {
		r, size := utf8.DecodeRune(data[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			return &FileError{Line: line, Column: col, Msg: fmt.Sprintf("byte %#x is not UTF-8 text", data[i])}
		case r == '\n':
			line, col = line+1, 0
		case (unicode.IsControl(r) && r != '\t' && r != '\r') || r == '\u2028' || r == '\u2029':
			return &FileError{Line: line, Column: col, Msg: fmt.Sprintf("the control character %U", r)}
		}
		i += size
		col++
	}
	return nil
}

// yamlRoot parses one YAML document into its root node.
func yamlRoot(data []byte) (root *yaml.Node, err error) {
	defer func() {
		if r := recover(); r != nil { // the parser's own fault: still a bad file
			root, err = nil, &FileError{Line: 1, Column: 1, Msg: "the YAML parser failed on this file"}
		}
	}()
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if err == io.EOF {
			return nil, &FileError{Line: 1, Column: 1, Msg: "the file is empty"}
		}
		return nil, yamlError(err)
	}
	var next yaml.Node
	switch err := dec.Decode(&next); {
	case err == nil:
		return nil, &FileError{Line: next.Line, Column: next.Column, Msg: "a second YAML document: a file holds one workflow"}
	case err != io.EOF:
		return nil, yamlError(err)
	}
	if doc.Kind != yaml.DocumentNode || len(doc.Content) != 1 || isNull(doc.Content[0]) {
		return nil, &FileError{Line: 1, Column: 1, Msg: "the file is empty"}
	}
	return doc.Content[0], nil
}

// yamlError turns the YAML library's error into a *FileError at its line.
func yamlError(err error) error {
	line, msg := yamlerr.Place(err)
	return &FileError{Line: line, Msg: "YAML: " + msg}
}

// maxJSONDepth bounds the nesting of a JSON file: a workflow nests four
// deep (the file, tasks, a task, a list), so deeper is never one.
const maxJSONDepth = 32

// jsonRoot reads one JSON value into the nodes YAML would give it, with
// the line and column of each value, so that both formats are read by
// the same rules. Like YAML, it keeps every key of an object, a duplicate
// too, for the reader to refuse.
func jsonRoot(data []byte) (*yaml.Node, error) {
	lines := lineStarts(data)
	at := func(off int) (int, int) {
		i := sort.Search(len(lines), func(i int) bool { return lines[i] > off }) - 1
		return i + 1, off - lines[i] + 1
	}
	fail := func(off int, format string, args ...any) error {
		line, col := at(off)
		return &FileError{Line: line, Column: col, Msg: "JSON: " + fmt.Sprintf(format, args...)}
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var root *yaml.Node
	var stack []*yaml.Node
	for {
		off := skipSeparators(data, int(dec.InputOffset()))
		tok, err := dec.Token()
		if err == io.EOF {
			if len(stack) > 0 {
				return nil, fail(len(data), "the file ends inside a value")
			}
			if root == nil {
				return nil, &FileError{Line: 1, Column: 1, Msg: "the file is empty"}
			}
			return root, nil
		}
		if err != nil {
			if se, ok := errors.AsType[*json.SyntaxError](err); ok {
				return nil, fail(max(int(se.Offset)-1, 0), "%s", se.Error())
			}
			if errors.Is(err, io.ErrUnexpectedEOF) {
				return nil, fail(len(data), "the file ends inside a value")
			}
			return nil, fail(off, "%v", err)
		}
		line, col := at(off)
		n := &yaml.Node{Kind: yaml.ScalarNode, Line: line, Column: col}
		switch v := tok.(type) {
		case json.Delim:
			switch v {
			case '{':
				n.Kind, n.Tag = yaml.MappingNode, "!!map"
			case '[':
				n.Kind, n.Tag = yaml.SequenceNode, "!!seq"
			default: // '}' or ']'
				stack = stack[:len(stack)-1]
				continue
			}
		case string:
			n.Tag, n.Value, n.Style = "!!str", v, yaml.DoubleQuotedStyle
		case json.Number:
			n.Tag, n.Value = "!!int", v.String()
			if strings.ContainsAny(n.Value, ".eE") {
				n.Tag = "!!float"
			}
		case bool:
			n.Tag, n.Value = "!!bool", strconv.FormatBool(v)
		case nil:
			n.Tag, n.Value = "!!null", "null"
		}
		switch {
		case len(stack) > 0:
			top := stack[len(stack)-1]
			top.Content = append(top.Content, n)
		case root != nil:
			return nil, fail(off, "a second value after the workflow")
		default:
			root = n
		}
		if n.Kind != yaml.ScalarNode {
			if len(stack) == maxJSONDepth {
				return nil, fail(off, "nested deeper than %d", maxJSONDepth)
			}
			stack = append(stack, n)
		}
	}
}

// lineStarts returns the offset at which each line of data begins.
func lineStarts(data []byte) []int {
	starts := []int{0}
	for i, b := range data {
		if b == '\n' {
			starts = append(starts, i+1)
		}
	}
	return starts
}

// skipSeparators returns the offset of the next JSON token at or after
// off: what lies between two tokens is space, commas and colons.
func skipSeparators(data []byte, off int) int {
	for off < len(data) && strings.IndexByte(" \t\r\n,:", data[off]) >= 0 {
		off++
	}
	return off
}

// The keys of each mapping of a file, in the order docs/workflows.md
// lists them.
var (
	topKeys     = []string{"name", "on_quota", "attempts", "budget", "timeout", "tasks"}
	onQuotaKeys = []string{"action", "max_wait"}
	budgetKeys  = []string{"runs"}
	taskKeys    = []string{"needs", "run", "agent", "prompt", "prompt_file", "resume", "check", "verify", "goal", "quota", "env"}
)

// parser reads a file's nodes into a Definition, keeping where each field
// was written so that Validate's problems can be placed.
type parser struct {
	dir string
	// pos is the node of each field by its path: a value's node, a task's
	// key node ("tasks.review"), the root for "".
	pos map[string]*yaml.Node
}

// fail is a fault at node n.
func fail(n *yaml.Node, field, format string, args ...any) error {
	return &FileError{Line: n.Line, Column: n.Column, Field: field, Msg: fmt.Sprintf(format, args...)}
}

// locate places a problem Validate found at the node of its field, or of
// the nearest enclosing field written.
func (p *parser) locate(pr *problem) error {
	fe := pr.error()
	for f := pr.field; ; {
		if n, ok := p.pos[f]; ok {
			if f == pr.field && pr.index >= 0 && n.Kind == yaml.SequenceNode && pr.index < len(n.Content) {
				n = n.Content[pr.index]
			}
			fe.Line, fe.Column = n.Line, n.Column
			return fe
		}
		i := strings.LastIndexAny(f, ".[")
		if i < 0 {
			f = ""
			continue
		}
		f = f[:i]
	}
}

// definition reads the root mapping.
func (p *parser) definition(root *yaml.Node) (Definition, error) {
	var d Definition
	if root.Kind != yaml.MappingNode {
		return d, fail(root, "", "a workflow is a mapping of keys (%s), not %s", strings.Join(topKeys, ", "), describe(root))
	}
	err := p.mapping(root, "", topKeys, func(key string, v *yaml.Node) error {
		var err error
		switch key {
		case "name":
			d.Name, err = p.text(v, key)
		case "on_quota":
			err = p.mapping(v, key, onQuotaKeys, func(k string, v *yaml.Node) error {
				var err error
				if k == "action" {
					d.OnQuota.Action, err = p.text(v, "on_quota.action")
				} else {
					d.OnQuota.MaxWait, err = p.duration(v, "on_quota.max_wait")
				}
				return err
			})
		case "attempts":
			d.Attempts, err = p.integer(v, key, 1, MaxAttempts)
		case "budget":
			err = p.mapping(v, key, budgetKeys, func(_ string, v *yaml.Node) error {
				var err error
				d.Budget.Runs, err = p.integer(v, "budget.runs", 1, MaxBudgetRuns)
				return err
			})
		case "timeout":
			d.Timeout, err = p.duration(v, key)
		case "tasks":
			d.Tasks, err = p.tasks(v)
		}
		return err
	})
	if err != nil {
		return d, err
	}
	for _, key := range []string{"name", "tasks"} {
		if _, ok := p.pos[key]; !ok {
			return d, fail(root, "", "no %q: a workflow needs a name and tasks", key)
		}
	}
	return d, nil
}

// tasks reads the tasks mapping, in the order written.
func (p *parser) tasks(v *yaml.Node) ([]Task, error) {
	if v.Kind != yaml.MappingNode {
		return nil, fail(v, "tasks", "tasks is a mapping of task names to tasks, not %s", describe(v))
	}
	switch n := len(v.Content) / 2; {
	case n == 0:
		return nil, fail(v, "tasks", "a workflow needs at least one task")
	case n > MaxTasks:
		return nil, fail(v, "tasks", "%d tasks: at most %d", n, MaxTasks)
	}
	var tasks []Task
	err := p.mapping(v, "tasks", nil, func(name string, v *yaml.Node) error {
		if !namePattern().MatchString(name) {
			return fail(p.pos["tasks."+name], "tasks", "%s", badName("task name", name))
		}
		t, err := p.task(v, "tasks."+name, name)
		tasks = append(tasks, t)
		return err
	})
	return tasks, err
}

// task reads one task's mapping: field is "tasks.<name>".
func (p *parser) task(v *yaml.Node, field, name string) (Task, error) {
	t := Task{Name: name}
	texts := map[string]*string{
		"run": &t.Run, "prompt": &t.Prompt, "prompt_file": &t.PromptFile, "resume": &t.Resume,
		"check": &t.Check, "verify": &t.Verify, "goal": &t.Goal,
	}
	if v.Kind != yaml.MappingNode {
		return t, fail(v, field, "a task is a mapping of keys (run or agent, needs, …), not %s", describe(v))
	}
	err := p.mapping(v, field, taskKeys, func(key string, v *yaml.Node) error {
		f := field + "." + key
		if dst, ok := texts[key]; ok {
			var err error
			*dst, err = p.text(v, f)
			return err
		}
		var err error
		switch key {
		case "needs":
			t.Needs, err = p.list(v, f, true)
		case "agent":
			if v.Kind == yaml.ScalarNode {
				var a string
				a, err = p.text(v, f)
				t.Agent = []string{a}
			} else if t.Agent, err = p.list(v, f, false); err == nil && len(t.Agent) == 0 {
				err = fail(v, f, "name at least one agent (known: %s)", knownAgents())
			}
		case "quota":
			t.Quota, err = p.list(v, f, false)
		case "env":
			t.Env, err = p.list(v, f, false)
		}
		return err
	})
	if err != nil {
		return t, err
	}
	at := p.pos[field]
	switch {
	case t.Run != "" && len(t.Agent) > 0:
		return t, fail(at, field, "a task has one of run or agent, not both")
	case t.Run == "" && len(t.Agent) == 0:
		return t, fail(at, field, "a task needs one of run or agent")
	case len(t.Agent) == 0:
		return t, nil // Validate refuses a prompt or resume
	case t.Prompt != "" && t.PromptFile != "":
		return t, fail(p.pos[field+".prompt_file"], field, "an agent task has one of prompt or prompt_file, not both")
	case t.Prompt == "" && t.PromptFile == "":
		return t, fail(at, field, "an agent task needs a prompt or a prompt_file")
	case t.PromptFile != "":
		t.Prompt, err = p.readPrompt(p.pos[field+".prompt_file"], field+".prompt_file", t.PromptFile)
	}
	return t, err
}

// readPrompt reads a prompt file: a regular file of UTF-8 text, at most
// MaxPromptBytes, not empty, inside the workflow file's directory (a path
// out of it, through a symbolic link too, is refused: a shared workflow
// file cannot send the agent a file of its user's elsewhere).
func (p *parser) readPrompt(n *yaml.Node, field, name string) (string, error) {
	if !filepath.IsLocal(name) {
		return "", fail(n, field, "%q: a prompt file is a path inside the workflow file's directory", name)
	}
	root, err := os.OpenRoot(cmp.Or(p.dir, "."))
	if err != nil {
		return "", fail(n, field, "%v", err)
	}
	defer root.Close()
	// Stat first: opening a FIFO would wait for a writer.
	info, err := root.Stat(name)
	if err != nil {
		return "", fail(n, field, "%q: %v", name, unwrapPath(err))
	}
	if !info.Mode().IsRegular() {
		return "", fail(n, field, "%q is not a regular file", name)
	}
	f, err := root.Open(name)
	if err != nil {
		return "", fail(n, field, "%q: %v", name, unwrapPath(err))
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, MaxPromptBytes+1))
	switch {
	case err != nil:
		return "", fail(n, field, "%q: %v", name, unwrapPath(err))
	case len(data) > MaxPromptBytes:
		return "", fail(n, field, "%q is larger than %d KiB, the most a brief may be", name, MaxPromptBytes>>10)
	case !utf8.Valid(data):
		return "", fail(n, field, "%q is not UTF-8 text", name)
	case len(bytes.TrimSpace(data)) == 0:
		return "", fail(n, field, "%q is empty", name)
	}
	return string(data), nil
}

// unwrapPath returns a *fs.PathError's cause, the path being named
// already.
func unwrapPath(err error) error {
	if pe, ok := errors.AsType[*fs.PathError](err); ok {
		return pe.Err
	}
	return err
}

// mapping calls fn for each key of the mapping n, in the order written,
// with the key's value: a key not in known (nil: any key) is refused, as
// is a key written twice, an alias and a key without a value. fn's key is
// the key's text; each value's node is recorded under field.key.
func (p *parser) mapping(n *yaml.Node, field string, known []string, fn func(key string, v *yaml.Node) error) error {
	if err := p.plain(n, field); err != nil {
		return err
	}
	if n.Kind != yaml.MappingNode {
		return fail(n, field, "want a mapping of keys (%s), not %s", strings.Join(known, ", "), describe(n))
	}
	seen := make(map[string]*yaml.Node, len(n.Content)/2)
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if k.Kind != yaml.ScalarNode {
			return fail(k, field, "a key is a name, not %s", describe(k))
		}
		if first, dup := seen[k.Value]; dup {
			return fail(k, field, "key %q appears twice (first on line %d)", k.Value, first.Line)
		}
		seen[k.Value] = k
		if known != nil && !slices.Contains(known, k.Value) {
			return fail(k, field, "unknown key %q (known: %s)", k.Value, strings.Join(known, ", "))
		}
		f := join(field, k.Value)
		if known == nil { // a task: placed at its name
			p.pos[f] = k
		} else {
			p.pos[f] = v
		}
		if err := p.plain(v, f); err != nil {
			return err
		}
		if err := fn(k.Value, v); err != nil {
			return err
		}
	}
	return nil
}

func join(field, key string) string {
	if field == "" {
		return key
	}
	return field + "." + key
}

// plain refuses an alias and a missing value.
func (p *parser) plain(v *yaml.Node, field string) error {
	switch {
	case v.Kind == yaml.AliasNode:
		return fail(v, field, "an alias (*%s): write the value out", v.Value)
	case isNull(v):
		return fail(v, field, "no value: give one, or leave the key out")
	}
	return nil
}

func isNull(v *yaml.Node) bool { return v.Kind == yaml.ScalarNode && v.ShortTag() == "!!null" }

// text reads a string that is not blank.
func (p *parser) text(v *yaml.Node, field string) (string, error) {
	if err := p.plain(v, field); err != nil {
		return "", err
	}
	if v.Kind != yaml.ScalarNode || v.ShortTag() != "!!str" {
		return "", fail(v, field, "want a string, not %s", describe(v))
	}
	if strings.TrimSpace(v.Value) == "" {
		return "", fail(v, field, "empty: give a value, or leave the key out")
	}
	return v.Value, nil
}

// list reads a list of strings; names (needs) may also be numbers or
// true/false as YAML reads them, since a task may be named "1".
func (p *parser) list(v *yaml.Node, field string, names bool) ([]string, error) {
	if v.Kind != yaml.SequenceNode {
		return nil, fail(v, field, "want a list, as [a, b], not %s", describe(v))
	}
	var out []string
	for _, e := range v.Content {
		if err := p.plain(e, field); err != nil {
			return nil, err
		}
		if names && e.Kind == yaml.ScalarNode {
			out = append(out, e.Value)
			continue
		}
		s, err := p.text(e, field)
		if err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, nil
}

// integer reads a whole number from lo to hi.
func (p *parser) integer(v *yaml.Node, field string, lo, hi int) (int, error) {
	var n int64
	if v.Kind != yaml.ScalarNode || v.ShortTag() != "!!int" || v.Decode(&n) != nil {
		return 0, fail(v, field, "want a whole number from %d to %d, not %s", lo, hi, describe(v))
	}
	if n < int64(lo) || n > int64(hi) {
		return 0, fail(v, field, "%d: use %d to %d", n, lo, hi)
	}
	return int(n), nil
}

// duration reads a duration (ParseDuration); its bounds are Validate's.
func (p *parser) duration(v *yaml.Node, field string) (time.Duration, error) {
	if v.Kind != yaml.ScalarNode || (v.ShortTag() != "!!str" && v.ShortTag() != "!!int") {
		return 0, fail(v, field, "want a duration, as 90s, 6h or 2d, not %s", describe(v))
	}
	d, err := ParseDuration(v.Value)
	if err != nil {
		return 0, fail(v, field, "%v", err)
	}
	return d, nil
}

// describe names what a node holds, for an error.
func describe(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.AliasNode:
		return "an alias"
	}
	switch n.ShortTag() {
	case "!!str":
		return fmt.Sprintf("the string %q", clip(n.Value))
	case "!!int", "!!float":
		return "the number " + clip(n.Value)
	case "!!bool":
		return clip(n.Value)
	case "!!null":
		return "no value"
	}
	return fmt.Sprintf("a value tagged %q", clip(n.Tag))
}

// clip shortens s for a message, as one safe line.
func clip(s string) string { return textsafe.Line(s, 48) }

// ParseDuration reads a duration as time.ParseDuration does, with "d"
// for days (24h) as a unit too: "2d", "1d12h", "90m". It does not bound
// the value: Validate refuses a negative one or one over MaxDuration.
func ParseDuration(s string) (time.Duration, error) {
	if !strings.Contains(s, "d") {
		d, err := time.ParseDuration(s)
		if err != nil {
			return 0, durationError(s)
		}
		return d, nil
	}
	// Each "<number>d" is taken out and added as hours; a unit of Go's has
	// no 'd', so what is left is a Go duration, or empty.
	rest, sign := s, time.Duration(1)
	if r, ok := strings.CutPrefix(rest, "-"); ok {
		rest, sign = r, -1
	} else {
		rest = strings.TrimPrefix(rest, "+")
	}
	var total time.Duration
	var other strings.Builder
	for rest != "" {
		i := strings.IndexFunc(rest, func(r rune) bool { return (r < '0' || r > '9') && r != '.' })
		if i <= 0 {
			return 0, durationError(s)
		}
		j := strings.IndexFunc(rest[i:], func(r rune) bool { return (r >= '0' && r <= '9') || r == '.' })
		if j < 0 {
			j = len(rest) - i
		}
		num, unit := rest[:i], rest[i:i+j]
		rest = rest[i+j:]
		if unit != "d" {
			other.WriteString(num + unit)
			continue
		}
		h, err := time.ParseDuration(num + "h")
		if err != nil || h > MaxDuration {
			return 0, fmt.Errorf("%q: at most 30d", s)
		}
		total += 24 * h
		if total > 2*MaxDuration {
			return 0, fmt.Errorf("%q: at most 30d", s)
		}
	}
	if other.Len() > 0 {
		d, err := time.ParseDuration(other.String())
		if err != nil {
			return 0, durationError(s)
		}
		if d > MaxDuration {
			return 0, fmt.Errorf("%q: at most 30d", s)
		}
		total += d
	}
	return sign * total, nil
}

func durationError(s string) error {
	return fmt.Errorf("%q is not a duration: use a number and a unit, as 90s, 6h or 2d (units d, h, m, s, ms)", clip(s))
}
