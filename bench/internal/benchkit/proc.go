package benchkit

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
)

// CPU is the CPU time the machine and this process have used, and when it
// was read.
type CPU struct {
	At            time.Time
	Wall          time.Duration
	Machine, Self time.Duration
}

// ReadCPU reads the machine's busy time from /proc/stat (every field but
// idle and iowait, in 1/100 s ticks) and this process's (user and system,
// every thread) from getrusage.
func ReadCPU() CPU {
	s := CPU{At: time.Now()}
	if b, err := os.ReadFile("/proc/stat"); err == nil {
		line, _, _ := strings.Cut(string(b), "\n")
		f := strings.Fields(line)
		for i, v := range f[1:min(len(f), 9)] {
			if i == 3 || i == 4 { // idle, iowait
				continue
			}
			n, _ := strconv.ParseInt(v, 10, 64)
			s.Machine += time.Duration(n) * 10 * time.Millisecond
		}
	}
	s.Self = selfCPU()
	return s
}

// Sub is the CPU used from o to s.
func (s CPU) Sub(o CPU) CPU {
	return CPU{Wall: s.At.Sub(o.At), Machine: s.Machine - o.Machine, Self: s.Self - o.Self}
}

// Other is the CPU the rest of the machine used, as a share of one core.
func (s CPU) Other() float64 {
	return max(s.Machine-s.Self, 0).Seconds() / max(s.Wall.Seconds(), 1e-9)
}

// Mine is this process's CPU, as a share of one core.
func (s CPU) Mine() float64 { return s.Self.Seconds() / max(s.Wall.Seconds(), 1e-9) }

// ProcStatusKB reads a "kB" line of /proc/self/status (VmRSS, VmHWM), in kB;
// -1 when it cannot.
func ProcStatusKB(field string) int64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return -1
	}
	for line := range strings.Lines(string(b)) {
		if v, ok := strings.CutPrefix(line, field+":"); ok {
			n, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			if err != nil {
				return -1
			}
			return n
		}
	}
	return -1
}

// MB renders kB in megabytes.
func MB(kb int64) string { return fmt.Sprintf("%.1f MB", float64(kb)/1024) }

// Uptime is the first line of /proc/loadavg: the load averages.
func Uptime() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	return strings.TrimSpace(string(b))
}

// PostgresSchema makes an empty schema with a random name on the server dsn
// names and returns dsn with its search_path set to it, and a function that
// drops the schema with everything in it.
func PostgresSchema(ctx context.Context, dsn, prefix string) (string, func()) {
	u, err := url.Parse(dsn)
	if err != nil {
		Fail("postgres DSN: %v", err)
	}
	b := make([]byte, 6)
	rand.Read(b)
	schema := prefix + "_" + hex.EncodeToString(b)
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		Fail("postgres: %v", err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "CREATE SCHEMA "+schema); err != nil {
		Fail("postgres: create schema %s: %v", schema, err)
	}
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	return u.String(), func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		conn, err := pgx.Connect(ctx, dsn)
		if err != nil {
			fmt.Fprintf(os.Stderr, "%s: drop schema %s: %v\n", Name, schema, err)
			return
		}
		defer conn.Close(ctx)
		if _, err := conn.Exec(ctx, "DROP SCHEMA "+schema+" CASCADE"); err != nil {
			fmt.Fprintf(os.Stderr, "%s: drop schema %s: %v\n", Name, schema, err)
		}
	}
}
