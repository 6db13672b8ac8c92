package sqlite_test

import (
	"path/filepath"
	"testing"

	"github.com/layoverhq/layover/store"
	"github.com/layoverhq/layover/store/storetest"
)

func TestWorkflows(t *testing.T) {
	t.Parallel()

	storetest.RunWorkflows(t, func(t *testing.T) store.Store {
		return open(t, filepath.Join(t.TempDir(), "layover.db"))
	})
}

// The workflow benchmarks of store/storetest, on a SQLite file
// (synchronous=FULL).
func BenchmarkCreateRun(b *testing.B) {
	storetest.BenchCreateRun(b, open(b, filepath.Join(b.TempDir(), "layover.db")), base)
}

func BenchmarkUpdateTask(b *testing.B) {
	storetest.BenchUpdateTask(b, open(b, filepath.Join(b.TempDir(), "layover.db")), base)
}
