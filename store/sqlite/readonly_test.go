package sqlite_test

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/layoverhq/layover/quota"
	"github.com/layoverhq/layover/store"
	"github.com/layoverhq/layover/store/sqlite"
	"github.com/layoverhq/layover/store/storetest"
)

// snapshot is what a read-only open must leave as it was: the names in the
// store's folder, and the bytes and modification time of the file and its
// write-ahead log.
type snapshot struct {
	names    []string
	db, wal  []byte
	dbMod    time.Time
	walMod   time.Time
	walFound bool
}

func takeSnapshot(t *testing.T, path string) snapshot {
	t.Helper()
	var s snapshot
	entries, err := os.ReadDir(filepath.Dir(path))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		s.names = append(s.names, e.Name())
	}
	if s.db, err = os.ReadFile(path); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	s.dbMod = fi.ModTime()
	if fi, err := os.Stat(path + "-wal"); err == nil {
		s.walFound, s.walMod = true, fi.ModTime()
		s.wal, _ = os.ReadFile(path + "-wal")
	}
	return s
}

func (s snapshot) check(t *testing.T, path string) {
	t.Helper()
	now := takeSnapshot(t, path)
	if !slices.Equal(now.names, s.names) {
		t.Errorf("files beside the store %v, before the read-only open %v", now.names, s.names)
	}
	if !bytes.Equal(now.db, s.db) || !now.dbMod.Equal(s.dbMod) {
		t.Errorf("the store file changed under a read-only open (mtime %v -> %v)", s.dbMod, now.dbMod)
	}
	if now.walFound != s.walFound || !bytes.Equal(now.wal, s.wal) || !now.walMod.Equal(s.walMod) {
		t.Errorf("the write-ahead log changed under a read-only open")
	}
}

// A read-only Store reads everything a read-write one wrote and refuses
// every write, changing nothing on disk: with the WAL index in place (as
// every layover process leaves it) and without one (as a copy, or a store
// whose index the reader may not open, has).
func TestOpenReadOnly(t *testing.T) {
	t.Parallel()
	for _, withIndex := range []bool{true, false} {
		name := map[bool]string{true: "with WAL index", false: "without WAL index"}[withIndex]
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			path := filepath.Join(t.TempDir(), "layover.db")
			openRW := func(t *testing.T) store.Store { return open(t, path) }
			storetest.ReadOnly(t, openRW, func(t *testing.T) store.Store {
				if !withIndex {
					for _, suffix := range []string{"-shm", "-wal"} {
						if err := os.Remove(path + suffix); err != nil {
							t.Fatal(err)
						}
					}
				}
				before := takeSnapshot(t, path)
				ro, err := sqlite.OpenReadOnly(t.Context(), path)
				if err != nil {
					t.Fatalf("OpenReadOnly: %v", err)
				}
				return checkedClose{ro, func() { before.check(t, path) }}
			})
		})
	}
}

// checkedClose runs after once the store it wraps is closed.
type checkedClose struct {
	*sqlite.Store
	after func()
}

func (c checkedClose) Close() error {
	err := c.Store.Close()
	c.after()
	return err
}

// A read-only Store sees the writes of a live read-write one, committed
// into its write-ahead log and not yet into the file.
func TestOpenReadOnlySeesLiveWriter(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "layover.db")
	rw := open(t, path)
	st := quota.State{Key: quota.Key{Host: "api.github.com", Principal: "octocat", Resource: "core"},
		Limit: 5000, Remaining: 42, ResetAt: base, ObservedAt: base}
	if err := rw.RecordStates(ctx, []quota.State{st}); err != nil {
		t.Fatal(err)
	}
	ro, err := sqlite.OpenReadOnly(ctx, path)
	if err != nil {
		t.Fatalf("OpenReadOnly beside a live writer: %v", err)
	}
	defer ro.Close()
	got, err := ro.AllStates(ctx)
	if err != nil || len(got) != 1 || got[0].Remaining != 42 {
		t.Fatalf("read-only AllStates = %+v, %v; want the live writer's state", got, err)
	}
	st.Remaining = 41
	if err := rw.RecordStates(ctx, []quota.State{st}); err != nil {
		t.Fatal(err)
	}
	if got, err := ro.AllStates(ctx); err != nil || len(got) != 1 || got[0].Remaining != 41 {
		t.Errorf("read-only AllStates after a new write = %+v, %v; want 41 left", got, err)
	}
}

