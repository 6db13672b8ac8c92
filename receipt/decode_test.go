package receipt

import (
	"errors"
	"strings"
	"testing"
)

// Every rejection is a *FieldError naming the field at fault.
func TestDecodeRejects(t *testing.T) {
	t.Parallel()
	base := retainedV1
	hand := handoffV2
	big := strings.Repeat(" ", MaxSize) + base
	cases := []struct {
		name, in, field, problem string
	}{
		// The input as a whole.
		{"empty", ``, "", "end of input"},
		{"white space only", " \n\t", "", "end of input"},
		{"array", `[]`, "", "want a JSON object, got an array"},
		{"string", `"deferred"`, "", "want a JSON object, got a string"},
		{"number", `1`, "", "want a JSON object"},
		{"null", `null`, "", "want a JSON object, got null"},
		{"not JSON", `deferred`, "", "invalid JSON"},
		{"truncated", base[:len(base)-1], "", "end of input"},
		{"truncated in bindings", base[:40], "bindings.plan_digest", "end of input"},
		{"trailing object", base + `{}`, "", "trailing data"},
		{"trailing garbage", base + ` x`, "", "trailing data"},
		{"trailing comma", base + `,`, "", "trailing data"},
		{"trailing second receipt", base + "\n" + base, "", "trailing data"},
		{"too large", big, "", "larger than"},
		{"invalid UTF-8 in value", sub(base, `"rest-reserve"`, "\"rest-\xff\""), "", "UTF-8"},
		{"invalid UTF-8 in key", sub(base, `"schema"`, "\"sch\xc3\""), "", "UTF-8"},
		{"BOM", "\ufeff" + base, "", "invalid JSON"},
		{"comma before close", sub(base, `"version":"deferred-receipt-v1"}`, `"version":"deferred-receipt-v1",}`), "", "invalid JSON"},
		{"missing colon", sub(base, `"schema":1`, `"schema" 1`), "schema", "invalid JSON"},
		{"single quotes", sub(base, `"schema":1`, `'schema':1`), "", "invalid JSON"},
		{"comma in bindings", sub(base, `"scope_digest":"`+dA+`"}`, `"scope_digest":"`+dA+`",}`), "bindings", "invalid JSON"},
		{"bad value syntax", sub(base, `"schema":1`, `"schema":tru`), "schema", "invalid JSON"},

		// Unknown fields.
		{"unknown top field", sub(base, `{"bindings"`, `{"token":"x","bindings"`), "token", "unknown field"},
		{"unknown url field", sub(base, `"schema":1`, `"schema":1,"url":"https://api.github.com"`), "url", "unknown field"},
		{"field case differs", sub(base, `"schema":1`, `"Schema":1`), "Schema", "unknown field"},
		{"unknown in bindings", sub(base, `{"plan_digest"`, `{"repo":"x","plan_digest"`), "bindings.repo", "unknown field"},
		{"unknown in ownership", sub(base, `{"cancellation_digest"`, `{"lease_key":"x","cancellation_digest"`), "ownership.lease_key", "unknown field"},
		{"odd unknown name", sub(base, `"schema":1`, `"schema":1,"a b\n":1`), `"a b\n"`, "unknown field"},
		{"long unknown name", sub(base, `"schema":1`, `"schema":1,"`+strings.Repeat("k", 100)+`":1`), `"` + strings.Repeat("k", 32) + `…"`, "unknown field"},
		{"long float", sub(base, `"schema":1`, `"schema":1.`+strings.Repeat("0", 100)), "schema", "want an integer, got 1." + strings.Repeat("0", 30) + "…"},
		{"unknown camelCase", sub(base, `"schema":1`, `"schema":1,"resumeAfter":1`), "resumeAfter", "unknown field"},

		// Missing fields, at every level.
		{"missing schema", sub(base, `,"schema":1`, ``), "schema", "missing field"},
		{"missing version", sub(base, `,"version":"deferred-receipt-v1"`, ``), "version", "missing field"},
		{"missing status", sub(base, `"status":"deferred",`, ``), "status", "missing field"},
		{"missing reason", sub(base, `"reason":"rest-reserve",`, ``), "reason", "missing field"},
		{"missing issued", sub(base, `"issued_at_ms":1780000000000,`, ``), "issued_at_ms", "missing field"},
		{"missing resume_after", sub(base, `"resume_after_ms":1780000120000,`, ``), "resume_after_ms", "missing field"},
		{"missing resume_by", sub(base, `"resume_by_ms":1780021720000,`, ``), "resume_by_ms", "missing field"},
		{"missing bindings", sub(base, `"bindings":{"plan_digest":"`+dC+`","request_digest":"`+dB+`","scope_digest":"`+dA+`"},`, ``), "bindings", "missing field"},
		{"missing ownership", sub(base, `"ownership":{"cancellation_digest":"`+dE+`","disposition":"retained","mode":"durable-host","wakeup_digest":"`+dD+`"},`, ``), "ownership", "missing field"},
		{"missing approval", sub(base, `"fresh_approval_required":true,`, ``), "fresh_approval_required", "missing field"},
		{"missing scope digest", sub(base, `,"scope_digest":"`+dA+`"`, ``), "bindings.scope_digest", "missing field"},
		{"missing request digest", sub(base, `,"request_digest":"`+dB+`"`, ``), "bindings.request_digest", "missing field"},
		{"missing plan digest", sub(base, `"plan_digest":"`+dC+`",`, ``), "bindings.plan_digest", "missing field"},
		{"missing disposition", sub(base, `"disposition":"retained",`, ``), "ownership.disposition", "missing field"},
		{"missing mode", sub(base, `"mode":"durable-host",`, ``), "ownership.mode", "missing field"},
		{"missing wakeup", sub(base, `,"wakeup_digest":"`+dD+`"`, ``), "ownership.wakeup_digest", "missing field"},
		{"missing cancellation", sub(base, `"cancellation_digest":"`+dE+`",`, ``), "ownership.cancellation_digest", "missing field"},
		{"missing handoff null", sub(hand, `,"wakeup_digest":null`, ``), "ownership.wakeup_digest", "missing field"},
		{"empty object", `{}`, "schema", "missing field"},
		{"empty bindings", sub(base, `"bindings":{"plan_digest":"`+dC+`","request_digest":"`+dB+`","scope_digest":"`+dA+`"}`, `"bindings":{}`), "bindings.scope_digest", "missing field"},

		// Duplicate fields, at every level, however spelled.
		{"duplicate schema", sub(base, `"schema":1`, `"schema":1,"schema":1`), "schema", "duplicate field"},
		{"duplicate escaped", sub(base, `"schema":1`, `"schema":1,"sch\u0065ma":1`), "schema", "duplicate field"},
		{"duplicate reason", sub(base, `"reason":"rest-reserve"`, `"reason":"rest-reserve","reason":"graphql-reserve"`), "reason", "duplicate field"},
		{"duplicate bindings", sub(base, `"fresh_approval_required"`, `"bindings":{},"fresh_approval_required"`), "bindings", "duplicate field"},
		{"duplicate in bindings", sub(base, `"request_digest":"`, `"request_digest":"`+dB+`","request_digest":"`), "bindings.request_digest", "duplicate field"},
		{"duplicate null plan", sub(hand, `"plan_digest":null`, `"plan_digest":null,"plan_digest":null`), "bindings.plan_digest", "duplicate field"},
		{"duplicate in ownership", sub(base, `"mode":"durable-host"`, `"mode":"durable-host","mode":"durable-host"`), "ownership.mode", "duplicate field"},

		// Wrong types.
		{"schema 1.0", sub(base, `"schema":1`, `"schema":1.0`), "schema", "want an integer, got 1.0"},
		{"schema string", sub(base, `"schema":1`, `"schema":"1"`), "schema", "want an integer, got a string"},
		{"schema 1e0", sub(base, `"schema":1`, `"schema":1e0`), "schema", "want an integer"},
		{"schema true", sub(base, `"schema":1`, `"schema":true`), "schema", "want an integer, got a boolean"},
		{"schema 2^32+1", sub(base, `"schema":1`, `"schema":4294967297`), "schema", "want 1"},
		{"issued float", sub(base, `"issued_at_ms":1780000000000`, `"issued_at_ms":1780000000000.0`), "issued_at_ms", "want an integer"},
		{"issued exponent", sub(base, `"issued_at_ms":1780000000000`, `"issued_at_ms":1.78e12`), "issued_at_ms", "want an integer"},
		{"issued 1e3", sub(base, `"issued_at_ms":1780000000000`, `"issued_at_ms":1e3`), "issued_at_ms", "want an integer"},
		{"issued negative", sub(base, `"issued_at_ms":1780000000000`, `"issued_at_ms":-1`), "issued_at_ms", "non-negative"},
		{"issued minus zero", sub(base, `"issued_at_ms":1780000000000`, `"issued_at_ms":-0`), "issued_at_ms", "non-negative"},
		{"issued negative float", sub(base, `"issued_at_ms":1780000000000`, `"issued_at_ms":-1.5`), "issued_at_ms", "want an integer"},
		{"issued string", sub(base, `"issued_at_ms":1780000000000`, `"issued_at_ms":"1780000000000"`), "issued_at_ms", "got a string"},
		{"issued null", sub(base, `"issued_at_ms":1780000000000`, `"issued_at_ms":null`), "issued_at_ms", "got null"},
		{"issued 2^53", sub(base, `"issued_at_ms":1780000000000`, `"issued_at_ms":9007199254740992`), "issued_at_ms", "beyond 2^53-1"},
		{"issued beyond int64", sub(base, `"issued_at_ms":1780000000000`, `"issued_at_ms":99999999999999999999999`), "issued_at_ms", "beyond 2^53-1"},
		{"resume_after float", sub(base, `"resume_after_ms":1780000120000`, `"resume_after_ms":1780000120000.5`), "resume_after_ms", "want an integer"},
		{"resume_by object", sub(base, `"resume_by_ms":1780021720000`, `"resume_by_ms":{}`), "resume_by_ms", "got an object"},
		{"resume_by array", sub(base, `"resume_by_ms":1780021720000`, `"resume_by_ms":[1780021720000]`), "resume_by_ms", "got an array"},
		{"version number", sub(base, `"version":"deferred-receipt-v1"`, `"version":1`), "version", "want a string"},
		{"status null", sub(base, `"status":"deferred"`, `"status":null`), "status", "want a string, got null"},
		{"reason array", sub(base, `"reason":"rest-reserve"`, `"reason":["rest-reserve"]`), "reason", "want a string"},
		{"approval string", sub(base, `"fresh_approval_required":true`, `"fresh_approval_required":"true"`), "fresh_approval_required", "want true or false"},
		{"approval number", sub(base, `"fresh_approval_required":true`, `"fresh_approval_required":1`), "fresh_approval_required", "want true or false"},
		{"approval null", sub(base, `"fresh_approval_required":true`, `"fresh_approval_required":null`), "fresh_approval_required", "want true or false"},
		{"bindings string", sub(base, `"bindings":{"plan_digest":"`+dC+`","request_digest":"`+dB+`","scope_digest":"`+dA+`"}`, `"bindings":"x"`), "bindings", "want an object"},
		{"bindings array", sub(base, `"bindings":{"plan_digest":"`+dC+`","request_digest":"`+dB+`","scope_digest":"`+dA+`"}`, `"bindings":[]`), "bindings", "want an object, got an array"},
		{"bindings null", sub(base, `"bindings":{"plan_digest":"`+dC+`","request_digest":"`+dB+`","scope_digest":"`+dA+`"}`, `"bindings":null`), "bindings", "want an object, got null"},
		{"ownership null", sub(hand, `"ownership":{"cancellation_digest":null,"disposition":"handoff","mode":"governed-handoff","wakeup_digest":null}`, `"ownership":null`), "ownership", "want an object"},
		{"scope digest null", sub(base, `"scope_digest":"`+dA+`"`, `"scope_digest":null`), "bindings.scope_digest", "want a string, got null"},
		{"plan digest number", sub(base, `"plan_digest":"`+dC+`"`, `"plan_digest":5`), "bindings.plan_digest", "want a string or null"},
		{"plan digest empty", sub(base, `"plan_digest":"`+dC+`"`, `"plan_digest":""`), "bindings.plan_digest", "empty string"},
		{"plan digest false", sub(base, `"plan_digest":"`+dC+`"`, `"plan_digest":false`), "bindings.plan_digest", "want a string or null"},
		{"wakeup empty", sub(hand, `"wakeup_digest":null`, `"wakeup_digest":""`), "ownership.wakeup_digest", "empty string"},
		{"cancellation object", sub(hand, `"cancellation_digest":null`, `"cancellation_digest":{}`), "ownership.cancellation_digest", "want a string or null"},
		{"disposition null", sub(base, `"disposition":"retained"`, `"disposition":null`), "ownership.disposition", "want a string"},

		// Unknown values.
		{"schema 2", sub(base, `"schema":1`, `"schema":2`), "schema", "want 1"},
		{"schema 0", sub(base, `"schema":1`, `"schema":0`), "schema", "want 1"},
		{"version v3", sub(base, `"deferred-receipt-v1"`, `"deferred-receipt-v3"`), "version", "unknown version"},
		{"version v0", sub(base, `"deferred-receipt-v1"`, `"deferred-receipt"`), "version", "unknown version"},
		{"version case", sub(base, `"deferred-receipt-v1"`, `"Deferred-Receipt-V1"`), "version", "unknown version"},
		{"status", sub(base, `"status":"deferred"`, `"status":"resumable"`), "status", `want "deferred"`},
		{"reason unknown", sub(base, `"rest-reserve"`, `"rate-limit"`), "reason", "want one of rest-reserve, graphql-reserve, provider-secondary-limit for deferred-receipt-v1"},
		{"reason empty", sub(base, `"rest-reserve"`, `""`), "reason", "want one of"},
		{"reason v2 only in v1", sub(base, `"rest-reserve"`, `"provider-quota"`), "reason", `"provider-quota" needs deferred-receipt-v2`},
		{"reason unknown in v2", sub(hand, `"provider-quota"`, `"provider-daily"`), "reason", "provider-quota for deferred-receipt-v2"},

		// The window.
		{"resume_after before issued", sub(base, `"resume_after_ms":1780000120000`, `"resume_after_ms":1779999999999`), "resume_after_ms", "before issued_at_ms"},
		{"resume_by before resume_after", sub(base, `"resume_by_ms":1780021720000`, `"resume_by_ms":1780000119999`), "resume_by_ms", "before resume_after_ms"},
		{"resume_by past 24h", sub(base, `"resume_by_ms":1780021720000`, `"resume_by_ms":1780086400001`), "resume_by_ms", "more than 24h"},
		{"whole window past 24h", sub(sub(base, `"resume_by_ms":1780021720000`, `"resume_by_ms":1790000000000`), `"resume_after_ms":1780000120000`, `"resume_after_ms":1790000000000`), "resume_by_ms", "more than 24h"},

		// Digests.
		{"scope digest upper", sub(base, `"scope_digest":"`+dA+`"`, `"scope_digest":"`+strings.ToUpper(dA)+`"`), "bindings.scope_digest", "want 64 lowercase hex digits"},
		{"scope digest short", sub(base, `"scope_digest":"`+dA+`"`, `"scope_digest":"`+dA[1:]+`"`), "bindings.scope_digest", "want 64 lowercase hex digits"},
		{"scope digest long", sub(base, `"scope_digest":"`+dA+`"`, `"scope_digest":"`+dA+`0"`), "bindings.scope_digest", "want 64 lowercase hex digits"},
		{"scope digest empty", sub(base, `"scope_digest":"`+dA+`"`, `"scope_digest":""`), "bindings.scope_digest", "want 64 lowercase hex digits"},
		{"request digest not hex", sub(base, `"request_digest":"`+dB+`"`, `"request_digest":"`+strings.Repeat("g", 64)+`"`), "bindings.request_digest", "want 64 lowercase hex digits"},
		{"request digest prefixed", sub(base, `"request_digest":"`+dB+`"`, `"request_digest":"sha256:`+dB[7:]+`"`), "bindings.request_digest", "want 64 lowercase hex digits"},
		{"plan digest short", sub(base, `"plan_digest":"`+dC+`"`, `"plan_digest":"abc"`), "bindings.plan_digest", "want 64 lowercase hex digits or null"},
		{"wakeup digest upper", sub(base, `"wakeup_digest":"`+dD+`"`, `"wakeup_digest":"`+strings.ToUpper(dD)+`"`), "ownership.wakeup_digest", "want 64 lowercase hex digits"},
		{"cancellation digest space", sub(base, `"cancellation_digest":"`+dE+`"`, `"cancellation_digest":" `+dE[1:]+`"`), "ownership.cancellation_digest", "want 64 lowercase hex digits"},

		// Ownership that is not exactly one form.
		{"retained null wakeup", sub(base, `"wakeup_digest":"`+dD+`"`, `"wakeup_digest":null`), "ownership.wakeup_digest", "retained ownership"},
		{"retained null cancellation", sub(base, `"cancellation_digest":"`+dE+`"`, `"cancellation_digest":null`), "ownership.cancellation_digest", "retained ownership"},
		{"retained handoff mode", sub(base, `"mode":"durable-host"`, `"mode":"governed-handoff"`), "ownership.mode", `want "durable-host" for retained ownership`},
		{"handoff durable mode", sub(hand, `"mode":"governed-handoff"`, `"mode":"durable-host"`), "ownership.mode", `want "governed-handoff" for handoff ownership`},
		{"handoff with wakeup", sub(hand, `"wakeup_digest":null`, `"wakeup_digest":"`+dD+`"`), "ownership.wakeup_digest", "want null for handoff ownership"},
		{"handoff with cancellation", sub(hand, `"cancellation_digest":null`, `"cancellation_digest":"`+dE+`"`), "ownership.cancellation_digest", "want null for handoff ownership"},
		{"unknown disposition", sub(base, `"disposition":"retained"`, `"disposition":"released"`), "ownership.disposition", `want "retained" or "handoff"`},
		{"mode unknown", sub(hand, `"mode":"governed-handoff"`, `"mode":"shell-sleep"`), "ownership.mode", "for handoff ownership"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			r, err := Decode([]byte(c.in))
			if err == nil {
				t.Fatalf("accepted: %+v\ninput: %s", r, c.in)
			}
			if r != nil {
				t.Errorf("returned a receipt with the error")
			}
			var fe *FieldError
			if !errors.As(err, &fe) {
				t.Fatalf("error %T %v is not a *FieldError", err, err)
			}
			if fe.Field != c.field {
				t.Errorf("field %q, want %q (error: %v)", fe.Field, c.field, err)
			}
			if !strings.Contains(fe.Problem, c.problem) {
				t.Errorf("problem %q lacks %q", fe.Problem, c.problem)
			}
			msg := err.Error()
			if !strings.HasPrefix(msg, "receipt: ") || strings.Contains(msg, "\n") {
				t.Errorf("message %q is not one line starting receipt:", msg)
			}
			if c.field != "" && !strings.HasPrefix(msg, "receipt: "+c.field+": ") {
				t.Errorf("message %q does not name %s", msg, c.field)
			}
		})
	}
}

