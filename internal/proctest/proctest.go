// Package proctest helps tests that drive real processes: it builds the
// binaries they run and tells whether a process still lives.
package proctest

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
)

// Main builds each package of bins (a path relative to the test's package
// → the binary's name) into a new directory, with -race when race is set,
// sets *dir to it, runs the tests, removes the directory and exits with
// their code. Call it from TestMain.
//
// Tests that drive processes spend most of their time waiting on them and
// on real time, not on the CPU, so unless -parallel is given Main lets
// PerCPU of them run at once per CPU rather than testing's one.
//
// A process that runs no test builds nothing, so that listing and fuzzing
// (scripts/fuzz.sh) spend no time building: one that only lists (-list),
// a fuzz worker (a process `go test -fuzz` starts, and restarts after each
// failing input), and a fuzzing coordinator told to run no test
// (-run '^$').
func Main(m *testing.M, dir *string, race bool, bins map[string]string) {
	if runsNoTest(os.Args[1:]) {
		os.Exit(m.Run())
	}
	d, err := os.MkdirTemp("", "layover-test-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	*dir = d
	if !hasFlag(os.Args[1:], "test.parallel") {
		if err := flag.Set("test.parallel", strconv.Itoa(PerCPU*runtime.GOMAXPROCS(0))); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
	}
	for pkg, name := range bins {
		args := []string{"build", "-o", filepath.Join(d, name)}
		if race {
			args = append(args, "-race")
		}
		out, err := exec.Command("go", append(args, pkg)...).CombinedOutput()
		if err != nil {
			fmt.Fprintf(os.Stderr, "build %s: %v\n%s", pkg, err, out)
			os.RemoveAll(d)
			os.Exit(1)
		}
	}
	code := m.Run()
	os.RemoveAll(d)
	os.Exit(code)
}

// PerCPU is how many parallel tests Main lets run at once per CPU.
const PerCPU = 2

// hasFlag reports whether args set the test flag name (-name or --name,
// with its value after = or as the next argument).
func hasFlag(args []string, name string) bool {
	for _, a := range args {
		if a == "--" {
			return false
		}
		n, _, _ := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if strings.HasPrefix(a, "-") && n == name {
			return true
		}
	}
	return false
}

// runsNoTest reports whether a test binary run with args runs no test:
// -test.list, -test.fuzzworker, or -test.fuzz with -test.run=^$.
func runsNoTest(args []string) bool {
	fuzz, noRun := false, false
	for _, a := range args {
		name, value, _ := strings.Cut(strings.TrimPrefix(a, "-"), "=")
		switch name {
		case "test.list", "test.fuzzworker":
			return true
		case "test.fuzz":
			fuzz = value != ""
		case "test.run":
			noRun = value == "^$"
		}
	}
	return fuzz && noRun
}

// Alive reports whether pid is a live process: it exists and is not a
// zombie (a zombie has died; only its exit status is left).
func Alive(pid int) bool {
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	// The state follows the parenthesised command name, which may hold
	// spaces and parentheses itself.
	i := bytes.LastIndexByte(stat, ')')
	return i >= 0 && i+2 < len(stat) && stat[i+2] != 'Z' && stat[i+2] != 'X'
}
