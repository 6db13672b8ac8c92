// Command passoverhead measures what `layover pass` costs a cron line when the
// ledger already says skip: the whole process, from exec to exit, of
// `layover pass -- true` against `/bin/true`, with a reference Go program
// that opens a copy of the same SQLite file and reads one row (./oneread).
//
// The reference reads its own copy: closing a WAL database, it deletes the
// -wal and -shm files (as any plain program does), which layover keeps, and
// on the shared file every layover run after it would create them again,
// which no layover run on its own store does. -shared-store measures that
// way instead.
//
// It builds both binaries into a temporary folder, writes an exhausted core
// quota for the principal into a new store, checks that the pass skips, then
// runs the three commands in turn N times (the order rotating each round) and
// prints min, median and p90 of each, the median CPU time (user and system,
// every thread) of each, and the medians of the per-round differences to
// /bin/true and between layover and the reference (issue 9's start-up
// target: within 1 ms of it).
//
// Run it from anywhere inside the module:
//
//	go run ./bench/passoverhead [-n 200] [-compare OTHER-LAYOVER-BINARY]...
package main

import (
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
	"github.com/layoverhq/layover/store/sqlite"
)

const (
	apiHost   = "api.github.com"
	principal = "octocat"
)

func main() {
	benchkit.Name = "passoverhead"
	n := flag.Int("n", 200, "rounds; each runs every command once")
	warm := flag.Int("warmup", 10, "untimed rounds first")
	keep := flag.Bool("keep", false, "keep the temporary folder and print how to run the commands by hand")
	shared := flag.Bool("shared-store", false, "the reference reads layover's store itself, not a copy of it")
	settle := flag.Bool("settle", true, "run an untimed /bin/true before each timed command")
	var compare []string
	flag.Func("compare", "also time `BINARY` pass -- true in every round, on the same store (a layover built "+
		"another way, or from other code that reads the same schema); repeatable", func(v string) error {
		compare = append(compare, v)
		return nil
	})
	flag.Parse()
	if *n < 1 || *warm < 0 {
		benchkit.Fail("want -n >= 1 and -warmup >= 0")
	}

	dir, err := os.MkdirTemp("", "passoverhead-")
	if err != nil {
		benchkit.Fail("%v", err)
	}
	if !*keep {
		defer os.RemoveAll(dir)
	}
	layover := filepath.Join(dir, "layover")
	oneread := filepath.Join(dir, "oneread")
	benchkit.Build(layover, "github.com/layoverhq/layover/cmd/layover")
	benchkit.Build(oneread, "github.com/layoverhq/layover/bench/passoverhead/oneread")

	db := filepath.Join(dir, "state", "layover.db")
	benchkit.SeedExhausted(db, quota.Key{Host: apiHost, Principal: principal, Resource: "core"})
	refDB := db
	if !*shared {
		refDB = filepath.Join(dir, "oneread.db")
		copyFile(refDB, db)
	}
	env := []string{
		"PATH=" + os.Getenv("PATH"),
		"HOME=" + dir,
		"XDG_STATE_HOME=" + filepath.Join(dir, "state"),
		"LAYOVER_STORE=" + db,
		"LAYOVER_PRINCIPAL=" + principal,
		"GH_TOKEN=passoverhead-not-a-token",
	}

	// The pass must skip: with `false` as its command it would exit 1 if
	// it ran it. The first skip writes the one activity line; every later
	// one finds the reason unchanged.
	if code, _ := run(env, layover, "pass", "--", "false"); code != 0 {
		benchkit.Fail("layover pass -- false exited %d; the ledger should have made it skip", code)
	}

	cmds := []bench{
		{name: "layover pass -- true", argv: []string{layover, "pass", "--", "true"}},
		{name: "/bin/true", argv: []string{"/bin/true"}},
		{name: "oneread (Go, SQLite, one row)", argv: []string{oneread, refDB}},
	}
	for _, bin := range compare {
		abs, err := filepath.Abs(bin)
		if err != nil {
			benchkit.Fail("%v", err)
		}
		if code, _ := run(env, abs, "pass", "--", "false"); code != 0 {
			benchkit.Fail("%s pass -- false exited %d; it should have skipped", bin, code)
		}
		cmds = append(cmds, bench{name: bin + " pass -- true", argv: []string{abs, "pass", "--", "true"}})
	}
	loadBefore := benchkit.Uptime()
	for r := range *warm + *n {
		for i := range cmds {
			c := &cmds[(r+i)%len(cmds)]
			// An untimed /bin/true first, so that every timed command
			// follows the same one: a command timed right after the
			// reference took about 1 ms longer (wall, not CPU) than the
			// same binary timed after /bin/true.
			if *settle {
				run(env, "/bin/true")
			}
			start := time.Now()
			code, cpu := run(env, c.argv...)
			if code != 0 {
				benchkit.Fail("%s exited %d", c.name, code)
			}
			if r >= *warm {
				c.times = append(c.times, time.Since(start))
				c.cpu = append(c.cpu, cpu)
			}
		}
	}
	checkActivity(db)

	fmt.Printf("passoverhead: %d rounds (+%d warm-up), %s, GOMAXPROCS %d, %s/%s\n",
		*n, *warm, runtime.Version(), runtime.GOMAXPROCS(0), runtime.GOOS, runtime.GOARCH)
	fmt.Printf("load average before: %s; after: %s\n", loadBefore, benchkit.Uptime())
	fmt.Printf("%-32s %9s %9s %9s %11s\n", "command", "min", "median", "p90", "median CPU")
	for _, c := range cmds {
		s := slices.Sorted(slices.Values(c.times))
		fmt.Printf("%-32s %9s %9s %9s %11s\n", c.name, benchkit.MS(s[0]), benchkit.MS(benchkit.Pct(s, 50)),
			benchkit.MS(benchkit.Pct(s, 90)), benchkit.MS(benchkit.Pct(slices.Sorted(slices.Values(c.cpu)), 50)))
	}
	pairs := [][2]int{{0, 1}, {2, 1}, {0, 2}}
	for i := 3; i < len(cmds); i++ {
		pairs = append(pairs, [2]int{i, 2}, [2]int{i, 0})
	}
	for _, pair := range pairs {
		a, b := cmds[pair[0]], cmds[pair[1]]
		fmt.Printf("median difference %s - %s: %s (CPU %s)\n", strings.Fields(a.name)[0], strings.Fields(b.name)[0],
			benchkit.MS(medianDiff(a.times, b.times)), benchkit.MS(medianDiff(a.cpu, b.cpu)))
	}
	if *keep {
		fmt.Printf("\nkept %s; by hand:\n  env -i %s %s pass -- true\n", dir, strings.Join(env, " "), layover)
	}
}

