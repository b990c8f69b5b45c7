#!/bin/sh
# bench/ping.sh - each server's cheapest request, driven by one client for
# all: folio-bench against foliod (server.ping), Redis (PING, inline),
# memcached -t 2 (version) and bench/floor, the server that does nothing
# (the same ping's bytes answered unparsed: in one process and in as many
# as foliod has workers; --proto raw), interleaved run by run, at 1, 50
# and 240 connections with one request in flight and at 50 with 16;
# throughput, p99, the server's CPU per request (every thread's run
# time, from /proc/PID/task/*/schedstat) and the client's (folio-bench's
# own, beside it on shared CPUs); one send(2) per request
# (--send-each), as callers sharing a connection would.  redis-benchmark's
# figure for Redis is beside, as a second opinion from another client.
# Usage: BUILDDIR=build sh bench/ping.sh [SECONDS] [RUNS]
# Prints markdown tables for BENCHMARKS.md: the servers side by side, and
# foliod against the floor of its own process model (its CPU per request
# and p99 over the floor's); each figure is the median of RUNS; the
# ratios are of the medians.  FOLIOD_ARGS adds foliod options
# (default --workers auto); SETTINGS replaces "CONNS:DEPTH ...";
# FOLIOD_BEFORE=path/to/older/foliod adds it as a fourth server (its own
# column), interleaved with the others: a change's before and after
# (FOLIOD_BEFORE_ARGS: its own options, e.g. another --workers; BEFORE_NAME
# its name in the tables).  PIN=SERVER_CPUS:CLIENT_CPUS (e.g. 0:1) runs
# every server on the first CPUs and folio-bench on the others (taskset),
# with one foliod worker and one memcached thread per server CPU: each
# server's own figures, without the load generator taking its CPU.
set -eu
. "$(dirname "$0")/lib.sh"

SECS=${1:-${BENCH_SECS:-5}}
RUNS=${2:-${BENCH_RUNS:-3}}
SETTINGS=${SETTINGS:-1:1 50:1 240:1 50:16}
BEFORE_NAME=${BEFORE_NAME:-before}
if [ -n "${PIN:-}" ]; then
    # shellcheck disable=SC2034 # read by lib.sh
    SERVER_WRAP="taskset -c ${PIN%%:*}"
    # shellcheck disable=SC2034
    CLIENT_WRAP="taskset -c ${PIN##*:}"
    ncpu=$(taskset -c "${PIN%%:*}" nproc)
    FOLIOD_ARGS=${FOLIOD_ARGS:---workers $ncpu}
    # shellcheck disable=SC2034
    MEMCACHED_THREADS=$ncpu
    echo "ping.sh: servers on CPUs ${PIN%%:*} ($ncpu), folio-bench on ${PIN##*:}" >&2
fi

# shellcheck disable=SC2086
start_foliod ${FOLIOD_ARGS:---workers auto}
NW=$(ready_workers "$BENCH_TMP/ready")
# shellcheck disable=SC2086
start_before ${FOLIOD_BEFORE_ARGS:-${FOLIOD_ARGS:---workers auto}}
SERVERS="foliod redis memcached"
BW=""
if [ -n "$BEFORE_PID" ]; then
    SERVERS="before $SERVERS"
    BW=$(ready_workers "$BENCH_TMP/before/ready")
fi
start_redis
start_memcached
# The floors: one process, and each worker count in use.
FLOORS=$(printf '%s\n' 1 "$NW" $BW | sort -n -u)
for k in $FLOORS; do
    start_floor "$k"
    eval "FLOOR_PORT_$k=\$FLOOR_PORT FLOOR_PID_$k=\$FLOOR_PID"
    SERVERS="floor$k $SERVERS"
done

