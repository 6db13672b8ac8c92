package storetest

import (
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/layoverhq/layover/job"
	"github.com/layoverhq/layover/store"
)

// testSchedules checks the schedules: add (a name taken refused unless
// replaced), list by name with every field back, remove; and slots: one
// claim of a (schedule, time) wins among many at once, a result is set,
// the latest slot read back, and a removed schedule's slots are gone.
func testSchedules(t *testing.T, setup setupFunc) {
	ctx, s := setup(t)
	nightly := store.Schedule{Name: "nightly", Cron: "0 3 * * *", TZ: "Europe/Berlin",
		Argv: []string{"sh", "-c", "echo 'a b'"}, Quota: []string{"github:core"},
		Policy: `{"reserve":"50"}`, Missed: store.SlotRan, CreatedAt: base}
	often := store.Schedule{Name: "often", Cron: "@every 2s", TZ: "UTC", Argv: []string{"true"},
		Missed: store.SlotMissed, CreatedAt: base.Add(time.Second)}
	for _, sc := range []store.Schedule{often, nightly} {
		if err := s.AddSchedule(ctx, sc, false); err != nil {
			t.Fatalf("AddSchedule(%s): %v", sc.Name, err)
		}
	}
	changed := nightly
	changed.Cron = "@hourly"
	if err := s.AddSchedule(ctx, changed, false); !errors.Is(err, store.ErrScheduleExists) {
		t.Fatalf("AddSchedule of a taken name = %v; want ErrScheduleExists", err)
	}
	got, err := s.Schedules(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := []store.Schedule{nightly, often}
	want[0].CreatedAt, want[1].CreatedAt = store.MSTime(base), store.MSTime(base.Add(time.Second))
	want[1].Policy = "{}"
	if len(got) != 2 || !sameSchedule(got[0], want[0]) || !sameSchedule(got[1], want[1]) {
		t.Fatalf("Schedules = %+v; want %+v (the refused replacement left nothing)", got, want)
	}

	// Eight claims of one slot at once: one wins.
	slot := base.Add(time.Hour)
	var wg sync.WaitGroup
	wins := make(chan string, 8)
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			host := "host-" + string(rune('a'+i))
			ok, err := s.ClaimSlot(ctx, store.Slot{Schedule: "nightly", At: slot, HostID: host,
				ClaimedAt: slot, Result: store.SlotRunning})
			if err != nil {
				t.Errorf("ClaimSlot(%s): %v", host, err)
			}
			if ok {
				wins <- host
			}
		}()
	}
	wg.Wait()
	close(wins)
	var winners []string
	for h := range wins {
		winners = append(winners, h)
	}
	if len(winners) != 1 {
		t.Fatalf("%d claims of one slot won (%v); want 1", len(winners), winners)
	}
	if _, ok, err := s.LastSlot(ctx, "often"); err != nil || ok {
		t.Errorf("LastSlot of a schedule never claimed = ok %v, %v; want none", ok, err)
	}
	if err := s.FinishSlot(ctx, "nightly", slot, store.SlotSkipped, "skipped: GitHub Quota wait until 14:20"); err != nil {
		t.Fatal(err)
	}
	if err := s.FinishSlot(ctx, "nightly", slot.Add(time.Minute), store.SlotRan, "exit 0"); !errors.Is(err, job.ErrNotFound) {
		t.Errorf("FinishSlot of an unclaimed slot = %v; want job.ErrNotFound", err)
	}
	earlier := slot.Add(-24 * time.Hour)
	if ok, err := s.ClaimSlot(ctx, store.Slot{Schedule: "nightly", At: earlier, HostID: "host-z", ClaimedAt: slot,
		Result: store.SlotMissed, Detail: "missed", Late: true}); err != nil || !ok {
		t.Fatalf("ClaimSlot of an earlier slot = %v, %v; want claimed", ok, err)
	}
	last, ok, err := s.LastSlot(ctx, "nightly")
	if err != nil || !ok {
		t.Fatalf("LastSlot = %v, %v", ok, err)
	}
	wantSlot := store.Slot{Schedule: "nightly", At: store.MSTime(slot), HostID: winners[0], ClaimedAt: store.MSTime(slot),
		Result: store.SlotSkipped, Detail: "skipped: GitHub Quota wait until 14:20"}
	if !last.At.Equal(wantSlot.At) || !last.ClaimedAt.Equal(wantSlot.ClaimedAt) || last.At.Location() != time.UTC ||
		last.HostID != wantSlot.HostID || last.Result != wantSlot.Result || last.Detail != wantSlot.Detail || last.Late {
		t.Errorf("LastSlot = %+v; want %+v (the latest by slot time, not by claim)", last, wantSlot)
	}
	if _, err := s.ClaimSlot(ctx, store.Slot{Schedule: "absent", At: slot, HostID: "h", ClaimedAt: slot,
		Result: store.SlotRunning}); !errors.Is(err, job.ErrNotFound) {
		t.Errorf("ClaimSlot of an absent schedule = %v; want job.ErrNotFound", err)
	}

	// A replacement keeps the slots; a removal takes them.
	if err := s.AddSchedule(ctx, changed, true); err != nil {
		t.Fatalf("AddSchedule(replace): %v", err)
	}
	if got, _ := s.Schedules(ctx); len(got) != 2 || got[0].Cron != "@hourly" {
		t.Errorf("after the replacement Schedules = %+v; want nightly @hourly", got)
	}
	if _, ok, _ := s.LastSlot(ctx, "nightly"); !ok {
		t.Error("the replacement dropped the schedule's slots")
	}
	if err := s.RemoveSchedule(ctx, "nightly"); err != nil {
		t.Fatal(err)
	}
	if err := s.RemoveSchedule(ctx, "nightly"); !errors.Is(err, job.ErrNotFound) {
		t.Errorf("RemoveSchedule twice = %v; want job.ErrNotFound", err)
	}
	if err := s.AddSchedule(ctx, nightly, false); err != nil {
		t.Fatal(err)
	}
	if _, ok, _ := s.LastSlot(ctx, "nightly"); ok {
		t.Error("a schedule removed and added again still has the old one's slots")
	}
	if ok, err := s.ClaimSlot(ctx, store.Slot{Schedule: "nightly", At: slot, HostID: "h", ClaimedAt: slot,
		Result: store.SlotRunning}); err != nil || !ok {
		t.Errorf("ClaimSlot after a removal = %v, %v; want the slot free again", ok, err)
	}
}

func sameSchedule(a, b store.Schedule) bool {
	return a.Name == b.Name && a.Cron == b.Cron && a.TZ == b.TZ && slices.Equal(a.Argv, b.Argv) &&
		slices.Equal(a.Quota, b.Quota) && a.Policy == b.Policy && a.Missed == b.Missed && a.CreatedAt.Equal(b.CreatedAt) &&
		a.CreatedAt.Location() == time.UTC
}