type bench struct {
	name  string
	argv  []string
	times []time.Duration // wall, exec to exit
	cpu   []time.Duration // user and system, every thread
}

// medianDiff is the median of the per-round differences a[i] - b[i].
func medianDiff(a, b []time.Duration) time.Duration {
	d := make([]time.Duration, len(a))
	for i := range d {
		d[i] = a[i] - b[i]
	}
	slices.Sort(d)
	return benchkit.Pct(d, 50)
}

// run runs argv with env, its output discarded, and returns its exit code
// and the CPU time it used.
func run(env []string, argv ...string) (int, time.Duration) {
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = env
	if err := cmd.Run(); err != nil {
		if cmd.ProcessState == nil {
			benchkit.Fail("%s: %v", argv[0], err)
		}
	}
	ps := cmd.ProcessState
	return ps.ExitCode(), ps.UserTime() + ps.SystemTime()
}

// copyFile copies the file from to a new file to.
func copyFile(to, from string) {
	b, err := os.ReadFile(from)
	if err != nil {
		benchkit.Fail("%v", err)
	}
	if err := os.WriteFile(to, b, 0o600); err != nil {
		benchkit.Fail("%v", err)
	}
}

// checkActivity fails unless the passes left exactly one skip line: they all
// skipped, for one reason.
func checkActivity(path string) {
	st, err := sqlite.Open(context.Background(), path)
	if err != nil {
		benchkit.Fail("%v", err)
	}
	defer st.Close()
	lines, err := st.Activity(context.Background(), 0)
	if err != nil {
		benchkit.Fail("%v", err)
	}
	if len(lines) != 1 || lines[0].Kind != "skip" {
		benchkit.Fail("activity log has %d lines (%v), want one skip line", len(lines), lines)
	}
}
