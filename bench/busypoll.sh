#!/bin/sh
# bench/busypoll.sh - does a server that does not sleep at once beat the
# floor?  bench/floor --linger-us N (it spins N us after each wake-up that
# served, then polls) for each N of LINGERS, and Redis, one client for all
# (folio-bench, as bench/ping.sh drives them), interleaved run by run at
# each of SETTINGS; throughput, p50, p99 and the server's CPU per
# request, and the client's (folio-bench's own, on shared cores beside
# the server).  What busy_poll_us (foliod(8)) is measured against.
# A LINGERS entry "yield" is a floor that calls sched_yield(2) instead
# (bench/floor --yield); "napN" one that sleeps N us (--nap-us N);
# "batch" one under SCHED_BATCH (--batch).
# Usage: BUILDDIR=build sh bench/busypoll.sh [SECONDS] [RUNS]
# LINGERS (default "0 2 5 10"), PROCS (the floors' processes, default 1),
# SETTINGS (default "1:1 50:1 50:16"), PIN as in bench/ping.sh (e.g. 0:1).
# Each figure is the median of RUNS; the ratio is to Redis's median.
set -eu
. "$(dirname "$0")/lib.sh"

SECS=${1:-${BENCH_SECS:-5}}
RUNS=${2:-${BENCH_RUNS:-3}}
LINGERS=${LINGERS:-0 2 5 10}
PROCS=${PROCS:-1}
SETTINGS=${SETTINGS:-1:1 50:1 50:16}
if [ -n "${PIN:-}" ]; then
    # shellcheck disable=SC2034 # read by lib.sh
    SERVER_WRAP="taskset -c ${PIN%%:*}"
    # shellcheck disable=SC2034
    CLIENT_WRAP="taskset -c ${PIN##*:}"
fi

start_redis
SERVERS=redis
for l in $LINGERS; do
    case $l in
    yield) FLOOR_ARGS="--yield" start_floor "$PROCS" ;;
    nap*) FLOOR_ARGS="--nap-us ${l#nap}" start_floor "$PROCS" ;;
    batch) FLOOR_ARGS="--batch" start_floor "$PROCS" ;;
    *) FLOOR_ARGS="--linger-us $l" start_floor "$PROCS" ;;
    esac
    eval "PORT_$l=\$FLOOR_PORT PID_$l=\$FLOOR_PID"
    SERVERS="$SERVERS linger$l"
done

for _ in $(seq "$RUNS"); do
    for s in $SETTINGS; do
        c=${s%%:*} p=${s##*:}
        for who in $SERVERS; do
            case $who in
            redis) set -- --proto resp -H "127.0.0.1:$REDIS_PORT" --server-pid "$REDIS_PID" ;;
            *)
                _port="" _pid=""
                eval "_port=\$PORT_${who#linger} _pid=\$PID_${who#linger}"
                set -- --proto raw --raw-request "$FLOOR_REQUEST" \
                    --raw-reply-len "$FLOOR_REPLY_LEN" -H "127.0.0.1:$_port" \
                    --server-pid "$_pid" ;;
            esac
            fb "$BENCH_TMP/run.json" -c "$c" -P "$p" --send-each -d "$SECS" \
                --warmup 0.5 "$@" >/dev/null
            fb_fields "$BENCH_TMP/run.json" >>"$BENCH_TMP/$who-$c-$p"
            echo "busypoll.sh: $who c=$c P=$p: $(tail -n 1 "$BENCH_TMP/$who-$c-$p")" >&2
        done
    done
done


echo "| conns x in flight | server | req/s | / Redis | p50 us | p99 us | CPU us/req | client CPU us/req | CPUs busy |"
echo "|---|---|---:|---:|---:|---:|---:|---:|---:|"
for s in $SETTINGS; do
    c=${s%%:*} p=${s##*:}
    r=$(col "$BENCH_TMP/redis-$c-$p" 1)
    for who in $SERVERS; do
        f="$BENCH_TMP/$who-$c-$p"
        case $who in
        redis) name=Redis ;;
        lingeryield) name="floor ($PROCS proc), --yield" ;;
        lingerbatch) name="floor ($PROCS proc), SCHED_BATCH" ;;
        lingernap*) name="floor ($PROCS proc), --nap-us ${who#lingernap}" ;;
        *) name="floor ($PROCS proc), --linger-us ${who#linger}" ;;
        esac
        echo "| $c x $p | $name | $(col "$f" 1) | $(echo "$(col "$f" 1) $r" | awk '{printf "%.2f", $1 / $2}') | $(col "$f" 2) | $(col "$f" 3) | $(col "$f" 4) | $(col "$f" 6) | $(cpus_busy "$f") |"
    done
done
