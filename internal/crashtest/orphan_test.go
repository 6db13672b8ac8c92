package crashtest

import (
	"fmt"
	"math/rand/v2"
	"os"
	"strings"
	"testing"
	"time"
)

// envOrphans runs TestGrandchildDiesWithHost, which fails today.
const envOrphans = "LAYOVER_CRASH_ORPHANS"

// A job whose work runs in a grandchild (a command its shell forks, not
// execs) must die with its host too. Today only the host's direct child gets
// the parent-death SIGKILL: the grandchild lives on, and when it outlasts
// the lease, the next claim runs the job again while it still works, which
// the sink shows as an overlap. Skipped unless LAYOVER_CRASH_ORPHANS=1 until
// jobs run under a supervising process that kills their whole group.
func TestGrandchildDiesWithHost(t *testing.T) {
	if os.Getenv(envOrphans) != "1" {
		t.Skipf("known gap: a job's grandchildren outlive a SIGKILLed host; %s=1 runs this reproducer", envOrphans)
	}
	w := newWorld(t, rand.New(rand.NewPCG(3, 4)))
	work := 2 * lease // outlasts the lease, so the next claim comes first
	inner := fmt.Sprintf(`l="$LAYOVER_JOB_ID $LAYOVER_FENCE"; echo "$l start" >>%s; sleep %s; echo "$l end" >>%s`,
		w.sink, seconds(work), w.sink)
	r, err := w.layover("submit", "--id", "orphan", "--", "sh", "-c",
		fmt.Sprintf(": %s; sh -c '%s'; exit $?", w.marker, inner))
	if err != nil || r.code != 0 {
		t.Fatalf("submit: %v %+v", err, r)
	}
	srv := w.startServe(1)
	for begin := time.Now(); !strings.Contains(readFile(w.sink), "orphan 1 start"); {
		if srv.exited() || time.Since(begin) > 20*time.Second {
			t.Fatalf("the job never started; serve's log:\n%s", srv.logTail())
		}
		time.Sleep(20 * time.Millisecond)
	}
	srv.kill()
	time.Sleep(30 * time.Millisecond)
	left := survivors(w.marker)
	srv = w.startServe(2)
	defer srv.kill()
	deadline := time.Now().Add(4*work + 10*time.Second)
	for !strings.Contains(readFile(w.sink), "orphan 2 end") && time.Now().Before(deadline) {
		time.Sleep(100 * time.Millisecond)
	}
	_, problems := checkSink(strings.Split(strings.TrimRight(readFile(w.sink), "\n"), "\n"))
	if len(left) > 0 || len(problems) > 0 {
		t.Fatalf("alive right after the host's SIGKILL: %v\nsink problems: %v\nsink:\n%s", left, problems, readFile(w.sink))
	}
}

func readFile(path string) string {
	data, _ := os.ReadFile(path)
	return string(data)
}
