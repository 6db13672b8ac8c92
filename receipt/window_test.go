package receipt

import (
	"errors"
	"testing"
	"time"
)

func TestWindow(t *testing.T) {
	t.Parallel()
	issue := time.Date(2026, 5, 1, 10, 0, 0, 0, time.UTC)
	at := func(d time.Duration) time.Time { return issue.Add(d) }
	cases := []struct {
		name           string
		issue, reset   time.Time
		margin, jitter time.Duration
		deadline       time.Time
		after, by      time.Time
		err            error
	}{
		{"reset + margin + jitter, +6h", issue, at(40 * time.Minute), time.Minute, 30 * time.Second, time.Time{},
			at(41*time.Minute + 30*time.Second), at(6*time.Hour + 41*time.Minute + 30*time.Second), nil},
		{"capped at issue + 24h", issue, at(20 * time.Hour), time.Minute, 0, time.Time{},
			at(20*time.Hour + time.Minute), at(24 * time.Hour), nil},
		{"resume_after exactly issue + 24h", issue, at(24*time.Hour - time.Minute), time.Minute, 0, time.Time{},
			at(24 * time.Hour), at(24 * time.Hour), nil},
		{"capped at the deadline", issue, at(time.Hour), 0, 0, at(2 * time.Hour),
			at(time.Hour), at(2 * time.Hour), nil},
		{"deadline later than the other bounds", issue, at(time.Hour), 0, 0, at(48 * time.Hour),
			at(time.Hour), at(7 * time.Hour), nil},
		{"deadline at resume_after", issue, at(time.Hour), 0, 0, at(time.Hour),
			at(time.Hour), at(time.Hour), nil},
		{"reset already past", issue, at(-time.Hour), time.Minute, 0, time.Time{},
			issue, at(6 * time.Hour), nil},
		{"milliseconds: after up, by and issue down", at(999 * time.Microsecond), at(time.Second + time.Microsecond), 0, 0, at(time.Hour + 1500*time.Microsecond),
			at(time.Second + time.Millisecond), at(time.Hour + time.Millisecond), nil},
		{"beyond 24h", issue, at(24*time.Hour + time.Millisecond), 0, 0, time.Time{}, time.Time{}, time.Time{}, ErrTooFar},
		{"margin pushes beyond 24h", issue, at(24 * time.Hour), time.Minute, 0, time.Time{}, time.Time{}, time.Time{}, ErrTooFar},
		{"deadline before resume_after", issue, at(time.Hour), time.Minute, 0, at(time.Hour), time.Time{}, time.Time{}, ErrDeadline},
		{"unknown reset", issue, time.Time{}, time.Minute, 0, time.Time{}, time.Time{}, time.Time{}, ErrNoReset},
		{"deadline passed", issue, at(time.Hour), 0, 0, at(-time.Hour), time.Time{}, time.Time{}, ErrDeadline},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			after, by, err := Window(c.issue, c.reset, c.margin, c.jitter, c.deadline)
			if !errors.Is(err, c.err) {
				t.Fatalf("err %v, want %v", err, c.err)
			}
			if err != nil {
				return
			}
			if !after.Equal(c.after) || !by.Equal(c.by) {
				t.Errorf("window %s .. %s, want %s .. %s", after, by, c.after, c.by)
			}
			// The window always makes a valid receipt.
			r, err := NewHandoff(Params{Reason: RESTReserve, IssuedAt: c.issue, ResumeAfter: after, ResumeBy: by,
				Bindings: Bindings{ScopeDigest: dA, RequestDigest: dB}})
			if err != nil {
				t.Fatalf("NewHandoff: %v", err)
			}
			if !r.ResumeAfter().Equal(after) || !r.ResumeBy().Equal(by) {
				t.Errorf("receipt window %s .. %s", r.ResumeAfter(), r.ResumeBy())
			}
		})
	}
}

func TestNewReceipts(t *testing.T) {
	t.Parallel()
	issue := time.UnixMilli(issued)
	p := Params{Reason: RESTReserve, IssuedAt: issue, ResumeAfter: time.UnixMilli(after), ResumeBy: time.UnixMilli(by),
		Bindings: Bindings{ScopeDigest: dA, RequestDigest: dB, PlanDigest: dC}, FreshApprovalRequired: true}
	r, err := NewRetained(p, dD, dE)
	if err != nil {
		t.Fatal(err)
	}
	if *r != wantRetainedV1() {
		t.Errorf("NewRetained = %+v", *r)
	}
	if !r.IsRetained() {
		t.Errorf("not retained")
	}
	p.Reason, p.Bindings.PlanDigest, p.FreshApprovalRequired = ProviderQuota, "", false
	h, err := NewHandoff(p)
	if err != nil {
		t.Fatal(err)
	}
	if *h != wantHandoffV2() {
		t.Errorf("NewHandoff = %+v (provider-quota picks v2)", *h)
	}
	if h.IsRetained() {
		t.Errorf("handoff is retained")
	}
	p.Reason, p.Version = GraphQLReserve, V2
	if h, err := NewHandoff(p); err != nil || h.Version != V2 {
		t.Errorf("explicit v2: %+v, %v", h, err)
	}
	bad := []struct {
		name  string
		p     Params
		w, c  string
		field string
	}{
		{"v1 with provider-quota", Params{Version: V1, Reason: ProviderQuota, IssuedAt: issue, ResumeAfter: issue, ResumeBy: issue,
			Bindings: Bindings{ScopeDigest: dA, RequestDigest: dB}}, dD, dE, "reason"},
		{"no reason", Params{IssuedAt: issue, ResumeAfter: issue, ResumeBy: issue,
			Bindings: Bindings{ScopeDigest: dA, RequestDigest: dB}}, dD, dE, "reason"},
		{"no scope digest", Params{Reason: RESTReserve, IssuedAt: issue, ResumeAfter: issue, ResumeBy: issue,
			Bindings: Bindings{RequestDigest: dB}}, dD, dE, "bindings.scope_digest"},
		{"retained without handles", Params{Reason: RESTReserve, IssuedAt: issue, ResumeAfter: issue, ResumeBy: issue,
			Bindings: Bindings{ScopeDigest: dA, RequestDigest: dB}}, "", "", "ownership.wakeup_digest"},
		{"window too long", Params{Reason: RESTReserve, IssuedAt: issue, ResumeAfter: issue, ResumeBy: issue.Add(25 * time.Hour),
			Bindings: Bindings{ScopeDigest: dA, RequestDigest: dB}}, dD, dE, "resume_by_ms"},
		{"empty at ms resolution", Params{Reason: RESTReserve, IssuedAt: issue, ResumeAfter: issue.Add(300 * time.Microsecond),
			ResumeBy: issue.Add(600 * time.Microsecond), Bindings: Bindings{ScopeDigest: dA, RequestDigest: dB}}, dD, dE, "resume_by_ms"},
	}
	for _, c := range bad {
		_, err := NewRetained(c.p, c.w, c.c)
		var fe *FieldError
		if !errors.As(err, &fe) || fe.Field != c.field {
			t.Errorf("%s: err %v, want a FieldError on %s", c.name, err, c.field)
		}
	}
}
