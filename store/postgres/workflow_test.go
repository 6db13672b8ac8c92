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
