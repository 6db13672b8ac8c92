//go:build !linux && !freebsd

package platform

import "os/exec"

// ParentDeathSignal reports whether DieWithParent does anything here: this
// system has no parent-death signal, so it does not.
const ParentDeathSignal = false

// DieWithParent would ask the kernel to kill cmd's process when its parent
// dies; this system offers no such thing, so a child that must not outlive
// its parent is tied to it by package supervisor's link instead.
func DieWithParent(*exec.Cmd) {}
