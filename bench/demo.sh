#!/bin/sh
# bench/demo.sh - the README's demo: start the freshly built foliod in the
# foreground on the default data (the corpus configure found, the example
# freight tables and catalog of data/: what a built foliod serves with no
# option), ask it a question of each kind with folio (a count, a quote,
# a comment posted and listed), run shakesapp's client simulator against
# it (folio-bench rounds), put a short closed-loop load on it (DEMO_SECS
# seconds, 3 by default), and stop it.  Run through `make demo`.
set -eu
# shellcheck source=bench/lib.sh
. "$(dirname "$0")/lib.sh"

FOLIO=${FOLIO:-$BUILDDIR/folio}
DEMO_SECS=${DEMO_SECS:-3}

echo "== starting foliod on the default data (logs below) =="
start_foliod --workers auto --log-level info
sed 's/^/  | /' "$BENCH_TMP/foliod.log"
ADDR="127.0.0.1:$FOLIO_PORT"
HAVE_CORPUS=no
grep -q "\[notice\] corpus " "$BENCH_TMP/foliod.log" && HAVE_CORPUS=yes

if [ -x "$FOLIO" ]; then
    echo
    echo "== folio: one question of each kind =="
    if [ $HAVE_CORPUS = yes ]; then
        echo "\$ folio count 'to be, or not to be'"
        "$FOLIO" -H "$ADDR" count 'to be, or not to be'
    fi
    echo "\$ folio quote 01310-100 BOOK-00001:2"
    "$FOLIO" -H "$ADDR" quote 01310-100 BOOK-00001:2
    echo "\$ folio comments post /demo/hello demo 'Hello from the demo'"
    "$FOLIO" -H "$ADDR" comments post /demo/hello demo 'Hello from the demo'
    echo "\$ folio comments list demo/hello"
    "$FOLIO" -H "$ADDR" comments list demo/hello
fi

echo
if [ $HAVE_CORPUS = no ]; then
    echo "== no corpus (make corpus, or ./configure --with-corpus=DIR): no rounds =="
elif "$FOLIO_BENCH" --help 2>&1 | grep -q rounds; then
    echo "== folio-bench rounds: shakesapp's client, 20 requests a round, one at a time =="
    "$FOLIO_BENCH" rounds -H "$ADDR" -n 20 -c 1 --rounds 10
else
    echo "== (this folio-bench has no rounds mode yet) =="
fi
echo
echo "== folio-bench: server.ping, 50 connections, $DEMO_SECS seconds =="
"$FOLIO_BENCH" -H "$ADDR" -c 50 -d "$DEMO_SECS" --warmup 0.5 \
    --admin "$FOLIO_ADMIN" --server-pid "$FOLIOD_PID"
echo
echo "== stopping foliod (SIGTERM: drain, then exit) =="
stop_foliod
tail -n 3 "$BENCH_TMP/foliod.log" | sed 's/^/  | /'

# What a new user tries next: the README's "Running it", from this build.
B=$(cd "$(dirname "$FOLIOD")" && pwd)
echo
echo "== next: serve it yourself, then ask it things from another terminal =="
echo "  export PATH=\"$B:\$PATH\""
if [ $HAVE_CORPUS = yes ]; then
    echo "  foliod -f --data-dir /tmp/folio --admin-socket /tmp/folio/admin.sock"
else
    echo "  foliod -f --corpus DIR --data-dir /tmp/folio --admin-socket /tmp/folio/admin.sock"
fi
echo "  folio                    # the interactive client: try help, count love, quote 01310-100 500g"
echo "  folio-bench -c 50 -d 10 --admin /tmp/folio/admin.sock   # 10 s of load, the server's CPU per request"
echo "  (README.md \"Running it\", man folio, man foliod)"
