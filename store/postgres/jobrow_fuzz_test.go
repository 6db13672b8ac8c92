package postgres

import (
	"testing"

	"github.com/layoverhq/layover/job"
	"github.com/layoverhq/layover/store/storetest"
)

// FuzzScanJob fuzzes how a job row is read back (storetest.FuzzJobRow).
func FuzzScanJob(f *testing.F) {
	storetest.FuzzJobRow(f, jobArgs, func(r storetest.Row) (job.Job, error) { return scanJob(r) })
}
