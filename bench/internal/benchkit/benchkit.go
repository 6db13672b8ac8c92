// Package benchkit holds what the benchmark programs under bench/ share:
// building the binary, seeding an exhausted quota, percentiles and output.
package benchkit

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"time"

	"github.com/layoverhq/layover/quota"
	"github.com/layoverhq/layover/store/sqlite"
)

// Name prefixes Fail's messages: the program's name.
var Name = "bench"

// Fail prints a line on stderr and exits 1.
func Fail(format string, a ...any) {
	fmt.Fprintf(os.Stderr, Name+": "+format+"\n", a...)
	os.Exit(1)
}

// Build compiles pkg to out with the go command on PATH.
func Build(out, pkg string) {
	cmd := exec.Command("go", "build", "-o", out, pkg)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		Fail("go build %s: %v", pkg, err)
	}
}

// SeedExhausted makes the SQLite store at path say key is exhausted until
// an hour from now, a reset the provider declared: a pass skips, a run
// defers.
func SeedExhausted(path string, key quota.Key) {
	ctx := context.Background()
	st, err := sqlite.Open(ctx, path)
	if err != nil {
		Fail("%v", err)
	}
	defer st.Close()
	now := time.Now()
	reset := now.Add(time.Hour).Truncate(time.Second)
	err = st.RecordStates(ctx, []quota.State{{
		Key: key, Limit: 5000, Remaining: 0, ResetAt: reset, ResetKnown: true, RawReset: reset.Unix(),
		ObservedAt: now, ObservedBy: Name, Source: quota.SourceHeaders, Cause: quota.CauseExhausted,
	}})
	if err != nil {
		Fail("seed the store: %v", err)
	}
}

// Pct is the p-th percentile (0–100) of sorted s, nearest rank.
func Pct(s []time.Duration, p float64) time.Duration {
	i := int(float64(len(s))*p/100 + 0.999999)
	return s[min(max(i-1, 0), len(s)-1)]
}

// MS renders d in milliseconds with two decimals.
func MS(d time.Duration) string { return fmt.Sprintf("%.2f ms", float64(d.Microseconds())/1000) }
