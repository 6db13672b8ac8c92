package sqlite_test

import (
	"bufio"
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/layoverhq/layover/quota"
	"github.com/layoverhq/layover/store"
	"github.com/layoverhq/layover/store/sqlite"
	"github.com/layoverhq/layover/store/storetest"
)

// base is the fixed time these tests observe quotas at.
var base = time.Date(2026, 11, 10, 14, 0, 0, 0, time.UTC)

func open(t testing.TB, path string) *sqlite.Store {
	t.Helper()
	s, err := sqlite.Open(t.Context(), path)
	if err != nil {
		t.Fatalf("Open(%s): %v", path, err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// sameState reports whether a and b are equal, comparing times by instant.
func sameState(a, b quota.State) bool {
	if !a.ResetAt.Equal(b.ResetAt) || !a.ObservedAt.Equal(b.ObservedAt) {
		return false
	}
	a.ResetAt, a.ObservedAt, b.ResetAt, b.ObservedAt = time.Time{}, time.Time{}, time.Time{}, time.Time{}
	return a == b
}

func TestStore(t *testing.T) {
	t.Parallel()

	storetest.Run(t, func(t *testing.T) store.Store {
		s, err := sqlite.Open(t.Context(), filepath.Join(t.TempDir(), "layover.db"))
		if err != nil {
			t.Fatalf("Open: %v", err)
		}
		return s
	})
}

func TestOpenCreatesPrivateFiles(t *testing.T) {
	t.Parallel()

	dir := t.TempDir()
	path := filepath.Join(dir, "state", "layover", "layover.db")
	s := open(t, path)
	// A write makes SQLite create the -wal and -shm files beside the file.
	if err := s.RecordStates(t.Context(), []quota.State{{
		Key: quota.Key{Host: "api.github.com", Principal: "octocat", Resource: "core"}, ResetAt: base,
	}}); err != nil {
		t.Fatalf("RecordStates: %v", err)
	}
	if s.Path() != path {
		t.Errorf("Path() = %q, want %q", s.Path(), path)
	}

	tests := []struct {
		name string
		path string
		dir  bool
		want fs.FileMode // exact permissions; 0 means "none for group or others"
	}{
		{"new folder", filepath.Join(dir, "state"), true, 0o700},
		{"new subfolder", filepath.Join(dir, "state", "layover"), true, 0o700},
		{"file", path, false, 0o600},
		{"wal", path + "-wal", false, 0},
		{"shm", path + "-shm", false, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()

			fi, err := os.Stat(tt.path)
			if err != nil {
				t.Fatalf("Stat: %v", err)
			}
			if fi.IsDir() != tt.dir {
				t.Errorf("%s: IsDir = %v, want %v", tt.path, fi.IsDir(), tt.dir)
			}
			perm := fi.Mode().Perm()
			if tt.want != 0 && perm != tt.want {
				t.Errorf("%s: mode %v, want %v", tt.path, perm, tt.want)
			}
			if perm&0o077 != 0 {
				t.Errorf("%s: mode %v is open to group or others", tt.path, perm)
			}
		})
	}
}

func TestOpenPathErrors(t *testing.T) {
	t.Parallel()

	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	if err := os.WriteFile(file, []byte("not a folder"), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name     string
		path     string
		notAfter []string // paths that must not exist after the refusal
	}{
		{"empty", "", nil},
		{"directory", dir, nil},
		{"query string", filepath.Join(dir, "layover.db?mode=memory"),
			[]string{filepath.Join(dir, "layover.db?mode=memory"), filepath.Join(dir, "layover.db")}},
		{"question mark in a folder", filepath.Join(dir, "a?b", "layover.db"), []string{filepath.Join(dir, "a?b")}},
		{"fragment", filepath.Join(dir, "layover.db#x"), []string{filepath.Join(dir, "layover.db#x")}},
		{"file in place of the folder", filepath.Join(file, "layover.db"), nil},
		{"folder cannot be made", filepath.Join(file, "sub", "layover.db"), nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()

			s, err := sqlite.Open(t.Context(), tt.path)
			if err == nil {
				s.Close()
				t.Fatalf("Open(%q) = nil error, want *PathError", tt.path)
			}
			var pe *sqlite.PathError
			if !errors.As(err, &pe) {
				t.Fatalf("Open(%q) = %T %v, want *PathError", tt.path, err, err)
			}
			if pe.Path != tt.path || !strings.Contains(err.Error(), tt.path) {
				t.Errorf("PathError = %q with Path %q, want it to name %q", err, pe.Path, tt.path)
			}
			for _, p := range tt.notAfter {
				if _, err := os.Lstat(p); !errors.Is(err, fs.ErrNotExist) {
					t.Errorf("%s exists after a refused Open (%v)", p, err)
				}
			}
		})
	}
}

func TestReopenKeepsData(t *testing.T) {
	t.Parallel()

	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "layover.db")
	st := quota.State{
		Key:   quota.Key{Host: "api.github.com", Principal: "tok:0123456789ab", Resource: "core"},
		Limit: 5000, Remaining: 0, ResetAt: base.Add(time.Hour), ResetKnown: true, RawReset: 1_800_000_000,
		ObservedAt: base, ObservedBy: "host-a", Source: quota.SourceRejected, Cause: quota.CauseExhausted,
	}

	s, err := sqlite.Open(ctx, path)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	steps := []error{
		s.RecordStates(ctx, []quota.State{st}),
		s.LearnLogin(ctx, "api.github.com", "0123456789ab", "octocat", base),
		s.AppendActivity(ctx, store.Activity{At: base, Kind: "wait", Line: "waiting"}),
	}
	_, err = s.RecordSkip(ctx, "pass:pickup", "core@1800000000", store.Activity{At: base, Kind: "skip", Line: "skipped"})
	steps = append(steps, err)
	_, err = s.RegisterWaiter(ctx, store.Waiter{Hostname: "h", PID: 7, Command: "gh", Key: st.Key, WaitUntil: base})
	steps = append(steps, err, s.Close())
	if err := errors.Join(steps...); err != nil {
		t.Fatalf("writing before reopen: %v", err)
	}

	s = open(t, path)
	states, err := s.AllStates(ctx)
	st.Principal = "octocat"
	if err != nil || len(states) != 1 || !sameState(states[0], st) {
		t.Errorf("AllStates after reopen = %+v, %v; want [%+v]", states, err, st)
	}
	if login, ok, err := s.Login(ctx, "api.github.com", "0123456789ab"); login != "octocat" || !ok || err != nil {
		t.Errorf("Login after reopen = %q, %v, %v", login, ok, err)
	}
	if lines, err := s.Activity(ctx, 0); err != nil || len(lines) != 2 {
		t.Errorf("Activity after reopen = %+v, %v; want 2 lines", lines, err)
	}
	if wrote, err := s.RecordSkip(ctx, "pass:pickup", "core@1800000000", store.Activity{At: base}); wrote || err != nil {
		t.Errorf("RecordSkip of the same reason after reopen = %v, %v; want false, nil", wrote, err)
	}
	if ws, err := s.Waiters(ctx); err != nil || len(ws) != 1 {
		t.Errorf("Waiters after reopen = %+v, %v; want 1", ws, err)
	}
}