// A string value never reaches an error message: a misplaced secret stays
// out of logs.
func TestDecodeErrorsDoNotEchoStrings(t *testing.T) {
	t.Parallel()
	const secret = "ghp_0123456789abcdefghijABCDEFGHIJ0123"
	for _, in := range []string{
		sub(retainedV1, `"rest-reserve"`, `"`+secret+`"`),
		sub(retainedV1, `"deferred-receipt-v1"`, `"`+secret+`"`),
		sub(retainedV1, `"scope_digest":"`+dA+`"`, `"scope_digest":"`+secret+`"`),
		sub(retainedV1, `"disposition":"retained"`, `"disposition":"`+secret+`"`),
		sub(retainedV1, `"schema":1`, `"schema":"`+secret+`"`),
		sub(retainedV1, `"schema":1`, `"schema":1,"x":"`+secret+`"`),
	} {
		_, err := Decode([]byte(in))
		if err == nil {
			t.Fatalf("accepted %s", in)
		}
		if strings.Contains(err.Error(), "ghp_") {
			t.Errorf("error echoes the value: %v", err)
		}
	}
}

// Valid receipts of every form decode, in any key order and spacing, and
// round-trip through Encode.
func TestDecodeAccepts(t *testing.T) {
	t.Parallel()
	retained, hand := wantRetainedV1(), wantHandoffV2()
	v1Handoff := hand
	v1Handoff.Version, v1Handoff.Reason = V1, ProviderSecondaryLimit
	v2Retained := retained
	v2Retained.Version, v2Retained.Reason = V2, GraphQLReserve
	instant := hand
	instant.ResumeAfterMs, instant.ResumeByMs = issued, issued
	full := retained
	full.ResumeByMs = issued + MaxWindowMs
	zero := hand
	zero.IssuedAtMs, zero.ResumeAfterMs, zero.ResumeByMs = 0, 0, 0
	top := hand
	top.IssuedAtMs, top.ResumeAfterMs, top.ResumeByMs = MaxMs-MaxWindowMs, MaxMs-1, MaxMs
	pretty := "{\n  \"schema\": 1,\n  \"version\": \"deferred-receipt-v1\",\n  \"status\": \"deferred\",\n" +
		"  \"reason\": \"rest-reserve\",\n  \"issued_at_ms\": 1780000000000,\n  \"resume_after_ms\": 1780000120000,\n" +
		"  \"resume_by_ms\": 1780021720000,\n  \"bindings\": {\n    \"scope_digest\": \"" + dA + "\",\n" +
		"    \"request_digest\": \"" + dB + "\",\n    \"plan_digest\": \"" + dC + "\"\n  },\n" +
		"  \"ownership\": {\"disposition\": \"retained\", \"mode\": \"durable-host\", \"wakeup_digest\": \"" + dD + "\",\n" +
		"    \"cancellation_digest\": \"" + dE + "\"},\n  \"fresh_approval_required\": true\n}\n"
	cases := []struct {
		name      string
		in        string
		want      Receipt
		canonical bool
	}{
		{"v1 retained", retainedV1, retained, true},
		{"v2 handoff", handoffV2, hand, true},
		{"v1 handoff secondary", sub(sub(handoffV2, `"provider-quota"`, `"provider-secondary-limit"`), `-v2"`, `-v1"`), v1Handoff, true},
		{"v2 retained graphql", sub(sub(retainedV1, `"rest-reserve"`, `"graphql-reserve"`), `-v1"`, `-v2"`), v2Retained, true},
		{"pretty, schema order", pretty, retained, false},
		{"trailing newline", retainedV1 + "\n", retained, false},
		{"surrounding white space", " \t\r\n" + handoffV2 + " \r\n\t", hand, false},
		{"escaped strings", sub(retainedV1, `"status":"deferred"`, `"st\u0061tus":"def\u0065rred"`), retained, false},
		{"empty window", sub(sub(handoffV2, `"resume_after_ms":1780000120000`, `"resume_after_ms":1780000000000`), `"resume_by_ms":1780021720000`, `"resume_by_ms":1780000000000`), instant, true},
		{"full 24h window", sub(retainedV1, `"resume_by_ms":1780021720000`, `"resume_by_ms":1780086400000`), full, true},
		{"zero times", sub(sub(sub(handoffV2, `1780000000000`, `0`), `1780000120000`, `0`), `1780021720000`, `0`), zero, true},
		{"largest times", sub(sub(sub(handoffV2, `1780000000000`, `9007199168340991`), `1780000120000`, `9007199254740990`), `1780021720000`, `9007199254740991`), top, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			r := mustDecode(t, c.in)
			if *r != c.want {
				t.Fatalf("decoded\n %+v\nwant\n %+v", *r, c.want)
			}
			enc, err := Encode(r)
			if err != nil {
				t.Fatal(err)
			}
			if c.canonical && string(enc) != c.in {
				t.Errorf("Encode\n %s\nwant the canonical input\n %s", enc, c.in)
			}
			if again := mustDecode(t, string(enc)); *again != *r {
				t.Errorf("round trip changed the receipt:\n %+v\n %+v", *again, *r)
			}
		})
	}
}
