#!/bin/sh
# bench/instr.sh - server instructions per request, counted by callgrind:
# repeatable whatever else the machine is doing.  Runs foliod with one
# worker under valgrind --tool=callgrind twice, with N and 2N requests of
# the workload, and divides the worker's instruction difference by N.
# Usage: BUILDDIR=build sh bench/instr.sh [N] [FOLIOD OPTIONS...]
#   e.g. sh bench/instr.sh 20000 --stats off
# WORKLOAD (default ping) and INSTR_BENCH_ARGS (more folio-bench options,
# e.g. "--write-ratio 1") choose the requests; INSTR_HTTP=1 sends them to
# the HTTP face (folio-bench --proto http), and INSTR_SETUP, a shell
# command run once before the counted runs with FOLIO_PORT and
# FOLIO_HTTP_PORT set, fills the store, e.g.
#   INSTR_HTTP=1 WORKLOAD=http INSTR_BENCH_ARGS="--path /v1/comments?uri=/t" \
#   INSTR_SETUP='for i in $(seq 100); do curl -s -d "{\"path\":\"/t\",
#       \"body\":\"b\",\"author\":\"a\"}" localhost:$FOLIO_HTTP_PORT/v1/comments; done' \
#   sh bench/instr.sh 2000
set -eu
. "$(dirname "$0")/lib.sh"

N=${1:-20000}
[ $# -gt 0 ] && shift
WORKLOAD=${WORKLOAD:-ping}

count() {
    rm -f "$BENCH_TMP"/cg.*
    FOLIOD_WRAP="valgrind --tool=callgrind --callgrind-out-file=$BENCH_TMP/cg.%p"
    start_foliod --workers 1 --request-timeout 0 --idle-timeout 0 "$@"
    FOLIOD_WRAP=""; : "$FOLIOD_WRAP"
    if [ -n "${INSTR_HTTP:-}" ]; then
        to="--proto http -H 127.0.0.1:$FOLIO_HTTP_PORT"
    else
        to="-H 127.0.0.1:$FOLIO_PORT"
    fi
    # shellcheck disable=SC2086
    "$FOLIO_BENCH" $to -c 1 -t 1 -n "$REQS" -w "$WORKLOAD" \
        ${INSTR_BENCH_ARGS:-} >/dev/null
    # The worker's file, by its pid.
    worker=$(foliod_workers | awk '{print $1}')
    stop_foliod
    sed -n 's/^summary: *//p' "$BENCH_TMP/cg.$worker"
}

# A forked worker's callgrind counts start from its master's at fork, so
# both runs must do the same work before forking: a first start, without
# valgrind, builds the corpus index cache and imports the freight tables
# that both counted runs then map.
start_foliod --workers 1 "$@"
if [ -n "${INSTR_SETUP:-}" ]; then
    export FOLIO_PORT FOLIO_HTTP_PORT
    sh -c "$INSTR_SETUP" >/dev/null
fi
stop_foliod
REQS=$N; a=$(count "$@")
REQS=$((2 * N)); b=$(count "$@")
echo "instructions per request ($WORKLOAD, foliod $*): $(( (b - a) / N ))"
