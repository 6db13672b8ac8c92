package schedule_test

import (
	"testing"
	"time"

	"github.com/layoverhq/layover/job"
	"github.com/layoverhq/layover/schedule"
	"github.com/layoverhq/layover/store"
)

// A slot left running by a host that stopped during its pass is shown as
// interrupted once that host is not live; a live host's pass and a finished
// slot are shown as stored.
func TestShownInterrupted(t *testing.T) {
	now := time.Date(2026, 12, 2, 14, 0, 0, 0, time.UTC)
	hosts := []job.Host{
		{ID: "live", LastSeen: now.Add(-5 * time.Second), Lease: 30 * time.Second},
		{ID: "gone", LastSeen: now.Add(-31 * time.Second), Lease: 30 * time.Second},
	}
	running := func(host string) store.Slot {
		return store.Slot{Schedule: "triage", At: now.Add(-time.Minute), HostID: host, Result: store.SlotRunning}
	}
	for _, tc := range []struct {
		name       string
		slot       store.Slot
		want       store.SlotResult
		wantDetail string
	}{
		{"live host", running("live"), store.SlotRunning, ""},
		{"lease ran out", running("gone"), schedule.Interrupted, "host gone stopped during the pass"},
		{"host unknown", running("elsewhere"), schedule.Interrupted, "host elsewhere stopped during the pass"},
		{"finished", store.Slot{HostID: "gone", Result: store.SlotRan, Detail: "exit 0"}, store.SlotRan, "exit 0"},
	} {
		got := schedule.Shown(tc.slot, hosts, now)
		if got.Result != tc.want || got.Detail != tc.wantDetail {
			t.Errorf("%s: shown %q %q, want %q %q", tc.name, got.Result, got.Detail, tc.want, tc.wantDetail)
		}
	}
}