# one SERVER CONNS DEPTH: a run; appends "rps p50 p99 cpu" to $BENCH_TMP/SERVER-CONNS-DEPTH.
one() {
    case $1 in
    foliod) set -- "$@" -H "127.0.0.1:$FOLIO_PORT" --server-pid "$FOLIOD_PID" ;;
    before) set -- "$@" -H "127.0.0.1:$BEFORE_PORT" --server-pid "$BEFORE_PID" ;;
    redis) set -- "$@" --proto resp -H "127.0.0.1:$REDIS_PORT" --server-pid "$REDIS_PID" ;;
    memcached) set -- "$@" --proto memcache -H "127.0.0.1:$MEMCACHED_PORT" --server-pid "$MEMCACHED_PID" ;;
    floor*)
        eval "_port=\$FLOOR_PORT_${1#floor} _pid=\$FLOOR_PID_${1#floor}"
        set -- "$@" --proto raw --raw-request "$FLOOR_REQUEST" \
            --raw-reply-len "$FLOOR_REPLY_LEN" -H "127.0.0.1:$_port" --server-pid "$_pid" ;;
    esac
    _f="$BENCH_TMP/$1-$2-$3"
    _who=$1 _c=$2 _p=$3
    shift 3
    fb "$BENCH_TMP/run.json" -c "$_c" -P "$_p" --send-each -d "$SECS" --warmup 0.5 "$@" >/dev/null
    fb_fields "$BENCH_TMP/run.json" >>"$_f"
    echo "ping.sh: $_who c=$_c P=$_p: $(tail -n 1 "$_f")" >&2
}


