#!/usr/bin/env bash
# The full crash test of issue 3 §4: `layover serve` is SIGKILLed at random
# points over LAYOVER_CRASH_JOBS job lifecycles (default 200), some deferred
# by a scripted quota exhaustion, with a 2 s lease. `go test ./...` runs the
# same test with 30 jobs.
#
#   scripts/crashtest.sh                       # 200 jobs, a random seed
#   LAYOVER_CRASH_SEED=42 scripts/crashtest.sh # the same plan, kill times and quota windows
#   scripts/crashtest.sh -race                 # extra go test flags go through
#   LAYOVER_TEST_POSTGRES=postgres://… scripts/crashtest.sh   # also on PostgreSQL
#
# Also: LAYOVER_CRASH_KILLS (SIGKILLs before serve may finish; default
# max(4, jobs/6)), LAYOVER_CRASH_TIMEOUT (bound on the run; default 60 s +
# 1 s per job).
set -euo pipefail
cd "$(dirname "$0")/.."

export LAYOVER_CRASH_JOBS="${LAYOVER_CRASH_JOBS:-200}"
if [ -z "${LAYOVER_CRASH_SEED:-}" ]; then
	LAYOVER_CRASH_SEED=$(od -An -N8 -tu8 /dev/urandom | tr -d ' \n')
fi
export LAYOVER_CRASH_SEED
echo "crashtest: LAYOVER_CRASH_JOBS=$LAYOVER_CRASH_JOBS LAYOVER_CRASH_SEED=$LAYOVER_CRASH_SEED${LAYOVER_CRASH_KILLS:+ LAYOVER_CRASH_KILLS=$LAYOVER_CRASH_KILLS}"
run='^TestCrashSafety$'
if [ -n "${LAYOVER_TEST_POSTGRES:-}" ]; then run='^TestCrashSafety(Postgres)?$'; fi
exec go test -count=1 -v -timeout 30m -run "$run" "$@" ./internal/crashtest
