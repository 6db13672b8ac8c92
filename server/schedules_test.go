package server

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/layoverhq/layover/store"
)

// The console lists each schedule with its next slot and its last slot's
// result, as a page and at /api/v1/schedules.
func TestSchedulesPageAndAPI(t *testing.T) {
	w := newWorld(t, testToken)
	if r := w.get(t, "/schedules"); r.code != 200 {
		t.Fatalf("GET /schedules: %d", r.code)
	} else {
		wantAll(t, "/schedules", r.body, "No schedules")
	}
	now := w.clock.Now()
	for _, sc := range []store.Schedule{
		{Name: "triage", Cron: "*/15 * * * *", TZ: "UTC", Argv: []string{"./triage.sh"}, Quota: []string{"github"}, Missed: store.SlotRan, CreatedAt: now.Add(-time.Hour)},
		{Name: "nightly", Cron: "0 3 * * *", TZ: "Europe/Berlin", Argv: []string{"./sync.sh", "--all"}, Missed: store.SlotMissed, CreatedAt: now},
	} {
		if err := w.st.AddSchedule(w.ctx, sc, false); err != nil {
			t.Fatal(err)
		}
	}
	slot := now.Truncate(15 * time.Minute)
	if _, err := w.st.ClaimSlot(w.ctx, store.Slot{Schedule: "triage", At: slot, HostID: "host-buildbox-1", ClaimedAt: slot,
		Result: store.SlotSkipped, Detail: "schedule triage: skipped: GitHub Quota wait until 05:42"}); err != nil {
		t.Fatal(err)
	}
	next := slot.Add(15 * time.Minute).UTC()
	r := w.get(t, "/schedules")
	wantAll(t, "/schedules", r.body, `id="schedules"`, "triage", "*/15 * * * *", next.Format("2006-01-02 15:04:05 UTC"),
		"skipped: schedule triage: skipped: GitHub Quota wait until 05:42", "./sync.sh --all", "Europe/Berlin", "none yet")
	r = w.get(t, "/api/v1/schedules")
	var got []struct {
		Name     string  `json:"name"`
		NextSlot *string `json:"next_slot"`
		LastSlot *struct {
			Result, Host string
		} `json:"last_slot"`
	}
	if err := json.Unmarshal([]byte(r.body), &got); err != nil {
		t.Fatalf("/api/v1/schedules: %v\n%s", err, r.body)
	}
	if len(got) != 2 || got[0].Name != "nightly" || got[1].Name != "triage" || got[1].NextSlot == nil ||
		*got[1].NextSlot != next.Format(time.RFC3339) || got[1].LastSlot == nil || got[1].LastSlot.Result != "skipped" ||
		got[0].LastSlot != nil {
		t.Errorf("/api/v1/schedules = %s", r.body)
	}
}
