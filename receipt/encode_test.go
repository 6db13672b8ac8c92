package receipt

import (
	"encoding/json"
	"errors"
	"reflect"
	"sort"
	"strings"
	"testing"
)

// Encode writes a known receipt byte for byte as written by hand.
func TestEncodeCanonical(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		r    Receipt
		want string
	}{
		{"retained v1", wantRetainedV1(), `{"bindings":{"plan_digest":"cccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccc",` +
			`"request_digest":"bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb",` +
			`"scope_digest":"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"},` +
			`"fresh_approval_required":true,"issued_at_ms":1780000000000,` +
			`"ownership":{"cancellation_digest":"eeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeee",` +
			`"disposition":"retained","mode":"durable-host",` +
			`"wakeup_digest":"dddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddd"},` +
			`"reason":"rest-reserve","resume_after_ms":1780000120000,"resume_by_ms":1780021720000,` +
			`"schema":1,"status":"deferred","version":"deferred-receipt-v1"}`},
		{"handoff v2", wantHandoffV2(), `{"bindings":{"plan_digest":null,` +
			`"request_digest":"bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb",` +
			`"scope_digest":"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"},` +
			`"fresh_approval_required":false,"issued_at_ms":1780000000000,` +
			`"ownership":{"cancellation_digest":null,"disposition":"handoff","mode":"governed-handoff","wakeup_digest":null},` +
			`"reason":"provider-quota","resume_after_ms":1780000120000,"resume_by_ms":1780021720000,` +
			`"schema":1,"status":"deferred","version":"deferred-receipt-v2"}`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			got, err := Encode(&c.r)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != c.want {
				t.Fatalf("Encode\n %s\nwant\n %s", got, c.want)
			}
			m, err := json.Marshal(c.r) // a Receipt held by value
			if err != nil || string(m) != c.want {
				t.Errorf("json.Marshal = %s, %v; want the canonical form", m, err)
			}
		})
	}
}

// Encode refuses a receipt that fails Check, naming the field.
func TestEncodeRefusesInvalid(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name  string
		edit  func(*Receipt)
		field string
	}{
		{"zero value", func(r *Receipt) { *r = Receipt{} }, "schema"},
		{"no version", func(r *Receipt) { r.Version = "" }, "version"},
		{"no status", func(r *Receipt) { r.Status = "" }, "status"},
		{"v2 reason in v1", func(r *Receipt) { r.Reason = ProviderQuota }, "reason"},
		{"negative issued", func(r *Receipt) { r.IssuedAtMs = -1 }, "issued_at_ms"},
		{"huge resume_by", func(r *Receipt) { r.ResumeByMs = MaxMs + 1 }, "resume_by_ms"},
		{"window", func(r *Receipt) { r.ResumeAfterMs = r.IssuedAtMs - 1 }, "resume_after_ms"},
		{"scope digest", func(r *Receipt) { r.Bindings.ScopeDigest = "" }, "bindings.scope_digest"},
		{"request digest", func(r *Receipt) { r.Bindings.RequestDigest = dA[:63] + "A" }, "bindings.request_digest"},
		{"plan digest", func(r *Receipt) { r.Bindings.PlanDigest = "x" }, "bindings.plan_digest"},
		{"ownership zero", func(r *Receipt) { r.Ownership = Ownership{} }, "ownership.disposition"},
		{"ownership mixed", func(r *Receipt) { r.Ownership.WakeupDigest = "" }, "ownership.wakeup_digest"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			r := wantRetainedV1()
			c.edit(&r)
			b, err := Encode(&r)
			var fe *FieldError
			if !errors.As(err, &fe) || fe.Field != c.field {
				t.Fatalf("Encode = %s, %v; want a FieldError on %s", b, err, c.field)
			}
			if _, err := json.Marshal(r); err == nil {
				t.Errorf("json.Marshal encoded an invalid receipt")
			}
		})
	}
}

// A receipt embedded in other JSON keeps its canonical form and is decoded
// as strictly as Decode does.
func TestEmbeddedJSON(t *testing.T) {
	t.Parallel()
	type envelope struct {
		ID       string     `json:"id"`
		Receipts []*Receipt `json:"receipts"`
	}
	r1, r2 := wantRetainedV1(), wantHandoffV2()
	b, err := json.Marshal(envelope{ID: "j1", Receipts: []*Receipt{&r1, &r2}})
	if err != nil {
		t.Fatal(err)
	}
	want := `{"id":"j1","receipts":[` + retainedV1 + `,` + handoffV2 + `]}`
	if string(b) != want {
		t.Fatalf("got\n %s\nwant\n %s", b, want)
	}
	var back envelope
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if *back.Receipts[0] != r1 || *back.Receipts[1] != r2 {
		t.Errorf("round trip changed the receipts")
	}
	bad := `{"id":"j1","receipts":[` + sub(handoffV2, `"schema":1`, `"schema":1,"schema":1`) + `]}`
	var fe *FieldError
	if err := json.Unmarshal([]byte(bad), &back); !errors.As(err, &fe) || fe.Field != "schema" {
		t.Errorf("duplicate inside an envelope: %v", err)
	}
}

