package postgres_test

import (
	"testing"

	"github.com/layoverhq/layover/store"
	"github.com/layoverhq/layover/store/postgres/pgtest"
	"github.com/layoverhq/layover/store/storetest"
)

func TestWorkflows(t *testing.T) {
	t.Parallel()
	pgtest.DSN(t)

	storetest.RunWorkflows(t, func(t *testing.T) store.Store { return openFresh(t) })
}

// The workflow benchmarks of store/storetest.
func BenchmarkCreateRun(b *testing.B) { storetest.BenchCreateRun(b, openFresh(b), base) }

func BenchmarkUpdateTask(b *testing.B) { storetest.BenchUpdateTask(b, openFresh(b), base) }
