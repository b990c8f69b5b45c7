#!/bin/sh
# bench/stats-cost.sh - what the per-request counters cost: server.ping
# with `stats = on` (the default: request and error counters, per-method
# status counts, a latency histogram fed by two clock reads) and
# `stats = off`, alternated in one run.  Two measures:
#   1. server CPU per request: one worker pinned to CPU 0, folio-bench
#      (one thread) pinned to CPU 1, a fixed number of requests; the
#      figure that says what the counters cost, steady to a fraction of
#      a percent on this machine;
#   2. throughput with two workers, unpinned (as deployed): noisy here,
#      because four busy threads share two cores however the scheduler
#      places them (runs of either mode spread over 15%).
# Usage: BUILDDIR=build sh bench/stats-cost.sh [SECONDS] [RUNS] [CONNS]
set -eu
. "$(dirname "$0")/lib.sh"

SECS=${1:-5}
RUNS=${2:-5}
CONNS=${3:-50}
TICK=$(getconf CLK_TCK)
N=$((SECS * 160000))   # about SECS seconds for one worker
PIN=""
command -v taskset >/dev/null 2>&1 && [ "$(getconf _NPROCESSORS_ONLN)" -ge 2 ] && PIN=1

ratio() { echo "$1 $2" | awk '{printf "%.3f", $1 / $2}'; }

on=""; off=""; on_cpu=""; off_cpu=""; on1=""; off1=""
for _ in $(seq "$RUNS"); do
    for mode in on off; do
        # 1. one pinned worker, N requests
        [ -n "$PIN" ] && FOLIOD_WRAP="taskset -c 0"
        start_foliod --workers 1 --corpus off --stats "$mode"
        FOLIOD_WRAP=""; : "$FOLIOD_WRAP"
        c0=$(cpu_ticks "$FOLIOD_PID")
        out=$(${PIN:+taskset -c 1} "$FOLIO_BENCH" -H "127.0.0.1:$FOLIO_PORT" -c "$CONNS" \
            -t 1 -n "$N" --json)
        c1=$(cpu_ticks "$FOLIOD_PID")
        stop_foliod
        cpu=$(echo "$c0 $c1 $N $TICK" | awk '{printf "%.3f", ($2-$1)/$4*1e6/$3}')
        rps1=$(json_field "$out" rps)
        # 2. two workers, unpinned, SECS seconds
        start_foliod --workers 2 --corpus off --stats "$mode"
        out=$("$FOLIO_BENCH" -H "127.0.0.1:$FOLIO_PORT" -c "$CONNS" -d "$SECS" --warmup 0.5 --json)
        stop_foliod
        rps=$(json_field "$out" rps)
        echo "stats-cost: stats $mode: 1 worker $cpu us/req $rps1 req/s; 2 workers $rps req/s" >&2
        if [ "$mode" = on ]; then
            on="$on $rps"; on_cpu="$on_cpu $cpu"; on1="$on1 $rps1"
        else
            off="$off $rps"; off_cpu="$off_cpu $cpu"; off1="$off1 $rps1"
        fi
    done
done
echo "| stats | worker CPU us/req (1 worker${PIN:+, pinned}) | req/s (1 worker) | req/s (2 workers, unpinned) |"
echo "|---|---:|---:|---:|"
echo "| on | $(m "$on_cpu") | $(m "$on1") | $(m "$on") |"
echo "| off | $(m "$off_cpu") | $(m "$off1") | $(m "$off") |"
echo
echo "Medians of $RUNS alternated runs, $N requests per one-worker run."
echo "on/off CPU per request: $(ratio "$(m "$on_cpu")" "$(m "$off_cpu")");" \
    "on/off throughput: $(ratio "$(m "$on1")" "$(m "$off1")") (1 worker)," \
    "$(ratio "$(m "$on")" "$(m "$off")") (2 workers)"
