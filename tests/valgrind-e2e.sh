#!/bin/sh
# tests/valgrind-e2e.sh - the end-to-end suites with every foliod process
# (master and workers) under Valgrind memcheck, and a table of what it
# found.  Run from a plain (not sanitized) build directory:
#   sh ../tests/valgrind-e2e.sh [SUITE...]      (default: every e2e suite)
# Logs: $FOLIO_VALGRIND_DIR (default ./valgrind), one per process.
# E2E_VALGRIND=1 relaxes the suites' latency and memory bounds; suites
# that time things tightly may still fail on time alone: the table says
# which, and the memcheck columns are what this run is for.
set -u
B=$(pwd)
S=$(cd "$(dirname "$0")/.." && pwd)
[ -x "$B/foliod" ] || { echo "run from a build directory" >&2; exit 2; }
command -v valgrind >/dev/null || { echo "valgrind is not installed" >&2; exit 2; }
out=${FOLIO_VALGRIND_DIR:-$B/valgrind}
rm -rf "$out"
mkdir -p "$out"
if [ $# -eq 0 ]; then
    set --
    for f in "$B"/tests/e2e_*; do
        case $f in *.o | *.log | *.trs) continue ;; esac
        [ -x "$f" ] && set -- "$@" "$(basename "$f")"
    done
fi
printf '| suite | result | foliod processes | memcheck errors | definitely/indirectly lost bytes |\n'
printf '|---|---|---:|---:|---:|\n'
total_err=0
for s in "$@"; do
    s=$(basename "$s")
    d=$out/$s
    mkdir -p "$d"
    if FOLIO_VALGRIND_DIR=$d FOLIOD="$S/tests/valgrind-foliod.sh" \
        FOLIOD_BIN="$B/foliod" E2E_VALGRIND=1 CK_DEFAULT_TIMEOUT=600 \
        "$B/tests/$s" >"$d/suite.log" 2>&1; then
        res=pass
    else
        res="fail ($(grep -c ':[FE]:' "$d/suite.log") tests)"
    fi
    n=$(find "$d" -name 'foliod.*.log' | wc -l)
    err=$(cat "$d"/foliod.*.log 2>/dev/null |
        sed -n 's/.*ERROR SUMMARY: \([0-9]*\) errors.*/\1/p' |
        awk '{s += $1} END {print s + 0}')
    lost=$(cat "$d"/foliod.*.log 2>/dev/null |
        sed -n 's/.*\(definitely\|indirectly\) lost: \([0-9,]*\) bytes.*/\2/p' |
        tr -d , | awk '{s += $1} END {print s + 0}')
    total_err=$((total_err + err))
    printf '| %s | %s | %s | %s | %s |\n' "$s" "$res" "$n" "$err" "$lost"
done
[ "$total_err" -eq 0 ]
