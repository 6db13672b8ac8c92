package receipt

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func TestValidate(t *testing.T) {
	t.Parallel()
	ms := func(n int64) time.Time { return time.UnixMilli(n) }
	cases := []struct {
		name    string
		now     time.Time
		phase   Phase
		summary string
	}{
		{"just issued", ms(issued), Waiting, "waiting until 2026-05-28T20:28:40Z (in 2m0s); resume by 2026-05-29T02:28:40Z (in 6h2m0s)"},
		{"issued within the skew", ms(issued - 5*60000), Waiting, "waiting until"},
		{"last waiting ms", ms(after - 1), Waiting, "waiting until"},
		{"resume_after", ms(after), Resumable, "resumable now; resume by 2026-05-29T02:28:40Z (in 6h0m0s)"},
		{"resume_by itself", ms(by), Resumable, "resume by 2026-05-29T02:28:40Z (now)"},
		{"sub-ms before expiry", ms(by).Add(999 * time.Microsecond), Resumable, "resumable"},
		{"one ms after resume_by", ms(by + 1), Expired, "expired: resume by 2026-05-29T02:28:40Z passed"},
		{"long after", ms(by).Add(72 * time.Hour), Expired, "expired: resume by 2026-05-29T02:28:40Z passed (72h0m0s ago)"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			r := wantHandoffV2()
			st, err := Validate(&r, c.now)
			if err != nil {
				t.Fatal(err)
			}
			if st.Phase != c.phase || st.Expired() != (c.phase == Expired) {
				t.Errorf("phase %s, want %s", st.Phase, c.phase)
			}
			s := st.String()
			if !strings.HasPrefix(s, "deferred-receipt-v2 (provider-quota, handoff): ") || !strings.Contains(s, c.summary) || strings.Contains(s, "\n") {
				t.Errorf("summary %q lacks %q", s, c.summary)
			}
		})
	}
}

func TestValidateRejects(t *testing.T) {
	t.Parallel()
	now := time.UnixMilli(issued)
	future := wantRetainedV1()
	future.IssuedAtMs, future.ResumeAfterMs, future.ResumeByMs = issued+5*60000+1, issued+5*60000+1, issued+6*60000
	bad := wantRetainedV1()
	bad.Bindings.PlanDigest = strings.ToUpper(dC)
	cases := []struct {
		name  string
		r     Receipt
		field string
	}{
		{"issued beyond the skew", future, "issued_at_ms"},
		{"bad form", bad, "bindings.plan_digest"},
		{"zero", Receipt{}, "schema"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			_, err := Validate(&c.r, now)
			var fe *FieldError
			if !errors.As(err, &fe) || fe.Field != c.field {
				t.Fatalf("err %v, want a FieldError on %s", err, c.field)
			}
		})
	}
	_, err := Validate(&future, now)
	if !strings.Contains(err.Error(), "in the future") {
		t.Errorf("message %q", err)
	}
}

func TestRelative(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 5, 1, 10, 0, 0, 0, time.UTC)
	for d, want := range map[time.Duration]string{
		0: "now", 400 * time.Millisecond: "now", 90 * time.Second: "in 1m30s", -3 * time.Hour: "3h0m0s ago",
	} {
		if got := Relative(now.Add(d), now); got != want {
			t.Errorf("Relative(%s) = %q, want %q", d, got, want)
		}
	}
}
