#!/bin/sh
# bench/profile.sh - what the profiler costs (foliod(8), PROFILING), the
# three figures of BENCHMARKS.md in one run:
#   1. server.ping, 50 connections, 2 workers: foliod with the profiler
#      compiled in but idle (heap sampling at its default 512 KiB, no CPU
#      profile) against a foliod configured --disable-profiling;
#   2. the same load during a CPU profile at 100 Hz of every worker
#      (folio-bench --profile over the measured phase) against none;
#   3. comments.post (every request a post) with heap sampling at the
#      default rate against profile_heap_rate = 0; and the allocations
#      per request of the read paths (ping, corpus.match_count,
#      comments.list) with heap sampling on: 0 is the contract.
# Runs of the modes alternate; figures are medians of RUNS runs; every
# ratio is of figures of this one run.  With valgrind, the same three
# comparisons in instructions per request too (bench/instr.sh: callgrind,
# whatever the machine's load).  Then tests/prof-unwind: the cost and
# reach of the stack walkers the profiler could use.
# The build without the profiler: $NOPROF_FOLIOD, else one made here
# from `make distdir` in BUILDDIR/build-noprof (minutes, once).
# Usage: BUILDDIR=build CORPUS=DIR sh bench/profile.sh [SECONDS] [RUNS]
set -eu
. "$(dirname "$0")/lib.sh"
export BUILDDIR

SECS=${1:-${BENCH_SECS:-5}}
RUNS=${2:-${BENCH_RUNS:-3}}
CONNS=50
PROF_FOLIOD=$FOLIOD

ratio() { echo "$1 $2" | awk '{ if ($2 > 0) printf "%.3f", $1 / $2; else print "-" }'; }
spread() {
    # shellcheck disable=SC2086
    printf '%s\n' $1 | sort -g | awk 'NR == 1 {lo = $1} {hi = $1}
        END { if (lo > 0) printf "%.1f%%", (hi - lo) / lo * 100; else print "-" }'
}

if [ -z "${NOPROF_FOLIOD:-}" ]; then
    NOPROF_DIR=$BUILDDIR/build-noprof
    NOPROF_FOLIOD=$NOPROF_DIR/foliod
    if [ ! -x "$NOPROF_FOLIOD" ] || [ "$PROF_FOLIOD" -nt "$NOPROF_FOLIOD" ]; then
        echo "profile.sh: building foliod --disable-profiling in $NOPROF_DIR" >&2
        rm -rf "$NOPROF_DIR"
        mkdir -p "$NOPROF_DIR"
        make -s -C "$BUILDDIR" distdir distdir="$NOPROF_DIR/src" \
            top_distdir="$NOPROF_DIR/src" >/dev/null
        (cd "$NOPROF_DIR/src" && ./configure -q --disable-profiling >/dev/null &&
            make -s -j2 foliod >/dev/null) >&2
        cp "$NOPROF_DIR/src/foliod" "$NOPROF_FOLIOD"
    fi
fi
"$NOPROF_FOLIOD" --help >/dev/null

# run_ping FOLIOD [BENCH ARGS...]: req/s of server.ping, 2 workers.
run_ping() {
    FOLIOD=$1
    shift
    start_foliod --workers 2 --corpus off --metrics-listen 127.0.0.1:0
    METRICS=$(sed -n 's/^metrics //p' "$BENCH_TMP/ready")
    out=$("$FOLIO_BENCH" -q -H "127.0.0.1:$FOLIO_PORT" -c "$CONNS" -d "$SECS" \
        --warmup 0.5 --json "$@" --metrics "$METRICS")
    stop_foliod
    FOLIOD=$PROF_FOLIOD
    json_field "$out" rps
}

# run_posts RATE: req/s of comments.post, 2 workers, fresh store.
run_posts() {
    rm -rf "$BENCH_TMP/data"
    start_foliod --workers 2 --corpus off --profile-heap-rate "$1"
    out=$("$FOLIO_BENCH" -q -H "127.0.0.1:$FOLIO_PORT" -w comments \
        --write-ratio 1 -c 16 -d "$SECS" --warmup 0.5 --json)
    stop_foliod
    json_field "$out" rps
}

# allocs WORKLOAD ARGS...: allocations per request (server.stats) with
# heap sampling at the default rate.
allocs() {
    w=$1
    shift
    out=$("$FOLIO_BENCH" -q -H "127.0.0.1:$FOLIO_PORT" -w "$w" "$@" -c 8 \
        -d "$SECS" --warmup 0.5 --admin "$FOLIO_ADMIN" --json)
    json_field "$out" server.allocs_per_req
}