func TestOpenRefusesNewerSchema(t *testing.T) {
	t.Parallel()

	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "layover.db")
	s, err := sqlite.Open(ctx, path)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	var v int
	if err := s.DB().QueryRowContext(ctx, "PRAGMA user_version").Scan(&v); err != nil || v < 1 {
		t.Fatalf("user_version of a new store = %d, %v; want >= 1", v, err)
	}
	if _, err := s.DB().ExecContext(ctx, "PRAGMA user_version = "+strconv.Itoa(v+1)); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	s, err = sqlite.Open(ctx, path)
	if err == nil {
		s.Close()
		t.Fatal("Open of a file from a newer layover = nil error")
	}
	if !strings.Contains(err.Error(), "newer") {
		t.Errorf("Open of a newer file = %q, want it to say the schema is newer", err)
	}

	// The refused file is left as it was.
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var after int
	if err := db.QueryRowContext(ctx, "PRAGMA user_version").Scan(&after); err != nil || after != v+1 {
		t.Errorf("user_version after a refused Open = %d, %v; want %d", after, err, v+1)
	}
}

func TestDefaultPath(t *testing.T) {
	t.Parallel()

	tests := []struct {
		name string
		env  map[string]string
		want string
	}{
		{"XDG_STATE_HOME", map[string]string{"XDG_STATE_HOME": "/x/state", "HOME": "/home/u"},
			"/x/state/layover/layover.db"},
		{"HOME when XDG_STATE_HOME unset", map[string]string{"HOME": "/home/u"},
			"/home/u/.local/state/layover/layover.db"},
		{"HOME when XDG_STATE_HOME empty", map[string]string{"XDG_STATE_HOME": "", "HOME": "/home/u"},
			"/home/u/.local/state/layover/layover.db"},
		{"relative XDG_STATE_HOME is ignored", map[string]string{"XDG_STATE_HOME": "rel/state", "HOME": "/home/u"},
			"/home/u/.local/state/layover/layover.db"},
		{"XDG_STATE_HOME with a tilde is relative", map[string]string{"XDG_STATE_HOME": "~/state", "HOME": "/home/u"},
			"/home/u/.local/state/layover/layover.db"},
		{"relative HOME is refused", map[string]string{"HOME": "home/u"}, ""},
		{"relative HOME behind a relative XDG_STATE_HOME", map[string]string{"XDG_STATE_HOME": "./s", "HOME": "."}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()

			got, err := sqlite.DefaultPath(func(k string) string { return tt.env[k] })
			if tt.want == "" {
				if err == nil || !strings.Contains(err.Error(), "not an absolute path") {
					t.Errorf("DefaultPath = %q, %v; want an error saying HOME is not absolute", got, err)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Errorf("DefaultPath = %q, %v; want %q", got, err, tt.want)
			}
		})
	}
}

