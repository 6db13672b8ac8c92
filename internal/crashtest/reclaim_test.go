package crashtest

import (
	"context"
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/layoverhq/layover/host"
	"github.com/layoverhq/layover/job"
	"github.com/layoverhq/layover/provider"
	"github.com/layoverhq/layover/store/sqlite"
)

// stallingStore delays one RenewLeases call once armed: a heartbeat held up
// (a busy machine, a slow disk) past its lease's end.
type stallingStore struct {
	host.Store
	armed atomic.Bool
	stall time.Duration
}

func (s *stallingStore) RenewLeases(ctx context.Context, hostID string, held map[string]int64, now time.Time, lease time.Duration) ([]string, error) {
	if len(held) > 0 && s.armed.CompareAndSwap(true, false) {
		time.Sleep(s.stall)
	}
	return s.Store.RenewLeases(ctx, hostID, held, now, lease)
}

// logLines collects a host's log for a failure message.
type logLines struct {
	mu    sync.Mutex
	lines []string
}

func (l *logLines) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lines = append(l.lines, strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

func (l *logLines) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(l.lines, "\n")
}

// When a heartbeat is late, the host's own sweep takes the lease back and
// its scheduler may claim the job again at once, while the attempt it just
// stopped is still ending. The new attempt must not start before the old
// one ended, nor lose its bookkeeping when the old one finishes: else its
// lease is never renewed, the job is claimed a third time while the second
// run still works, and so on — the chain of overlaps the 200-job crash test
// met under the race detector.
func TestHostReclaimWhileAttemptEnds(t *testing.T) {
	dir := t.TempDir()
	st, err := sqlite.Open(context.Background(), filepath.Join(dir, "l.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	// A run outlasts its lease; the stalled renewal returns once the
	// second run is over, so it cannot stop that run by chance.
	const hostLease, heartbeat = time.Second, 250 * time.Millisecond
	work := hostLease + 300*time.Millisecond
	stalling := &stallingStore{Store: st, stall: hostLease + work + 500*time.Millisecond}
	sink := filepath.Join(dir, "sink")
	var log logLines
	h, err := host.New(host.Config{
		Store: stalling,
		Runner: &host.ProcessRunner{Classify: func(code int, _, _ []byte, _ time.Time) provider.Outcome {
			return provider.Unknown("test", provider.ClassPermanent, fmt.Sprintf("exit %d", code))
		}},
		Lease: hostLease, Heartbeat: heartbeat, ID: "host-a", CheckpointDir: dir,
		Env:    []string{"PATH=/usr/bin:/bin", "HOME=" + dir},
		Logger: slog.New(slog.NewTextHandler(&log, nil)),
	})
	if err != nil {
		t.Fatal(err)
	}
	// Asked to stop, a run takes a moment (well within the host's grace),
	// so the job is claimed again before the stopped attempt has ended.
	script := fmt.Sprintf(`trap 'sleep 0.2; exit 143' TERM; l="$LAYOVER_JOB_ID $LAYOVER_FENCE"; echo "$l start" >>'%s'; sleep %s; echo "$l end" >>'%s'`,
		sink, seconds(work), sink)
	if _, _, err := h.Submit(context.Background(), "j", job.Spec{Argv: []string{"sh", "-c", script},
		Workdir: dir, Deadline: time.Now().Add(time.Hour)}); err != nil {
		t.Fatal(err)
	}
	if err := h.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer h.Stop()
	for begin := time.Now(); !strings.Contains(readFile(sink), "j 1 start"); {
		if time.Since(begin) > 20*time.Second {
			t.Fatalf("the job never started\nhost log:\n%s", log.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	stalling.armed.Store(true) // the next renewal comes after the lease's end
	deadline := time.Now().Add(30 * time.Second)
	for {
		j, err := st.Job(context.Background(), "j")
		if err != nil {
			t.Fatal(err)
		}
		if j.State.Terminal() {
			if j.State != job.Complete {
				t.Fatalf("job %s (%s)", j.State, j.Stage)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("job still %s (%s)\nsink:\n%s\nhost log:\n%s", j.State, j.Stage, readFile(sink), log.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	time.Sleep(work) // any run still going writes its end meanwhile
	if _, problems := checkSink(strings.Split(strings.TrimRight(readFile(sink), "\n"), "\n")); len(problems) > 0 {
		t.Fatalf("%v\nsink:\n%s\nhost log:\n%s", problems, readFile(sink), log.String())
	}
}
