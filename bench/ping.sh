#!/bin/sh
# bench/ping.sh - server.ping beside redis-benchmark -t ping_inline, same
# machine, same run: throughput, latency and server CPU per request at 1,
# 50 and 240 connections, without and with pipelining (-P 16).
# Usage: BUILDDIR=build sh bench/ping.sh [SECONDS] [RUNS]
# Prints a markdown table for BENCHMARKS.md; each figure is the median of RUNS.
set -eu
. "$(dirname "$0")/lib.sh"

SECS=${1:-5}
RUNS=${2:-3}
TICK=$(getconf CLK_TCK)

start_foliod --workers auto
start_redis

echo "| conns | pipeline | foliod req/s | foliod p50 / p99 (us) | foliod CPU us/req | redis req/s | redis p50 / p99 (us) | redis CPU us/req | foliod / redis |"
echo "|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
for conns in 1 50 240; do
    for pipe in 1 16; do
        f_rps=""; f_p50=""; f_p99=""; f_cpu=""; r_rps=""; r_p50=""; r_p99=""; r_cpu=""
        for run in $(seq "$RUNS"); do
            c0=$(cpu_ticks "$FOLIOD_PID")
            out=$("$FOLIO_BENCH" -H "127.0.0.1:$FOLIO_PORT" -c "$conns" -P "$pipe" -d "$SECS" --warmup 0.5 --json)
            c1=$(cpu_ticks "$FOLIOD_PID")
            n=$(json_field "$out" requests)
            f_rps="$f_rps $(json_field "$out" rps)"
            f_p50="$f_p50 $(json_field "$out" p50_us)"
            f_p99="$f_p99 $(json_field "$out" p99_us)"
            f_cpu="$f_cpu $(echo "$c0 $c1 $n $TICK" | awk '{printf "%.2f", ($2-$1)/$4*1e6/$3}')"

            # redis-benchmark has no duration: ask for what foliod did in the same time.
            rn=$(echo "$n" | awk '{printf "%d", ($1 > 20000) ? $1 : 20000}')
            c0=$(cpu_ticks "$REDIS_PID")
            csv=$("$REDIS_BENCHMARK" -p "$REDIS_PORT" -t ping_inline -c "$conns" -P "$pipe" -n "$rn" --csv 2>/dev/null | tail -n 1)
            c1=$(cpu_ticks "$REDIS_PID")
            r_rps="$r_rps $(echo "$csv" | awk -F'"' '{print $4}')"
            r_p50="$r_p50 $(echo "$csv" | awk -F'"' '{print $10 * 1000}')"
            r_p99="$r_p99 $(echo "$csv" | awk -F'"' '{print $14 * 1000}')"
            r_cpu="$r_cpu $(echo "$c0 $c1 $rn $TICK" | awk '{printf "%.2f", ($2-$1)/$4*1e6/$3}')"
        done
        m() { printf '%s\n' $1 | median; }
        fr=$(m "$f_rps"); rr=$(m "$r_rps")
        printf '| %s | %s | %.0f | %.0f / %.0f | %s | %.0f | %.0f / %.0f | %s | %.2f |\n' \
            "$conns" "$pipe" "$fr" "$(m "$f_p50")" "$(m "$f_p99")" "$(m "$f_cpu")" \
            "$rr" "$(m "$r_p50")" "$(m "$r_p99")" "$(m "$r_cpu")" \
            "$(echo "$fr $rr" | awk '{print ($2 > 0) ? $1 / $2 : 0}')"
    done
done
