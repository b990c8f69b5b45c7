#!/bin/sh
# bench/instr.sh - server instructions per request, counted by callgrind:
# repeatable whatever else the machine is doing.  Runs foliod with one
# worker under valgrind --tool=callgrind twice, with N and 2N requests of
# the workload, and divides the worker's instruction difference by N.
# Usage: BUILDDIR=build sh bench/instr.sh [N] [FOLIOD OPTIONS...]
#   e.g. sh bench/instr.sh 20000 --stats off
# WORKLOAD (default ping) and INSTR_BENCH_ARGS (more folio-bench options,
# e.g. "--write-ratio 1", or "-P 16 --send-each" for 16 in flight) choose
# the requests.  INSTR_FUNCS=K also prints the K functions that take the
# most instructions per request (self cost, the same difference of the
# two runs, callgrind_annotate's names), and what the rest take;
# INSTR_KEEP=DIR keeps the two runs' callgrind files there (N.out, 2N.out)
# for callgrind_annotate.  INSTR_CONNS (default 1): the connections.
# INSTR_HTTP=1 sends the requests to the HTTP face (folio-bench --proto
# http), and INSTR_SETUP, a shell command run once before the counted
# runs with FOLIO_PORT and FOLIO_HTTP_PORT set, fills the store, e.g.
#   INSTR_HTTP=1 WORKLOAD=http INSTR_BENCH_ARGS="--path /v1/comments?uri=/t" \
#   INSTR_SETUP='for i in $(seq 100); do curl -s -d "{\"path\":\"/t\",
#       \"body\":\"b\",\"author\":\"a\"}" localhost:$FOLIO_HTTP_PORT/v1/comments; done' \
#   sh bench/instr.sh 2000
set -eu
. "$(dirname "$0")/lib.sh"

N=${1:-20000}
[ $# -gt 0 ] && shift
WORKLOAD=${WORKLOAD:-ping}
# foliod's clock runs 100 times slower under valgrind (bench/slowclock.c),
# so that what it decides by the clock (a call of 100 us or more waits for
# a later turn and is framed again) is decided as at its own speed: without
# it the counts of the heavier services moved by up to 10% between runs.
SLOWCLOCK=${SLOWCLOCK:-$(cd "$BUILDDIR" && pwd)/bench/libslowclock.so}
[ -f "$SLOWCLOCK" ] || { echo "instr.sh: no $SLOWCLOCK: run make" >&2; exit 1; }

count() {
    rm -f "$BENCH_TMP"/cg.*
    FOLIOD_WRAP="env LD_PRELOAD=$SLOWCLOCK valgrind --tool=callgrind --callgrind-out-file=$BENCH_TMP/cg.%p"
    # Under valgrind, on a loaded machine, the start takes its time.
    WAIT_SECS=300 start_foliod --workers 1 --request-timeout 0 --idle-timeout 0 "$@"
    FOLIOD_WRAP=""; : "$FOLIOD_WRAP"
    if [ -n "${INSTR_HTTP:-}" ]; then
        to="--proto http -H 127.0.0.1:$FOLIO_HTTP_PORT"
    else
        to="-H 127.0.0.1:$FOLIO_PORT"
    fi
    # shellcheck disable=SC2086
    "$FOLIO_BENCH" $to -c "${INSTR_CONNS:-1}" -t 1 -n "$REQS" -w "$WORKLOAD" \
        ${INSTR_BENCH_ARGS:-} >/dev/null
    # The worker's file, by its pid.
    worker=$(foliod_workers | awk '{print $1}')
    stop_foliod
    cp "$BENCH_TMP/cg.$worker" "$BENCH_TMP/run.$REQS"
    [ -n "${INSTR_KEEP:-}" ] && cp "$BENCH_TMP/cg.$worker" "$INSTR_KEEP/$REQS.out"
    sed -n 's/^summary: *//p' "$BENCH_TMP/cg.$worker"
}

# funcs K: the K costliest functions per request, from the two runs.
funcs() {
    for r in "$N" $((2 * N)); do
        callgrind_annotate --inclusive=no --threshold=100 --auto=no "$BENCH_TMP/run.$r" \
            >"$BENCH_TMP/funcs.$r"
    done
    python3 - "$1" "$N" "$BENCH_TMP/funcs.$N" "$BENCH_TMP/funcs.$((2 * N))" <<'PY'
import re, sys
k, n = int(sys.argv[1]), int(sys.argv[2])
def load(path):
    out = {}
    for line in open(path):
        m = re.match(r"\s*([\d,]+) \(\s*[\d.]+%\)\s+(.*\S)\s*$", line)
        if m and "PROGRAM TOTALS" not in m.group(2):
            name = re.sub(r" \[.*\]$", "", m.group(2))
            name = re.sub(r"^.*/", "", name)
            name = re.sub(r"^\?\?\?:", "", name)
            out[name] = out.get(name, 0) + int(m.group(1).replace(",", ""))
    return out
a, b = load(sys.argv[3]), load(sys.argv[4])
d = sorted(((b.get(f, 0) - a.get(f, 0)) / n, f) for f in set(a) | set(b))
d.reverse()
total = sum(x for x, _ in d)
print("| function | instructions per request | share |")
print("|---|---:|---:|")
for x, f in d[:k]:
    print("| %s | %.0f | %.1f%% |" % (f.replace("|", "\\|"), x, 100 * x / total))
rest = sum(x for x, _ in d[k:])
print("| (the rest) | %.0f | %.1f%% |" % (rest, 100 * rest / total))
PY
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
[ -n "${INSTR_FUNCS:-}" ] && funcs "$INSTR_FUNCS"
exit 0