// Multi-process tests. The test binary runs itself as a helper process:
// TestHelperWriter does the work when the environment names a store, and
// returns at once otherwise.
const (
	envHelperPath   = "LAYOVER_TEST_HELPER_STORE"
	envHelperWriter = "LAYOVER_TEST_HELPER_WRITER"
	envHelperMode   = "LAYOVER_TEST_HELPER_MODE"

	writers         = 16
	keysPerWriter   = 20
	linesPerWriter  = 20
	sharedSkipScope = "pass:shared"
)

var sharedKey = quota.Key{Host: "api.github.com", Principal: "shared", Resource: "core"}

func ownKey(w, j int) quota.Key {
	return quota.Key{Host: "api.github.com", Principal: fmt.Sprintf("w%02d", w), Resource: fmt.Sprintf("r%02d", j)}
}

// sharedSeq numbers every write of the shared key across all writers, so
// the largest one is known: writer writers-1's last.
func sharedSeq(w, j int) int { return j*writers + w }

// TestHelperWriter is a helper process of TestConcurrentProcesses. It opens
// the store, prints "ready", waits for a line on stdin so that all helpers
// write at once, then writes.
func TestHelperWriter(t *testing.T) {
	t.Parallel()

	path := os.Getenv(envHelperPath)
	if path == "" {
		return
	}
	ctx := t.Context()
	w, err := strconv.Atoi(os.Getenv(envHelperWriter))
	if err != nil {
		t.Fatalf("%s: %v", envHelperWriter, err)
	}
	s, err := sqlite.Open(ctx, path)
	if err != nil {
		t.Fatalf("writer %d: Open: %v", w, err)
	}
	defer s.Close()
	fmt.Println("ready")
	if _, err := bufio.NewReader(os.Stdin).ReadString('\n'); err != nil {
		t.Fatalf("writer %d: waiting for go: %v", w, err)
	}

	switch mode := os.Getenv(envHelperMode); mode {
	case "states":
		for j := range keysPerWriter {
			own := quota.State{
				Key: ownKey(w, j), Limit: 5000, Remaining: int64(j), ResetAt: base.Add(time.Hour), ResetKnown: true,
				ObservedAt: base.Add(time.Duration(j) * time.Millisecond), ObservedBy: fmt.Sprintf("writer-%d", w),
				Source: quota.SourceHeaders,
			}
			seq := sharedSeq(w, j)
			shared := quota.State{
				Key: sharedKey, Limit: 5000, Remaining: int64(seq), ResetAt: base.Add(time.Hour), ResetKnown: true,
				ObservedAt: base.Add(time.Duration(seq) * time.Millisecond), ObservedBy: fmt.Sprintf("writer-%d", w),
				Source: quota.SourceHeaders,
			}
			if err := s.RecordStates(ctx, []quota.State{own}); err != nil {
				t.Fatalf("writer %d: RecordStates(own %d): %v", w, j, err)
			}
			if err := s.RecordStates(ctx, []quota.State{shared}); err != nil {
				t.Fatalf("writer %d: RecordStates(shared %d): %v", w, j, err)
			}
		}
	case "activity":
		for j := range linesPerWriter {
			a := store.Activity{At: base, Kind: "wait", Line: fmt.Sprintf("writer %d line %d", w, j)}
			if j%2 == 0 {
				if err := s.AppendActivity(ctx, a); err != nil {
					t.Fatalf("writer %d: AppendActivity %d: %v", w, j, err)
				}
			} else {
				// A reason new to this writer's scope always writes.
				a.Kind = "skip"
				wrote, err := s.RecordSkip(ctx, fmt.Sprintf("pass:w%d", w), strconv.Itoa(j), a)
				if err != nil || !wrote {
					t.Fatalf("writer %d: RecordSkip %d = %v, %v; want true, nil", w, j, wrote, err)
				}
			}
			// Every writer skips the shared scope for one reason: only
			// one line may result, whoever commits first.
			if _, err := s.RecordSkip(ctx, sharedSkipScope, "core@1800000000", store.Activity{
				At: base, Kind: "skip", Line: fmt.Sprintf("shared skip by writer %d", w),
			}); err != nil {
				t.Fatalf("writer %d: RecordSkip shared: %v", w, err)
			}
		}
	case "relative":
		if err := s.RecordStates(ctx, []quota.State{{Key: sharedKey, ObservedAt: base, ResetAt: base}}); err != nil {
			t.Fatalf("RecordStates: %v", err)
		}
	default:
		t.Fatalf("unknown %s %q", envHelperMode, mode)
	}
}

