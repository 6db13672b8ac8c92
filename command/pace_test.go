package command_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/layoverhq/layover/clock"
	"github.com/layoverhq/layover/command"
	"github.com/layoverhq/layover/quota"
	"github.com/layoverhq/layover/store"
	"github.com/layoverhq/layover/store/postgres"
	"github.com/layoverhq/layover/store/postgres/pgtest"
	"github.com/layoverhq/layover/store/sqlite"
)

// AdmitPass with Pace on an Anthropic key burning 1,000 tokens a minute
// with 10,500 left and the reset 30 minutes off (it would run out 10.5
// minutes on, the reserve of 500 lasting only half a minute): skipped with the pacing line, written once however
// often it skips; admitted without Pace; and, 20 minutes on with no
// observation since (too little history), admitted by the plain rule.
// SQLite and PostgreSQL.
func TestAdmitPassPaces(t *testing.T) {
	t.Parallel()
	for _, kind := range []string{"sqlite", "postgres"} {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			var st store.Store = openStore(t)
			if kind == "postgres" {
				pg, err := postgres.Open(context.Background(), pgtest.Schema(t))
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { _ = pg.Close() })
				st = pg
			}
			ctx := context.Background()
			now := time.Date(2026, 12, 2, 14, 0, 0, 0, time.UTC)
			fake := clock.NewFake(now)
			const apiKey = "sk-ant-api03-pacing-0123456789abcdef"
			key := quota.Key{Host: "api.anthropic.com", Principal: quota.TokenPrincipal(apiKey), Resource: "tokens"}
			reset := now.Add(30 * time.Minute)
			for i, left := range []int64{12500, 11500, 10500} {
				s := quota.State{Key: key, Limit: 1_000_000, Remaining: left, ResetAt: reset, ResetKnown: true,
					ObservedAt: now.Add(time.Duration(i-2) * time.Minute), ObservedBy: "host-b", Source: quota.SourceHeaders}
				if err := st.RecordStates(ctx, []quota.State{s}); err != nil {
					t.Fatal(err)
				}
			}
			var names command.QuotaNames
			if err := names.Set("anthropic:tokens"); err != nil {
				t.Fatal(err)
			}
			admit := func(pace bool) command.PassAdmission {
				t.Helper()
				adm, err := command.AdmitPass(ctx, &command.PassConfig{Store: st, Quota: names, Policy: quota.DefaultPolicy(),
					Getenv: func(k string) string { return map[string]string{"ANTHROPIC_API_KEY": apiKey}[k] },
					Now:    fake.Now, Pace: pace})
				if err != nil {
					t.Fatal(err)
				}
				return adm
			}
			if adm := admit(false); !adm.Admit {
				t.Fatalf("without Pace: %+v; want admitted (10,500 left is above the reserve)", adm)
			}
			// 14:10 and 14:30 UTC, on this machine's clock.
			line := "skipped: pacing: tokens would run out at " + now.Add(10*time.Minute).Local().Format("15:04") +
				", before its reset at " + reset.Local().Format("15:04")
			first := admit(true)
			if first.Admit || first.Pacing == nil || first.SkipLine != line || !first.Logged {
				t.Fatalf("with Pace: %+v; want skipped and logged: %q", first, line)
			}
			fake.Advance(time.Minute)
			if again := admit(true); again.Admit || again.Logged {
				t.Errorf("again: %+v; want skipped, not logged again", again)
			}
			acts, err := st.Activity(ctx, 0)
			if err != nil {
				t.Fatal(err)
			}
			if len(acts) != 1 || acts[0].Line != line || acts[0].Kind != "skip" {
				t.Errorf("activity %+v; want one line %q", acts, line)
			}
			fake.Advance(19 * time.Minute)
			if adm := admit(true); !adm.Admit {
				t.Errorf("20 minutes on, no history in the last 15: %+v; want the plain rule to admit", adm)
			}
			// The burn comes back before the same reset: the pass is paced
			// again, and the reason, logged once already, is not logged
			// again although a pass was admitted in between.
			for i, left := range []int64{11500, 10500, 9500} {
				s := quota.State{Key: key, Limit: 1_000_000, Remaining: left, ResetAt: reset, ResetKnown: true,
					ObservedAt: fake.Now().Add(time.Duration(i-2) * time.Minute), ObservedBy: "host-b", Source: quota.SourceHeaders}
				if err := st.RecordStates(ctx, []quota.State{s}); err != nil {
					t.Fatal(err)
				}
			}
			if adm := admit(true); adm.Admit || adm.Logged {
				t.Errorf("paced again before the same reset: %+v; want skipped, not logged again", adm)
			}
			if acts, err := st.Activity(ctx, 0); err != nil || len(acts) != 1 {
				t.Errorf("activity %+v (%v); want still the one line", acts, err)
			}
		})
	}
}

// BenchmarkAdmitPass times the admission of a pass on one LLM key (the
// ledger only, no network) on SQLite, with and without pacing, the key
// holding a full history (512 observations, 10 s apart): what --pace adds.
func BenchmarkAdmitPass(b *testing.B) {
	st, err := sqlite.Open(context.Background(), filepath.Join(b.TempDir(), "layover.db"))
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	ctx := context.Background()
	now := time.Date(2026, 12, 2, 14, 0, 0, 0, time.UTC)
	const apiKey = "sk-ant-api03-bench-0123456789abcdef"
	key := quota.Key{Host: "api.anthropic.com", Principal: quota.TokenPrincipal(apiKey), Resource: "tokens"}
	for i := range 512 {
		s := quota.State{Key: key, Limit: 1_000_000, Remaining: int64(900_000 - i), ResetAt: now.Add(time.Hour), ResetKnown: true,
			ObservedAt: now.Add(-time.Duration(511-i) * 10 * time.Second), ObservedBy: "host-b", Source: quota.SourceHeaders}
		if err := st.RecordStates(ctx, []quota.State{s}); err != nil {
			b.Fatal(err)
		}
	}
	var names command.QuotaNames
	if err := names.Set("anthropic:tokens"); err != nil {
		b.Fatal(err)
	}
	for _, pace := range []bool{false, true} {
		b.Run(map[bool]string{false: "plain", true: "pace"}[pace], func(b *testing.B) {
			cfg := &command.PassConfig{Store: st, Quota: names, Policy: quota.DefaultPolicy(), Pace: pace,
				Getenv: func(k string) string { return map[string]string{"ANTHROPIC_API_KEY": apiKey}[k] },
				Now:    func() time.Time { return now }}
			for b.Loop() {
				if adm, err := command.AdmitPass(ctx, cfg); err != nil || !adm.Admit {
					b.Fatal(adm, err)
				}
			}
		})
	}
}
