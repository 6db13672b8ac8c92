//go:build unix

package cli_test

import (
	"syscall"
	"testing"
)

// asNobodyAttr starts a process as the user nobody (65534).
func asNobodyAttr(*testing.T) *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
}
