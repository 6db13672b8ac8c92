// Package receipt implements the deferred receipts of docs/receipt.md,
// deferred-receipt-v1 and deferred-receipt-v2: strict decoding, form and
// clock validation, canonical encoding, and the binding digests.
//
// A receipt is evidence, never authority: it holds only the schema's fields
// (no token, login, repository, URL, payload, nonce or lease key), so a
// Receipt value has nothing else to hold.
package receipt

import (
	"fmt"
	"strings"
	"time"
)

// Schema is the only value of a receipt's schema field.
const Schema = 1

// Versions.
const (
	V1 = "deferred-receipt-v1"
	V2 = "deferred-receipt-v2"
)

// StatusDeferred is the only value of a receipt's status field.
const StatusDeferred = "deferred"

// Reason says why work was deferred.
type Reason string

// Reasons. ProviderQuota (a non-GitHub provider's primary exhaustion) is
// admitted only by V2.
const (
	RESTReserve            Reason = "rest-reserve"
	GraphQLReserve         Reason = "graphql-reserve"
	ProviderSecondaryLimit Reason = "provider-secondary-limit"
	ProviderQuota          Reason = "provider-quota"
)

// Ownership dispositions and their modes.
const (
	Retained        = "retained"
	Handoff         = "handoff"
	ModeDurableHost = "durable-host"
	ModeGoverned    = "governed-handoff"
)

// Limits of a receipt's numbers and window.
const (
	// MaxMs is the largest millisecond value a receipt holds: 2^53-1, the
	// largest integer every JSON reader represents exactly.
	MaxMs = 1<<53 - 1
	// MaxWindow bounds resume_by_ms - issued_at_ms.
	MaxWindow = 24 * time.Hour
	// MaxWindowMs is MaxWindow in milliseconds (86400000).
	MaxWindowMs = int64(MaxWindow / time.Millisecond)
	// ResumeGrace bounds resume_by - resume_after when a receipt is issued.
	ResumeGrace = 6 * time.Hour
	// ClockSkew is how far in the future issued_at may lie when validated.
	ClockSkew = 5 * time.Minute
	// MaxSize bounds an encoded receipt that Decode reads.
	MaxSize = 64 << 10
)

// Receipt is one deferred receipt. Its fields are exactly the schema's.
// A digest that the schema allows to be null is "" when null.
type Receipt struct {
	Schema                int
	Version               string
	Status                string
	Reason                Reason
	IssuedAtMs            int64
	ResumeAfterMs         int64
	ResumeByMs            int64
	Bindings              Bindings
	Ownership             Ownership
	FreshApprovalRequired bool
}

// Bindings are the digests a resume recomputes and compares.
type Bindings struct {
	ScopeDigest   string
	RequestDigest string
	PlanDigest    string // "" is null: the job has no plan
}

// Ownership is exactly one of two forms: retained
// {retained, durable-host, H, H} or handoff {handoff, governed-handoff,
// null, null}.
type Ownership struct {
	Disposition        string
	Mode               string
	WakeupDigest       string // "" is null
	CancellationDigest string // "" is null
}

// RetainedOwnership is the retained form with the given hashed handles.
func RetainedOwnership(wakeupDigest, cancellationDigest string) Ownership {
	return Ownership{Disposition: Retained, Mode: ModeDurableHost,
		WakeupDigest: wakeupDigest, CancellationDigest: cancellationDigest}
}

// HandoffOwnership is the governed handoff form.
func HandoffOwnership() Ownership {
	return Ownership{Disposition: Handoff, Mode: ModeGoverned}
}

// FieldError is a receipt that is not valid, naming the field at fault as
// a dotted path ("bindings.scope_digest"); Field is "" when the input as a
// whole is at fault (not an object, trailing data, too large).
type FieldError struct {
	Field   string
	Problem string
}

func (e *FieldError) Error() string {
	if e.Field == "" {
		return "receipt: " + e.Problem
	}
	return "receipt: " + e.Field + ": " + e.Problem
}

func fieldErr(field, format string, a ...any) *FieldError {
	return &FieldError{Field: field, Problem: fmt.Sprintf(format, a...)}
}

// IssuedAt returns IssuedAtMs (Unix milliseconds) as a time in UTC.
func (r *Receipt) IssuedAt() time.Time { return time.UnixMilli(r.IssuedAtMs).UTC() }

// ResumeAfter returns ResumeAfterMs (Unix milliseconds) as a time in UTC.
func (r *Receipt) ResumeAfter() time.Time { return time.UnixMilli(r.ResumeAfterMs).UTC() }

// ResumeBy returns ResumeByMs (Unix milliseconds) as a time in UTC.
func (r *Receipt) ResumeBy() time.Time { return time.UnixMilli(r.ResumeByMs).UTC() }

// IsRetained reports whether a live durable host holds the wake-up.
func (r *Receipt) IsRetained() bool { return r.Ownership.Disposition == Retained }

// reasons lists what each version admits, in the order errors name them.
var reasons = map[string][]Reason{
	V1: {RESTReserve, GraphQLReserve, ProviderSecondaryLimit},
	V2: {RESTReserve, GraphQLReserve, ProviderSecondaryLimit, ProviderQuota},
}

// ReasonAllowed reports whether version admits reason.
func ReasonAllowed(version string, reason Reason) bool {
	for _, x := range reasons[version] {
		if x == reason {
			return true
		}
	}
	return false
}

