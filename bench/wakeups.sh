#!/bin/sh
# bench/wakeups.sh - the system calls each server makes per request, and
# what they say about its loop: reads, writes and epoll_wait returns per
# request, connections ready per wake-up (reads per epoll_wait: each of
# these servers reads a ready connection once per wake-up) and requests
# per read, beside the server's CPU per request; counted by perf's
# syscall tracepoints (perf stat: counting, not tracing, so the servers
# run at their speed, where strace -c stops each of them at every call).
# bench/floor (one process), foliod (--workers 1 unless FOLIOD_ARGS),
# Redis and memcached -t 1, driven by folio-bench as bench/ping.sh drives
# them, interleaved run by run; each figure the median of RUNS.
# Usage: BUILDDIR=build sh bench/wakeups.sh [SECONDS] [RUNS]
# SETTINGS replaces "CONNS:DEPTH ..." (default "50:1 50:16"); PIN as in
# bench/ping.sh.  Needs perf (linux-perf) and the right to count a
# process's tracepoints (root, or kernel.perf_event_paranoid <= 1).
set -eu
. "$(dirname "$0")/lib.sh"

SECS=${1:-${BENCH_SECS:-5}}
RUNS=${2:-${BENCH_RUNS:-3}}
SETTINGS=${SETTINGS:-50:1 50:16}
if [ -n "${PIN:-}" ]; then
    # shellcheck disable=SC2034 # read by lib.sh
    SERVER_WRAP="taskset -c ${PIN%%:*}"
    # shellcheck disable=SC2034
    CLIENT_WRAP="taskset -c ${PIN##*:}"
fi
command -v perf >/dev/null 2>&1 || { echo "wakeups.sh: needs perf" >&2; exit 1; }

EVENTS=""
# epoll_pwait: foliod's own epoll_wait (worker/loop.c) polls with it.
for s in read recvfrom recvmsg write sendto sendmsg writev epoll_wait epoll_pwait \
    epoll_ctl; do
    EVENTS="$EVENTS${EVENTS:+,}syscalls:sys_enter_$s"
done

# shellcheck disable=SC2086
start_foliod ${FOLIOD_ARGS:---workers 1}
# shellcheck disable=SC2034 # read by lib.sh
MEMCACHED_THREADS=1
start_redis
start_memcached
start_floor 1
SERVERS="floor foliod redis memcached"

# one SERVER CONNS DEPTH: a run, counted; appends
# "rps cpu_us reads writes epoll_waits" per request to $BENCH_TMP/SERVER-CONNS-DEPTH.
one() {
    case $1 in
    floor)
        pids=$FLOOR_PID pid=$FLOOR_PID
        set -- "$@" --proto raw --raw-request "$FLOOR_REQUEST" \
            --raw-reply-len "$FLOOR_REPLY_LEN" -H "127.0.0.1:$FLOOR_PORT" ;;
    foliod)
        pids=$(echo $(foliod_workers) | tr ' ' ',') pid=$FOLIOD_PID
        set -- "$@" -H "127.0.0.1:$FOLIO_PORT" ;;
    redis)
        pids=$REDIS_PID pid=$REDIS_PID
        set -- "$@" --proto resp -H "127.0.0.1:$REDIS_PORT" ;;
    memcached)
        pids=$MEMCACHED_PID pid=$MEMCACHED_PID
        set -- "$@" --proto memcache -H "127.0.0.1:$MEMCACHED_PORT" ;;
    esac
    _f="$BENCH_TMP/$1-$2-$3" _who=$1 _c=$2 _p=$3
    shift 3
    perf stat -x, -e "$EVENTS" -p "$pids" -o "$BENCH_TMP/perf.out" &
    _perf=$!
    sleep 0.2 # perf attached before the first request
    fb "$BENCH_TMP/run.json" -c "$_c" -P "$_p" --send-each -d "$SECS" \
        --warmup 0 --server-pid "$pid" "$@" >/dev/null
    kill -INT "$_perf"
    wait "$_perf" || :
    _n=$(fb_fields "$BENCH_TMP/run.json" | awk '{print $5}')
    awk -F, -v n="$_n" -v rps="$(fb_fields "$BENCH_TMP/run.json" | awk '{print $1 " " $4}')" '
        $1 ~ /^[0-9]+$/ {
            if ($3 ~ /_(read|recvfrom|recvmsg)$/) r += $1
            else if ($3 ~ /_(write|sendto|sendmsg|writev)$/) w += $1
            else if ($3 ~ /_epoll_p?wait$/) e += $1
        }
        END { printf "%s %.5f %.5f %.5f\n", rps, r / n, w / n, e / n }' \
        "$BENCH_TMP/perf.out" >>"$_f"
    echo "wakeups.sh: $_who c=$_c P=$_p: $(tail -n 1 "$_f")" >&2
}


for _ in $(seq "$RUNS"); do
    for s in $SETTINGS; do
        for who in $SERVERS; do
            one "$who" "${s%%:*}" "${s##*:}"
        done
    done
done

echo "| conns | in flight | server | req/s | CPU us/req | reads/req | writes/req | epoll_wait/req | ready per wake-up | requests per read |"
echo "|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|"
for s in $SETTINGS; do
    c=${s%%:*} p=${s##*:}
    for who in $SERVERS; do
        f="$BENCH_TMP/$who-$c-$p"
        r=$(col "$f" 3) w=$(col "$f" 4) e=$(col "$f" 5)
        printf '| %s | %s | %s | %.0f | %.2f | %.3f | %.3f | %.3f | %.2f | %.1f |\n' \
            "$c" "$p" "$who" "$(col "$f" 1)" "$(col "$f" 2)" "$r" "$w" "$e" \
            "$(echo "$r $e" | awk '{print ($2 > 0) ? $1 / $2 : 0}')" \
            "$(echo "$r" | awk '{print ($1 > 0) ? 1 / $1 : 0}')"
    done
done
