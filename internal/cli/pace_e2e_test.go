package cli_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/layoverhq/layover/internal/fake"
	"github.com/layoverhq/layover/quota"
	"github.com/layoverhq/layover/store"
	"github.com/layoverhq/layover/store/postgres"
	"github.com/layoverhq/layover/store/sqlite"
)

// seedBurn records a history of a fast burn of core in b's store, as
// other hosts would have: 1,600, 1,400 and 1,200 left 3, 2 and 1 minutes
// ago (200 calls a minute), resetting at reset.
func seedBurn(t *testing.T, b *bundle, principal string, reset time.Time) {
	t.Helper()
	var st store.Store
	var err error
	if loc := b.env["LAYOVER_STORE"]; strings.HasPrefix(loc, "postgres") {
		st, err = postgres.Open(t.Context(), loc)
	} else {
		st, err = sqlite.Open(t.Context(), loc)
	}
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	key := quota.Key{Host: strings.TrimPrefix(b.base, "http://"), Principal: principal, Resource: "core"}
	now := time.Now()
	for i, left := range []int64{1600, 1400, 1200} {
		s := quota.State{Key: key, Limit: 5000, Remaining: left, ResetAt: reset, ResetKnown: true, RawReset: reset.Unix(),
			ObservedAt: now.Add(time.Duration(i-3) * time.Minute), ObservedBy: "host-" + string(rune('a'+i)), Source: quota.SourceHeaders}
		if err := st.RecordStates(t.Context(), []quota.State{s}); err != nil {
			t.Fatal(err)
		}
	}
}

// After other hosts burned core at 200 calls a minute, with 1,000 left
// and the reset 20 minutes off: a pass runs as before without --pace; with
// --pace (or pace = true in the config file) it is skipped, exit 0 and
// quiet, with one pacing line however often it is skipped (the reserve of
// 500 is 2.5 minutes away); status shows the burn and the exhaustion.
func TestPassPaceSkipsAFastBurn(t *testing.T) {
	t.Parallel()
	onEachStore(t, fake.GitHubConfig{Login: "hubot"}, func(t *testing.T, b *bundle) {
		reset := nextSecond(20 * time.Minute)
		b.gh.SetQuota(testToken, "core", 1000, reset)
		seedBurn(t, b, "hubot", reset)

		plain := filepath.Join(b.dir, "plain")
		if r := b.layover("pass", "--", "sh", "-c", "touch "+plain); r.code != 0 || r.stdout != "" {
			t.Fatalf("pass: code %d stdout %q stderr %q", r.code, r.stdout, r.stderr)
		}
		if _, err := os.Stat(plain); err != nil {
			t.Fatal("without --pace the pass did not run (1,000 left is above the reserve of 500)")
		}

		paced := filepath.Join(b.dir, "paced")
		writeTestFile(t, filepath.Join(b.dir, "layover.toml"), "[pass]\npace = true\n")
		for _, args := range [][]string{
			{"pass", "--pace", "--", "sh", "-c", "touch " + paced},
			{"pass", "--pace", "--", "sh", "-c", "touch " + paced},
			{"pass", "--config", filepath.Join(b.dir, "layover.toml"), "--", "sh", "-c", "touch " + paced},
		} {
			if r := b.layover(args...); r.code != 0 || r.stdout != "" || r.stderr != "" {
				t.Fatalf("%v: code %d stdout %q stderr %q; want a quiet exit 0", args, r.code, r.stdout, r.stderr)
			}
		}
		if _, err := os.Stat(paced); err == nil {
			t.Fatal("the paced pass ran its command")
		}
		act := b.layover("activity", "--json")
		var lines []struct{ Kind, Line string }
		if err := json.Unmarshal([]byte(act.stdout), &lines); err != nil {
			t.Fatalf("activity --json: %v\n%s", err, act.stdout)
		}
		want := regexp.MustCompile(`^skipped: pacing: core would run out at \d\d:\d\d, before its reset at ` +
			regexp.QuoteMeta(reset.UTC().Format("15:04")) + `$`)
		if len(lines) != 1 || lines[0].Kind != "skip" || !want.MatchString(lines[0].Line) {
			t.Fatalf("activity %+v; want one skip line matching %s", lines, want)
		}

		var status struct {
			Quota []struct {
				Principal, Resource string
				Burn                *float64 `json:"burn_per_min"`
				Exhausts            *string  `json:"exhausts_at"`
			}
		}
		js := b.layover("status", "--json")
		if err := json.Unmarshal([]byte(js.stdout), &status); err != nil {
			t.Fatalf("status --json: %v\n%s", err, js.stdout)
		}
		found := false
		for _, q := range status.Quota {
			if q.Principal != "hubot" || q.Resource != "core" {
				continue
			}
			found = true
			// 1,600 to about 1,000 over about 3 minutes: 200/min.
			if q.Burn == nil || *q.Burn < 150 || *q.Burn > 210 || q.Exhausts == nil {
				t.Errorf("core: burn %v exhausts %v; want about 200/min and an exhaustion before the reset", fmtPtr(q.Burn), fmtPtr(q.Exhausts))
			}
		}
		if !found {
			t.Fatalf("status --json has no hubot core:\n%s", js.stdout)
		}
		if st := b.layover("status"); !strings.Contains(st.stdout, "/min, exhausts") ||
			!regexp.MustCompile(`\(hubot core: \d+ left, burning [\d.]+/min\) would run out at .*, before its reset at `).MatchString(st.stdout) {
			t.Errorf("status does not show the burn rate and the exhaustion:\n%s", st.stdout)
		}
	})
}

// fmtPtr shows what p points at, or nil.
func fmtPtr[T any](p *T) any {
	if p == nil {
		return nil
	}
	return *p
}