// What a read-only open cannot read it refuses, saying why, and leaves the
// file as it was: a missing file, a schema older than this layover's (a
// read-only open never migrates), a directory, and a log holding writes
// without the index that says which.
func TestOpenReadOnlyRefusals(t *testing.T) {
	t.Parallel()
	ctx := t.Context()

	t.Run("missing", func(t *testing.T) {
		t.Parallel()
		dir := t.TempDir()
		path := filepath.Join(dir, "layover.db")
		if _, err := sqlite.OpenReadOnly(ctx, path); !errors.Is(err, fs.ErrNotExist) {
			t.Fatalf("OpenReadOnly of a missing file = %v, want fs.ErrNotExist", err)
		}
		if entries, _ := os.ReadDir(dir); len(entries) != 0 {
			t.Errorf("a refused read-only open made %v", entries)
		}
	})
	t.Run("directory", func(t *testing.T) {
		t.Parallel()
		var pe *sqlite.PathError
		if _, err := sqlite.OpenReadOnly(ctx, t.TempDir()); !errors.As(err, &pe) {
			t.Fatalf("OpenReadOnly of a directory = %v, want *PathError", err)
		}
	})
	t.Run("older schema", func(t *testing.T) {
		t.Parallel()
		path := filepath.Join(t.TempDir(), "layover.db")
		s := open(t, path)
		if _, err := s.DB().ExecContext(ctx, "PRAGMA user_version = 1"); err != nil {
			t.Fatal(err)
		}
		s.Close()
		before := takeSnapshot(t, path)
		_, err := sqlite.OpenReadOnly(ctx, path)
		if !errors.Is(err, store.ErrSchemaOld) || !strings.Contains(err.Error(), "schema version 1") {
			t.Fatalf("OpenReadOnly of an old schema = %v, want store.ErrSchemaOld naming version 1", err)
		}
		before.check(t, path)
	})
	t.Run("empty file", func(t *testing.T) {
		t.Parallel()
		path := filepath.Join(t.TempDir(), "layover.db")
		if err := os.WriteFile(path, nil, 0o600); err != nil {
			t.Fatal(err)
		}
		if _, err := sqlite.OpenReadOnly(ctx, path); !errors.Is(err, store.ErrSchemaOld) {
			t.Fatalf("OpenReadOnly of an empty file = %v, want store.ErrSchemaOld", err)
		}
	})
	t.Run("log without index", func(t *testing.T) {
		t.Parallel()
		dir := t.TempDir()
		path := filepath.Join(dir, "layover.db")
		s := open(t, path)
		if err := s.AppendActivity(ctx, store.Activity{At: base, Kind: "wait", Line: "in the log only"}); err != nil {
			t.Fatal(err)
		}
		// A copy of the file and its log, taken while the writer is open:
		// the write is in the log alone.
		copyPath := filepath.Join(dir, "copy.db")
		for _, suffix := range []string{"", "-wal"} {
			data, err := os.ReadFile(path + suffix)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(copyPath+suffix, data, 0o600); err != nil {
				t.Fatal(err)
			}
		}
		_, err := sqlite.OpenReadOnly(ctx, copyPath)
		if err == nil || !strings.Contains(err.Error(), "write-ahead log holds writes") {
			t.Fatalf("OpenReadOnly of a log without its index = %v, want it refused, saying why", err)
		}
		if _, err := os.Stat(copyPath + "-shm"); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("the refused open made an index (%v)", err)
		}
	})
}
