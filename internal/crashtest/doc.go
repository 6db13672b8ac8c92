// Package crashtest holds layover's crash test: `layover serve` is killed
// with SIGKILL at random points while jobs run, some of them deferred by a
// scripted quota exhaustion on a fake GitHub, and the test checks that the
// store stays the truth: every job reaches exactly one terminal state, none
// is lost, and no job ever runs twice with overlapping leases.
//
// `go test ./internal/crashtest` runs a small version (LAYOVER_CRASH_JOBS,
// default 30); scripts/crashtest.sh runs the full one (200 jobs). Every
// random choice comes from LAYOVER_CRASH_SEED, printed when a run fails.
package crashtest
