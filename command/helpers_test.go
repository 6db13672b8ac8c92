package command_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/layoverhq/layover/store/sqlite"
)

// openStore opens a new SQLite store of the test's own, closed at its end.
func openStore(t *testing.T) *sqlite.Store {
	t.Helper()
	st, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "layover.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}
