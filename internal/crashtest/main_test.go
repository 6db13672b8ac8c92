package crashtest

import (
	"testing"

	"github.com/layoverhq/layover/internal/proctest"
)

// binDir holds the layover binary and the fake gh, built once by TestMain
// (as internal/cli's end-to-end harness builds them).
var binDir string

func TestMain(m *testing.M) {
	proctest.Main(m, &binDir, raceEnabled, map[string]string{"../../cmd/layover": "layover", "../fake/cmd/gh": "gh"})
}
