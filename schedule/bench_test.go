package schedule_test

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/layoverhq/layover/clock"
	"github.com/layoverhq/layover/schedule"
	"github.com/layoverhq/layover/store"
	"github.com/layoverhq/layover/store/sqlite"
)

// BenchmarkTick times one look of a host at 100 schedules on SQLite, each
// with its due slot claimed already (the common wake-up of a fleet's
// second host: it reads, finds the claims taken, and sleeps).
func BenchmarkTick(b *testing.B) {
	st, err := sqlite.Open(b.Context(), filepath.Join(b.TempDir(), "s.db"))
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	clk := clock.NewFake(t0.Add(30 * time.Second))
	for i := range 100 {
		name := fmt.Sprintf("s%03d", i)
		if err := st.AddSchedule(b.Context(), store.Schedule{Name: name, Cron: "* * * * *", TZ: "UTC", Argv: []string{"true"},
			Missed: store.SlotRan, CreatedAt: t0}, false); err != nil {
			b.Fatal(err)
		}
		if _, err := st.ClaimSlot(b.Context(), store.Slot{Schedule: name, At: t0.Add(30 * time.Second), HostID: "other",
			ClaimedAt: t0, Result: store.SlotRan}); err != nil {
			b.Fatal(err)
		}
	}
	r := schedule.New(schedule.Config{Store: st, Clock: clk, HostID: "h",
		Pass: func(_ context.Context, _ store.Schedule, _ time.Time) (store.SlotResult, string) {
			b.Error("a pass ran: the slots were claimed")
			return "", ""
		}})
	for b.Loop() {
		r.Tick(b.Context())
	}
}
