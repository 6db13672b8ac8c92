package sqlite_test

import (
	"path/filepath"
	"testing"

	"github.com/layoverhq/layover/store"
	"github.com/layoverhq/layover/store/storetest"
)

// Three hosts on one SQLite file count one resume rate per key.
func TestFleetResumePacing(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "layover.db")
	storetest.ResumePacing(t, func(t *testing.T) store.Store { return open(t, path) })
}
