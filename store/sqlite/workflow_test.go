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
