package crashtest

import (
	"bytes"
	"os"
	"strconv"
	"strings"
)

// markerEnv is the variable that carries the run's marker into `layover
// serve`'s environment, and so into every process a job starts.
const markerEnv = "CRASHTEST_MARKER"

// survivor is a live process that belongs to the test's jobs.
type survivor struct {
	PID     int
	Cmdline string
	// Direct is true for a job's own `sh -c` process, the child the host
	// started, whose script begins with the marker. Otherwise only the
	// environment holds it: a grandchild (sleep, gh) the shell started.
	Direct bool
}

func (s survivor) String() string {
	kind := "grandchild"
	if s.Direct {
		kind = "job process"
	}
	return kind + " " + strconv.Itoa(s.PID) + " (" + s.Cmdline + ")"
}

// survivors reads /proc for live job shells (a script that begins with
// marker) and for live processes whose environment holds marker. Zombies
// are dead (only their exit status is left) and are not listed; neither is
// this process.
func survivors(marker string) []survivor {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	self := os.Getpid()
	envNeedle := []byte(markerEnv + "=" + marker + "\x00")
	var out []survivor
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == self {
			continue
		}
		dir := "/proc/" + e.Name() + "/"
		stat, err := os.ReadFile(dir + "stat")
		if err != nil {
			continue // gone
		}
		// The state follows the parenthesised command name, which may hold
		// spaces and parentheses itself.
		if i := bytes.LastIndexByte(stat, ')'); i < 0 || i+2 >= len(stat) || stat[i+2] == 'Z' || stat[i+2] == 'X' {
			continue
		}
		raw, _ := os.ReadFile(dir + "cmdline")
		args := strings.Split(strings.TrimRight(string(raw), "\x00"), "\x00")
		cmdline := strings.Join(args, " ")
		// `layover submit` holds the script too, as an argument: only the
		// shell running it is the job.
		if len(args) >= 3 && args[1] == "-c" && strings.HasPrefix(args[2], ": "+marker+";") {
			out = append(out, survivor{PID: pid, Cmdline: cmdline, Direct: true})
			continue
		}
		env, _ := os.ReadFile(dir + "environ")
		if bytes.Contains(append(env, 0), envNeedle) {
			out = append(out, survivor{PID: pid, Cmdline: cmdline})
		}
	}
	return out
}
