#!/bin/sh
# bench/comments.sh - the comments service's figures for BENCHMARKS.md:
#   1. comments.list of a 50-comment page at 100 connections, beside
#      Redis GET of a value of the same size, one client for both
#      (folio-bench, --proto resp for Redis); server CPU and
#      heap allocations per request (folio-bench's server.stats figures);
#   2. comments.post throughput with durable (synced) commits: one
#      transaction per post, and group commit;
#   3. what durable posts do to the latency of lists on other connections;
#   4. worker instructions per list and per post (callgrind; repeatable).
# Usage: BUILDDIR=build sh bench/comments.sh [SECONDS] [RUNS]  (or make bench-comments)
# Each figure is the median of RUNS.  folio-bench drives 1 and 2;
# bench/comments-load, which runs posting and listing connections side by
# side, drives 3 and 4.
set -eu
. "$(dirname "$0")/lib.sh"

SECS=${1:-5}
RUNS=${2:-3}
LOAD=${COMMENTS_LOAD:-$BUILDDIR/bench/comments-load}
POSTERS=${POSTERS:-16}   # connections posting in the post runs
PAGE=/bench/page-1/      # folio-bench's most popular page
# only the comments service: quick starts, also under valgrind
ONLY="--corpus off --freight-dir off --catalog off"

if ! "$FOLIO_BENCH" --help 2>&1 | grep -q comments; then
    echo "$FOLIO_BENCH has no comments workload (-w comments): build a newer one" >&2
    exit 1
fi


# start: a fresh store, and PAGE with 50 comments (folio-bench's bodies)
start() {
    stop_foliod
    rm -rf "$BENCH_TMP/data"
    # shellcheck disable=SC2086
    start_foliod --workers auto $ONLY "$@"
    "$FOLIO_BENCH" -H "127.0.0.1:$FOLIO_PORT" -w comments --pages 1 \
        --write-ratio 1 -c 1 -n 50 -q >/dev/null
}

# bench ARGS...: folio-bench's comments workload with the server's figures
bench() {
    "$FOLIO_BENCH" -H "127.0.0.1:$FOLIO_PORT" -w comments -t 2 -d "$SECS" \
        --warmup 0.5 --admin "$FOLIO_ADMIN" --server-pid "$FOLIOD_PID" \
        --json -q "$@"
}

start_redis
start
bytes=$(json_field "$("$LOAD" -H "127.0.0.1:$FOLIO_PORT" -c 1 -t 1 -n 1 --path "$PAGE" --json)" list_bytes)

echo "### comments.list, 50-comment page, 100 connections"
echo
echo "| server | req/s | p50 / p99 (us) | server CPU us/req | reply bytes | allocs/req |"
echo "|---|---:|---:|---:|---:|---:|"
f_rps=""; f_p50=""; f_p99=""; f_cpu=""; f_alloc=""; r_rps=""; r_p50=""; r_p99=""; r_cpu=""
for _ in $(seq "$RUNS"); do
    out=$(bench --pages 1 --write-ratio 0 -c 100)
    n=$(json_field "$out" requests)
    f_rps="$f_rps $(json_field "$out" rps)"
    f_p50="$f_p50 $(json_field "$out" p50_us)"
    f_p99="$f_p99 $(json_field "$out" p99_us)"
    f_cpu="$f_cpu $(json_field "$out" server.cpu_us_per_req)"
    f_alloc="$f_alloc $(json_field "$out" server.allocs_per_req)"

    out=$("$FOLIO_BENCH" --proto resp -w get --value-size "$bytes" \
        -H "127.0.0.1:$REDIS_PORT" -c 100 -t 2 -d "$SECS" --warmup 0.5 \
        --server-pid "$REDIS_PID" --json -q)
    r_rps="$r_rps $(json_field "$out" rps)"
    r_p50="$r_p50 $(json_field "$out" p50_us)"
    r_p99="$r_p99 $(json_field "$out" p99_us)"
    r_cpu="$r_cpu $(json_field "$out" server.cpu_us_per_req)"
done
fr=$(m "$f_rps"); rr=$(m "$r_rps")
printf '| foliod comments.list | %.0f | %.0f / %.0f | %s | %s | %s |\n' \
    "$fr" "$(m "$f_p50")" "$(m "$f_p99")" "$(m "$f_cpu")" "$bytes" "$(m "$f_alloc")"
printf '| redis GET -d %s | %.0f | %.0f / %.0f | %s | %s | - |\n' \
    "$bytes" "$rr" "$(m "$r_p50")" "$(m "$r_p99")" "$(m "$r_cpu")" "$bytes"
printf '\nfoliod / redis: %s (goal: at least 0.60)\n\n' \
    "$(echo "$fr $rr" | awk '{printf "%.2f", ($2 > 0) ? $1 / $2 : 0}')"

