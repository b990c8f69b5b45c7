#!/bin/sh
# bench/comments.sh - the comments service's figures for BENCHMARKS.md:
#   1. comments.list of a 50-comment page at 100 connections, beside
#      redis-benchmark -t get with a value of the same size;
#   2. comments.post throughput with durable (synced) commits, one
#      transaction per post and, where foliod has it, group commit;
#   3. what durable posts do to the latency of lists on other connections;
#   4. allocations per list request, from the workers' counters (SIGUSR2).
# Usage: BUILDDIR=build sh bench/comments.sh [SECONDS] [RUNS]  (or make bench-comments)
# Each figure is the median of RUNS.  The load generator is
# bench/comments-load (COMMENTS_LOAD=...), which can run posting and listing
# connections side by side; folio-bench's comments workload may replace it.
set -eu
. "$(dirname "$0")/lib.sh"

SECS=${1:-5}
RUNS=${2:-3}
TICK=$(getconf CLK_TCK)
LOAD=${COMMENTS_LOAD:-$BUILDDIR/bench/comments-load}
BODY=${BODY:-180}        # bytes of each comment's body
POSTERS=${POSTERS:-16}   # connections posting in the post runs

# only the comments service: quick starts, also under valgrind
ONLY="--corpus off --freight-dir off --catalog off"

m() { printf '%s\n' $1 | median; }
group_commit_option() { "$FOLIOD" --help 2>&1 | grep -q -- '--comments-group-commit'; }

# seed: a page of 50 comments, the page every list run reads
seed() {
    "$LOAD" -H "127.0.0.1:$FOLIO_PORT" -c 1 -t 1 -n 50 --writers 1 \
        --path /bench/page --body "$BODY" >/dev/null
}

# snapshot: "ALLOCS REQUESTS", the workers' counters summed (SIGUSR2)
snapshot() {
    n0=$(grep -c 'stats: total' "$BENCH_TMP/foliod.log" || true)
    kill -USR2 "$FOLIOD_PID"
    i=0
    while [ "$(grep -c 'stats: total' "$BENCH_TMP/foliod.log" || true)" -le "$n0" ]; do
        i=$((i + 1)); [ $i -gt 500 ] && { echo "0 0"; return; }
        sleep 0.01
    done
    # the last snapshot: the worker lines before the last "total" line
    awk '/stats: worker/ {for (i = 1; i < NF; i++) {
             if ($i == "allocs") a += $(i + 1); if ($i == "requests") r += $(i + 1) } }
         /stats: total/ {last = a " " r; a = 0; r = 0} END {print last}' "$BENCH_TMP/foliod.log"
}

start_redis
# shellcheck disable=SC2086
start_foliod --workers auto --log-level notice $ONLY
seed
# warm up: the workers' connection free lists fill, buffers settle
"$LOAD" -H "127.0.0.1:$FOLIO_PORT" -c 100 -t 2 -d 1 --path /bench/page >/dev/null

echo "### comments.list, 50-comment page, 100 connections"
echo
echo "| server | req/s | p50 / p99 (us) | server CPU us/req | reply bytes | allocs/req |"
echo "|---|---:|---:|---:|---:|---:|"
f_rps=""; f_p50=""; f_p99=""; f_cpu=""; f_alloc=""; r_rps=""; r_p50=""; r_p99=""; r_cpu=""
bytes=0
for _ in $(seq "$RUNS"); do
    c0=$(cpu_ticks "$FOLIOD_PID")
    "$LOAD" -H "127.0.0.1:$FOLIO_PORT" -c 100 -t 2 -d "$SECS" --warmup 0.5 --path /bench/page --json >"$BENCH_TMP/out" &
    lpid=$!
    # allocations in the steady state: from 1 s in to 0.5 s before the end
    sleep 1; s0=$(snapshot)
    sleep "$(echo "$SECS" | awk '{print ($1 > 2) ? $1 - 1.5 : 0.5}')"; s1=$(snapshot)
    wait "$lpid"
    c1=$(cpu_ticks "$FOLIOD_PID")
    out=$(cat "$BENCH_TMP/out")
    n=$(json_field "$out" requests)
    bytes=$(json_field "$out" list_bytes)
    f_rps="$f_rps $(json_field "$out" list_rps)"
    f_p50="$f_p50 $(json_field "$out" list_p50_us)"
    f_p99="$f_p99 $(json_field "$out" list_p99_us)"
    f_cpu="$f_cpu $(echo "$c0 $c1 $n $TICK" | awk '{printf "%.2f", ($2-$1)/$4*1e6/$3}')"
    f_alloc="$f_alloc $(echo "$s0 $s1" | awk '{printf "%.4f", ($4 > $2) ? ($3-$1)/($4-$2) : -1}')"

    rn=$(echo "$n" | awk '{printf "%d", ($1 > 20000) ? $1 : 20000}')
    c0=$(cpu_ticks "$REDIS_PID")
    csv=$("$REDIS_BENCHMARK" -p "$REDIS_PORT" -t get -d "$bytes" -c 100 -n "$rn" --csv 2>/dev/null | tail -n 1)
    c1=$(cpu_ticks "$REDIS_PID")
    r_rps="$r_rps $(echo "$csv" | awk -F'"' '{print $4}')"
    r_p50="$r_p50 $(echo "$csv" | awk -F'"' '{print $10 * 1000}')"
    r_p99="$r_p99 $(echo "$csv" | awk -F'"' '{print $14 * 1000}')"
    r_cpu="$r_cpu $(echo "$c0 $c1 $rn $TICK" | awk '{printf "%.2f", ($2-$1)/$4*1e6/$3}')"
