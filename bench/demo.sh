#!/bin/sh
# bench/demo.sh - the README's demo: start the freshly built foliod in the
# foreground, put a short load on it with folio-bench, show what the
# server says, and stop it.  Run through `make demo`.
set -eu
. "$(dirname "$0")/lib.sh"

DATA=$(cd "$(dirname "$0")/../data" && pwd)

echo "== starting foliod (logs below) =="
start_foliod --workers auto --log-level info \
    --freight-dir "$DATA/freight" --catalog "$DATA/catalog.csv"
sed 's/^/  | /' "$BENCH_TMP/foliod.log"
echo
echo "== folio-bench: server.ping, 50 connections, 3 seconds =="
"$FOLIO_BENCH" -H "127.0.0.1:$FOLIO_PORT" -c 50 -d 3 --warmup 0.5
echo
echo "== folio-bench: the same, 16 requests in flight per connection =="
"$FOLIO_BENCH" -H "127.0.0.1:$FOLIO_PORT" -c 50 -P 16 -d 3 --warmup 0.5
echo
echo "== stopping foliod (SIGTERM: drain, then exit) =="
stop_foliod
tail -n 3 "$BENCH_TMP/foliod.log" | sed 's/^/  | /'
