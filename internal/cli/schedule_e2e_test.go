package cli_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/layoverhq/layover/internal/fake"
	"github.com/layoverhq/layover/store/postgres/pgtest"
)

// schedule add refuses a bad expression, a bad zone or a taken name with
// exit 2 and one line, storing nothing; list shows the next slot; remove
// removes.
func TestScheduleAddListRemove(t *testing.T) {
	t.Parallel()
	b := setup(t, fake.GitHubConfig{})
	if r := b.layover("schedule", "add", "hourly", "--cron", "@hourly", "--", "true"); r.code != 0 {
		t.Fatal(r.stderr)
	}
	for _, args := range [][]string{
		{"schedule", "add", "nightly", "--cron", "61 * * * *", "--", "true"},
		{"schedule", "add", "nightly", "--cron", "0 3 * * *", "--tz", "Mars/Olympus", "--", "true"},
		{"schedule", "add", "nightly", "--cron", "0 3 * * *", "--missed", "sometimes", "--", "true"},
		{"schedule", "add", "nightly", "--", "true"},
		{"schedule", "add", "--cron", "@daily", "--", "true"},
		{"schedule", "add", "nightly", "--cron", "@daily", "--", "echo", "ghp_" + strings.Repeat("a", 36)},
	} {
		r := b.layover(args...)
		if r.code != 2 || strings.Count(strings.TrimSpace(r.stderr), "\n") != 0 || r.stderr == "" {
			t.Errorf("%v: exit %d stderr %q; want 2 and one line", args, r.code, r.stderr)
		}
	}
	if r := b.layover("schedule", "list"); r.code != 0 || strings.Contains(r.stdout, "nightly") || !strings.Contains(r.stdout, "hourly") {
		t.Fatalf("after refusals list says %q %q (exit %d); want nothing stored", r.stdout, r.stderr, r.code)
	}
	r := b.layover("schedule", "add", "nightly", "--cron", "0 3 * * *", "--tz", "Europe/Berlin", "--quota", "github:core",
		"--reserve", "50", "--", "sh", "-c", "echo hi")
	if r.code != 0 || !strings.Contains(r.stdout, "next slot") || !strings.Contains(r.stdout, "Europe/Berlin") {
		t.Fatalf("add: exit %d stdout %q stderr %q", r.code, r.stdout, r.stderr)
	}
	if r := b.layover("schedule", "add", "nightly", "--cron", "@hourly", "--", "true"); r.code != 2 || !strings.Contains(r.stderr, "--replace") {
		t.Errorf("a taken name: exit %d %q; want 2 naming --replace", r.code, r.stderr)
	}
	js := b.layover("schedule", "list", "--json")
	var list []struct {
		Name, Cron, TZ string
		Command, Quota []string
		NextSlot       string `json:"next_slot"`
		LastSlot       any    `json:"last_slot"`
	}
	if err := json.Unmarshal([]byte(js.stdout), &list); err != nil {
		t.Fatalf("list --json: %v\n%s", err, js.stdout)
	}
	if len(list) != 2 || list[0].Name != "hourly" || list[1].Name != "nightly" || list[0].TZ != "UTC" {
		t.Fatalf("list %+v; want hourly (UTC, the default) and nightly", list)
	}
	n := list[1]
	next, err := time.Parse(time.RFC3339, n.NextSlot)
	berlin, _ := time.LoadLocation("Europe/Berlin")
	if err != nil || next.In(berlin).Hour() != 3 || next.In(berlin).Minute() != 0 || !next.After(time.Now()) ||
		time.Until(next) > 25*time.Hour {
		t.Errorf("nightly's next slot %q (%v); want the next 03:00 in Berlin", n.NextSlot, err)
	}
	if !slices.Equal(n.Command, []string{"sh", "-c", "echo hi"}) || !slices.Equal(n.Quota, []string{"github:core"}) || n.LastSlot != nil {
		t.Errorf("nightly %+v", n)
	}
	if r := b.layover("schedule", "add", "nightly", "--replace", "--cron", "@daily", "--", "true"); r.code != 0 {
		t.Fatal(r.stderr)
	}
	if r := b.layover("schedule", "list"); !strings.Contains(r.stdout, "@daily") || strings.Contains(r.stdout, "0 3 * * *") {
		t.Errorf("after --replace list:\n%s", r.stdout)
	}
	if r := b.layover("schedule", "remove", "nightly"); r.code != 0 {
		t.Fatal(r.stderr)
	}
	if r := b.layover("schedule", "remove", "nightly"); r.code != 1 {
		t.Errorf("removing twice: exit %d; want 1", r.code)
	}
}