// runHelpers starts n helper processes in mode on the store at path, in
// folder dir, lets them all open the store, then releases them at once and
// waits for every one to succeed.
func runHelpers(t *testing.T, mode, dir, path string, n int) {
	t.Helper()

	type helper struct {
		cmd    *exec.Cmd
		stdin  io.WriteCloser
		stdout *bufio.Reader
		out    bytes.Buffer // stdout after "ready"; read by this goroutine
		errOut bytes.Buffer // stderr; written by exec's goroutine until Wait
	}
	hs := make([]*helper, n)
	for i := range hs {
		h := &helper{cmd: exec.CommandContext(t.Context(), os.Args[0],
			"-test.run=^TestHelperWriter$", "-test.count=1", "-test.timeout=5m")}
		h.cmd.Dir = dir
		h.cmd.Env = append(os.Environ(),
			envHelperPath+"="+path, envHelperWriter+"="+strconv.Itoa(i), envHelperMode+"="+mode)
		h.cmd.Stderr = &h.errOut
		var err error
		if h.stdin, err = h.cmd.StdinPipe(); err != nil {
			t.Fatal(err)
		}
		out, err := h.cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		h.stdout = bufio.NewReader(out)
		if err := h.cmd.Start(); err != nil {
			t.Fatalf("start helper %d: %v", i, err)
		}
		hs[i] = h
	}
	// Wait until every helper has opened the store.
	var failed []string
	for i, h := range hs {
		for {
			line, err := h.stdout.ReadString('\n')
			if line == "ready\n" {
				break
			}
			h.out.WriteString(line)
			if err != nil {
				failed = append(failed, fmt.Sprintf("helper %d did not get ready: %v", i, err))
				break
			}
		}
	}
	// Release them all at once, then wait for each.
	for i, h := range hs {
		if _, err := io.WriteString(h.stdin, "go\n"); err != nil {
			failed = append(failed, fmt.Sprintf("helper %d: release: %v", i, err))
		}
		h.stdin.Close()
	}
	for i, h := range hs {
		if _, err := io.Copy(&h.out, h.stdout); err != nil {
			failed = append(failed, fmt.Sprintf("helper %d: read its output: %v", i, err))
		}
		if err := h.cmd.Wait(); err != nil {
			failed = append(failed, fmt.Sprintf("helper %d: %v\n%s%s", i, err, h.out.String(), h.errOut.String()))
		}
	}
	if failed != nil {
		t.Fatalf("%d of %d helpers failed:\n%s", len(failed), n, strings.Join(failed, "\n"))
	}
}

