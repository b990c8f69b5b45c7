#!/bin/sh
# tests/fuzz-run.sh - run libFuzzer targets for a bounded time each, from
# their seeds (tests/fuzz/TARGET/), and print one line of figures per
# target.  Needs a build configured with CC=clang ./configure --enable-fuzz.
#   usage: fuzz-run.sh BUILDDIR SRCDIR SECONDS TARGET...
# FUZZ_JOBS targets run at a time (default: the CPUs online; a fuzzer is
# one process on one CPU), so that the time is SECONDS per round of
# FUZZ_JOBS, not per target.
# New inputs go to BUILDDIR/fuzz-work/TARGET (kept between runs: a longer
# campaign is the same command again); a failing input is written to
# BUILDDIR/fuzz-crashes/TARGET/ and the script exits 1.  Turn it into a
# regression test by copying it to tests/fuzz/regressions/TARGET/.
set -u
[ $# -ge 4 ] || { echo "usage: $0 BUILDDIR SRCDIR SECONDS TARGET..." >&2; exit 2; }
B=$1 S=$2 SECS=$3
shift 3
JOBS=${FUZZ_JOBS:-$(getconf _NPROCESSORS_ONLN 2>/dev/null || echo 1)}
[ "$JOBS" -ge 1 ] 2>/dev/null || JOBS=1
for t in "$@"; do
    [ -x "$B/tests/fuzz_$t" ] ||
        { echo "$B/tests/fuzz_$t: not built (--enable-fuzz?)" >&2; exit 2; }
done
echo "fuzz-run: $# targets, $SECS s each, $JOBS at a time" >&2

# One target: its log in fuzz-work/TARGET.log, its exit status in .rc.
fuzz_one() {
    t=$1
    work=$B/fuzz-work/$t crashes=$B/fuzz-crashes/$t log=$B/fuzz-work/$t.log
    mkdir -p "$work" "$crashes"
    dict=
    [ -f "$S/tests/fuzz/$t.dict" ] && dict=-dict=$S/tests/fuzz/$t.dict
    ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1} \
    UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1} \
        "$B/tests/fuzz_$t" -max_total_time="$SECS" -timeout=10 \
        -rss_limit_mb=2048 -max_len=16384 -print_final_stats=1 \
        -artifact_prefix="$crashes/" $dict "$work" "$S/tests/fuzz/$t" \
        >"$log" 2>&1
    echo $? >"$B/fuzz-work/$t.rc"
}

# Its line of figures, and why it failed: 1 if it did.
report() {
    t=$1 work=$B/fuzz-work/$1 crashes=$B/fuzz-crashes/$1 log=$B/fuzz-work/$1.log
    rc=$(cat "$B/fuzz-work/$t.rc" 2>/dev/null || echo 127)
    runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1)
    rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -n 1)
    cov=$(grep -o 'cov: [0-9]*' "$log" | tail -n 1 | cut -d' ' -f2)
    n=$(find "$work" -type f | wc -l)
    c=$(find "$crashes" -type f | wc -l)
    printf '| %s | %s | %s | %s | %s | %s | %s |\n' "$t" "$SECS" \
        "${runs:-?}" "${rate:-?}" "$n" "${cov:-?}" "$c"
    if [ "$rc" -ne 0 ] || [ "$c" -ne 0 ]; then
        echo "fuzz_$t failed (exit $rc): $log" >&2
        grep -E '^(==[0-9]+==|SUMMARY|fuzz:|    #[0-9])' "$log" | head -n 40 >&2
        ls "$crashes" >&2
        return 1
    fi
    return 0
}

printf '| target | seconds | executions | exec/s | corpus | coverage | crashes |\n'
printf '|---|---:|---:|---:|---:|---:|---:|\n'
failed=0
i=0
round=
for t in "$@"; do
    i=$((i + 1))
    echo "fuzz-run: fuzz_$t ($i of $#) for $SECS s..." >&2
    rm -f "$B/fuzz-work/$t.rc"
    fuzz_one "$t" &
    round="$round $t"
    if [ $((i % JOBS)) -eq 0 ] || [ "$i" -eq $# ]; then
        wait
        for r in $round; do
            report "$r" || failed=1
        done
        round=
    fi
done
exit $failed
