package schedule_test

import (
	"context"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/layoverhq/layover/clock"
	"github.com/layoverhq/layover/command"
	"github.com/layoverhq/layover/quota"
	"github.com/layoverhq/layover/schedule"
	"github.com/layoverhq/layover/store"
	"github.com/layoverhq/layover/store/sqlite"
)

var t0 = time.Date(2026, 12, 2, 9, 59, 30, 0, time.UTC)

func TestSlotsInTheirZone(t *testing.T) {
	t.Parallel()
	e, err := schedule.Parse("0 3 * * *", "Europe/Berlin")
	if err != nil {
		t.Fatal(err)
	}
	// 03:00 in Berlin is 02:00 UTC in winter, 01:00 in summer.
	if got, want := e.Next(t0), time.Date(2026, 12, 3, 2, 0, 0, 0, time.UTC); !got.Equal(want) {
		t.Errorf("Next = %v; want %v", got, want)
	}
	if got, want := e.Next(time.Date(2026, 7, 1, 0, 0, 0, 0, time.UTC)), time.Date(2026, 7, 1, 1, 0, 0, 0, time.UTC); !got.Equal(want) {
		t.Errorf("Next in summer = %v; want %v", got, want)
	}
	if got, ok := e.Latest(t0.Add(-72*time.Hour), t0); !ok || !got.Equal(time.Date(2026, 12, 2, 2, 0, 0, 0, time.UTC)) {
		t.Errorf("Latest = %v, %v; want today's 02:00 UTC", got, ok)
	}
	if _, ok := e.Latest(time.Date(2026, 12, 2, 2, 0, 0, 0, time.UTC), t0); ok {
		t.Error("Latest counts the slot it starts after")
	}

	// After a long outage the latest slot is still the latest, however
	// many slots the gap holds: a per-minute schedule down three years, a
	// leap-day one down five.
	minutely, err := schedule.Parse("* * * * *", "")
	if err != nil {
		t.Fatal(err)
	}
	upTo := t0.Add(30 * time.Second)
	if got, ok := minutely.Latest(t0.AddDate(-3, 0, 0), upTo); !ok || !got.Equal(upTo.Truncate(time.Minute)) {
		t.Errorf("per-minute Latest over three years = %v, %v; want %v", got, ok, upTo.Truncate(time.Minute))
	}
	leap, err := schedule.Parse("0 0 29 2 *", "")
	if err != nil {
		t.Fatal(err)
	}
	if got, ok := leap.Latest(t0.AddDate(-5, 0, 0), t0); !ok || !got.Equal(time.Date(2024, 2, 29, 0, 0, 0, 0, time.UTC)) {
		t.Errorf("leap-day Latest over five years = %v, %v; want 2024-02-29", got, ok)
	}

	// @every's slots are the multiples of its interval, wherever one looks from.
	every, err := schedule.Parse("@every 2s", "")
	if err != nil {
		t.Fatal(err)
	}
	for _, from := range []time.Time{t0.Add(300 * time.Millisecond), t0.Add(1900 * time.Millisecond)} {
		if got := every.Next(from); !got.Equal(t0.Add(2 * time.Second)) {
			t.Errorf("@every 2s Next(%v) = %v; want %v", from, got, t0.Add(2*time.Second))
		}
	}
	if got, ok := every.Latest(t0.Add(-time.Hour), t0.Add(3*time.Second)); !ok || !got.Equal(t0.Add(2*time.Second)) {
		t.Errorf("@every 2s Latest = %v, %v", got, ok)
	}
	if e.Location().String() != "Europe/Berlin" || every.Location() != time.UTC {
		t.Errorf("zones %v and %v; want Europe/Berlin and UTC (the default)", e.Location(), every.Location())
	}
}

func TestParseRefuses(t *testing.T) {
	t.Parallel()
	for _, c := range [][2]string{{"", ""}, {"* * *", ""}, {"61 * * * *", ""}, {"@fortnightly", ""},
		{"* * * * *", "Mars/Olympus"}, {"* * * * *", "Local"}, {"CRON_TZ=UTC * * * * *", ""},
		{"0 0 30 2 *", ""}, {"* * * * * *", ""}, {strings.Repeat("*", 300), ""}} {
		if _, err := schedule.Parse(c[0], c[1]); err == nil {
			t.Errorf("Parse(%q, %q) accepted", c[0], c[1])
		}
	}
}

// world is a store, a fake clock and a pass that counts its runs.
type world struct {
	st    *sqlite.Store
	clk   *clock.Fake
	mu    sync.Mutex
	runs  []time.Time
	admit func(ctx context.Context, sc store.Schedule) (bool, string)
}

