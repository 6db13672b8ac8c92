package cli

import (
	"context"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/layoverhq/layover/quota"
)

// Issue 8 finding 7: a wait's lines on stderr name the quota's host and
// resource; whatever they hold, the lines hold nothing a terminal acts on.
func TestVisibleWaitLineIsTerminalSafe(t *testing.T) {
	t.Parallel()
	b, sigs := setupWait(t, false)
	k := quota.Key{Host: "ghe.example\x1b]0;pwned\x07", Principal: "octocat\x1b[2J", Resource: "core\x1b[31m\u202e"}
	done := make(chan error, 1)
	go func() {
		_, err := visibleWait(context.Background(), b.env, b.store, waitSpec{Key: k, Until: b.clock.Now().Add(time.Hour),
			What: "Quota wait", Command: "gh api /user"})
		done <- err
	}()
	<-b.clock.TimerAdded()
	sigs <- syscall.SIGINT
	if err := <-done; err != exitCode(ExitSIGINT) {
		t.Errorf("wait ended with %v, want exit %d", err, ExitSIGINT)
	}
	got := b.stderr.String()
	if strings.ContainsAny(got, "\x1b\x07\u202e") || !strings.Contains(got, "ghe.example") || !strings.Contains(got, "core") {
		t.Errorf("wait lines %q: want the host and resource without escapes", got)
	}
	if l := providerLabel(strings.Repeat("h", 1000)); len(l) > maxShown+len("GitHub ()") {
		t.Errorf("providerLabel of a long host is %d bytes", len(l))
	}
}
