package sim

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
	"time"
)

// testBudget bounds a test's lane run: a driver that never finds the
// host still fails the test in time.
const testBudget = time.Minute

// lanesOf is n lanes of each kind, a fifth of them under the race
// detector, which slows the host's and the store's code tenfold: the
// same invariants hold at any size.
func lanesOf(n int) int {
	if raceEnabled {
		return max(n/5, 2)
	}
	return n
}

// Fifty lanes of each kind wait, resume, reconcile and complete on the
// real host, each run exactly twice, with no call leaving the process.
func TestLanesEndCompleteWithNoInvariantBroken(t *testing.T) {
	n := lanesOf(50)
	for _, kind := range []string{StoreSQLite, StoreMemory} {
		t.Run(kind, func(t *testing.T) {
			rep, err := Lanes(t.Context(), LanesConfig{Resource: n, Auth: n, Seed: 7, Store: kind, Dir: t.TempDir(), Budget: testBudget})
			if err != nil {
				t.Fatal(err)
			}
			var out bytes.Buffer
			if err := rep.Write(&out); err != nil {
				t.Fatal(err)
			}
			t.Log(out.String())
			if !rep.OK() || rep.Resumes != 2*n || rep.Attempts != 4*n || rep.Checks != 2*n || rep.ProviderCalls != 0 {
				t.Fatalf("report:\n%s", out.String())
			}
			for _, want := range []string{fmt.Sprintf("resumes: %d\n", 2*n), "provider calls: 0\n", "provider tokens: 0\n", "lanes in the wrong state: 0\n"} {
				if !strings.Contains(out.String(), want) {
					t.Errorf("output lacks %q", want)
				}
			}
		})
	}
}

// One seed gives the same figures every run.
func TestLanesAreDeterministicWithASeed(t *testing.T) {
	run := func(seed uint64) LanesReport {
		rep, err := Lanes(t.Context(), LanesConfig{Resource: lanesOf(20), Auth: lanesOf(20), Seed: seed, Dir: t.TempDir(), Budget: testBudget})
		if err != nil {
			t.Fatal(err)
		}
		// Wall time, and so how often the driver found the host still,
		// is the machine's.
		rep.Wall, rep.Steps = 0, 0
		return rep
	}
	a, b, c := run(3), run(3), run(4)
	if a.Virtual != b.Virtual || a.FakeCalls != b.FakeCalls || a.Resumes != b.Resumes || a.Checks != b.Checks {
		t.Fatalf("seed 3 twice: %+v and %+v", a, b)
	}
	if a.Virtual == c.Virtual && a.FakeCalls == c.FakeCalls {
		t.Errorf("seeds 3 and 4 gave the same run: %+v", c)
	}
}

// An auth lane whose credentials check passes before they work resumes
// early: the harness says which lanes and why, and the run is not OK.
func TestLanesReportAnAuthLaneEndedEarly(t *testing.T) {
	rep, err := Lanes(t.Context(), LanesConfig{Resource: 5, Auth: 5, Seed: 1, Dir: t.TempDir(), Budget: testBudget, fault: faultEarlyCredentials})
	if err != nil {
		t.Fatal(err)
	}
	if rep.OK() {
		t.Fatalf("early credentials went unnoticed: %+v", rep)
	}
	auth := 0
	for _, v := range rep.Violations {
		if v.Kind != AuthByReset {
			t.Errorf("unexpected violation %s", v)
		}
		auth++
	}
	if auth < 5 { // each of the 5 auth lanes, by the runner and by its history
		t.Errorf("%d auth lanes flagged, want all 5: %v", auth, rep.Violations)
	}
}

// A lane run a third time (its second attempt failed and the host
// retried) breaks its script.
func TestLanesReportALaneRunTwice(t *testing.T) {
	rep, err := Lanes(t.Context(), LanesConfig{Resource: 3, Auth: 3, Seed: 1, Dir: t.TempDir(), Budget: testBudget, fault: faultFlakySecondRun})
	if err != nil {
		t.Fatal(err)
	}
	twice := map[string]bool{}
	for _, v := range rep.Violations {
		if v.Kind == RunTwice {
			twice[v.Lane] = true
		}
	}
	if len(twice) != 6 || rep.OK() {
		t.Fatalf("lanes run twice: %v; report %+v", twice, rep)
	}
}

// Lanes that share a key resume in turn under the resume rate: a resume
// waiting for its slot on the fake clock is not work the driver waits
// out (host.Host.Still), its wake-up one the driver moves the clock to,
// so the run ends well within its budget.
func TestLanesSharingAKeyResumeInTurn(t *testing.T) {
	rep, err := Lanes(t.Context(), LanesConfig{Resource: 4, Seed: 1, Dir: t.TempDir(), Budget: 20 * time.Second, fault: faultSharedKey})
	if err != nil {
		t.Fatal(err)
	}
	if !rep.OK() || rep.Resumes != 4 {
		t.Fatalf("lanes on a shared key: %+v", rep)
	}
}