# post_run LABEL [foliod options]: durable posts, then lists beside posts
post_rows=""
post_run() {
    label=$1; shift
    p_rps=""; p_p50=""; p_p99=""; p_cpu=""; l_p99=""; b_p99=""; b_rps=""
    for _ in $(seq "$RUNS"); do
        # A fresh store each run, and the lists first: folio-bench's posts
        # go to its pages, PAGE among them, and comments.list answers the
        # whole page (a page grown to 4 MiB would be refused, error 8).
        start "$@"
        # 48 connections listing PAGE: alone, then beside POSTERS posting
        # (comments-load's posts go to PAGE/0 .. PAGE/POSTERS-1, not PAGE)
        out=$("$LOAD" -H "127.0.0.1:$FOLIO_PORT" -c 48 -t 2 -d "$SECS" --warmup 0.5 \
            --path "$PAGE" --json)
        l_p99="$l_p99 $(json_field "$out" list_p99_us)"
        out=$("$LOAD" -H "127.0.0.1:$FOLIO_PORT" -c $((48 + POSTERS)) -t 2 -d "$SECS" \
            --warmup 0.5 --writers "$POSTERS" --path "$PAGE" --pages "$POSTERS" \
            --body 60 --json)
        b_p99="$b_p99 $(json_field "$out" list_p99_us)"
        b_rps="$b_rps $(json_field "$out" post_rps)"
        out=$(bench --pages "$POSTERS" --write-ratio 1 -c "$POSTERS")
        p_rps="$p_rps $(json_field "$out" rps)"
        p_p50="$p_p50 $(json_field "$out" p50_us)"
        p_p99="$p_p99 $(json_field "$out" p99_us)"
        p_cpu="$p_cpu $(json_field "$out" server.cpu_us_per_req)"
    done
    post_rows="$post_rows$(printf '| %s | %.0f | %.0f / %.0f | %s | %.0f | %.0f (%.0f posts/s) |' \
        "$label" "$(m "$p_rps")" "$(m "$p_p50")" "$(m "$p_p99")" "$(m "$p_cpu")" \
        "$(m "$l_p99")" "$(m "$b_p99")" "$(m "$b_rps")")
"
}
post_run "one synced transaction per post" --comments-group-commit off
post_run "group commit" --comments-group-commit on

echo "### comments.post, durable, $POSTERS connections on $POSTERS pages"
echo
echo "| commits | posts/s | p50 / p99 (us) | server CPU us/post | list p99 alone (us) | list p99 beside posts (us) |"
echo "|---|---:|---:|---:|---:|---:|"
printf '%s' "$post_rows"

# Instructions per list and per post (callgrind, repeatable on a busy
# machine): one worker under valgrind, N and 2N requests, the worker's
# difference divided by N.  Skipped without valgrind.
instr() {  # instr list|post N: sets INSTR, the worker's instruction count
    what=$1; reqs=$2
    stop_foliod
    rm -rf "$BENCH_TMP/data" "$BENCH_TMP"/cg.*
    FOLIOD_WRAP="valgrind --tool=callgrind --callgrind-out-file=$BENCH_TMP/cg.%p"
    # shellcheck disable=SC2086
    start_foliod --workers 1 --request-timeout 0 --idle-timeout 0 $ONLY \
        --comments-group-commit off
    FOLIOD_WRAP=""; : "$FOLIOD_WRAP"
    vg_master=$FOLIOD_PID
    "$LOAD" -H "127.0.0.1:$FOLIO_PORT" -c 1 -t 1 -n 50 --writers 1 --path "$PAGE" \
        --body 60 >/dev/null
    if [ "$what" = list ]; then
        "$LOAD" -H "127.0.0.1:$FOLIO_PORT" -c 1 -t 1 -n "$reqs" --path "$PAGE" >/dev/null
    else
        "$LOAD" -H "127.0.0.1:$FOLIO_PORT" -c 1 -t 1 -n "$reqs" --writers 1 \
            --path /bench/i --body 60 >/dev/null
    fi
    stop_foliod
    INSTR=$(for f in "$BENCH_TMP"/cg.*; do
        [ "${f##*.}" = "$vg_master" ] && continue
        sed -n 's/^summary: *//p' "$f"
    done | sort -n | tail -n 1)
}
if command -v valgrind >/dev/null 2>&1; then
    echo
    echo "### worker instructions per request (callgrind; the list: 50 comments)"
    echo
    echo "| method | instructions |"
    echo "|---|---:|"
    for what in list post; do
        n=$([ "$what" = list ] && echo 5000 || echo 1000)
        instr "$what" "$n"; a=$INSTR
        instr "$what" $((2 * n)); b=$INSTR
        printf '| comments.%s | %s |\n' "$what" "$(( (b - a) / n ))"
    done
fi