func newWorld(t *testing.T) *world {
	st, err := sqlite.Open(t.Context(), filepath.Join(t.TempDir(), "s.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return &world{st: st, clk: clock.NewFake(t0)}
}

func (w *world) pass(ctx context.Context, sc store.Schedule, slot time.Time) (store.SlotResult, string) {
	if w.admit != nil {
		if ok, line := w.admit(ctx, sc); !ok {
			return store.SlotSkipped, line
		}
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.runs = append(w.runs, slot)
	return store.SlotRan, "exit 0"
}

func (w *world) runner(host string) *schedule.Runner {
	return schedule.New(schedule.Config{Store: w.st, Clock: w.clk, HostID: host, Pass: w.pass})
}

func (w *world) add(t *testing.T, sc store.Schedule) {
	if sc.TZ == "" {
		sc.TZ = "UTC"
	}
	if sc.Missed == "" {
		sc.Missed = store.SlotRan
	}
	if sc.CreatedAt.IsZero() {
		sc.CreatedAt = w.clk.Now()
	}
	if err := w.st.AddSchedule(t.Context(), sc, false); err != nil {
		t.Fatal(err)
	}
}

func (w *world) ranSlots() []time.Time {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]time.Time(nil), w.runs...)
}

// Two hosts looking at every slot run each once.
func TestEachSlotRunsOnceAcrossHosts(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	w.add(t, store.Schedule{Name: "sync", Cron: "* * * * *", Argv: []string{"true"}})
	a, b := w.runner("host-a"), w.runner("host-b")
	for i := range 3 {
		w.clk.Set(t0.Add(30*time.Second + time.Duration(i)*time.Minute)) // 10:00, 10:01, 10:02
		a.Tick(t.Context())
		b.Tick(t.Context())
		a.Wait()
		b.Wait()
		a.Tick(t.Context()) // again at the same time: nothing more
	}
	got := w.ranSlots()
	if len(got) != 3 {
		t.Fatalf("ran %d passes (%v); want 3, one per slot", len(got), got)
	}
	last, ok, err := w.st.LastSlot(t.Context(), "sync")
	if err != nil || !ok || !last.At.Equal(t0.Add(150*time.Second)) || last.Result != store.SlotRan || last.Late {
		t.Errorf("last slot %+v, %v, %v; want 10:02 ran on time", last, ok, err)
	}
}

// A slot before the schedule was added is not run.
func TestNoSlotBeforeTheSchedule(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	w.clk.Set(t0.Add(45 * time.Second)) // 10:00:15
	w.add(t, store.Schedule{Name: "sync", Cron: "* * * * *", Argv: []string{"true"}})
	r := w.runner("h")
	next := r.Tick(t.Context())
	r.Wait()
	if len(w.ranSlots()) != 0 || !next.Equal(t0.Add(90*time.Second)) {
		t.Errorf("ran %v, next %v; want nothing run and the next slot 10:01", w.ranSlots(), next)
	}
}

// Hosts down through five slots: the first to look runs the latest once.
func TestMissedSlotRunsOnceOnRecovery(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	w.add(t, store.Schedule{Name: "hourly", Cron: "@hourly", Argv: []string{"true"}})
	w.clk.Set(t0.Add(5*time.Hour + 20*time.Minute)) // 15:19:30; slots 10:00 … 15:00 passed unclaimed
	a, b := w.runner("a"), w.runner("b")
	a.Tick(t.Context())
	b.Tick(t.Context())
	a.Wait()
	b.Wait()
	a.Tick(t.Context())
	got := w.ranSlots()
	if want := time.Date(2026, 12, 2, 15, 0, 0, 0, time.UTC); len(got) != 1 || !got[0].Equal(want) {
		t.Fatalf("ran %v; want the latest missed slot %v once", got, want)
	}
	last, _, _ := w.st.LastSlot(t.Context(), "hourly")
	if !last.Late || last.Result != store.SlotRan {
		t.Errorf("slot %+v; want late and ran", last)
	}
	act, _ := w.st.Activity(t.Context(), 0)
	if len(act) != 1 || !strings.Contains(act[0].Line, "schedule hourly: missed the slot at") || !strings.Contains(act[0].Line, "running it once now") {
		t.Errorf("activity %+v; want one line for the missed slot", act)
	}
}

// With --missed skip the missed slot is recorded, not run; the next slot
// on time runs.
func TestMissedSlotSkippedByPolicy(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	w.add(t, store.Schedule{Name: "hourly", Cron: "@hourly", Argv: []string{"true"}, Missed: store.SlotMissed})
	w.clk.Set(t0.Add(3 * time.Hour))
	r := w.runner("a")
	next := r.Tick(t.Context())
	r.Wait()
	if len(w.ranSlots()) != 0 {
		t.Fatalf("ran %v; want the missed slot not run", w.ranSlots())
	}
	last, _, _ := w.st.LastSlot(t.Context(), "hourly")
	if last.Result != store.SlotMissed || !last.Late || !strings.HasPrefix(last.Detail, "missed:") {
		t.Errorf("slot %+v; want recorded missed", last)
	}
	w.clk.Set(next)
	r.Tick(t.Context())
	r.Wait()
	if got := w.ranSlots(); len(got) != 1 || !got[0].Equal(next) {
		t.Errorf("ran %v; want the next slot %v", got, next)
	}
}

// A pass refused by admission slot after slot logs one activity line per
// reason, through command.AdmitPass as layover pass does.
func TestSkippedSlotLoggedOncePerReason(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	w.add(t, store.Schedule{Name: "agent", Cron: "* * * * *", Argv: []string{"true"}, Quota: []string{"claude-code:five_hour"}})
	key := quota.Key{Host: "claude-code", Principal: "local", Resource: "five_hour"}
	exhaust := func(reset time.Time) {
		if err := w.st.RecordStates(t.Context(), []quota.State{{Key: key, Limit: 100, Remaining: 0, ResetAt: reset,
			RawReset: reset.Unix(), ResetKnown: true, ObservedAt: w.clk.Now(), ObservedBy: "test"}}); err != nil {
			t.Fatal(err)
		}
	}
	w.admit = func(ctx context.Context, sc store.Schedule) (bool, string) {
		var names command.QuotaNames
		for _, q := range sc.Quota {
			if err := names.Set(q); err != nil {
				t.Error(err)
			}
		}
		adm, err := command.AdmitPass(ctx, &command.PassConfig{Store: w.st, Quota: names, Policy: quota.DefaultPolicy(),
			Now: w.clk.Now, Getenv: func(string) string { return "" }, SkipScope: "schedule:" + sc.Name,
			LinePrefix: "schedule " + sc.Name + ": "})
		if err != nil {
			t.Error(err)
		}
		return adm.Admit, adm.SkipLine
	}
	exhaust(t0.Add(2 * time.Hour))
	r := w.runner("a")
	tick := func(at time.Time) {
		w.clk.Set(at)
		r.Tick(t.Context())
		r.Wait()
	}
	for i := range 3 {
		tick(t0.Add(30*time.Second + time.Duration(i)*time.Minute))
	}
	exhaust(t0.Add(3 * time.Hour)) // a new reset: a new reason
	tick(t0.Add(30*time.Second + 3*time.Minute))
	tick(t0.Add(30*time.Second + 4*time.Minute))
	if got := w.ranSlots(); len(got) != 0 {
		t.Fatalf("ran %v during the wait", got)
	}
	act, _ := w.st.Activity(t.Context(), 0)
	if len(act) != 2 {
		t.Fatalf("activity %+v; want 2 lines: one per reason over 5 skipped slots", act)
	}
	for _, a := range act {
		if !strings.HasPrefix(a.Line, "schedule agent: skipped: ") || !strings.Contains(a.Line, "(five_hour: 0 left)") {
			t.Errorf("line %q; want the schedule's skip line", a.Line)
		}
	}
	last, _, _ := w.st.LastSlot(t.Context(), "agent")
	if last.Result != store.SlotSkipped || !strings.Contains(last.Detail, "Quota wait until") {
		t.Errorf("slot %+v; want skipped with its reason", last)
	}
}

// Run sleeps until the next slot, not a moment less, and runs it then.
func TestRunWakesAtTheNextSlot(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	w.add(t, store.Schedule{Name: "five", Cron: "*/5 * * * *", Argv: []string{"true"}})
	r := schedule.New(schedule.Config{Store: w.st, Clock: w.clk, HostID: "h", Pass: w.pass, Rescan: time.Hour})
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() { defer close(done); r.Run(ctx) }()
	<-w.clk.TimerAdded()
	slot := t0.Add(30 * time.Second) // 10:00
	if at, ok := w.clk.Next(); !ok || !at.Equal(slot) {
		t.Fatalf("the loop sleeps until %v (%v); want the slot 10:00", at, ok)
	}
	w.clk.Set(slot)
	<-w.clk.TimerAdded()
	at, _ := w.clk.Next()
	cancel()
	<-done
	if got := w.ranSlots(); len(got) != 1 || !got[0].Equal(slot) {
		t.Errorf("ran %v; want the 10:00 slot", got)
	}
	if !at.Equal(slot.Add(5 * time.Minute)) {
		t.Errorf("then sleeps until %v; want 10:05", at)
	}
}

// A runner told to stop claiming (serve's drain) claims no more slots.
func TestStopClaiming(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	w.add(t, store.Schedule{Name: "sync", Cron: "* * * * *", Argv: []string{"true"}})
	r := w.runner("a")
	r.StopClaiming()
	w.clk.Set(t0.Add(30 * time.Second))
	r.Tick(t.Context())
	r.Wait()
	if _, ok, _ := w.st.LastSlot(t.Context(), "sync"); ok || len(w.ranSlots()) != 0 {
		t.Errorf("a stopped runner claimed a slot (ran %v)", w.ranSlots())
	}
}
