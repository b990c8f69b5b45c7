#!/bin/sh
# bench/stats-cost.sh - what the per-request counters cost: server.ping
# throughput with `stats = on` (the default: request and error counters,
# per-method status counts, a latency histogram fed by two clock reads)
# and `stats = off`, alternated in one run.
# Usage: BUILDDIR=build sh bench/stats-cost.sh [SECONDS] [RUNS] [CONNS]
set -eu
. "$(dirname "$0")/lib.sh"

SECS=${1:-5}
RUNS=${2:-5}
CONNS=${3:-50}
TICK=$(getconf CLK_TCK)

on=""; off=""; on_cpu=""; off_cpu=""
for run in $(seq "$RUNS"); do
    for mode in on off; do
        start_foliod --workers auto --stats "$mode"
        c0=$(cpu_ticks "$FOLIOD_PID")
        out=$("$FOLIO_BENCH" -H "127.0.0.1:$FOLIO_PORT" -c "$CONNS" -d "$SECS" --warmup 0.5 --json)
        c1=$(cpu_ticks "$FOLIOD_PID")
        stop_foliod
        rps=$(json_field "$out" rps)
        cpu=$(echo "$c0 $c1 $(json_field "$out" requests) $TICK" | awk '{printf "%.3f", ($2-$1)/$4*1e6/$3}')
        if [ "$mode" = on ]; then on="$on $rps"; on_cpu="$on_cpu $cpu"; else off="$off $rps"; off_cpu="$off_cpu $cpu"; fi
    done
done
m() { printf '%s\n' $1 | median; }
echo "| stats | req/s (median of $RUNS) | server CPU us/req |"
echo "|---|---:|---:|"
echo "| on | $(m "$on") | $(m "$on_cpu") |"
echo "| off | $(m "$off") | $(m "$off_cpu") |"
echo
echo "on/off throughput: $(echo "$(m "$on") $(m "$off")" | awk '{printf "%.3f", $1 / $2}')"
