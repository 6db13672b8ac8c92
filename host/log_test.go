package host_test

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/layoverhq/layover/host"
	"github.com/layoverhq/layover/job"
)

// lockedBuffer is a log destination the host's goroutines share.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) lines() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return strings.Split(strings.TrimSpace(b.buf.String()), "\n")
}

// Each move of a job is one log line naming the job, both states and the
// fence; a deferral's line names the quota key, the declared reset and the
// wake-up. A change that moves no state logs nothing.
func TestTransitionLogLines(t *testing.T) {
	t.Parallel()
	out := &lockedBuffer{}
	b := setup(t, func(c *host.Config) { c.Logger = slog.New(slog.NewJSONHandler(out, nil)) })
	reset := t0.Add(10 * time.Minute)
	b.script.push(func(context.Context, host.Run) error { return host.Quota("github", "core", reset) })
	b.submit("j", job.Spec{Quota: []string{"github"}})
	b.awaitState("j", job.Deferred)
	b.host.Stop() // every write, and so every line, is made once Stop returns

	type line struct {
		Msg, Job, From, To, Key string
		Fence                   *int64
		Reset                   time.Time
		WakeAt                  time.Time `json:"wake_at"`
	}
	var moves []line
	for _, l := range out.lines() {
		var got line
		if err := json.Unmarshal([]byte(l), &got); err != nil {
			t.Fatalf("a log line is not JSON: %v\n%s", err, l)
		}
		if got.Msg == "job transition" {
			moves = append(moves, got)
		}
	}
	if len(moves) != 3 {
		t.Fatalf("transition lines = %+v, want submitted, running, deferred", moves)
	}
	for i, want := range [][2]job.State{{"", job.Ready}, {job.Ready, job.Running}, {job.Running, job.Deferred}} {
		if m := moves[i]; m.Job != "j" || m.From != string(want[0]) || m.To != string(want[1]) || m.Fence == nil {
			t.Errorf("line %d = %+v, want job j from %q to %q with a fence", i, m, want[0], want[1])
		}
	}
	d := moves[2]
	if *d.Fence != 1 || d.Key != "api.github.com/octocat/core" || !d.Reset.Equal(reset) || !d.WakeAt.Equal(reset.Add(time.Minute)) {
		t.Errorf("the deferral's line = %+v, want fence 1, key api.github.com/octocat/core, reset %s and its wake-up a minute later", d, reset)
	}
}
