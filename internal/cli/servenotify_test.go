package cli

import (
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/layoverhq/layover/clock"
	"github.com/layoverhq/layover/host"
	"github.com/layoverhq/layover/job"
	"github.com/layoverhq/layover/notify"
	"github.com/layoverhq/layover/store/sqlite"
)

// A burst of transitions larger than a default subscription's buffer
// reaches serve's notify subscription whole; the events a full buffer
// does drop are counted in layover_notify_dropped_total, not lost
// without trace.
func TestNotifySubscriptionLosesNothingUncounted(t *testing.T) {
	ctx := t.Context()
	st, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "layover.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	jobs, err := host.NewJobs(host.Config{Store: st, Clock: clock.NewFake(time.Date(2026, 12, 2, 5, 0, 0, 0, time.UTC)), Env: []string{}})
	if err != nil {
		t.Fatal(err)
	}
	serveSub, tiny := jobs.Subscribe(notifyEventBuffer), jobs.Subscribe(2)
	burst := host.DefaultEventBuffer + 1
	for i := range burst {
		if _, _, err := jobs.Submit(ctx, fmt.Sprint("burst-", i), job.Spec{Argv: []string{"true"}}); err != nil {
			t.Fatal(err)
		}
	}
	if d := serveSub.Dropped(); d != 0 {
		t.Errorf("serve's notify subscription dropped %d of a burst of %d events", d, burst)
	}
	n, err := notify.New(notify.Config{})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := notifyLost(n, tiny)(), float64(burst-2); got != want {
		t.Errorf("notifications lost by a 2-event subscription: counted %v, want %v", got, want)
	}
}