// TestConcurrentProcesses has 16 processes write into one new ledger file at
// once. No write may fail and none may be lost.
func TestConcurrentProcesses(t *testing.T) {
	t.Parallel()

	t.Run("states", func(t *testing.T) {
		t.Parallel()

		dir := t.TempDir()
		path := filepath.Join(dir, "layover.db")
		runHelpers(t, "states", dir, path, writers)

		s := open(t, path)
		all, err := s.AllStates(t.Context())
		if err != nil {
			t.Fatalf("AllStates: %v", err)
		}
		got := map[quota.Key]quota.State{}
		for _, st := range all {
			got[st.Key] = st
		}
		if len(all) != writers*keysPerWriter+1 {
			t.Errorf("AllStates = %d states, want %d", len(all), writers*keysPerWriter+1)
		}
		for w := range writers {
			for j := range keysPerWriter {
				st, ok := got[ownKey(w, j)]
				switch {
				case !ok:
					t.Errorf("lost the write of %s", ownKey(w, j))
				case st.Remaining != int64(j) || st.ObservedBy != fmt.Sprintf("writer-%d", w):
					t.Errorf("%s = %+v, want remaining %d by writer-%d", st.Key, st, j, w)
				}
			}
		}
		last := sharedSeq(writers-1, keysPerWriter-1)
		shared := got[sharedKey]
		if want := base.Add(time.Duration(last) * time.Millisecond); !shared.ObservedAt.Equal(want) ||
			shared.Remaining != int64(last) || shared.ObservedBy != fmt.Sprintf("writer-%d", writers-1) {
			t.Errorf("shared key = %+v, want the observation of %s (remaining %d by writer-%d)",
				shared, want, last, writers-1)
		}
	})

	t.Run("activity", func(t *testing.T) {
		t.Parallel()

		dir := t.TempDir()
		path := filepath.Join(dir, "layover.db")
		runHelpers(t, "activity", dir, path, writers)

		s := open(t, path)
		lines, err := s.Activity(t.Context(), 0)
		if err != nil {
			t.Fatalf("Activity: %v", err)
		}
		if want := writers*linesPerWriter + 1; len(lines) != want {
			t.Errorf("Activity = %d lines, want %d", len(lines), want)
		}
		seen := map[string]int{}
		shared := 0
		for i, a := range lines {
			if strings.HasPrefix(a.Line, "shared skip") {
				shared++
			} else {
				seen[a.Line]++
			}
			if i > 0 && a.ID <= lines[i-1].ID {
				t.Errorf("activity ids out of order: %d after %d", a.ID, lines[i-1].ID)
			}
		}
		if shared != 1 {
			t.Errorf("shared skip written %d times, want once", shared)
		}
		for w := range writers {
			for j := range linesPerWriter {
				if line := fmt.Sprintf("writer %d line %d", w, j); seen[line] != 1 {
					t.Errorf("%q written %d times, want once", line, seen[line])
				}
			}
		}
	})
}

// TestOpenRelativeFilePrefix opens "file:rel.db" from a helper process whose
// working folder is a temporary one (a test cannot change its own while
// running in parallel). SQLite takes a name starting "file:" for a URI; the
// store must still use the file it prepared, private, and no other.
func TestOpenRelativeFilePrefix(t *testing.T) {
	t.Parallel()

	dir := t.TempDir()
	runHelpers(t, "relative", dir, "file:rel.db", 1)

	fi, err := os.Stat(filepath.Join(dir, "file:rel.db"))
	if err != nil {
		t.Fatalf("the prepared file: %v", err)
	}
	if perm := fi.Mode().Perm(); perm != 0o600 {
		t.Errorf("file:rel.db has mode %v, want 0600", perm)
	}
	if _, err := os.Stat(filepath.Join(dir, "rel.db")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("rel.db was created beside it (%v)", err)
	}
	s := open(t, filepath.Join(dir, "file:rel.db"))
	if states, err := s.AllStates(t.Context()); err != nil || len(states) != 1 {
		t.Errorf("AllStates of file:rel.db = %+v, %v; want the helper's one state", states, err)
	}
}

