// Command deferlatency measures the latency of one `layover run` process that
// defers: from exec to exit 6, its receipt the last line of stdout.
//
// It builds layover into a temporary folder and writes into a new store a
// ledger that says the principal's GitHub core quota is exhausted until an
// hour from now (with LAYOVER_PRINCIPAL and GH_TOKEN set, so no token lookup
// and no network). `layover run --quota github --defer-after 0s -- true` then
// defers before starting its command: the ledger's reset is declared, the
// wait is longer than 0s, so it prints a receipt and exits 6. Each run's
// receipt is decoded strictly and validated.
//
// It times, in turn (the order rotating each round) and N times each:
//
//   - run --defer-after 0s: the receipt is printed; nothing is stored.
//   - run --submit: the job, its receipt and its wake-up are also recorded
//     durably, in one transaction (handoff ownership: no host is live).
//   - /bin/true, the cost of starting any process here.
//
// and prints min, median and p90 of each.
//
//	go run ./bench/deferlatency [-n 200]
package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/layoverhq/layover/bench/internal/benchkit"
	"github.com/layoverhq/layover/quota"
	"github.com/layoverhq/layover/receipt"
	"github.com/layoverhq/layover/store/sqlite"
)

const (
	apiHost   = "api.github.com"
	principal = "octocat"
	exitDefer = 6
)

func main() {
	benchkit.Name = "deferlatency"
	n := flag.Int("n", 200, "rounds; each runs every command once")
	warm := flag.Int("warmup", 10, "untimed rounds first")
	flag.Parse()
	if *n < 1 || *warm < 0 {
		benchkit.Fail("want -n >= 1 and -warmup >= 0")
	}

	dir, err := os.MkdirTemp("", "deferlatency-")
	if err != nil {
		benchkit.Fail("%v", err)
	}
	defer os.RemoveAll(dir)
	layover := filepath.Join(dir, "layover")
	benchkit.Build(layover, "github.com/layoverhq/layover/cmd/layover")

	db := filepath.Join(dir, "state", "layover.db")
	benchkit.SeedExhausted(db, quota.Key{Host: apiHost, Principal: principal, Resource: "core"})
	env := []string{
		"PATH=" + os.Getenv("PATH"),
		"HOME=" + dir,
		"XDG_STATE_HOME=" + filepath.Join(dir, "state"),
		"LAYOVER_STORE=" + db,
		"LAYOVER_PRINCIPAL=" + principal,
		"GH_TOKEN=deferlatency-not-a-token",
	}

	cmds := []bench{
		{name: "run --defer-after 0s", argv: []string{layover, "run", "--quota", "github", "--defer-after", "0s", "--", "true"}, code: exitDefer, receipt: true},
		{name: "run --submit", argv: []string{layover, "run", "--quota", "github", "--submit", "--", "true"}, code: exitDefer, receipt: true},
		{name: "/bin/true", argv: []string{"/bin/true"}},
	}
	for r := range *warm + *n {
		for i := range cmds {
			c := &cmds[(r+i)%len(cmds)]
			start := time.Now()
			out := run(env, c.code, c.argv...)
			d := time.Since(start)
			if c.receipt {
				checkReceipt(c.name, out)
			}
			if r >= *warm {
				c.times = append(c.times, d)
			}
		}
	}
	if jobs := countJobs(db); jobs != *warm+*n {
		benchkit.Fail("the store holds %d jobs, want one per run --submit (%d)", jobs, *warm+*n)
	}

	fmt.Printf("deferlatency: %d rounds (+%d warm-up), %s, GOMAXPROCS %d, %s/%s\n",
		*n, *warm, runtime.Version(), runtime.GOMAXPROCS(0), runtime.GOOS, runtime.GOARCH)
	fmt.Printf("%-24s %9s %9s %9s\n", "command", "min", "median", "p90")
	for _, c := range cmds {
		s := slices.Sorted(slices.Values(c.times))
		fmt.Printf("%-24s %9s %9s %9s\n", c.name, benchkit.MS(s[0]), benchkit.MS(benchkit.Pct(s, 50)), benchkit.MS(benchkit.Pct(s, 90)))
	}
	fmt.Printf("every run exited 6 with a valid receipt as its last stdout line; every run --submit recorded its job\n")
}

type bench struct {
	name    string
	argv    []string
	code    int  // the exit code it must end with
	receipt bool // its last stdout line must be a valid receipt
	times   []time.Duration
}

// run runs argv with env, checks its exit code and returns its stdout.
func run(env []string, want int, argv ...string) []byte {
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = env
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil && cmd.ProcessState == nil {
		benchkit.Fail("%s: %v", argv[0], err)
	}
	if code := cmd.ProcessState.ExitCode(); code != want {
		benchkit.Fail("%s exited %d, want %d; stderr: %s", strings.Join(argv[1:], " "), code, want, stderr.Bytes())
	}
	return stdout.Bytes()
}

// checkReceipt fails unless the last line of out is a valid receipt.
func checkReceipt(name string, out []byte) {
	lines := bytes.Split(bytes.TrimRight(out, "\n"), []byte("\n"))
	rc, err := receipt.Decode(lines[len(lines)-1])
	if err == nil {
		_, err = receipt.Validate(rc, time.Now())
	}
	if err != nil {
		benchkit.Fail("%s: the last stdout line is not a valid receipt: %v\n%s", name, err, out)
	}
}

// countJobs counts the jobs run --submit recorded.
func countJobs(path string) int {
	st, err := sqlite.Open(context.Background(), path)
	if err != nil {
		benchkit.Fail("%v", err)
	}
	defer st.Close()
	counts, err := st.CountJobs(context.Background())
	if err != nil {
		benchkit.Fail("%v", err)
	}
	n := 0
	for _, c := range counts {
		n += c
	}
	return n
}
