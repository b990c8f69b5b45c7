#!/bin/sh
# tests/fuzz-run.sh - run libFuzzer targets for a bounded time each, from
# their seeds (tests/fuzz/TARGET/), and print one line of figures per
# target.  Needs a build configured with CC=clang ./configure --enable-fuzz.
#   usage: fuzz-run.sh BUILDDIR SRCDIR SECONDS TARGET...
# New inputs go to BUILDDIR/fuzz-work/TARGET (kept between runs: a longer
# campaign is the same command again); a failing input is written to
# BUILDDIR/fuzz-crashes/TARGET/ and the script exits 1.  Turn it into a
# regression test by copying it to tests/fuzz/regressions/TARGET/.
set -u
[ $# -ge 4 ] || { echo "usage: $0 BUILDDIR SRCDIR SECONDS TARGET..." >&2; exit 2; }
B=$1 S=$2 SECS=$3
shift 3
failed=0
printf '| target | seconds | executions | exec/s | corpus | coverage | crashes |\n'
printf '|---|---:|---:|---:|---:|---:|---:|\n'
echo "fuzz-run: $# targets, $SECS s each" >&2
i=0
for t in "$@"; do
    i=$((i + 1))
    bin=$B/tests/fuzz_$t
    [ -x "$bin" ] || { echo "$bin: not built (--enable-fuzz?)" >&2; exit 2; }
    work=$B/fuzz-work/$t crashes=$B/fuzz-crashes/$t log=$B/fuzz-work/$t.log
    mkdir -p "$work" "$crashes"
    echo "fuzz-run: fuzz_$t ($i of $#) for $SECS s..." >&2
    dict=
    [ -f "$S/tests/fuzz/$t.dict" ] && dict=-dict=$S/tests/fuzz/$t.dict
    ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1} \
    UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1} \
        "$bin" -max_total_time="$SECS" -timeout=10 -rss_limit_mb=2048 \
        -max_len=16384 -print_final_stats=1 -artifact_prefix="$crashes/" \
        $dict "$work" "$S/tests/fuzz/$t" >"$log" 2>&1
    rc=$?
    runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1)
    rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -n 1)
    cov=$(grep -o 'cov: [0-9]*' "$log" | tail -n 1 | cut -d' ' -f2)
    n=$(find "$work" -type f | wc -l)
    c=$(find "$crashes" -type f | wc -l)
    printf '| %s | %s | %s | %s | %s | %s | %s |\n' "$t" "$SECS" \
        "${runs:-?}" "${rate:-?}" "$n" "${cov:-?}" "$c"
    if [ "$rc" -ne 0 ] || [ "$c" -ne 0 ]; then
        failed=1
        echo "fuzz_$t failed (exit $rc): $log" >&2
        grep -E '^(==[0-9]+==|SUMMARY|fuzz:|    #[0-9])' "$log" | head -n 40 >&2
        ls "$crashes" >&2
    fi
done
exit $failed
