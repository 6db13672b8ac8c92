package postgres_test

import (
	"testing"

	"github.com/layoverhq/layover/store"
	"github.com/layoverhq/layover/store/postgres/pgtest"
	"github.com/layoverhq/layover/store/storetest"
)

// Three hosts, each with its own pool on one PostgreSQL store, count one
// resume rate per key across the fleet.
func TestFleetResumePacing(t *testing.T) {
	t.Parallel()
	dsn := pgtest.Schema(t)
	storetest.ResumePacing(t, func(t *testing.T) store.Store { return open(t, dsn) })
}