// TestStatesKeyCounts reads every subset of a ledger's keys, in scrambled
// order and with repeats, so that both the prepared reads (up to four keys)
// and the query built for more keys are checked against AllStates.
func TestStatesKeyCounts(t *testing.T) {
	t.Parallel()

	ctx := t.Context()
	s := open(t, filepath.Join(t.TempDir(), "layover.db"))
	var stored []quota.State
	for i, k := range []quota.Key{
		{Host: "api.github.com", Principal: "octocat", Resource: "core"},
		{Host: "api.github.com", Principal: "octocat", Resource: "graphql"},
		{Host: "api.github.com", Principal: "octocat", Resource: "search"},
		{Host: "api.github.com", Principal: "hubot", Resource: "core"},
		{Host: "ghe.example", Principal: "octocat", Resource: "core"},
	} {
		stored = append(stored, quota.State{Key: k, Limit: 5000, Remaining: int64(i), ResetAt: base.Add(time.Hour),
			ResetKnown: true, RawReset: base.Add(time.Hour).Unix(), ObservedAt: base, ObservedBy: "h",
			Source: quota.SourceHeaders, Cause: quota.CauseBelowReserve})
	}
	if err := s.RecordStates(ctx, stored); err != nil {
		t.Fatal(err)
	}
	all, err := s.AllStates(ctx)
	if err != nil || len(all) != len(stored) {
		t.Fatalf("AllStates = %d states, %v", len(all), err)
	}
	absent := quota.Key{Host: "api.github.com", Principal: "octocat", Resource: "absent"}

	// Each subset of the stored keys, plus the absent key, reversed, with
	// its first key repeated.
	for mask := 0; mask < 1<<len(all); mask++ {
		var keys []quota.Key
		var want []quota.State
		for i, st := range all {
			if mask&(1<<i) != 0 {
				keys = append([]quota.Key{st.Key}, keys...)
				want = append(want, st)
			}
		}
		for _, extra := range [][]quota.Key{nil, {absent}, keys[:min(1, len(keys))]} {
			ks := append(append([]quota.Key(nil), keys...), extra...)
			if len(ks) == 0 {
				continue
			}
			got, err := s.States(ctx, ks)
			if err != nil {
				t.Fatalf("States(%v): %v", ks, err)
			}
			if len(got) != len(want) {
				t.Fatalf("States(%v) = %d states, want %d", ks, len(got), len(want))
			}
			for i := range want {
				if !sameState(got[i], want[i]) {
					t.Errorf("States(%v)[%d] = %+v, want %+v", ks, i, got[i], want[i])
				}
			}
		}
	}
}

