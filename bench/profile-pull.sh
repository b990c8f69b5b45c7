#!/bin/sh
# bench/profile-pull.sh - what pulling profiles costs the workers' service
# (foliod(8), PROFILING; the figures of BENCHMARKS.md, "A continuous
# profiler's pull"):
#   1. the instructions a worker spends on a heap profile asked of it,
#      counted by callgrind (one worker, K and 2K fetches, the difference
#      over K): the same whatever the machine is doing;
#   2. 2,000 req/s of server.ping in the open loop, 2 workers, SECONDS
#      measured (10 at least), with no pull, with a heap profile pulled
#      every second, and with CPU profiles of a second back to back (one
#      ends every second): the longest turn of the workers' loops (from a
#      poll's return to the next poll: what every request behind it
#      waited) and folio-bench's p99.9 and maximum latency, medians of
#      RUNS runs.
# The longest turn comes from foliod's folio_worker_loop_turn_max_seconds
# (the last 10 s), read each second from 10 s into the measured window;
# a foliod without it (an older build: FOLIOD=...) is timed by an
# LD_PRELOAD shim built here that times its epoll_wait the same way and
# writes the longest turn of each second.
# Usage: BUILDDIR=build sh bench/profile-pull.sh [SECONDS] [RUNS]
# (RUNS 0: the instructions alone; PULL_FETCHES: K, default 20)
set -eu
. "$(dirname "$0")/lib.sh"

SECS=${1:-${BENCH_SECS:-20}}
RUNS=${2:-${BENCH_RUNS:-3}}
K=${PULL_FETCHES:-20}
if [ "$SECS" -lt 10 ]; then
    echo "profile-pull.sh: $SECS s is shorter than the gauge's window: 10 s" >&2
    SECS=10
fi

median() {
    # shellcheck disable=SC2086
    printf '%s\n' $1 | sort -g | awk '{v[NR] = $1} END {
        if (NR == 0) print "-"; else print v[int((NR + 1) / 2)] }'
}

# Whether this foliod has the loop-turn gauge (else: the shim).
has_turns() {
    grep -q worker_loop_turn_max_seconds "$FOLIOD"
}

SHIM=""
if ! has_turns; then
    mkdir -p "$BENCH_TMP/shim" "$BENCH_TMP/turns.d"
    SHIM=$BENCH_TMP/shim/turns.so
    cat >"$BENCH_TMP/shim/turns.c" <<'EOF'
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/epoll.h>
#include <time.h>
#include <unistd.h>
static uint64_t start, longest, second;
static FILE *out;
static uint64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}
int epoll_wait(int fd, struct epoll_event *ev, int n, int timeout) {
    uint64_t t = now_ns();
    int r;
    if (start != 0) {
        if (t - start > longest) longest = t - start;
        if ((uint64_t)time(NULL) != second) {
            if (out == NULL) {
                char path[512];
                snprintf(path, sizeof(path), "%s/turns.%d",
                         getenv("TURNS_DIR"), (int)getpid());
                out = fopen(path, "a");
            }
            if (out != NULL && second != 0) {
                fprintf(out, "%llu %llu\n", (unsigned long long)second,
                        (unsigned long long)longest / 1000);
                fflush(out);
            }
            second = (uint64_t)time(NULL);
            longest = 0;
        }
    }
    r = epoll_pwait(fd, ev, n, timeout, NULL);
    start = now_ns();
    return r;
}
EOF
    cc -O2 -shared -fPIC -o "$SHIM" "$BENCH_TMP/shim/turns.c"
    echo "profile-pull.sh: $FOLIOD has no loop-turn gauge: timed by $SHIM" >&2
fi

# --- 1. instructions per heap profile, in the worker -------------------
instr() {
    rm -f "$BENCH_TMP"/cg.*
    FOLIOD_WRAP="valgrind --tool=callgrind --callgrind-out-file=$BENCH_TMP/cg.%p"
    start_foliod --workers 1 --corpus off --metrics-listen 127.0.0.1:0 \
        --request-timeout 0 --idle-timeout 0
    FOLIOD_WRAP=""
    : "$FOLIOD_WRAP"
    metrics=$(sed -n 's/^metrics //p' "$BENCH_TMP/ready")
    i=0
    while [ $i -lt "$1" ]; do
        curl -sf --max-time 120 -o /dev/null "http://$metrics/debug/pprof/heap"
        i=$((i + 1))
    done
    worker=$(foliod_workers | awk '{print $1}')
    stop_foliod
    sed -n 's/^summary: *//p' "$BENCH_TMP/cg.$worker"
}

