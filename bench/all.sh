#!/bin/sh
# bench/all.sh - every comparison of BENCHMARKS.md in one go: runs each
# bench/*.sh benchmark that exists (ping.sh, corpus.sh, freight.sh,
# comments.sh, ...) and assembles their tables into one markdown report.
# Usage: BUILDDIR=build sh bench/all.sh [SECONDS] [RUNS] [REPORT.md]
# SECONDS and RUNS go to every script (default 5 and 3); the report goes
# to REPORT.md, or to stdout.  A script is run when its header's usage
# line takes "[SECONDS] [RUNS]" (the convention in bench/lib.sh) or
# "[SECONDS]"; the others (tools such as instr.sh) are listed, not run.  A script that
# fails is reported as failed and the others still run; the exit status
# is 1 if any failed.
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
SECS=${1:-${BENCH_SECS:-5}}
RUNS=${2:-${BENCH_RUNS:-3}}
REPORT=${3:-}
: "${BUILDDIR:=.}"
BUILDDIR=$(cd "$BUILDDIR" && pwd)
export BUILDDIR BENCH_SECS="$SECS" BENCH_RUNS="$RUNS"

TMP=$(mktemp -d "${TMPDIR:-/tmp}/folio-all.XXXXXX")
trap 'rm -rf "$TMP"' EXIT INT TERM

{
    echo "# folio benchmarks"
    echo
    echo "Run by \`bench/all.sh $SECS $RUNS\` on $(date -u '+%Y-%m-%d %H:%M UTC'):"
    echo "$(uname -srm), $(getconf _NPROCESSORS_ONLN) CPUs,"
    echo "commit $(git -C "$HERE/.." rev-parse --short HEAD 2>/dev/null || echo unknown)."
    echo "Each figure is the median of $RUNS runs of $SECS s; the load generator"
    echo "runs on the same machine as the server, so read the ratios."
} >"$TMP/report.md"

failed=0
skipped=""
for script in "$HERE"/*.sh; do
    name=$(basename "$script" .sh)
    case $name in
    all | lib | demo) continue ;;
    esac
    usage=$(sed -n 's/^# *Usage: *//p' "$script" | head -n 1)
    case $usage in
    *"[SECONDS] [RUNS]"*) args="$SECS $RUNS" ;;
    *"[SECONDS]"*) args="$SECS" ;;
    *)
        echo "bench/all.sh: not running $name.sh (usage: $usage)" >&2
        skipped="$skipped
- \`bench/$name.sh\` (\`$usage\`)"
        continue
        ;;
    esac
    echo "bench/all.sh: running $name.sh ($SECS s x $RUNS)" >&2
    # The script's header comment, up to "Usage:", says what it measures.
    title=$(sed -n '2,/^# *Usage/{/^# *Usage/d;s/^# \{0,1\}//;p;}' "$script" |
        tr '\n' ' ' | sed 's/^bench\/[^ ]* - //; s/ *$//')
    {
        echo
        echo "## $name"
        echo
        [ -n "$title" ] && echo "$title" && echo
    } >>"$TMP/report.md"
    # shellcheck disable=SC2086
    sh "$script" $args >"$TMP/$name.md" 2>"$TMP/$name.err"
    rc=$?
    if [ $rc -eq 0 ]; then
        cat "$TMP/$name.md" >>"$TMP/report.md"
    else
        failed=1
        echo "bench/all.sh: $name.sh failed:" >&2
        tail -n 20 "$TMP/$name.err" >&2
        {
            cat "$TMP/$name.md"
            echo
            echo "**$name.sh failed** (exit status $rc); its last words:"
            echo
            tail -n 5 "$TMP/$name.err" | sed 's/^/    /'
        } >>"$TMP/report.md"
    fi
done

if [ -n "$skipped" ]; then
    {
        echo
        echo "## Not run"
        echo
        echo "These scripts do not take [SECONDS] [RUNS]: run them by hand."
        echo "$skipped"
    } >>"$TMP/report.md"
fi

if [ -n "$REPORT" ]; then
    cp "$TMP/report.md" "$REPORT"
    echo "bench/all.sh: report written to $REPORT" >&2
else
    cat "$TMP/report.md"
fi
exit $failed
