#!/bin/sh
# bench/instr.sh - server instructions per request, counted by callgrind:
# repeatable whatever else the machine is doing.  Runs foliod with one
# worker under valgrind --tool=callgrind twice, with N and 2N requests of
# the workload, and divides the worker's instruction difference by N.
# Usage: BUILDDIR=build sh bench/instr.sh [N] [FOLIOD OPTIONS...]
#   e.g. sh bench/instr.sh 20000 --stats off
set -eu
. "$(dirname "$0")/lib.sh"

N=${1:-20000}
[ $# -gt 0 ] && shift
WORKLOAD=${WORKLOAD:-ping}

count() {
    rm -f "$BENCH_TMP"/cg.*
    FOLIOD_WRAP="valgrind --tool=callgrind --callgrind-out-file=$BENCH_TMP/cg.%p"
    start_foliod --workers 1 --request-timeout 0 --idle-timeout 0 "$@"
    FOLIOD_WRAP=""
    VG_MASTER=$FOLIOD_PID
    "$FOLIO_BENCH" -H "127.0.0.1:$FOLIO_PORT" -c 1 -t 1 -n "$REQS" -w "$WORKLOAD" >/dev/null
    stop_foliod
    # The worker's file is the one that is not the master's.
    for f in "$BENCH_TMP"/cg.*; do
        pid=${f##*.}
        [ "$pid" = "$VG_MASTER" ] && continue
        sed -n 's/^summary: *//p' "$f"
    done | sort -n | tail -n 1
}

# start_foliod records $! (valgrind's pid is the master's pid).
REQS=$N; a=$(count "$@")
REQS=$((2 * N)); b=$(count "$@")
echo "instructions per request ($WORKLOAD, foliod $*): $(( (b - a) / N ))"