if command -v valgrind >/dev/null 2>&1; then
    start_foliod --workers 1 --corpus off
    stop_foliod
    a=$(instr "$K")
    b=$(instr $((2 * K)))
    INSTR=$(( (b - a) / K ))
else
    INSTR="-"
    echo "profile-pull.sh: no valgrind: instructions not counted" >&2
fi

# --- 2. the loop's longest turn and the latency under 2,000 req/s ---
# run MODE: "maxturn_ms p999_us max_us" of one run.
run() {
    : >"$BENCH_TMP/turns"
    if [ -n "$SHIM" ]; then
        rm -f "$BENCH_TMP"/turns.d/*
        FOLIOD_WRAP="env LD_PRELOAD=$SHIM TURNS_DIR=$BENCH_TMP/turns.d"
    fi
    start_foliod --workers 2 --corpus off --metrics-listen 127.0.0.1:0
    FOLIOD_WRAP=""
    metrics=$(sed -n 's/^metrics //p' "$BENCH_TMP/ready")
    "$FOLIO_BENCH" -q --json -H "127.0.0.1:$FOLIO_PORT" -R 2000 -c 20 \
        --warmup 2 -d "$SECS" >"$BENCH_TMP/bench.json" &
    bench=$!
    sleep 2
    t0=$(date +%s)
    end=$((t0 + SECS))
    while [ "$(date +%s)" -lt "$end" ]; do
        case $1 in
        heap) curl -sf --max-time 30 -o /dev/null "http://$metrics/debug/pprof/heap" ;;
        cpu) curl -sf --max-time 30 -o /dev/null "http://$metrics/debug/pprof/profile?seconds=1" ;;
        esac
        [ "$1" = cpu ] || sleep 1
        if [ -z "$SHIM" ] && [ "$(date +%s)" -ge $((t0 + 10)) ]; then
            curl -sf --max-time 5 "http://$metrics/metrics" |
                sed -n 's/^folio_worker_loop_turn_max_seconds{[^}]*} //p' >>"$BENCH_TMP/turns"
        fi
    done
    if [ -z "$SHIM" ]; then
        curl -sf --max-time 5 "http://$metrics/metrics" |
            sed -n 's/^folio_worker_loop_turn_max_seconds{[^}]*} //p' >>"$BENCH_TMP/turns"
    fi
    wait "$bench" || true
    if [ -n "$SHIM" ]; then
        # The workers' turns, not the master's.
        for w in $(foliod_workers); do
            cat "$BENCH_TMP/turns.d/turns.$w" 2>/dev/null
        done | awk -v a="$t0" -v b="$end" '$1 >= a && $1 < b { print $2 / 1e6 }' >>"$BENCH_TMP/turns"
    fi
    stop_foliod
    maxturn=$(sort -g "$BENCH_TMP/turns" | tail -n 1 | awk '{ printf "%.2f", $1 * 1e3 }')
    p999=$(json_field "$(cat "$BENCH_TMP/bench.json")" p999_us)
    mx=$(json_field "$(cat "$BENCH_TMP/bench.json")" max_us)
    echo "${maxturn:--} ${p999:--} ${mx:--}"
}

# RUNS 0: the instructions alone.
MODES="none heap cpu"
[ "$RUNS" -gt 0 ] || MODES=""
[ -z "$MODES" ] || {
    echo "| pull | longest loop turn (ms) | p99.9 (us) | max latency (us) | runs (turn/p99.9/max) |"
    echo "|---|---:|---:|---:|---|"
}
for mode in $MODES; do
    turns="" p999s="" maxes="" all=""
    r=0
    while [ $r -lt "$RUNS" ]; do
        # shellcheck disable=SC2046 # three words
        set -- $(run $mode)
        turns="$turns $1" p999s="$p999s $2" maxes="$maxes $3"
        all="$all $1/$2/$3"
        r=$((r + 1))
    done
    case $mode in
    none) what="none" ;;
    heap) what="a heap profile every second" ;;
    cpu) what="a 1 s CPU profile ending every second" ;;
    esac
    echo "| $what | $(median "$turns") | $(median "$p999s") | $(median "$maxes") |$all |"
done
echo
echo "Instructions of the worker per heap profile asked of it (callgrind, $K and $((2 * K)) fetches): $INSTR"
