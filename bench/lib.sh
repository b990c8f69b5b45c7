# bench/lib.sh - helpers shared by the benchmark scripts (sourced, not run).
# Starts foliod and redis-server on free loopback ports, reads their CPU time
# from /proc, and stops them, whatever happens.

: "${BUILDDIR:=.}"
: "${FOLIOD:=$BUILDDIR/foliod}"
: "${FOLIO_BENCH:=$BUILDDIR/folio-bench}"
: "${REDIS_SERVER:=redis-server}"
: "${REDIS_BENCHMARK:=redis-benchmark}"

BENCH_TMP=$(mktemp -d "${TMPDIR:-/tmp}/folio-bench.XXXXXX")
FOLIOD_PID=""
REDIS_PID=""

bench_cleanup() {
    [ -n "$FOLIOD_PID" ] && kill "$FOLIOD_PID" 2>/dev/null && wait "$FOLIOD_PID" 2>/dev/null
    [ -n "$REDIS_PID" ] && kill "$REDIS_PID" 2>/dev/null && wait "$REDIS_PID" 2>/dev/null
    rm -rf "$BENCH_TMP"
}
trap bench_cleanup EXIT INT TERM

# free_port: a TCP port nobody listens on, chosen by the kernel.
free_port() {
    python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

# wait_for FILE: wait (10 s at most) until FILE exists.
wait_for() {
    i=0
    while [ ! -s "$1" ]; do
        i=$((i + 1))
        [ $i -gt 1000 ] && { echo "timed out waiting for $1" >&2; return 1; }
        sleep 0.01
    done
}

# start_foliod [foliod options...]: FOLIO_PORT, FOLIOD_PID, FOLIO_ADMIN set.
start_foliod() {
    FOLIO_ADMIN="$BENCH_TMP/admin.sock"
    rm -f "$BENCH_TMP/ready"
    # As root foliod wants a user to become: the benchmarks stay root.
    FOLIO_USER=$(id -un)
    # shellcheck disable=SC2086
    ${FOLIOD_WRAP:-} "$FOLIOD" -f --user "$FOLIO_USER" --listen 127.0.0.1:0 --admin-socket "$FOLIO_ADMIN" \
        --data-dir "$BENCH_TMP/data" --metrics-listen off \
        --ready-file "$BENCH_TMP/ready" --log-level warn "$@" \
        2>>"$BENCH_TMP/foliod.log" &
    FOLIOD_PID=$!
    wait_for "$BENCH_TMP/ready" || return 1
    FOLIO_PORT=$(sed -n 's/^listen 127.0.0.1:\([0-9]*\)$/\1/p' "$BENCH_TMP/ready" | head -n 1)
}

stop_foliod() {
    kill "$FOLIOD_PID" 2>/dev/null && wait "$FOLIOD_PID" 2>/dev/null
    FOLIOD_PID=""
}

# start_redis: REDIS_PORT, REDIS_PID set.
start_redis() {
    REDIS_PORT=$(free_port)
    "$REDIS_SERVER" --port "$REDIS_PORT" --save "" --appendonly no \
        --daemonize no --logfile "$BENCH_TMP/redis.log" &
    REDIS_PID=$!
    i=0
    until "${REDIS_CLI:-redis-cli}" -p "$REDIS_PORT" ping >/dev/null 2>&1; do
        i=$((i + 1))
        [ $i -gt 1000 ] && { echo "redis-server did not start" >&2; return 1; }
        sleep 0.01
    done
}

stop_redis() {
    kill "$REDIS_PID" 2>/dev/null && wait "$REDIS_PID" 2>/dev/null
    REDIS_PID=""
}

# cpu_ticks PID...: user+system clock ticks of the processes and their children.
cpu_ticks() {
    total=0
    for p in "$@"; do
        for q in $p $(cat /proc/"$p"/task/*/children 2>/dev/null); do
            t=$(awk '{print $14 + $15}' /proc/"$q"/stat 2>/dev/null || echo 0)
            total=$((total + t))
        done
    done
    echo "$total"
}

# foliod_workers: pids of foliod's workers.
foliod_workers() {
    cat /proc/"$FOLIOD_PID"/task/*/children 2>/dev/null
}

# json_field JSON KEY: a number from folio-bench --json output.
json_field() {
    printf '%s\n' "$1" | sed -n "s/.*\"$2\":\([0-9.]*\).*/\1/p"
}

# median of the numbers on stdin.
median() {
    sort -g | awk '{a[NR]=$1} END {if (NR % 2) print a[(NR+1)/2]; else print (a[NR/2]+a[NR/2+1])/2}'
}
