package crashtest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// binDir holds the layover binary and the fake gh, built once by TestMain
// (as internal/cli's end-to-end harness builds them).
var binDir string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "layover-crash-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binDir = dir
	for pkg, name := range map[string]string{"../../cmd/layover": "layover", "../fake/cmd/gh": "gh"} {
		args := []string{"build", "-o", filepath.Join(dir, name)}
		if raceEnabled {
			args = append(args, "-race")
		}
		out, err := exec.Command("go", append(args, pkg)...).CombinedOutput()
		if err != nil {
			fmt.Fprintf(os.Stderr, "build %s: %v\n%s", pkg, err, out)
			os.RemoveAll(dir)
			os.Exit(1)
		}
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}
