package receipt

import (
	"strings"
	"testing"
)

// Digests of one letter repeated, easy to spot.
var (
	dA = strings.Repeat("a", 64)
	dB = strings.Repeat("b", 64)
	dC = strings.Repeat("c", 64)
	dD = strings.Repeat("d", 64)
	dE = strings.Repeat("e", 64)
)

const (
	issued = 1780000000000 // 2026-05-28T20:26:40Z
	after  = issued + 120000
	by     = after + 6*3600000
)

// retainedV1 is a valid v1 receipt with retained ownership and a plan, in
// canonical form (written by hand: sorted keys, no spaces).
var retainedV1 = `{"bindings":{"plan_digest":"` + dC + `","request_digest":"` + dB + `","scope_digest":"` + dA + `"},` +
	`"fresh_approval_required":true,"issued_at_ms":1780000000000,` +
	`"ownership":{"cancellation_digest":"` + dE + `","disposition":"retained","mode":"durable-host","wakeup_digest":"` + dD + `"},` +
	`"reason":"rest-reserve","resume_after_ms":1780000120000,"resume_by_ms":1780021720000,` +
	`"schema":1,"status":"deferred","version":"deferred-receipt-v1"}`

// handoffV2 is a valid v2 receipt with handoff ownership and no plan, in
// canonical form.
var handoffV2 = `{"bindings":{"plan_digest":null,"request_digest":"` + dB + `","scope_digest":"` + dA + `"},` +
	`"fresh_approval_required":false,"issued_at_ms":1780000000000,` +
	`"ownership":{"cancellation_digest":null,"disposition":"handoff","mode":"governed-handoff","wakeup_digest":null},` +
	`"reason":"provider-quota","resume_after_ms":1780000120000,"resume_by_ms":1780021720000,` +
	`"schema":1,"status":"deferred","version":"deferred-receipt-v2"}`

func wantRetainedV1() Receipt {
	return Receipt{Schema: 1, Version: V1, Status: StatusDeferred, Reason: RESTReserve,
		IssuedAtMs: issued, ResumeAfterMs: after, ResumeByMs: by,
		Bindings:              Bindings{ScopeDigest: dA, RequestDigest: dB, PlanDigest: dC},
		Ownership:             Ownership{Disposition: Retained, Mode: ModeDurableHost, WakeupDigest: dD, CancellationDigest: dE},
		FreshApprovalRequired: true}
}

func wantHandoffV2() Receipt {
	return Receipt{Schema: 1, Version: V2, Status: StatusDeferred, Reason: ProviderQuota,
		IssuedAtMs: issued, ResumeAfterMs: after, ResumeByMs: by,
		Bindings:  Bindings{ScopeDigest: dA, RequestDigest: dB},
		Ownership: Ownership{Disposition: Handoff, Mode: ModeGoverned}}
}

// sub replaces the first old in s with new; old must occur.
func sub(s, old, new string) string {
	if !strings.Contains(s, old) {
		panic("sub: " + old + " not in " + s)
	}
	return strings.Replace(s, old, new, 1)
}

// mustDecode decodes s or fails the test.
func mustDecode(t *testing.T, s string) *Receipt {
	t.Helper()
	r, err := Decode([]byte(s))
	if err != nil {
		t.Fatalf("Decode: %v\ninput: %s", err, s)
	}
	return r
}