// TestStatesConcurrent reads through the prepared statements from many
// goroutines at once, every key count at the same time (run it with -race).
func TestStatesConcurrent(t *testing.T) {
	t.Parallel()

	ctx := t.Context()
	s := open(t, filepath.Join(t.TempDir(), "layover.db"))
	keys := []quota.Key{
		{Host: "api.github.com", Principal: "octocat", Resource: "core"},
		{Host: "api.github.com", Principal: "octocat", Resource: "graphql"},
		{Host: "api.github.com", Principal: "octocat", Resource: "search"},
		{Host: "api.github.com", Principal: "octocat", Resource: "code_search"},
		{Host: "api.github.com", Principal: "octocat", Resource: "scim"},
	}
	var states []quota.State
	for _, k := range keys {
		states = append(states, quota.State{Key: k, Limit: 5000, Remaining: 1, ResetAt: base, ObservedAt: base})
	}
	if err := s.RecordStates(ctx, states); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for g := range 16 {
		wg.Go(func() {
			for j := range 50 {
				n := 1 + (g+j)%len(keys)
				got, err := s.States(ctx, keys[:n])
				if err == nil && len(got) != n {
					err = fmt.Errorf("States of %d keys = %d states", n, len(got))
				}
				if err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// TestStatesAfterClose: a closed store answers with an error, not a panic.
func TestStatesAfterClose(t *testing.T) {
	t.Parallel()

	ctx := t.Context()
	s, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "layover.db"))
	if err != nil {
		t.Fatal(err)
	}
	k := quota.Key{Host: "api.github.com", Principal: "octocat", Resource: "core"}
	if _, err := s.States(ctx, []quota.Key{k}); err != nil {
		t.Fatalf("States: %v", err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	for n := 1; n <= 5; n++ {
		if _, err := s.States(ctx, slices.Repeat([]quota.Key{{Host: "h", Principal: "p", Resource: "r"}}, n)); err == nil {
			t.Errorf("States of %d keys after Close = nil error", n)
		}
	}
}

// TestCloseKeepsEmptyWAL: the last connection to close checkpoints, leaves
// the -wal and -shm files for the next process, and empties the WAL.
func TestCloseKeepsEmptyWAL(t *testing.T) {
	t.Parallel()

	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "layover.db")
	s, err := sqlite.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	st := quota.State{Key: quota.Key{Host: "api.github.com", Principal: "octocat", Resource: "core"},
		Limit: 5000, Remaining: 7, ResetAt: base, ObservedAt: base}
	if err := s.RecordStates(ctx, []quota.State{st}); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(path + "-wal"); err != nil || fi.Size() == 0 {
		t.Fatalf("WAL after a write: %v, %v; want a non-empty file", fi, err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	for _, suffix := range []string{"-wal", "-shm"} {
		fi, err := os.Stat(path + suffix)
		if err != nil {
			t.Fatalf("%s after Close: %v", suffix, err)
		}
		if perm := fi.Mode().Perm(); perm&0o077 != 0 {
			t.Errorf("%s has mode %v, want none for group or others", suffix, perm)
		}
		if suffix == "-wal" && fi.Size() != 0 {
			t.Errorf("WAL after the last Close has %d bytes, want 0", fi.Size())
		}
	}
	// The write was checkpointed into the file itself.
	db, err := sql.Open("sqlite", "file:"+path+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var remaining int64
	if err := db.QueryRowContext(ctx, `SELECT remaining FROM quota_state`).Scan(&remaining); err != nil || remaining != 7 {
		t.Errorf("remaining read back = %d, %v; want 7", remaining, err)
	}
}

// BenchmarkAdmitFromLedger is what `layover pass` does on its fast path,
// after opening the store: read the states of the pass's keys (core and
// graphql, its default) from the ledger file and decide. The ledger holds
// what a /rate_limit leaves, every resource of two principals; graphql is
// below its reserve, so the decision is a skip. The context is a plain one,
// as pass's is.
func BenchmarkAdmitFromLedger(b *testing.B) {
	ctx := context.Background()
	s := open(b, filepath.Join(b.TempDir(), "layover.db"))
	now := base
	var states []quota.State
	for _, p := range []string{"hubot", "octocat"} {
		for _, r := range []string{"actions_runner_registration", "audit_log", "code_scanning_upload",
			"code_search", "core", "dependency_snapshots", "graphql", "integration_manifest", "scim",
			"search", "source_import"} {
			remaining := int64(4000)
			if r == "graphql" {
				remaining = 300
			}
			states = append(states, quota.State{
				Key:   quota.Key{Host: "api.github.com", Principal: p, Resource: r},
				Limit: 5000, Remaining: remaining, ResetAt: now.Add(time.Hour), ResetKnown: true,
				RawReset: now.Add(time.Hour).Unix(), ObservedAt: now, ObservedBy: "bench",
				Source: quota.SourceRateLimit,
			})
		}
	}
	if err := s.RecordStates(ctx, states); err != nil {
		b.Fatal(err)
	}
	keys := []quota.Key{
		{Host: "api.github.com", Principal: "octocat", Resource: "core"},
		{Host: "api.github.com", Principal: "octocat", Resource: "graphql"},
	}
	p := quota.DefaultPolicy()
	var d quota.Decision
	for b.Loop() {
		got, err := s.States(ctx, keys)
		if err != nil {
			b.Fatal(err)
		}
		d = p.Admit(now, got)
	}
	if d.Admit || d.Blocking.Resource != "graphql" || d.Cause != quota.CauseBelowReserve {
		b.Fatalf("unexpected decision %+v", d)
	}
}

// BenchmarkOpenReadClose is what a short layover process pays its store,
// SQLite's one-time start aside: open an existing ledger (connection,
// pragmas, schema, migration check), read the states of two keys, close (a
// checkpoint of an empty WAL).
func BenchmarkOpenReadClose(b *testing.B) {
	ctx := context.Background()
	path := filepath.Join(b.TempDir(), "layover.db")
	keys := []quota.Key{
		{Host: "api.github.com", Principal: "octocat", Resource: "core"},
		{Host: "api.github.com", Principal: "octocat", Resource: "graphql"},
	}
	s, err := sqlite.Open(ctx, path)
	if err != nil {
		b.Fatal(err)
	}
	if err := s.RecordStates(ctx, []quota.State{{Key: keys[0], Limit: 5000, Remaining: 0,
		ResetAt: base.Add(time.Hour), ObservedAt: base}}); err != nil {
		b.Fatal(err)
	}
	if err := s.Close(); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		s, err := sqlite.Open(ctx, path)
		if err != nil {
			b.Fatal(err)
		}
		if got, err := s.States(ctx, keys); err != nil || len(got) != 1 {
			b.Fatalf("States = %d states, %v", len(got), err)
		}
		if err := s.Close(); err != nil {
			b.Fatal(err)
		}
	}
}