built=""; noprof=""; idle=""; during=""; heap_on=""; heap_off=""
for _ in $(seq "$RUNS"); do
    r=$(run_ping "$PROF_FOLIOD"); built="$built $r"
    r2=$(run_ping "$NOPROF_FOLIOD"); noprof="$noprof $r2"
    echo "profile.sh: ping: profiler built in $r, without $r2 req/s" >&2
    r=$(run_ping "$PROF_FOLIOD"); idle="$idle $r"
    r2=$(run_ping "$PROF_FOLIOD" --profile "$BENCH_TMP/cpu.pb.gz"); during="$during $r2"
    echo "profile.sh: ping: no profile $r, during a CPU profile $r2 req/s" >&2
    r=$(run_posts 524288); heap_on="$heap_on $r"
    r2=$(run_posts 0); heap_off="$heap_off $r2"
    echo "profile.sh: comments.post: heap sampling on $r, off $r2 req/s" >&2
done

CORPUS_ARG="--corpus off"
[ -n "${CORPUS:-}" ] && CORPUS_ARG="--corpus $CORPUS"
# shellcheck disable=SC2086
start_foliod --workers 2 $CORPUS_ARG
a_ping=$(allocs ping)
a_corpus="-"
[ -n "${CORPUS:-}" ] && a_corpus=$(allocs corpus)
a_list=$(allocs comments --write-ratio 0)
stop_foliod

echo "| measurement | with | without | with/without | spread (with, without) |"
echo "|---|---:|---:|---:|---|"
echo "| server.ping req/s: profiler built in (idle) / --disable-profiling | $(m "$built") | $(m "$noprof") | $(ratio "$(m "$built")" "$(m "$noprof")") | $(spread "$built"), $(spread "$noprof") |"
echo "| server.ping req/s: during a 100 Hz CPU profile / none | $(m "$during") | $(m "$idle") | $(ratio "$(m "$during")" "$(m "$idle")") | $(spread "$during"), $(spread "$idle") |"
echo "| comments.post req/s: heap sampling at 512 KiB / off | $(m "$heap_on") | $(m "$heap_off") | $(ratio "$(m "$heap_on")" "$(m "$heap_off")") | $(spread "$heap_on"), $(spread "$heap_off") |"
echo
echo "Allocations per request with heap sampling on (server.stats): server.ping $a_ping, corpus.match_count $a_corpus, comments.list $a_list."
echo "Medians of $RUNS alternated runs of $SECS s, $CONNS connections (posts: 16), 2 workers; spread = (max - min) / min."
if command -v go >/dev/null 2>&1 && [ -s "$BENCH_TMP/cpu.pb.gz" ]; then
    echo
    echo "What sampling cost, from the last CPU profile's own comments (go tool pprof -comments):"
    echo
    HOME=$BENCH_TMP PPROF_TMPDIR=$BENCH_TMP go tool pprof -comments \
        "$BENCH_TMP/cpu.pb.gz" 2>/dev/null | sed 's/^/    /'
fi
if command -v valgrind >/dev/null 2>&1; then
    instr() {
        n=$1
        shift
        sh "$(dirname "$0")/instr.sh" "$n" --corpus off "$@" | sed -n 's/.*: //p'
    }
    i_prof=$(FOLIOD=$PROF_FOLIOD instr 20000)
    i_noprof=$(FOLIOD=$NOPROF_FOLIOD instr 20000)
    i_list=$(WORKLOAD=comments instr 20000)
    i_nolist=$(FOLIOD=$NOPROF_FOLIOD WORKLOAD=comments instr 20000)
    export INSTR_BENCH_ARGS="--write-ratio 1"
    i_heap=$(WORKLOAD=comments instr 2000)
    i_noheap=$(WORKLOAD=comments instr 2000 --profile-heap-rate 0)
    unset INSTR_BENCH_ARGS
    echo
    echo "Instructions per request (callgrind, one worker, bench/instr.sh):"
    echo "server.ping $i_prof with the profiler built in, $i_noprof without;"
    echo "comments.list (the comments workload, 1% posts) $i_list with it,"
    echo "$i_nolist without; comments.post (every request a post, 2000) $i_heap"
    echo "with heap sampling at 512 KiB, $i_noheap without."
fi
if [ -x "$BUILDDIR/tests/prof-unwind" ]; then
    echo
    echo "Stack walkers in a SIGPROF handler at 1000 Hz (tests/prof-unwind; per-stack CPU time, median):"
    echo
    echo '```'
    "$BUILDDIR/tests/prof-unwind" "$SECS"
    [ -x "$BUILDDIR/tests/prof-unwind-libunwind" ] &&
        "$BUILDDIR/tests/prof-unwind-libunwind" "$SECS"
    echo '```'
fi
