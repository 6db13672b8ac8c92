package cli_test

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode"

	"github.com/layoverhq/layover/internal/fake"
	"github.com/layoverhq/layover/job"
	"github.com/layoverhq/layover/quota"
	"github.com/layoverhq/layover/store"
	"github.com/layoverhq/layover/store/sqlite"
)

// hostile is text a terminal would act on: a colour, a window title (OSC),
// clearing the screen, a bidirectional override, a C1 CSI and a line break.
const hostile = "\x1b[31mred\x1b[0m \x1b]0;pwned\x07 \x1b[2J\u202egnp.exe\u009b1m\nnext"

// terminalSafe fails t when out holds anything a terminal acts on: a
// control character other than a line feed, a format character (bidi
// overrides among them) or a line or paragraph separator.
func terminalSafe(t *testing.T, what, out string) {
	t.Helper()
	for _, r := range out {
		if r != '\n' && (unicode.IsControl(r) || unicode.In(r, unicode.Cf, unicode.Zl, unicode.Zp)) {
			t.Errorf("%s prints %U to the terminal:\n%q", what, r, out)
			return
		}
	}
}

// Issue 8 finding 7: GET /user answering a login of a megabyte, or one
// with escape sequences, is not learned: the store keeps no such login, the
// token's fingerprint stays the principal, and status prints no ESC.
func TestHostileLoginIsNotKept(t *testing.T) {
	t.Parallel()
	for name, login := range map[string]string{
		"a megabyte": strings.Repeat("a", 1<<20-64),
		"escapes":    "\x1b[31mocto\x1b[0m\x1b]0;pwned\x07",
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			b := setup(t, fake.GitHubConfig{Login: login})
			if r := b.layover("pass", "--", "true"); r.code != 0 {
				t.Fatalf("pass: exit %d %s", r.code, r.stderr)
			}
			if n := b.gh.Calls("/user"); n != 1 {
				t.Fatalf("GET /user asked %d times, want once", n)
			}
			st, err := sqlite.OpenReadOnly(t.Context(), b.store)
			if err != nil {
				t.Fatal(err)
			}
			defer st.Close()
			if l, ok, err := st.Login(t.Context(), hostOf(t, b), quota.TokenFingerprint(testToken)); ok || err != nil {
				t.Errorf("the store learned a login of %d bytes (%v)", len(l), err)
			}
			var s struct {
				Quota []struct{ Principal string } `json:"quota"`
			}
			r := b.layover("status", "--json")
			if err := json.Unmarshal([]byte(r.stdout), &s); err != nil || len(s.Quota) == 0 {
				t.Fatalf("status --json: %v\n%.500s", err, r.stdout)
			}
			for _, q := range s.Quota {
				if q.Principal != quota.TokenPrincipal(testToken) {
					t.Errorf("principal %.60q, want the token's fingerprint %s", q.Principal, quota.TokenPrincipal(testToken))
				}
			}
			text := b.layover("status")
			if text.code != 0 || strings.ContainsRune(text.stdout, 0x1b) || len(text.stdout) > 4096 {
				t.Errorf("status: exit %d, %d bytes:\n%.500q", text.code, len(text.stdout), text.stdout)
			}
		})
	}
}

// hostOf is the quota host of b's fake GitHub, as layover keys it.
func hostOf(t *testing.T, b *bundle) string {
	t.Helper()
	r := b.layover("status", "--json")
	var s struct {
		Quota []struct{ Host string } `json:"quota"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &s); err != nil || len(s.Quota) == 0 {
		t.Fatalf("status --json: %v\n%.500s", err, r.stdout)
	}
	return s.Quota[0].Host
}

// Issue 8 finding 7: what the store holds was written by any host of a
// fleet (an older layover, a hostile one): status, activity, jobs and show
// print every stored or provider text on one line,
// bounded, without anything a terminal acts on; --json keeps it exact.
// (A run's wait lines: TestVisibleWaitLineIsTerminalSafe.)
func TestStoredTextIsTerminalSafe(t *testing.T) {
	t.Parallel()
	b := setup(t, fake.GitHubConfig{})
	ctx := t.Context()
	st, err := sqlite.Open(ctx, b.store)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	key := quota.Key{Host: "api.github.com", Principal: hostile, Resource: "core" + hostile}
	_, werr := st.RegisterWaiter(ctx, store.Waiter{Hostname: "elsewhere" + hostile, PID: 1, Command: "gh " + hostile,
		Key: key, Stage: "Quota wait " + hostile, WaitUntil: now.Add(time.Hour), StartedAt: now})
	j := job.Job{ID: "j-hostile", State: job.Ready, Stage: "stage " + hostile,
		Spec: job.Spec{Name: "name " + hostile, Argv: []string{"echo", hostile}, Deadline: now.Add(time.Hour)}}
	_, _, jerr := st.SubmitJob(ctx, j, nil, now)
	if err := errors.Join(werr, jerr,
		st.RecordStates(ctx, []quota.State{{Key: key, Limit: 5000, Remaining: 0, ResetAt: now.Add(time.Hour), ResetKnown: true,
			ObservedAt: now, ObservedBy: "host " + hostile, Source: quota.Source("src" + hostile), Cause: quota.CauseExhausted}}),
		st.AppendActivity(ctx, store.Activity{At: now, Kind: "skip", Line: "skipped: " + hostile}),
		st.RegisterHost(ctx, job.Host{ID: "h" + hostile, Hostname: "host" + hostile, PID: 2, StartedAt: now, LastSeen: now, Lease: time.Minute}),
		st.Close()); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"status"}, {"activity"}, {"jobs"}, {"show", "j-hostile"}} {
		r := b.layover(args...)
		if r.code != 0 {
			t.Fatalf("%v: exit %d %s", args, r.code, r.stderr)
		}
		terminalSafe(t, strings.Join(args, " "), r.stdout)
		if !strings.Contains(r.stdout, "red") {
			t.Errorf("%v lost the text around the escapes:\n%s", args, r.stdout)
		}
	}
	r := b.layover("status", "--json")
	if !strings.Contains(r.stdout, `\u001b[31mred`) {
		t.Errorf("status --json does not keep the stored text exactly (escaped):\n%s", r.stdout)
	}
	// An error line quotes what it was given the same way.
	dir := filepath.Join(b.dir, "store"+hostile)
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	r = b.layover("status", "--store", dir)
	if r.code != 2 || !strings.Contains(r.stderr, "is a directory") {
		t.Fatalf("a directory as the store: exit %d %q", r.code, r.stderr)
	}
	terminalSafe(t, "an error line", r.stderr)

}