done
fr=$(m "$f_rps"); rr=$(m "$r_rps")
printf '| foliod comments.list | %.0f | %.0f / %.0f | %s | %s | %s |\n' \
    "$fr" "$(m "$f_p50")" "$(m "$f_p99")" "$(m "$f_cpu")" "$bytes" "$(m "$f_alloc")"
printf '| redis GET -d %s | %.0f | %.0f / %.0f | %s | %s | - |\n' \
    "$bytes" "$rr" "$(m "$r_p50")" "$(m "$r_p99")" "$(m "$r_cpu")" "$bytes"
printf '\nfoliod / redis: %s.  allocs/req: the workers'"'"' counters over the steady\n' \
    "$(echo "$fr $rr" | awk '{printf "%.2f", ($2 > 0) ? $1 / $2 : 0}')"
printf 'state (every malloc where src/alloc.c interposes the malloc family, else\n'
printf 'folio_malloc and libevent; tests/check_comments counts LMDB'"'"'s and libc'"'"'s too).\n\n'

# post_run LABEL [foliod options]: post throughput, then lists beside posts
post_rows=""
post_run() {
    label=$1; shift
    stop_foliod
    rm -rf "$BENCH_TMP/data"
    # shellcheck disable=SC2086
    start_foliod --workers auto --log-level notice $ONLY "$@"
    seed
    p_rps=""; p_p50=""; p_p99=""; p_cpu=""; l_p99=""; b_p99=""; b_rps=""
    for _ in $(seq "$RUNS"); do
        c0=$(cpu_ticks "$FOLIOD_PID")
        out=$("$LOAD" -H "127.0.0.1:$FOLIO_PORT" -c "$POSTERS" -t 2 -d "$SECS" --warmup 0.5 \
            --writers "$POSTERS" --path /bench/post --pages "$POSTERS" --body "$BODY" --json)
        c1=$(cpu_ticks "$FOLIOD_PID")
        n=$(json_field "$out" requests)
        p_rps="$p_rps $(json_field "$out" post_rps)"
        p_p50="$p_p50 $(json_field "$out" post_p50_us)"
        p_p99="$p_p99 $(json_field "$out" post_p99_us)"
        p_cpu="$p_cpu $(echo "$c0 $c1 $n $TICK" | awk '{printf "%.1f", ($2-$1)/$4*1e6/$3}')"
        # 48 connections listing: alone, then beside 16 posting
        out=$("$LOAD" -H "127.0.0.1:$FOLIO_PORT" -c 48 -t 2 -d "$SECS" --warmup 0.5 --path /bench/page --json)
        l_p99="$l_p99 $(json_field "$out" list_p99_us)"
        out=$("$LOAD" -H "127.0.0.1:$FOLIO_PORT" -c $((48 + POSTERS)) -t 2 -d "$SECS" --warmup 0.5 \
            --writers "$POSTERS" --path /bench/page --pages "$POSTERS" --body "$BODY" --json)
        b_p99="$b_p99 $(json_field "$out" list_p99_us)"
        b_rps="$b_rps $(json_field "$out" post_rps)"
    done
    post_rows="$post_rows$(printf '| %s | %.0f | %.0f / %.0f | %s | %.0f | %.0f (%.0f posts/s) |' \
        "$label" "$(m "$p_rps")" "$(m "$p_p50")" "$(m "$p_p99")" "$(m "$p_cpu")" \
        "$(m "$l_p99")" "$(m "$b_p99")" "$(m "$b_rps")")
"
}

if group_commit_option; then
    post_run "one synced transaction per post" --comments-group-commit off
    post_run "group commit" --comments-group-commit on
else
    post_run "one synced transaction per post"
fi

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
    seed
    if [ "$what" = list ]; then
        "$LOAD" -H "127.0.0.1:$FOLIO_PORT" -c 1 -t 1 -n "$reqs" --path /bench/page >/dev/null
    else
        "$LOAD" -H "127.0.0.1:$FOLIO_PORT" -c 1 -t 1 -n "$reqs" --writers 1 --path /bench/i --body "$BODY" >/dev/null
    fi
    stop_foliod
    INSTR=$(for f in "$BENCH_TMP"/cg.*; do
        [ "${f##*.}" = "$vg_master" ] && continue
        sed -n 's/^summary: *//p' "$f"
    done | sort -n | tail -n 1)
}
instr_rows=""
if command -v valgrind >/dev/null 2>&1; then
    for what in list post; do
        n=$([ "$what" = list ] && echo 5000 || echo 1000)
        instr "$what" "$n"; a=$INSTR
        instr "$what" $((2 * n)); b=$INSTR
        instr_rows="$instr_rows| comments.$what | $(( (b - a) / n )) |
"
    done
fi

echo "### comments.post, durable, $POSTERS connections, $BODY-byte bodies"
echo
echo "| commits | posts/s | p50 / p99 (us) | server CPU us/post | list p99 alone (us) | list p99 beside posts (us) |"
echo "|---|---:|---:|---:|---:|---:|"
printf '%s' "$post_rows"

if [ -n "$instr_rows" ]; then
    echo
    echo "### worker instructions per request (callgrind; list: the 50-comment page)"
    echo
    echo "| method | instructions |"
    echo "|---|---:|"
    printf '%s' "$instr_rows"
fi
