//go:build windows

package cli_test

import (
	"syscall"
	"testing"
)

// asNobodyAttr skips: Windows starts no process as another user this way.
func asNobodyAttr(t *testing.T) *syscall.SysProcAttr {
	t.Skip("no process as another user on Windows")
	return nil
}
