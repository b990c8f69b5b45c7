#!/bin/sh
# bench/services.sh - every read service against server.ping and against
# Redis GET of a value the size of its reply, one client for all
# (folio-bench; --proto resp for Redis), interleaved run by run, at 50
# connections with one request in flight: corpus.match_count of 10,000
# random queries, freight.quote of random carts, comments.list of a
# 50-comment page.  Throughput, p99, the server's CPU per request.
# Usage: BUILDDIR=build sh bench/services.sh [SECONDS] [RUNS]
# Prints a markdown table for BENCHMARKS.md; each figure is the median of
# RUNS.  Goals (issue 16): each read service at least 0.8x server.ping;
# freight.quote and comments.list at least 1.0x Redis GET of their size.
set -eu
. "$(dirname "$0")/lib.sh"

SECS=${1:-${BENCH_SECS:-5}}
RUNS=${2:-${BENCH_RUNS:-3}}
CONNS=${CONNS:-50}
DATA=${DATA:-$(cd "$(dirname "$0")/../data" && pwd)}
LOAD=${COMMENTS_LOAD:-$BUILDDIR/bench/comments-load}
PAGE=/bench/page-1/ # folio-bench's most popular page
if [ -z "${CORPUS:-}" ]; then
    CORPUS=$(sed -n "s/^CORPUS_DIR = //p" "$BUILDDIR/Makefile" 2>/dev/null || true)
fi
if [ -z "$CORPUS" ] || [ ! -d "$CORPUS" ]; then
    echo "no corpus: set CORPUS=DIR" >&2
    exit 1
fi

start_foliod --workers auto --corpus "$CORPUS" --freight-dir "$DATA/freight" \
    --catalog "$DATA/catalog.csv"
start_redis

# The 50 comments of the page comments.list reads.
"$FOLIO_BENCH" -H "127.0.0.1:$FOLIO_PORT" -w comments --pages 1 \
    --write-ratio 1 -c 1 -n 50 -q >/dev/null
list_bytes=$(json_field "$("$LOAD" -H "127.0.0.1:$FOLIO_PORT" -c 1 -t 1 -n 1 \
    --path "$PAGE" --json)" list_bytes)
# A quote's reply: foliod's bytes out over its requests after a short run.
"$BUILDDIR/folio" -U "$FOLIO_ADMIN" --json stats >"$BENCH_TMP/s0.json"
"$FOLIO_BENCH" -H "127.0.0.1:$FOLIO_PORT" -w freight --catalog "$DATA/catalog.csv" \
    --uncovered 0 -c 4 -n 20000 -q >/dev/null
"$BUILDDIR/folio" -U "$FOLIO_ADMIN" --json stats >"$BENCH_TMP/s1.json"
quote_bytes=$(python3 -c '
import json, sys
a, b = (json.load(open(f))["totals"] for f in sys.argv[1:])
print(max(1, round((b["bytes_out"] - a["bytes_out"]) / max(1, b["requests"] - a["requests"]))))' \
    "$BENCH_TMP/s0.json" "$BENCH_TMP/s1.json")
echo "services.sh: a quote reply is $quote_bytes bytes, a 50-comment list $list_bytes" >&2

random_queries "$CORPUS" >"$BENCH_TMP/queries.txt"

# one NAME [folio-bench options]: a run; appends "rps p50 p99 cpu" to $BENCH_TMP/NAME.
one() {
    _n=$1
    shift
    fb "$BENCH_TMP/run.json" -c "$CONNS" -d "$SECS" --warmup 0.5 "$@" >/dev/null
    fb_fields "$BENCH_TMP/run.json" >>"$BENCH_TMP/$_n"
    echo "services.sh: $_n: $(tail -n 1 "$BENCH_TMP/$_n")" >&2
}

F="-H 127.0.0.1:$FOLIO_PORT --server-pid $FOLIOD_PID"
R="--proto resp -H 127.0.0.1:$REDIS_PORT --server-pid $REDIS_PID"
for _ in $(seq "$RUNS"); do
    # shellcheck disable=SC2086
    {
        one ping $F -w ping
        one corpus $F -w corpus --queries "$BENCH_TMP/queries.txt"
        one freight $F -w freight --catalog "$DATA/catalog.csv" --uncovered 0
        one comments $F -w comments --pages 1 --write-ratio 0
        one get_quote $R -w get --value-size "$quote_bytes"
        one get_list $R -w get --value-size "$list_bytes"
    }
done

col() {
    awk -v n="$2" '{print $n}' "$BENCH_TMP/$1" | median
}
ratio() {
    echo "$1 $2" | awk '{printf "%.2f", ($2 > 0) ? $1 / $2 : 0}'
}
ping=$(col ping 1)
echo "| $CONNS connections | req/s | / server.ping | p50 / p99 (us) | server CPU us/req | Redis GET of the reply's size: req/s | p99 (us) | CPU us/req | / Redis GET |"
echo "|---|---:|---:|---:|---:|---:|---:|---:|---:|"
row() {
    _s=$1 _label=$2 _get=${3:-}
    _r=$(col "$_s" 1)
    if [ -n "$_get" ]; then
        _g=$(col "$_get" 1)
        _rest=$(printf '%.0f | %.0f | %.2f | %s' "$_g" "$(col "$_get" 3)" \
            "$(col "$_get" 4)" "$(ratio "$_r" "$_g")")
    else
        _rest="- | - | - | -"
    fi
    printf '| %s | %.0f | %s | %.0f / %.0f | %.2f | %s |\n' "$_label" "$_r" \
        "$(ratio "$_r" "$ping")" "$(col "$_s" 2)" "$(col "$_s" 3)" \
        "$(col "$_s" 4)" "$_rest"
}
row ping "server.ping"
row corpus "corpus.match_count (random)"
row freight "freight.quote ($quote_bytes B)" get_quote
row comments "comments.list of 50 ($list_bytes B)" get_list
