package quota_test

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/layoverhq/layover/quota"
)

func TestDeferralError(t *testing.T) {
	t.Parallel()

	key := quota.Key{Host: "api.github.com", Principal: "octocat", Resource: "core"}
	resume := time.Date(2026, 5, 1, 12, 2, 0, 0, time.FixedZone("CEST", 2*3600))
	tests := []struct {
		name string
		err  *quota.DeferralError
		want string
	}{
		{"exhausted", &quota.DeferralError{Key: key, ResumeAt: resume, Cause: quota.CauseExhausted, Reason: "deferral mode"},
			"deferred: quota api.github.com/octocat/core exhausted until 2026-05-01T10:02:00Z: deferral mode"},
		{"below reserve", &quota.DeferralError{Key: key, ResumeAt: resume, Cause: quota.CauseBelowReserve},
			"deferred: quota api.github.com/octocat/core below-reserve until 2026-05-01T10:02:00Z"},
		{"resume unknown, no cause", &quota.DeferralError{Key: key, Reason: "why"},
			"deferred: quota api.github.com/octocat/core held back: why"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := tt.err.Error(); got != tt.want {
				t.Errorf("Error() = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestDeferralErrorAs(t *testing.T) {
	t.Parallel()

	orig := &quota.DeferralError{Key: quota.Key{Host: "h", Principal: "p", Resource: "r"}, Cause: quota.CauseExhausted}
	wrapped := fmt.Errorf("get /repos: %w", orig)
	var de *quota.DeferralError
	if !errors.As(wrapped, &de) {
		t.Fatalf("errors.As(%v) found no *DeferralError", wrapped)
	}
	if de != orig {
		t.Errorf("errors.As gave %p, want %p", de, orig)
	}
}
