#!/bin/sh
# bench/ops.sh - what operating foliod costs the clients: reloads (SIGHUP)
# and worker recycling (max_requests_per_worker) while folio-bench keeps
# 50 connections busy with server.ping.  Prints two markdown tables:
#   1. reload: time from SIGHUP to the new generation's ready file, and the
#      requests that failed meanwhile (folio-bench counts error replies and
#      closed connections);
#   2. recycling: throughput, p99 and failures with recycling off and on.
# Usage: BUILDDIR=build sh bench/ops.sh [SECONDS] [RELOADS]
set -eu
# shellcheck source=bench/lib.sh
. "$(dirname "$0")/lib.sh"

SECS=${1:-5}
RELOADS=${2:-10}
now_ms() { date +%s%3N; }

# gen: the generation the ready file names.
gen() { sed -n 's/^generation //p' "$BENCH_TMP/ready"; }

echo "### reload under load (server.ping, 50 connections)"
echo
start_foliod --workers auto --corpus off --freight-dir off --catalog off
"$FOLIO_BENCH" -q -H "127.0.0.1:$FOLIO_PORT" -c 50 -d "$SECS" --json \
    >"$BENCH_TMP/bench.json" 2>"$BENCH_TMP/bench.err" &
BENCH_PID=$!
sleep 0.5
: >"$BENCH_TMP/reload_ms"
i=0
while [ $i -lt "$RELOADS" ]; do
    want=$(( $(gen) + 1 ))
    t0=$(now_ms)
    kill -HUP "$FOLIOD_PID"
    until [ "$(gen)" = "$want" ]; do sleep 0.001; done
    echo $(( $(now_ms) - t0 )) >>"$BENCH_TMP/reload_ms"
    i=$((i + 1))
    sleep 0.1
done
status=0
wait "$BENCH_PID" || status=$?
stop_foliod
json=$(cat "$BENCH_TMP/bench.json")
echo "| reloads | HUP to ready, median (ms) | max (ms) | requests | failed | folio-bench exit |"
echo "|---:|---:|---:|---:|---:|---:|"
printf '| %s | %s | %s | %s | %s | %s |\n' "$RELOADS" \
    "$(median <"$BENCH_TMP/reload_ms")" "$(sort -n "$BENCH_TMP/reload_ms" | tail -n 1)" \
    "$(json_field "$json" requests)" "$(json_field "$json" errors)" "$status"
[ -s "$BENCH_TMP/bench.err" ] && sed 's/^/    /' "$BENCH_TMP/bench.err"
echo

echo "### worker recycling (server.ping, 50 connections, ${SECS} s)"
echo
echo "| max_requests_per_worker | req/s | p99 (us) | failed | workers recycled |"
echo "|---:|---:|---:|---:|---:|"
for n in 0 1000000 100000 10000; do
    : >"$BENCH_TMP/foliod.log"
    start_foliod --workers auto --corpus off --freight-dir off --catalog off \
        --log-level info --max-requests-per-worker "$n"
    status=0
    json=$("$FOLIO_BENCH" -q -H "127.0.0.1:$FOLIO_PORT" -c 50 -d "$SECS" --json) ||
        status=$?
    stop_foliod
    recycled=$(grep -c "asking to be replaced" "$BENCH_TMP/foliod.log" || true)
    printf '| %s | %s | %s | %s | %s |\n' "$([ "$n" = 0 ] && echo off || echo "$n")" \
        "$(json_field "$json" rps)" "$(json_field "$json" p99_us)" \
        "$(json_field "$json" errors)$([ $status -ne 0 ] && echo " (exit $status)")" \
        "$recycled"
done
