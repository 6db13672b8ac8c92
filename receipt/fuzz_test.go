package receipt

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/layoverhq/layover/internal/fuzzbound"
)

// FuzzDecode: no input panics; every rejection is a *FieldError; every
// accepted input is valid JSON and re-encodes to an equal receipt; and
// Encode output decodes back equal and re-encodes to the same bytes.
func FuzzDecode(f *testing.F) {
	for _, s := range []string{
		retainedV1,
		handoffV2,
		retainedV1 + "\n",
		sub(retainedV1, `"schema":1`, `"schema":1,"schema":1`),
		sub(retainedV1, `"schema":1`, `"schema":1.0`),
		sub(handoffV2, `"wakeup_digest":null`, `"wakeup_digest":"`+dD+`"`),
		sub(handoffV2, `"plan_digest":null`, `"plan_digest":""`),
		sub(retainedV1, `"status":"deferred"`, `"st\u0061tus":"def\u0065rred"`),
		retainedV1 + `{}`,
		`{}`, `[]`, `null`, ``, `{"schema":1}`, "\xff",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		fuzzbound.Run(t, func() {
			r, err := Decode(data)
			if err != nil {
				var fe *FieldError
				if !errors.As(err, &fe) {
					t.Fatalf("error %T %v is not a *FieldError", err, err)
				}
				if r != nil {
					t.Fatalf("a receipt with an error")
				}
				return
			}
			if !json.Valid(data) {
				t.Fatalf("accepted invalid JSON %q", data)
			}
			enc, err := Encode(r)
			if err != nil {
				t.Fatalf("Encode of an accepted receipt: %v", err)
			}
			back, err := Decode(enc)
			if err != nil {
				t.Fatalf("Decode(Encode(r)): %v\n%s", err, enc)
			}
			if *back != *r {
				t.Fatalf("round trip changed the receipt:\n %+v\n %+v", *back, *r)
			}
			again, err := Encode(back)
			if err != nil || string(again) != string(enc) {
				t.Fatalf("re-encoding differs: %s vs %s (%v)", again, enc, err)
			}
			// A generic decoder sees exactly the schema's members.
			var m map[string]json.RawMessage
			if err := json.Unmarshal(data, &m); err != nil || len(m) != len(topFields) {
				t.Fatalf("accepted input has members %d, want %d (%v)", len(m), len(topFields), err)
			}
		})
	})
}

// FuzzCanonicalJSON: the values Encode and the digests build, written
// directly, come out byte for byte as through encoding/json; a map key that
// is not UTF-8 takes the round trip.
func FuzzCanonicalJSON(f *testing.F) {
	f.Add("name", "/srv/bot", int64(1767225600000), true)
	f.Add("q\"b\\\n\t\x01\x7f", "<a>&\u2028\u2029", int64(-1), false)
	f.Add("\xff\xfe", "naïve 日本 😀 \ufffd", int64(1)<<53, true)
	f.Add("\xff", "\xfe", int64(7), true) // keys that encoding/json makes equal
	f.Add("", "", int64(0), false)
	f.Fuzz(func(t *testing.T, a, b string, n int64, flag bool) {
		fuzzbound.Run(t, func() {
			v := map[string]any{
				"keys": []string{a, b}, "none": []string(nil), "empty": []string{},
				a: b, b: map[string]any{"n": n, "i": int(n % 1000), "flag": flag, "null": nil, "list": []any{a, n, flag}},
			}
			got, err := CanonicalJSON(v)
			if err != nil {
				t.Fatal(err)
			}
			want, err := canonicalRoundTrip(v)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != string(want) {
				t.Fatalf("direct      %q\nround trip  %q", got, want)
			}
			// Strings are written as encoding/json's output reads back: each
			// byte on its own, escaped only where JSON requires.
			for _, s := range []string{a, b} {
				got, err := CanonicalJSON(s)
				if err != nil {
					t.Fatal(err)
				}
				if want := stringByteByByte(s); string(got) != want {
					t.Fatalf("CanonicalJSON(%q) = %q, want %q", s, got, want)
				}
			}
		})
	})
}

// stringByteByByte is writeString's output for s, built a byte at a time:
// the reference its faster form must match.
func stringByteByByte(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for i := 0; i < len(s); {
		if c := s[i]; c >= utf8.RuneSelf {
			r, size := utf8.DecodeRuneInString(s[i:])
			if r == utf8.RuneError && size == 1 {
				r = utf8.RuneError
			}
			b.WriteRune(r)
			i += size
			continue
		}
		switch c := s[i]; c {
		case '"', '\\':
			b.WriteByte('\\')
			b.WriteByte(c)
		case '\b', '\f', '\n', '\r', '\t':
			b.WriteString(map[byte]string{'\b': `\b`, '\f': `\f`, '\n': `\n`, '\r': `\r`, '\t': `\t`}[c])
		default:
			if c < 0x20 {
				fmt.Fprintf(&b, `\u%04x`, c)
			} else {
				b.WriteByte(c)
			}
		}
		i++
	}
	b.WriteByte('"')
	return b.String()
}