// Check verifies the receipt's form: every value and the window's own
// bounds. It does not read a clock (see Validate). The error is a
// *FieldError naming the first field at fault, in the schema's order.
func (r *Receipt) Check() error {
	if r.Schema != Schema {
		return fieldErr("schema", "want 1")
	}
	allowed, ok := reasons[r.Version]
	if !ok {
		return fieldErr("version", "unknown version; want %q or %q", V1, V2)
	}
	if r.Status != StatusDeferred {
		return fieldErr("status", "want %q", StatusDeferred)
	}
	if !ReasonAllowed(r.Version, r.Reason) {
		if ReasonAllowed(V2, r.Reason) {
			return fieldErr("reason", "%q needs %s", r.Reason, V2)
		}
		names := make([]string, len(allowed))
		for i, x := range allowed {
			names[i] = string(x)
		}
		return fieldErr("reason", "want one of %s for %s", strings.Join(names, ", "), r.Version)
	}
	for _, f := range []struct {
		name string
		v    int64
	}{{"issued_at_ms", r.IssuedAtMs}, {"resume_after_ms", r.ResumeAfterMs}, {"resume_by_ms", r.ResumeByMs}} {
		if f.v < 0 || f.v > MaxMs {
			return fieldErr(f.name, "want an integer from 0 to 2^53-1")
		}
	}
	if r.ResumeAfterMs < r.IssuedAtMs {
		return fieldErr("resume_after_ms", "before issued_at_ms")
	}
	if r.ResumeByMs < r.ResumeAfterMs {
		return fieldErr("resume_by_ms", "before resume_after_ms")
	}
	if r.ResumeByMs-r.IssuedAtMs > MaxWindowMs {
		return fieldErr("resume_by_ms", "more than 24h (86400000 ms) after issued_at_ms")
	}
	if !IsDigest(r.Bindings.ScopeDigest) {
		return fieldErr("bindings.scope_digest", "want 64 lowercase hex digits")
	}
	if !IsDigest(r.Bindings.RequestDigest) {
		return fieldErr("bindings.request_digest", "want 64 lowercase hex digits")
	}
	if r.Bindings.PlanDigest != "" && !IsDigest(r.Bindings.PlanDigest) {
		return fieldErr("bindings.plan_digest", "want 64 lowercase hex digits or null")
	}
	return r.Ownership.check()
}

func (o *Ownership) check() error {
	switch o.Disposition {
	case Retained:
		if o.Mode != ModeDurableHost {
			return fieldErr("ownership.mode", "want %q for retained ownership", ModeDurableHost)
		}
		if !IsDigest(o.WakeupDigest) {
			return fieldErr("ownership.wakeup_digest", "want 64 lowercase hex digits for retained ownership")
		}
		if !IsDigest(o.CancellationDigest) {
			return fieldErr("ownership.cancellation_digest", "want 64 lowercase hex digits for retained ownership")
		}
	case Handoff:
		if o.Mode != ModeGoverned {
			return fieldErr("ownership.mode", "want %q for handoff ownership", ModeGoverned)
		}
		if o.WakeupDigest != "" {
			return fieldErr("ownership.wakeup_digest", "want null for handoff ownership")
		}
		if o.CancellationDigest != "" {
			return fieldErr("ownership.cancellation_digest", "want null for handoff ownership")
		}
	default:
		return fieldErr("ownership.disposition", "want %q or %q", Retained, Handoff)
	}
	return nil
}

// IsDigest reports whether s is 64 lowercase hex digits.
func IsDigest(s string) bool {
	if len(s) != 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}

// Params are what a new receipt is issued from.
type Params struct {
	// Version is V1 or V2; "" picks the lowest version that admits Reason.
	Version string
	Reason  Reason
	// IssuedAt, ResumeAfter and ResumeBy are stored in milliseconds:
	// IssuedAt and ResumeBy rounded down, ResumeAfter rounded up. Window
	// computes ResumeAfter and ResumeBy as docs/receipt.md (The window) defines them.
	IssuedAt, ResumeAfter, ResumeBy time.Time
	Bindings                        Bindings
	FreshApprovalRequired           bool
}

// NewHandoff issues a receipt with governed handoff ownership.
func NewHandoff(p Params) (*Receipt, error) {
	return newReceipt(p, HandoffOwnership())
}

// NewRetained issues a receipt with retained ownership: a live durable host
// recorded a wake-up and can cancel it; the digests hash its handles.
func NewRetained(p Params, wakeupDigest, cancellationDigest string) (*Receipt, error) {
	return newReceipt(p, RetainedOwnership(wakeupDigest, cancellationDigest))
}

func newReceipt(p Params, o Ownership) (*Receipt, error) {
	v := p.Version
	if v == "" {
		v = V1
		if !ReasonAllowed(V1, p.Reason) {
			v = V2
		}
	}
	r := &Receipt{
		Schema:                Schema,
		Version:               v,
		Status:                StatusDeferred,
		Reason:                p.Reason,
		IssuedAtMs:            floorMs(p.IssuedAt),
		ResumeAfterMs:         ceilMs(p.ResumeAfter),
		ResumeByMs:            floorMs(p.ResumeBy),
		Bindings:              p.Bindings,
		Ownership:             o,
		FreshApprovalRequired: p.FreshApprovalRequired,
	}
	if err := r.Check(); err != nil {
		return nil, err
	}
	return r, nil
}

// floorMs and ceilMs convert t to Unix milliseconds, rounding down or up.
func floorMs(t time.Time) int64 {
	ms := t.UnixMilli()
	if time.UnixMilli(ms).After(t) {
		ms--
	}
	return ms
}

func ceilMs(t time.Time) int64 {
	ms := t.UnixMilli()
	if time.UnixMilli(ms).Before(t) {
		ms++
	}
	return ms
}