for _ in $(seq "$RUNS"); do
    for s in $SETTINGS; do
        c=${s%%:*}
        p=${s##*:}
        for who in $SERVERS; do
            one "$who" "$c" "$p"
        done
        # The second opinion: redis-benchmark, its own client.
        rn=$(awk '{print int($5)}' "$BENCH_TMP/redis-$c-$p" | tail -n 1)
        [ "${rn:-0}" -lt 20000 ] && rn=20000
        "$REDIS_BENCHMARK" -p "$REDIS_PORT" -t ping_inline -c "$c" -P "$p" \
            -n "$rn" --csv 2>/dev/null | tail -n 1 | awk -F'"' '{print $4}' \
            >>"$BENCH_TMP/rb-$c-$p"
    done
done

# ratio A B: A / B (0 when B is 0 or missing).
ratio() {
    echo "$1 $2" | awk '{print ($2 + 0 > 0) ? $1 / $2 : 0}'
}

# The floor columns: one process, and foliod's worker count when it is more.
FCOLS=1
[ "$NW" -gt 1 ] && FCOLS="1 $NW"
fhead="" fsep="" fp99="" fcpu=""
for k in $FCOLS; do
    fhead="$fhead floor ($k proc) req/s |"
    fsep="$fsep---:|"
    fp99="${fp99}floor $k / "
    fcpu="${fcpu}floor $k / "
done
echo "| conns | in flight |$fhead foliod req/s | Redis req/s | memcached req/s | foliod / Redis | foliod / memcached | p99 us ${fp99}foliod / Redis / memcached | server CPU us/req ${fcpu}foliod / Redis / memcached | Redis by redis-benchmark |"
echo "|---:|---:|$fsep---:|---:|---:|---:|---:|---:|---:|---:|"
for s in $SETTINGS; do
    c=${s%%:*}
    p=${s##*:}
    f="$BENCH_TMP/foliod-$c-$p" r="$BENCH_TMP/redis-$c-$p" mc="$BENCH_TMP/memcached-$c-$p"
    fr=$(col "$f" 1) rr=$(col "$r" 1) mr=$(col "$mc" 1)
    frs="" fp="" fc=""
    for k in $FCOLS; do
        fl="$BENCH_TMP/floor$k-$c-$p"
        frs="$frs $(printf '%.0f' "$(col "$fl" 1)") |"
        fp="$fp$(printf '%.0f' "$(col "$fl" 3)") / "
        fc="$fc$(printf '%.2f' "$(col "$fl" 4)") / "
    done
    printf '| %s | %s |%s %.0f | %.0f | %.0f | %.2f | %.2f | %s%.0f / %.0f / %.0f | %s%.2f / %.2f / %.2f | %.0f |\n' \
        "$c" "$p" "$frs" "$fr" "$rr" "$mr" \
        "$(ratio "$fr" "$rr")" "$(ratio "$fr" "$mr")" \
        "$fp" "$(col "$f" 3)" "$(col "$r" 3)" "$(col "$mc" 3)" \
        "$fc" "$(col "$f" 4)" "$(col "$r" 4)" "$(col "$mc" 4)" \
        "$(median <"$BENCH_TMP/rb-$c-$p")"
done

# Against the floor of the same process model: foliod (and the before
# build) with W workers against the floor in W processes.
echo
echo "| conns | in flight | server | workers | CPU us/req | floor's | CPU / floor | above the floor (us) | p99 us / floor's | p99 / floor | req/s / floor |"
echo "|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|"
for s in $SETTINGS; do
    c=${s%%:*}
    p=${s##*:}
    for who in foliod before; do
        if [ "$who" = before ]; then
            [ -n "$BEFORE_PID" ] || continue
            name=$BEFORE_NAME k=$BW
        else
            name=foliod k=$NW
        fi
        f="$BENCH_TMP/$who-$c-$p" fl="$BENCH_TMP/floor$k-$c-$p"
        cpu=$(col "$f" 4) fcpu=$(col "$fl" 4) p99=$(col "$f" 3) fp99=$(col "$fl" 3)
        printf '| %s | %s | %s | %s | %.2f | %.2f | %.2f | %.2f | %.0f / %.0f | %.2f | %.2f |\n' \
            "$c" "$p" "$name" "$k" "$cpu" "$fcpu" "$(ratio "$cpu" "$fcpu")" \
            "$(echo "$cpu $fcpu" | awk '{print $1 - $2}')" "$p99" "$fp99" \
            "$(ratio "$p99" "$fp99")" "$(ratio "$(col "$f" 1)" "$(col "$fl" 1)")"
    done
done
# Where the CPUs went: the server's CPU and the client's (folio-bench's
# own) a request, and the CPUs the two kept busy (their sum times req/s).
# Near the machine's CPUs, the run is bound by CPU: req/s is the CPUs over
# the sum, and a server gains as much from what its replies cost the
# client (how many come together) as from its own.
echo
echo "| conns | in flight | server | req/s | server CPU us/req | client CPU us/req | sum | CPUs busy |"
echo "|---:|---:|---|---:|---:|---:|---:|---:|"
for s in $SETTINGS; do
    c=${s%%:*}
    p=${s##*:}
    for who in $SERVERS; do
        f="$BENCH_TMP/$who-$c-$p"
        case $who in
        before) name=$BEFORE_NAME ;;
        redis) name=Redis ;;
        floor*) name="floor (${who#floor} proc)" ;;
        *) name=$who ;;
        esac
        printf '| %s | %s | %s | %.0f | %.2f | %.2f | %.2f | %s |\n' \
            "$c" "$p" "$name" "$(col "$f" 1)" "$(col "$f" 4)" "$(col "$f" 6)" \
            "$(cpu_sum "$f")" "$(cpus_busy "$f")"
    done
done
if [ -n "$BEFORE_PID" ]; then
    echo
    echo "| conns | in flight | $BEFORE_NAME req/s | foliod req/s | foliod / $BEFORE_NAME | p99 us $BEFORE_NAME / foliod | server CPU us/req $BEFORE_NAME / foliod |"
    echo "|---:|---:|---:|---:|---:|---:|---:|"
    for s in $SETTINGS; do
        c=${s%%:*}
        p=${s##*:}
        f="$BENCH_TMP/foliod-$c-$p" b="$BENCH_TMP/before-$c-$p"
        printf '| %s | %s | %.0f | %.0f | %.2f | %.0f / %.0f | %.2f / %.2f |\n' \
            "$c" "$p" "$(col "$b" 1)" "$(col "$f" 1)" \
            "$(ratio "$(col "$f" 1)" "$(col "$b" 1)")" \
            "$(col "$b" 3)" "$(col "$f" 3)" "$(col "$b" 4)" "$(col "$f" 4)"
    done
fi
