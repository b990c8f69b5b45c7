#!/bin/sh
# bench/corpus.sh - the corpus service's figures for BENCHMARKS.md:
#   1. start-up: time to ready with a cold index (built) and a warm one
#      (mapped from the cache under the data directory);
#   2. server time per count, by query kind, and for 10,000 distinct random
#      queries, measured in-process by tests/corpus-probe (no network);
#   3. instructions per count by query kind (callgrind; repeatable);
#   4. over the wire with folio-bench's corpus workload, when it has one:
#      shakesapp's client mix (rounds of 20, concurrency 1) against
#      server.ping, 10,000 distinct random queries at 50 connections, and
#      the worst queries ("e", "a", " ", "the") one by one.
# Usage: BUILDDIR=build CORPUS=DIR sh bench/corpus.sh [SECONDS]
# (CORPUS defaults to the one configure found.)
set -eu
. "$(dirname "$0")/lib.sh"

SECS=${1:-5}
PROBE=${PROBE:-$BUILDDIR/tests/corpus-probe}
if [ -z "${CORPUS:-}" ]; then
    CORPUS=$(sed -n "s/^CORPUS_DIR = //p" "$BUILDDIR/Makefile" 2>/dev/null || true)
fi
if [ -z "$CORPUS" ] || [ ! -d "$CORPUS" ]; then
    echo "no corpus: set CORPUS=DIR (or run make corpus)" >&2
    exit 1
fi

now_ms() { date +%s%3N; }

echo "## corpus: start-up"
echo
echo "| start | time to ready (ms) | index | foliod says |"
echo "|---|---:|---|---|"
rm -rf "$BENCH_TMP/data"
for kind in cold warm; do
    : >"$BENCH_TMP/foliod.log"
    t0=$(now_ms)
    start_foliod --corpus "$CORPUS" --workers auto --log-level notice
    t1=$(now_ms)
    said=$(sed -n 's/.*\[notice\] corpus [^:]*: //p' "$BENCH_TMP/foliod.log" | head -n 1)
    stop_foliod
    printf '| %s | %s | %s | %s |\n' "$kind" "$((t1 - t0))" \
        "$([ "$kind" = cold ] && echo built || echo "mapped from cache")" "$said"
done
echo

if [ -x "$PROBE" ]; then
    echo "## corpus: server time per query (in-process, warm, prefaulted as a worker is)"
    echo
    "$PROBE" -p -c "$BENCH_TMP/data" "$CORPUS" 2>/dev/null
    echo
else
    echo "(no $PROBE: build it with make tests/corpus-probe)"
fi

if command -v valgrind >/dev/null 2>&1 && [ -x "$PROBE" ]; then
    echo "## corpus: instructions per count (callgrind, folio_corpus_count inclusive)"
    echo
    echo "| query | instructions |"
    echo "|---|---:|"
    for q in hello world "to be, or not to be" insolence e a " " the; do
        for n in 1000 2000; do
            valgrind --tool=callgrind --toggle-collect=folio_corpus_count \
                --callgrind-out-file="$BENCH_TMP/cg.out" \
                "$PROBE" -c "$BENCH_TMP/data" -q "$q" -n "$n" "$CORPUS" \
                >/dev/null 2>&1
            eval "i$n=\$(sed -n 's/^totals: *//p' \"\$BENCH_TMP/cg.out\")"
        done
        # shellcheck disable=SC2154
        printf '| `%s` | %s |\n' "$q" "$(((i2000 - i1000) / 1000))"
    done
    echo
fi

if ! "$FOLIO_BENCH" --help 2>&1 | grep -q corpus; then
    echo "(folio-bench has no corpus workload yet: the over-the-wire tables are skipped)"
    exit 0
fi

TICK=$(getconf CLK_TCK)
start_foliod --corpus "$CORPUS" --workers auto

# cpu_per_req PID0 PID1 N: server CPU microseconds per request
cpu_per_req() { echo "$1 $2 $3 $TICK" | awk '{printf "%.2f", ($2-$1)/$4*1e6/$3}'; }

echo "## corpus: shakesapp's client mix (rounds of 20 requests, concurrency 1)"
echo
echo "| workload | req/s | p50 (us) | p99 (us) | server CPU us/req |"
echo "|---|---:|---:|---:|---:|"
for w in corpus ping; do
    c0=$(cpu_ticks "$FOLIOD_PID")
    out=$("$FOLIO_BENCH" rounds -H "127.0.0.1:$FOLIO_PORT" -w "$w" -n 20 -c 1 -d "$SECS" --json)
    c1=$(cpu_ticks "$FOLIOD_PID")
    printf '| %s | %s | %s | %s | %s |\n' "$w" "$(json_field "$out" rps)" \
        "$(json_field "$out" p50_us)" "$(json_field "$out" p99_us)" \
        "$(cpu_per_req "$c0" "$c1" "$(json_field "$out" requests)")"
done
echo "(shakesapp's published figure: 15 req/s after its two fixes)"
echo

random_queries "$CORPUS" >"$BENCH_TMP/queries.txt"
echo "## corpus: 10,000 distinct random queries, 50 connections"
echo
echo "| req/s | p50 (us) | p99 (us) | p99.9 (us) | server CPU us/req |"
echo "|---:|---:|---:|---:|---:|"
c0=$(cpu_ticks "$FOLIOD_PID")
out=$("$FOLIO_BENCH" -H "127.0.0.1:$FOLIO_PORT" -w corpus --queries "$BENCH_TMP/queries.txt" -c 50 -d "$SECS" --warmup 0.5 --json)
c1=$(cpu_ticks "$FOLIOD_PID")
printf '| %s | %s | %s | %s | %s |\n' "$(json_field "$out" rps)" \
    "$(json_field "$out" p50_us)" "$(json_field "$out" p99_us)" \
    "$(json_field "$out" p999_us)" \
    "$(cpu_per_req "$c0" "$c1" "$(json_field "$out" requests)")"
echo

echo "## corpus: the worst queries, one connection"
echo
echo "| query | req/s | p50 (us) | p99 (us) |"
echo "|---|---:|---:|---:|"
for q in e a " " the; do
    printf '%s\n' "$q" >"$BENCH_TMP/one.txt"
    out=$("$FOLIO_BENCH" -H "127.0.0.1:$FOLIO_PORT" -w corpus --queries "$BENCH_TMP/one.txt" -c 1 -d "$SECS" --json)
    printf '| `%s` | %s | %s | %s |\n' "$q" "$(json_field "$out" rps)" \
        "$(json_field "$out" p50_us)" "$(json_field "$out" p99_us)"
done
stop_foliod
