package store_test

import (
	"testing"

	"github.com/layoverhq/layover/store"
	"github.com/layoverhq/layover/store/storetest"
	"github.com/layoverhq/layover/workflow/record"
)

// FuzzScanTask fuzzes how a workflow task row is read back
// (storetest.FuzzTaskRow). Both stores write and read task rows with
// store.TaskValues and store.ScanTask, so this one target covers both.
func FuzzScanTask(f *testing.F) {
	storetest.FuzzTaskRow(f, store.TaskValues, func(r storetest.Row) (record.Task, error) { return store.ScanTask(r) })
}
