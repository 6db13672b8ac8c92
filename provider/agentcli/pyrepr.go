package agentcli

import (
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Limits on a Python literal.
const (
	maxReprDepth = 32
	maxReprLen   = 64 << 10
)

var errRepr = errors.New("not a Python literal")

// pyLiteral parses the Python literal (a repr as print(str(e)) shows a
// dict: single- or double-quoted strings with backslash escapes, numbers,
// True, False, None, dicts, lists and tuples; JSON's true, false and null
// too, since a body the SDK could not decode is printed as JSON) at the
// start of s, and
// returns it as JSON and the number of bytes read. Dict keys that are not
// strings become their text; a tuple becomes an array. Anything else (a
// set, an object repr such as <Foo at 0x…>, a cut-off text) fails.
func pyLiteral(s string) ([]byte, int, error) {
	if len(s) > maxReprLen {
		s = s[:maxReprLen]
	}
	p := reprParser{s: s}
	v, err := p.value(0)
	if err != nil {
		return nil, 0, err
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil, 0, err
	}
	return b, p.i, nil
}

type reprParser struct {
	s string
	i int
}

func (p *reprParser) space() {
	for p.i < len(p.s) {
		switch p.s[p.i] {
		case ' ', '\t', '\n', '\r':
			p.i++
		default:
			return
		}
	}
}

func (p *reprParser) value(depth int) (any, error) {
	if depth > maxReprDepth {
		return nil, errRepr
	}
	p.space()
	if p.i >= len(p.s) {
		return nil, errRepr
	}
	switch c := p.s[p.i]; {
	case c == '{':
		return p.dict(depth)
	case c == '[':
		return p.list(depth, ']')
	case c == '(':
		return p.list(depth, ')')
	case c == '\'' || c == '"':
		return p.str()
	case c == '-' || c == '+' || c >= '0' && c <= '9' || c == '.':
		return p.number()
	}
	for _, kw := range []struct {
		word string
		v    any
	}{{"True", true}, {"False", false}, {"None", nil}, {"true", true}, {"false", false}, {"null", nil}} {
		if strings.HasPrefix(p.s[p.i:], kw.word) && !identByte(p.s, p.i+len(kw.word)) {
			p.i += len(kw.word)
			return kw.v, nil
		}
	}
	return nil, errRepr
}

// identByte reports whether s[i] continues an identifier.
func identByte(s string, i int) bool {
	if i >= len(s) {
		return false
	}
	c := s[i]
	return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

func (p *reprParser) dict(depth int) (any, error) {
	p.i++ // {
	out := map[string]any{}
	for {
		p.space()
		if p.i < len(p.s) && p.s[p.i] == '}' {
			p.i++
			return out, nil
		}
		k, err := p.value(depth + 1)
		if err != nil {
			return nil, err
		}
		var key string
		switch k := k.(type) {
		case string:
			key = k
		case json.Number:
			key = string(k)
		case bool:
			key = strconv.FormatBool(k)
		case nil:
			key = "None"
		default:
			return nil, errRepr
		}
		p.space()
		if p.i >= len(p.s) || p.s[p.i] != ':' {
			return nil, errRepr
		}
		p.i++
		v, err := p.value(depth + 1)
		if err != nil {
			return nil, err
		}
		out[key] = v
		p.space()
		if p.i >= len(p.s) {
			return nil, errRepr
		}
		switch p.s[p.i] {
		case ',':
			p.i++
		case '}':
			p.i++
			return out, nil
		default:
			return nil, errRepr
		}
	}
}

func (p *reprParser) list(depth int, end byte) (any, error) {
	p.i++
	out := []any{}
	for {
		p.space()
		if p.i < len(p.s) && p.s[p.i] == end {
			p.i++
			return out, nil
		}
		v, err := p.value(depth + 1)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
		p.space()
		if p.i >= len(p.s) {
			return nil, errRepr
		}
		switch p.s[p.i] {
		case ',':
			p.i++
		case end:
			p.i++
			return out, nil
		default:
			return nil, errRepr
		}
	}
}

func (p *reprParser) number() (any, error) {
	start := p.i
	if p.s[p.i] == '-' || p.s[p.i] == '+' {
		p.i++
	}
	digits := 0
	for p.i < len(p.s) {
		c := p.s[p.i]
		if c >= '0' && c <= '9' {
			digits++
		} else if c != '.' && c != 'e' && c != 'E' && c != '_' && !((c == '-' || c == '+') && (p.s[p.i-1] == 'e' || p.s[p.i-1] == 'E')) {
			break
		}
		p.i++
	}
	text := strings.ReplaceAll(p.s[start:p.i], "_", "")
	if digits == 0 {
		return nil, errRepr
	}
	f, err := strconv.ParseFloat(text, 64)
	if err != nil {
		return nil, errRepr
	}
	// Keep integers exact; JSON has no infinities.
	if _, err := strconv.ParseInt(text, 10, 64); err == nil {
		return json.Number(strings.TrimPrefix(text, "+")), nil
	}
	return json.Number(strconv.FormatFloat(f, 'g', -1, 64)), nil
}

// str reads a quoted string with Python's escapes.
func (p *reprParser) str() (any, error) {
	q := p.s[p.i]
	p.i++
	var b strings.Builder
	for p.i < len(p.s) {
		c := p.s[p.i]
		switch {
		case c == q:
			p.i++
			return b.String(), nil
		case c == '\n':
			return nil, errRepr
		case c != '\\':
			b.WriteByte(c)
			p.i++
			continue
		}
		// An escape.
		p.i++
		if p.i >= len(p.s) {
			return nil, errRepr
		}
		e := p.s[p.i]
		p.i++
		switch e {
		case '\\', '\'', '"':
			b.WriteByte(e)
		case 'n':
			b.WriteByte('\n')
		case 'r':
			b.WriteByte('\r')
		case 't':
			b.WriteByte('\t')
		case 'a', 'b', 'f', 'v', '0':
			b.WriteByte(' ')
		case 'x', 'u', 'U':
			n := map[byte]int{'x': 2, 'u': 4, 'U': 8}[e]
			if p.i+n > len(p.s) {
				return nil, errRepr
			}
			r, err := strconv.ParseUint(p.s[p.i:p.i+n], 16, 32)
			if err != nil || r > utf8.MaxRune {
				return nil, errRepr
			}
			b.WriteRune(rune(r))
			p.i += n
		case '\n':
			// A line continuation.
		default:
			b.WriteByte('\\')
			b.WriteByte(e)
		}
	}
	return nil, errRepr
}
