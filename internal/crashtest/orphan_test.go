package crashtest

import (
	"fmt"
	"math/rand/v2"
	"os"
	"strings"
	"testing"
	"time"
)

// A job whose work runs in a grandchild (a command its shell forks, not
// execs) must die with its host too, or, outlasting the lease, it would
// still work when the next claim runs the job again: the sink would show an
// overlap. The job's supervisor kills its whole process group when the
// host's end of their link closes.
func TestGrandchildDiesWithHost(t *testing.T) {
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
	// The supervisor learns of the host's death from its link and kills the
	// group at once; allow for a loaded machine.
	left := survivors(w.marker)
	for begin := time.Now(); len(left) > 0 && time.Since(begin) < 2*time.Second; left = survivors(w.marker) {
		time.Sleep(10 * time.Millisecond)
	}
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
