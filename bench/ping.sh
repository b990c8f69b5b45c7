#!/bin/sh
# bench/ping.sh - server.ping beside redis-benchmark -t ping_inline, same
# machine, same run: throughput, latency, server CPU per request and the
# load generators' own CPU per request, at 1, 50 and 240 connections,
# without and with pipelining (-P 16).
# Usage: BUILDDIR=build sh bench/ping.sh [SECONDS] [RUNS]
# Prints a markdown table for BENCHMARKS.md; each figure is the median of RUNS.
#
# The last column checks that folio-bench is not the bottleneck: it must
# drive foliod at least as fast as redis-benchmark drives Redis.  The
# "gen CPU" columns are the load generators' own CPU per request.
set -eu
. "$(dirname "$0")/lib.sh"

SECS=${1:-${BENCH_SECS:-5}}
RUNS=${2:-${BENCH_RUNS:-3}}
CONNS=${PING_CONNS:-1 50 240}
PIPES=${PING_PIPES:-1 16}
TICK=$(getconf CLK_TCK)

start_foliod --workers auto
start_redis

echo "| conns | pipeline | foliod req/s | foliod p50 / p99 (us) | foliod CPU us/req | folio-bench CPU us/req | redis req/s | redis p50 / p99 (us) | redis CPU us/req | redis-benchmark CPU us/req | foliod / redis |"
echo "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
# The medians split their lists of numbers on purpose.
# shellcheck disable=SC2086
for conns in $CONNS; do
    for pipe in $PIPES; do
        f_rps=""; f_p50=""; f_p99=""; f_cpu=""; f_gen=""
        r_rps=""; r_p50=""; r_p99=""; r_cpu=""; r_gen=""
        for _ in $(seq "$RUNS"); do
            # folio-bench reads foliod's CPU itself, after the warm-up:
            # server.stats over the admin socket, or /proc.
            gen=$(cpu_of "$BENCH_TMP/f.json" "$FOLIO_BENCH" -q \
                -H "127.0.0.1:$FOLIO_PORT" -c "$conns" -P "$pipe" \
                -d "$SECS" --warmup 0.5 --json \
                --admin "$FOLIO_ADMIN" --server-pid "$FOLIOD_PID")
            out=$(cat "$BENCH_TMP/f.json")
            n=$(json_field "$out" requests)
            f_rps="$f_rps $(json_field "$out" rps)"
            f_p50="$f_p50 $(json_field "$out" p50_us)"
            f_p99="$f_p99 $(json_field "$out" p99_us)"
            cpu=$(json_field "$out" server.cpu_us_per_req)
            f_cpu="$f_cpu $(echo "${cpu:-0}" | awk '{printf "%.2f", $1}')"
            # The generator's CPU includes the warm-up: count its requests.
            f_gen="$f_gen $(per_req "$gen" "$(echo "$n $SECS" | awk '{printf "%d", $1 * ($2 + 0.5) / $2}')")"

            # redis-benchmark has no duration: ask for what foliod did in the same time.
            rn=$(echo "$n" | awk '{printf "%d", ($1 > 20000) ? $1 : 20000}')
            c0=$(cpu_ticks "$REDIS_PID")
            gen=$(cpu_of "$BENCH_TMP/r.csv" "$REDIS_BENCHMARK" -p "$REDIS_PORT" \
                -t ping_inline -c "$conns" -P "$pipe" -n "$rn" --csv)
            c1=$(cpu_ticks "$REDIS_PID")
            csv=$(tail -n 1 "$BENCH_TMP/r.csv")
            r_rps="$r_rps $(echo "$csv" | awk -F'"' '{print $4}')"
            r_p50="$r_p50 $(echo "$csv" | awk -F'"' '{print $10 * 1000}')"
            r_p99="$r_p99 $(echo "$csv" | awk -F'"' '{print $14 * 1000}')"
            r_cpu="$r_cpu $(echo "$c0 $c1 $rn $TICK" | awk '{printf "%.2f", ($2-$1)/$4*1e6/$3}')"
            r_gen="$r_gen $(per_req "$gen" "$rn")"
        done
        fr=$(m "$f_rps"); rr=$(m "$r_rps")
        printf '| %s | %s | %.0f | %.0f / %.0f | %s | %s | %.0f | %.0f / %.0f | %s | %s | %.2f |\n' \
            "$conns" "$pipe" "$fr" "$(m "$f_p50")" "$(m "$f_p99")" \
            "$(m "$f_cpu")" "$(m "$f_gen")" \
            "$rr" "$(m "$r_p50")" "$(m "$r_p99")" "$(m "$r_cpu")" "$(m "$r_gen")" \
            "$(echo "$fr $rr" | awk '{print ($2 > 0) ? $1 / $2 : 0}')"
    done
done
