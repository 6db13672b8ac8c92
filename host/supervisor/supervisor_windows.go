//go:build windows

package supervisor

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
)

// errUnsupported is every Windows answer: a child there cannot be handed
// the link as a descriptor, nor its process group be killed whole.
var errUnsupported = errors.New("the supervisor is not available on Windows")

// Main refuses: there is no supervisor on Windows.
func Main([]string) int {
	fmt.Fprintln(os.Stderr, "layover: "+Arg+": "+errUnsupported.Error())
	return 2
}

// Link is the host's end of a supervisor's link; Windows has none.
type Link struct{}

// Attach fails on Windows; callers check platform.Supervises first.
func Attach(*exec.Cmd) (*Link, error) { return nil, errUnsupported }

// Started fails on Windows.
func (*Link) Started() (int, error) { return 0, errUnsupported }

// Close does nothing on Windows.
func (*Link) Close() error { return nil }
