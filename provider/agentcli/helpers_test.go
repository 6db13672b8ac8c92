package agentcli

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/layoverhq/layover/provider"
	"github.com/layoverhq/layover/provider/internal/resetcheck"
)

// now is the test clock: Wednesday 2026-08-05 12:00:00 UTC (08:00 in New
// York, 14:00 in Rome and Warsaw, 21:00 in Tokyo and Seoul).
var now = time.Date(2026, 8, 5, 12, 0, 0, 0, time.UTC)

// zone loads an IANA zone or fails the test.
func zone(t testing.TB, name string) *time.Location {
	t.Helper()
	z, err := time.LoadLocation(name)
	if err != nil {
		t.Fatalf("LoadLocation(%q): %v", name, err)
	}
	return z
}

// at is a wall-clock time in zone name.
func at(t testing.TB, name string, y int, m time.Month, d, h, mi int) time.Time {
	t.Helper()
	return time.Date(y, m, d, h, mi, 0, 0, zone(t, name))
}

// jsonLine renders v as one line of JSON.
func jsonLine(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}

// lines joins lines with "\n" and ends them with one.
func lines(ls ...string) string { return strings.Join(ls, "\n") + "\n" }

// want is what a table test expects of an outcome.
type want struct {
	class      provider.Class
	resource   string
	reset      time.Time     // zero: no reset
	retryAfter time.Duration // -1: none stated
	reason     string        // a substring of Reason
	obs        int           // number of observations
}

// checkWant compares an outcome with w, and checks it with the oracle.
func checkWant(t *testing.T, got provider.Outcome, p string, w want, input string, loc *time.Location) {
	t.Helper()
	if got.Class != w.class {
		t.Errorf("class = %q, want %q (reason %q)", got.Class, w.class, got.Reason)
	}
	if got.Provider != p {
		t.Errorf("provider = %q, want %q", got.Provider, p)
	}
	if got.Resource != w.resource {
		t.Errorf("resource = %q, want %q", got.Resource, w.resource)
	}
	if !got.ResetAt.Equal(w.reset) {
		t.Errorf("reset = %v, want %v", got.ResetAt.UTC(), w.reset.UTC())
	}
	if got.RetryAfter != w.retryAfter {
		t.Errorf("retryAfter = %v, want %v", got.RetryAfter, w.retryAfter)
	}
	if !strings.Contains(got.Reason, w.reason) {
		t.Errorf("reason = %q, want it to contain %q", got.Reason, w.reason)
	}
	if len(got.Observations) != w.obs {
		t.Errorf("observations = %+v, want %d", got.Observations, w.obs)
	}
	if err := oracle(got, p, input, loc); err != nil {
		t.Errorf("oracle: %v", err)
	}
}

// oracle is resetcheck.CheckOutcome, with a reset read from a printed
// time of day explained by resetcheck.ClockExplained.
func oracle(out provider.Outcome, p, input string, loc *time.Location) error {
	var extra []time.Time
	if !out.ResetAt.IsZero() && resetcheck.ClockExplained(out.ResetAt, input, now, loc) {
		extra = append(extra, out.ResetAt)
	}
	for _, s := range out.Observations {
		if resetcheck.ClockExplained(s.ResetAt, input, now, loc) {
			extra = append(extra, s.ResetAt)
		}
	}
	return resetcheck.CheckOutcome(out, p, input, now, extra...)
}

// epoch renders t as epoch seconds.
func epoch(t time.Time) string { return strconv.FormatInt(t.Unix(), 10) }

// cliCase is one finished run of a table test and what its outcome must be.
type cliCase struct {
	name           string
	exit           int
	stdout, stderr string
	loc            *time.Location // nil: the table's zone
	want           want
}

// runCases runs each case as a parallel subtest: classify reads the run at
// now, in the case's zone or else loc, and checkWant checks the outcome
// against provider p.
func runCases(t *testing.T, tests []cliCase, classify func(exitCode int, stdout, stderr []byte, now time.Time, loc *time.Location) provider.Outcome, p string, loc *time.Location) {
	t.Helper()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			loc := loc
			if tt.loc != nil {
				loc = tt.loc
			}
			got := classify(tt.exit, []byte(tt.stdout), []byte(tt.stderr), now, loc)
			checkWant(t, got, p, tt.want, tt.stdout+"\n"+tt.stderr, loc)
		})
	}
}
