package cli

import (
	"testing"
	"time"

	"github.com/layoverhq/layover/quota"
	"github.com/layoverhq/layover/store"
)

// A schedule's policy flags apply over serve's: its --reserve replaces
// serve's whole, a flag it did not set stays serve's, and --pace is kept.
func TestSchedulePolicyOverServes(t *testing.T) {
	base := quota.DefaultPolicy()
	if err := base.Reserve.Set("graphql=900"); err != nil {
		t.Fatal(err)
	}
	base.ResetMargin = 7 * time.Second
	p, pace, err := schedulePolicy(base, false, store.Schedule{Policy: `{"reserve":["50","core=10"],"jitter":["3s"],"pace":["true"]}`})
	if err != nil {
		t.Fatal(err)
	}
	if got := p.Reserve.String(); got != "50,core=10" {
		t.Errorf("reserve %q; want the schedule's 50,core=10 alone", got)
	}
	if p.Jitter != 3*time.Second || p.ResetMargin != 7*time.Second || !pace {
		t.Errorf("jitter %v reset-margin %v pace %v; want 3s, serve's 7s, true", p.Jitter, p.ResetMargin, pace)
	}
	p, pace, err = schedulePolicy(base, false, store.Schedule{})
	if err != nil || p.Reserve.String() != "graphql=900" || pace {
		t.Errorf("no overrides: reserve %q pace %v err %v; want serve's policy", p.Reserve.String(), pace, err)
	}
	// serve --pace (or pace = true in its config) paces every schedule.
	if _, pace, err := schedulePolicy(base, true, store.Schedule{}); err != nil || !pace {
		t.Errorf("serve --pace: pace %v err %v; want the schedule paced", pace, err)
	}
	if _, _, err := schedulePolicy(base, false, store.Schedule{Policy: `{"token":["x"]}`}); err == nil {
		t.Error("an unknown flag in the stored policy was applied")
	}
}
