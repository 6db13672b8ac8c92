package cli_test

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/layoverhq/layover/internal/fake"
)

// waitForFile is a job that says it started, then runs until the test
// creates the file go in its working directory.
func waitForFile(name string) []string {
	return []string{"sh", "-c", "echo " + name + "-started; while [ ! -e go ]; do sleep 0.05; done; echo " + name + "-finished"}
}

// SIGTERM drains serve: the running job finishes and completes, a job
// submitted during the drain waits for another host, and serve exits 0
// once nothing runs.
func TestServeDrainsOnSIGTERM(t *testing.T) {
	t.Parallel()
	b := setup(t, fake.GitHubConfig{})
	serve := b.start("serve", "--lease", "3s", "--heartbeat", "500ms")
	serve.waitLine(t, "layover serve started")
	if r := b.layover(append([]string{"submit", "--id", "long", "--"}, waitForFile("long")...)...); r.code != 0 {
		t.Fatal(r.stderr)
	}
	serve.waitLine(t, "long-started")
	if err := serve.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if l := serve.waitLine(t, "draining"); !strings.Contains(l, "running=1") || !strings.Contains(l, "up_to=30s") {
		t.Errorf("the drain's line %q: want running=1 and the default up_to=30s", l)
	}
	if r := b.layover("submit", "--id", "later", "--", "true"); r.code != 0 {
		t.Fatal(r.stderr)
	}
	if err := os.WriteFile(filepath.Join(b.dir, "go"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if code := serve.wait(t); code != 0 {
		t.Fatalf("serve exit %d after a drain\n%s", code, serve.stderr())
	}
	if j := b.show("long"); j.State != "complete" {
		t.Errorf("the job running at SIGTERM is %s, want complete", j.State)
	}
	if j := b.show("later"); j.State != "ready" || len(j.Attempts) != 0 {
		t.Errorf("the job submitted during the drain is %s with %d attempts, want ready and never run", j.State, len(j.Attempts))
	}
}

// A second SIGTERM ends the drain at once, and so does its timeout: the job
// still running is stopped and given back, ready, as a plain stop does.
func TestServeDrainEnds(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name  string
		flags []string
		twice bool
		line  string
	}{
		{"SecondSignal", nil, true, "stopping at once"},
		{"Timeout", []string{"--drain-timeout", "200ms"}, false, "drain over"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t, fake.GitHubConfig{})
			serve := b.start(append([]string{"serve", "--lease", "3s", "--heartbeat", "500ms"}, c.flags...)...)
			serve.waitLine(t, "layover serve started")
			if r := b.layover(append([]string{"submit", "--id", "stuck", "--"}, waitForFile("stuck")...)...); r.code != 0 {
				t.Fatal(r.stderr)
			}
			serve.waitLine(t, "stuck-started")
			if err := serve.cmd.Process.Signal(syscall.SIGTERM); err != nil {
				t.Fatal(err)
			}
			serve.waitLine(t, "draining")
			if c.twice {
				if err := serve.cmd.Process.Signal(syscall.SIGTERM); err != nil {
					t.Fatal(err)
				}
			}
			serve.waitLine(t, c.line)
			if code := serve.wait(t); code != 0 {
				t.Fatalf("serve exit %d\n%s", code, serve.stderr())
			}
			if j := b.show("stuck"); j.State != "ready" {
				t.Errorf("the job stopped at the drain's end: %+v; want ready, given back", j)
			}
		})
	}
}
