//go:build windows

package benchkit

import "time"

// selfCPU is 0 on Windows, which has no getrusage: the benchmarks measure
// on Linux.
func selfCPU() time.Duration { return 0 }