// The type holds exactly the schema's fields and the encoding exactly the
// schema's keys: nothing else (no token, login, URL, payload, nonce or
// lease) can be carried.
func TestOnlySchemaFields(t *testing.T) {
	t.Parallel()
	fields := func(v any) []string {
		var out []string
		rt := reflect.TypeOf(v)
		for i := 0; i < rt.NumField(); i++ {
			out = append(out, rt.Field(i).Name+":"+rt.Field(i).Type.Kind().String())
		}
		return out
	}
	wantFields := map[string][]string{
		"Receipt": {"Schema:int", "Version:string", "Status:string", "Reason:string", "IssuedAtMs:int64",
			"ResumeAfterMs:int64", "ResumeByMs:int64", "Bindings:struct", "Ownership:struct", "FreshApprovalRequired:bool"},
		"Bindings":  {"ScopeDigest:string", "RequestDigest:string", "PlanDigest:string"},
		"Ownership": {"Disposition:string", "Mode:string", "WakeupDigest:string", "CancellationDigest:string"},
	}
	for name, v := range map[string]any{"Receipt": Receipt{}, "Bindings": Bindings{}, "Ownership": Ownership{}} {
		if got := fields(v); !reflect.DeepEqual(got, wantFields[name]) {
			t.Errorf("%s fields %v, want %v", name, got, wantFields[name])
		}
	}
	for _, r := range []Receipt{wantRetainedV1(), wantHandoffV2()} {
		b, err := Encode(&r)
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]any
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatal(err)
		}
		keys := func(m map[string]any) []string {
			var ks []string
			for k := range m {
				ks = append(ks, k)
			}
			sort.Strings(ks)
			return ks
		}
		if got, want := keys(m), []string{"bindings", "fresh_approval_required", "issued_at_ms", "ownership", "reason",
			"resume_after_ms", "resume_by_ms", "schema", "status", "version"}; !reflect.DeepEqual(got, want) {
			t.Errorf("keys %v, want %v", got, want)
		}
		if got, want := keys(m["bindings"].(map[string]any)), []string{"plan_digest", "request_digest", "scope_digest"}; !reflect.DeepEqual(got, want) {
			t.Errorf("bindings keys %v, want %v", got, want)
		}
		if got, want := keys(m["ownership"].(map[string]any)), []string{"cancellation_digest", "disposition", "mode", "wakeup_digest"}; !reflect.DeepEqual(got, want) {
			t.Errorf("ownership keys %v, want %v", got, want)
		}
		for _, bad := range []string{"token", "login", "repo", "url", "payload", "nonce", "lease"} {
			if strings.Contains(strings.ToLower(string(b)), `"`+bad) {
				t.Errorf("encoding holds a %s field: %s", bad, b)
			}
		}
	}
}

// CanonicalJSON sorts keys at every level (struct fields too), writes no
// white space, and leaves UTF-8 and <, >, & unescaped.
func TestCanonicalJSON(t *testing.T) {
	t.Parallel()
	type unordered struct {
		Zeta  string   `json:"zeta"`
		Alpha int      `json:"alpha"`
		Mid   []string `json:"mid"`
		Nil   []string `json:"nil"`
		Inner struct {
			Y bool `json:"y"`
			X any  `json:"x"`
		} `json:"inner"`
	}
	var u unordered
	u.Zeta, u.Alpha, u.Mid = "z", 3, []string{"b", "a"}
	u.Inner.Y = true
	cases := []struct {
		name string
		v    any
		want string
	}{
		{"struct fields sorted", u, `{"alpha":3,"inner":{"x":null,"y":true},"mid":["b","a"],"nil":null,"zeta":"z"}`},
		{"map keys sorted", map[string]any{"b": 1, "a": map[string]any{"d": false, "c": []any{}}, "B": "upper"},
			`{"B":"upper","a":{"c":[],"d":false},"b":1}`},
		{"html not escaped", map[string]string{"q": "a<b>&c"}, `{"q":"a<b>&c"}`},
		{"utf-8 raw", []string{"naïve", "日本", "😀", "\u2028\u2029"}, "[\"naïve\",\"日本\",\"😀\",\"\u2028\u2029\"]"},
		{"escapes", "q\"b\\n\nt\tr\rb\bf\fx\x01\x1f\x7f", `"q\"b\\n\nt\tr\rb\bf\fx\u0001\u001f` + "\x7f\""},
		{"non-ASCII keys by code point", map[string]int{"é": 1, "z": 2, "É": 3}, `{"z":2,"É":3,"é":1}`},
		{"numbers", []any{0, -1, int64(1) << 53, 1.5, uint8(7)}, `[0,-1,9007199254740992,1.5,7]`},
		{"empty", map[string]any{}, `{}`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			got, err := CanonicalJSON(c.v)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != c.want {
				t.Errorf("got  %s\nwant %s", got, c.want)
			}
		})
	}
	if _, err := CanonicalJSON(func() {}); err == nil {
		t.Errorf("a func encoded")
	}
}
