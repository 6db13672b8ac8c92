package receipt

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Field names, in the schema's order (missing fields are reported in it).
var (
	topFields       = []string{"schema", "version", "status", "reason", "issued_at_ms", "resume_after_ms", "resume_by_ms", "bindings", "ownership", "fresh_approval_required"}
	bindingFields   = []string{"scope_digest", "request_digest", "plan_digest"}
	ownershipFields = []string{"disposition", "mode", "wakeup_digest", "cancellation_digest"}
)

// Decode reads one receipt strictly and checks its form (Check). An unknown,
// missing or duplicate field at any level, a value of the wrong type (an
// integer must be written as one: not 1.0, 1e3 or "1", and at most 2^53-1),
// anything after the object but white space, invalid UTF-8, an input larger
// than MaxSize, or any value Check refuses is a *FieldError.
func Decode(data []byte) (*Receipt, error) {
	if len(data) > MaxSize {
		return nil, fieldErr("", "larger than %d bytes", MaxSize)
	}
	if !utf8.Valid(data) {
		return nil, fieldErr("", "not valid UTF-8")
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	p := &parser{dec: dec}
	var r Receipt
	err := p.object("", topFields, func(key, field string) error {
		var err error
		switch key {
		case "schema":
			var n int64
			n, err = p.integer(field)
			if err == nil && n != Schema {
				return fieldErr(field, "want 1")
			}
			r.Schema = int(n)
		case "version":
			r.Version, err = p.str(field)
		case "status":
			r.Status, err = p.str(field)
		case "reason":
			var s string
			s, err = p.str(field)
			r.Reason = Reason(s)
		case "issued_at_ms":
			r.IssuedAtMs, err = p.integer(field)
		case "resume_after_ms":
			r.ResumeAfterMs, err = p.integer(field)
		case "resume_by_ms":
			r.ResumeByMs, err = p.integer(field)
		case "fresh_approval_required":
			r.FreshApprovalRequired, err = p.boolean(field)
		case "bindings":
			b := &r.Bindings
			err = p.object(field, bindingFields, func(key, field string) error {
				var err error
				switch key {
				case "scope_digest":
					b.ScopeDigest, err = p.str(field)
				case "request_digest":
					b.RequestDigest, err = p.str(field)
				case "plan_digest":
					b.PlanDigest, err = p.nullableStr(field)
				}
				return err
			})
		case "ownership":
			o := &r.Ownership
			err = p.object(field, ownershipFields, func(key, field string) error {
				var err error
				switch key {
				case "disposition":
					o.Disposition, err = p.str(field)
				case "mode":
					o.Mode, err = p.str(field)
				case "wakeup_digest":
					o.WakeupDigest, err = p.nullableStr(field)
				case "cancellation_digest":
					o.CancellationDigest, err = p.nullableStr(field)
				}
				return err
			})
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, fieldErr("", "trailing data after the receipt object")
	}
	if err := r.Check(); err != nil {
		return nil, err
	}
	return &r, nil
}

// parser reads a receipt token by token, so that duplicate keys, which
// json.Unmarshal silently accepts, are seen.
type parser struct {
	dec *json.Decoder
}

func (p *parser) token(field string) (json.Token, error) {
	t, err := p.dec.Token()
	if err == nil {
		return t, nil
	}
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		if field == "" {
			return nil, fieldErr("", "unexpected end of input; want a JSON object")
		}
		return nil, fieldErr(field, "unexpected end of input")
	}
	var se *json.SyntaxError
	if errors.As(err, &se) {
		return nil, fieldErr(field, "invalid JSON at byte %d: %s", se.Offset, se.Error())
	}
	return nil, fieldErr(field, "invalid JSON: %v", err)
}

// object reads an object holding exactly the fields known; member reads the
// value of each key as it comes.
func (p *parser) object(path string, known []string, member func(key, field string) error) error {
	t, err := p.token(path)
	if err != nil {
		return err
	}
	if d, ok := t.(json.Delim); !ok || d != '{' {
		if path == "" {
			return fieldErr("", "want a JSON object, got %s", describe(t))
		}
		return fieldErr(path, "want an object, got %s", describe(t))
	}
	seen := make(map[string]bool, len(known))
	for p.dec.More() {
		t, err := p.token(path)
		if err != nil {
			return err
		}
		key, ok := t.(string)
		if !ok { // unreachable: the decoder returns keys as strings
			return fieldErr(path, "want a field name, got %s", describe(t))
		}
		field := join(path, key)
		if !contains(known, key) {
			return fieldErr(join(path, showKey(key)), "unknown field")
		}
		if seen[key] {
			return fieldErr(field, "duplicate field")
		}
		seen[key] = true
		if err := member(key, field); err != nil {
			return err
		}
	}
	if _, err := p.token(path); err != nil { // the closing brace
		return err
	}
	for _, k := range known {
		if !seen[k] {
			return fieldErr(join(path, k), "missing field")
		}
	}
	return nil
}

func (p *parser) integer(field string) (int64, error) {
	t, err := p.token(field)
	if err != nil {
		return 0, err
	}
	num, ok := t.(json.Number)
	if !ok {
		return 0, fieldErr(field, "want an integer, got %s", describe(t))
	}
	s := string(num)
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < '0' || c > '9' {
			if c == '-' && i == 0 && !strings.ContainsAny(s, ".eE") {
				return 0, fieldErr(field, "want a non-negative integer, got %s", clip(s))
			}
			return 0, fieldErr(field, "want an integer, got %s", clip(s))
		}
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n > MaxMs {
		return 0, fieldErr(field, "integer %s is beyond 2^53-1", clip(s))
	}
	return n, nil
}

func (p *parser) str(field string) (string, error) {
	t, err := p.token(field)
	if err != nil {
		return "", err
	}
	s, ok := t.(string)
	if !ok {
		return "", fieldErr(field, "want a string, got %s", describe(t))
	}
	return s, nil
}

// nullableStr reads a string or null; null is "", so "" itself is refused.
func (p *parser) nullableStr(field string) (string, error) {
	t, err := p.token(field)
	if err != nil {
		return "", err
	}
	switch v := t.(type) {
	case nil:
		return "", nil
	case string:
		if v == "" {
			return "", fieldErr(field, "want 64 lowercase hex digits or null, got an empty string")
		}
		return v, nil
	}
	return "", fieldErr(field, "want a string or null, got %s", describe(t))
}

func (p *parser) boolean(field string) (bool, error) {
	t, err := p.token(field)
	if err != nil {
		return false, err
	}
	b, ok := t.(bool)
	if !ok {
		return false, fieldErr(field, "want true or false, got %s", describe(t))
	}
	return b, nil
}

// describe names a token's type (never a string's content: a misplaced
// secret must not reach an error message).
func describe(t json.Token) string {
	switch v := t.(type) {
	case nil:
		return "null"
	case bool:
		return "a boolean"
	case string:
		return "a string"
	case json.Number:
		return "the number " + clip(string(v))
	case json.Delim:
		switch v {
		case '{':
			return "an object"
		case '[':
			return "an array"
		}
		return fmt.Sprintf("%q", v.String())
	}
	return fmt.Sprintf("%T", t)
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// showKey renders an unknown field's name for an error: as it is when it
// is a short plain name, else quoted and clipped.
func showKey(k string) string {
	plain := k != "" && len(k) <= 64
	for i := 0; plain && i < len(k); i++ {
		c := k[i]
		plain = c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-'
	}
	if plain {
		return k
	}
	return strconv.Quote(clip(k))
}

// clip shortens s to at most 32 bytes for an error message.
func clip(s string) string {
	if len(s) <= 32 {
		return s
	}
	cut := 32
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}