// submit --in and --at delay a job: stored ready with its start ahead; a
// time in the past is exit 2.
func TestSubmitDelayed(t *testing.T) {
	t.Parallel()
	b := setup(t, fake.GitHubConfig{})
	past := time.Now().Add(-time.Minute).UTC().Format(time.RFC3339)
	for _, args := range [][]string{{"--at", past}, {"--in", "-5m"}, {"--in", "0s"}, {"--at", "tomorrow"},
		{"--in", "1h", "--at", time.Now().Add(time.Hour).UTC().Format(time.RFC3339)}, {"--in", "48h"}} {
		r := b.layover(append(append([]string{"submit"}, args...), "--", "true")...)
		if r.code != 2 {
			t.Errorf("submit %v: exit %d %q; want 2", args, r.code, r.stderr)
		}
	}
	r := b.layover("submit", "--id", "later", "--in", "1h", "--", "true")
	if r.code != 0 {
		t.Fatal(r.stderr)
	}
	js := b.layover("show", "later", "--json")
	if !strings.Contains(js.stdout, `"state": "ready"`) || !strings.Contains(js.stdout, "ready at ") {
		t.Errorf("show later:\n%s\nwant ready with its start ahead", js.stdout)
	}
	// serve does not start it before its time.
	p := b.start("serve", "--lease", "3s", "--heartbeat", "500ms")
	p.waitLine(t, "layover serve started")
	if r := b.layover("submit", "--id", "now", "--", "true"); r.code != 0 {
		t.Fatal(r.stderr)
	}
	p.waitLine(t, "job=now")
	for l := range strings.SplitSeq(p.stderr(), "\n") {
		if strings.Contains(l, "job=later") && strings.Contains(l, "running") {
			t.Errorf("the delayed job started early: %s", l)
		}
	}
}

// Two serve processes on one PostgreSQL store run each slot of a schedule
// once, and a schedule whose quota is exhausted logs its skip once.
func TestTwoServesRunEachSlotOnce(t *testing.T) {
	t.Parallel()
	dsn := pgtest.Schema(t)
	a := setup(t, fake.GitHubConfig{})
	a.env["LAYOVER_STORE"] = dsn
	b := a.machine()
	a.gh.SetQuota(testToken, "core", 0, nextSecond(time.Hour))
	slots := filepath.Join(a.dir, "slots")
	if r := a.layover("schedule", "add", "tick", "--cron", "@every 2s", "--quota", "claude-code:five_hour", "--",
		"sh", "-c", `echo "$LAYOVER_SLOT" >> `+slots); r.code != 0 {
		t.Fatal(r.stderr)
	}
	marker := filepath.Join(a.dir, "held-ran")
	if r := a.layover("schedule", "add", "held", "--cron", "@every 2s", "--quota", "github:core", "--", "touch", marker); r.code != 0 {
		t.Fatal(r.stderr)
	}
	var procs []*proc
	for _, m := range []*bundle{a, b} {
		p := m.start("serve", "--lease", "3s", "--heartbeat", "500ms")
		p.waitLine(t, "layover serve started")
		procs = append(procs, p)
	}
	// Count the slots done across both hosts: six of tick, three of held.
	done := map[string]int{}
	timeout := time.After(60 * time.Second)
	for done["tick"] < 6 || done["held"] < 3 {
		var l string
		select {
		case l = <-procs[0].seen:
		case l = <-procs[1].seen:
		case <-timeout:
			t.Fatalf("slots done %v; stderr a:\n%s\nb:\n%s", done, procs[0].stderr(), procs[1].stderr())
		}
		if !strings.Contains(l, "schedule slot done") {
			continue
		}
		for _, name := range []string{"tick", "held"} {
			if strings.Contains(l, "schedule="+name+" ") {
				done[name]++
			}
		}
	}
	for _, p := range procs {
		_ = p.cmd.Process.Kill()
		<-p.done
	}
	data, err := os.ReadFile(slots)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Fields(string(data))
	seen := map[string]bool{}
	for _, l := range lines {
		at, err := time.Parse(time.RFC3339, l)
		if err != nil || at.Unix()%2 != 0 {
			t.Errorf("slot %q: want an even second", l)
		}
		if seen[l] {
			t.Errorf("slot %s ran twice; runs: %v", l, lines)
		}
		seen[l] = true
	}
	if len(lines) < 6 {
		t.Errorf("%d runs of tick; want at least the 6 slots done", len(lines))
	}
	if _, err := os.Stat(marker); err == nil {
		t.Error("held's pass ran on an exhausted quota")
	}
	act := a.layover("activity", "--json")
	var acts []struct{ Kind, Line string }
	if err := json.Unmarshal([]byte(act.stdout), &acts); err != nil {
		t.Fatalf("activity --json: %v\n%s", err, act.stdout)
	}
	var skips []string
	for _, x := range acts {
		if strings.HasPrefix(x.Line, "schedule held: skipped: ") {
			skips = append(skips, x.Line)
		}
	}
	if len(skips) != 1 || !strings.Contains(skips[0], "(core: 0 left)") {
		t.Errorf("held's skip lines %q over %d skipped slots; want one, naming core", skips, done["held"])
	}
	if r := a.layover("schedule", "list"); !strings.Contains(r.stdout, "skipped: schedule held: skipped") {
		t.Errorf("schedule list:\n%s\nwant held's last slot skipped with its reason", r.stdout)
	}
}
