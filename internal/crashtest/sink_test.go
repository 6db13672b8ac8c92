package crashtest

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
)

// The sink is the file every job's command appends to, one line per event:
//
//	JOB FENCE start       the command began, under the claim with this fence
//	JOB FENCE end         it finished its work (exit 0 follows)
//	JOB FENCE end fail    it is ending without success: its gh call failed,
//	                      or it was asked to stop (SIGTERM) and cleaned up
//
// Appends of a few bytes with O_APPEND are atomic, so the file's order is
// the order in which the writes happened.

// sinkRun is one claim's run of a job's command, as the sink saw it.
type sinkRun struct {
	Fence     int64
	Started   bool
	Ended     bool // an end line, ok or fail
	Failed    bool // the end line said fail
	StartLine int  // 1-based line numbers
	EndLine   int
}

// sinkJob is everything the sink says about one job, in fence order.
type sinkJob struct {
	Runs []*sinkRun
}

func (j *sinkJob) run(fence int64) *sinkRun {
	for _, r := range j.Runs {
		if r.Fence == fence {
			return r
		}
	}
	return nil
}

// checkSink reads the sink's lines and reports, besides what it saw per
// job, every violation of the fencing rules:
//   - once a line with fence f2 appears for a job, no later line of that job
//     has a smaller fence: an older claim's process still writing after a
//     newer claim started means two runs overlapped;
//   - every end has an earlier start with the same fence, and each fence
//     starts and ends at most once (one claim runs the command once).
func checkSink(lines []string) (map[string]*sinkJob, []string) {
	jobs := map[string]*sinkJob{}
	maxFence := map[string]int64{}
	maxLine := map[string]int{}
	var problems []string
	bad := func(n int, format string, args ...any) {
		problems = append(problems, fmt.Sprintf("sink line %d: ", n)+fmt.Sprintf(format, args...))
	}
	for i, line := range lines {
		n := i + 1
		if strings.TrimSpace(line) == "" {
			continue
		}
		f := strings.Fields(line)
		if len(f) < 3 || len(f) > 4 || (len(f) == 4 && (f[2] != "end" || f[3] != "fail")) ||
			(f[2] != "start" && f[2] != "end") {
			bad(n, "malformed line %q", line)
			continue
		}
		id := f[0]
		fence, err := strconv.ParseInt(f[1], 10, 64)
		if err != nil || fence < 1 {
			bad(n, "malformed fence in %q", line)
			continue
		}
		j := jobs[id]
		if j == nil {
			j = &sinkJob{}
			jobs[id] = j
		}
		if hi, ok := maxFence[id]; ok && fence < hi {
			bad(n, "%s: fence %d writes after fence %d started (line %d): two runs overlapped", id, fence, hi, maxLine[id])
		}
		if fence > maxFence[id] {
			maxFence[id], maxLine[id] = fence, n
		}
		r := j.run(fence)
		switch f[2] {
		case "start":
			if r != nil {
				bad(n, "%s: fence %d starts again (first at line %d): one claim ran the command twice", id, fence, r.StartLine)
				continue
			}
			j.Runs = append(j.Runs, &sinkRun{Fence: fence, Started: true, StartLine: n})
		case "end":
			if r == nil {
				bad(n, "%s: fence %d ends without a start", id, fence)
				continue
			}
			if r.Ended {
				bad(n, "%s: fence %d ends again (first at line %d)", id, fence, r.EndLine)
				continue
			}
			r.Ended, r.Failed, r.EndLine = true, len(f) == 4, n
		}
	}
	return jobs, problems
}

func TestCheckSink(t *testing.T) {
	good := []string{
		"a 1 start", "b 1 start", "a 1 end fail", "b 1 end",
		"a 2 start", // killed with its host: no end
		"a 4 start", "a 4 end",
	}
	jobs, problems := checkSink(good)
	if len(problems) != 0 {
		t.Fatalf("problems in a good sink: %v", problems)
	}
	if a := jobs["a"]; len(a.Runs) != 3 || !a.run(1).Failed || a.run(2).Ended || !a.run(4).Ended || a.run(4).Failed {
		t.Fatalf("runs of a: %+v", jobs["a"].Runs)
	}
	for name, lines := range map[string][]string{
		"overlap":          {"a 1 start", "a 2 start", "a 1 end"},
		"stale start":      {"a 2 start", "a 2 end", "a 1 start"},
		"end before start": {"a 1 end"},
		"end other fence":  {"a 1 start", "a 2 end"},
		"start twice":      {"a 1 start", "a 1 start"},
		"end twice":        {"a 1 start", "a 1 end", "a 1 end"},
		"malformed":        {"a one start"},
		"unknown word":     {"a 1 begin"},
	} {
		if _, problems := checkSink(lines); len(problems) == 0 {
			t.Errorf("%s: %q passed the check", name, lines)
		}
	}
}
