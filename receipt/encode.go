package receipt

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"unicode/utf8"
)

// Encode renders r as canonical JSON on one line (no trailing newline):
// sorted keys, no spaces, UTF-8, null for a null digest. A receipt that
// fails Check is not encoded. Decode(Encode(r)) equals r.
func Encode(r *Receipt) ([]byte, error) {
	if err := r.Check(); err != nil {
		return nil, err
	}
	return CanonicalJSON(map[string]any{
		"schema":          r.Schema,
		"version":         r.Version,
		"status":          r.Status,
		"reason":          string(r.Reason),
		"issued_at_ms":    r.IssuedAtMs,
		"resume_after_ms": r.ResumeAfterMs,
		"resume_by_ms":    r.ResumeByMs,
		"bindings": map[string]any{
			"scope_digest":   r.Bindings.ScopeDigest,
			"request_digest": r.Bindings.RequestDigest,
			"plan_digest":    orNull(r.Bindings.PlanDigest),
		},
		"ownership": map[string]any{
			"disposition":         r.Ownership.Disposition,
			"mode":                r.Ownership.Mode,
			"wakeup_digest":       orNull(r.Ownership.WakeupDigest),
			"cancellation_digest": orNull(r.Ownership.CancellationDigest),
		},
		"fresh_approval_required": r.FreshApprovalRequired,
	})
}

func orNull(s string) any {
	if s == "" {
		return nil
	}
	return s
}

// MarshalJSON encodes r canonically, so a receipt embedded in other JSON
// keeps its form. (A value receiver: a Receipt held by value encodes so too.)
func (r Receipt) MarshalJSON() ([]byte, error) { return Encode(&r) }

// UnmarshalJSON decodes strictly, as Decode does.
func (r *Receipt) UnmarshalJSON(data []byte) error {
	d, err := Decode(data)
	if err != nil {
		return err
	}
	*r = *d
	return nil
}

// CanonicalJSON renders v as canonical JSON: object keys sorted (by byte,
// which for UTF-8 is code point order) at every level, struct fields
// included, whatever their declaration order; no white space; strings in
// UTF-8 with only '"', '\\' and control characters escaped (no HTML
// escaping of <, > and &, and U+2028/U+2029 as they are); numbers as
// encoding/json writes them. v is rendered as encoding/json marshals it (so
// its tags apply and a nil slice is null); a string that is not valid UTF-8
// is therefore coerced to U+FFFD — callers that must refuse it check first, as
// the digest functions do. No trailing newline.
func CanonicalJSON(v any) ([]byte, error) {
	// What Encode and the digests build (maps of string keys, string
	// slices, strings, integers, booleans, nil) is written as it is: the
	// round trip through encoding/json below renders it the same, byte for
	// byte, at several times the cost. Anything else takes the round trip.
	var out bytes.Buffer
	out.Grow(512) // a receipt's size, in one allocation
	if err := writeCanonical(&out, v, true); err == nil {
		return out.Bytes(), nil
	}
	return canonicalRoundTrip(v)
}

// canonicalRoundTrip is CanonicalJSON through encoding/json: v marshalled,
// decoded into plain values, and those written canonically.
func canonicalRoundTrip(v any) ([]byte, error) {
	var raw bytes.Buffer
	enc := json.NewEncoder(&raw)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	dec := json.NewDecoder(&raw)
	dec.UseNumber()
	var g any
	if err := dec.Decode(&g); err != nil {
		return nil, err
	}
	var out bytes.Buffer
	if err := writeCanonical(&out, g, false); err != nil {
		return nil, err
	}
	return out.Bytes(), nil
}

// errNotPlain stops writeCanonical at a value it does not write directly.
var errNotPlain = errors.New("receipt: canonical JSON: not a plain value")

// writeCanonical writes v as canonical JSON: a value decoded by
// encoding/json (with UseNumber), or, when direct, one of Go's plain values
// (int, int64 and []string too; no json.Number, which encoding/json would
// check first, and no map key that is not UTF-8). Direct, any other value
// is errNotPlain, with b partly written.
func writeCanonical(b *bytes.Buffer, v any, direct bool) error {
	switch x := v.(type) {
	case nil:
		b.WriteString("null")
	case bool:
		if x {
			b.WriteString("true")
		} else {
			b.WriteString("false")
		}
	case json.Number:
		if direct {
			// encoding/json checks the number first.
			return errNotPlain
		}
		b.WriteString(string(x))
	case int:
		b.WriteString(strconv.Itoa(x))
	case int64:
		b.WriteString(strconv.FormatInt(x, 10))
	case string:
		writeString(b, x)
	case []string:
		return writeArray(b, x, func(e string) error { writeString(b, e); return nil })
	case []any:
		return writeArray(b, x, func(e any) error { return writeCanonical(b, e, direct) })
	case map[string]any:
		if x == nil {
			b.WriteString("null")
			break
		}
		var kept [16]string // a receipt's objects have at most 10 keys
		keys := kept[:0]
		for k := range x {
			if direct && !utf8.ValidString(k) {
				// encoding/json coerces such keys, which may then collide.
				return errNotPlain
			}
			keys = append(keys, k)
		}
		slices.Sort(keys)
		b.WriteByte('{')
		for i, k := range keys {
			if i > 0 {
				b.WriteByte(',')
			}
			writeString(b, k)
			b.WriteByte(':')
			if err := writeCanonical(b, x[k], direct); err != nil {
				return err
			}
		}
		b.WriteByte('}')
	default:
		if direct {
			return errNotPlain
		}
		return fmt.Errorf("receipt: canonical JSON: unexpected %T", v)
	}
	return nil
}

// writeArray writes x as a JSON array, each element by write; a nil slice
// is null, as encoding/json writes it.
func writeArray[E any](b *bytes.Buffer, x []E, write func(E) error) error {
	if x == nil {
		b.WriteString("null")
		return nil
	}
	b.WriteByte('[')
	for i, e := range x {
		if i > 0 {
			b.WriteByte(',')
		}
		if err := write(e); err != nil {
			return err
		}
	}
	b.WriteByte(']')
	return nil
}

// writeString writes s as a JSON string, escaping only what JSON requires.
func writeString(b *bytes.Buffer, s string) {
	const hex = "0123456789abcdef"
	b.WriteByte('"')
	start := 0 // s[start:i] is written as it is, in one piece
	for i := 0; i < len(s); {
		c := s[i]
		if c >= utf8.RuneSelf {
			r, size := utf8.DecodeRuneInString(s[i:])
			if r == utf8.RuneError && size == 1 {
				b.WriteString(s[start:i])
				b.WriteString("\uFFFD")
				start = i + 1
			}
			i += size
			continue
		}
		if c >= 0x20 && c != '"' && c != '\\' {
			i++
			continue
		}
		b.WriteString(s[start:i])
		switch c {
		case '"':
			b.WriteString(`\"`)
		case '\\':
			b.WriteString(`\\`)
		case '\b':
			b.WriteString(`\b`)
		case '\f':
			b.WriteString(`\f`)
		case '\n':
			b.WriteString(`\n`)
		case '\r':
			b.WriteString(`\r`)
		case '\t':
			b.WriteString(`\t`)
		default:
			b.WriteString(`\u00`)
			b.WriteByte(hex[c>>4])
			b.WriteByte(hex[c&0xf])
		}
		i++
		start = i
	}
	b.WriteString(s[start:])
	b.WriteByte('"')
}
