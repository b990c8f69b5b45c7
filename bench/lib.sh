# bench/lib.sh - helpers shared by the benchmark scripts (sourced, not run).
# Starts foliod and redis-server on free loopback ports, reads their CPU time
# from /proc, and stops them, whatever happens.
#
# The convention of bench/*.sh (bench/all.sh runs them all): arguments
# [SECONDS] [RUNS] (also $BENCH_SECS and $BENCH_RUNS), a markdown table on
# stdout, notes on stderr, exit 0 when the table is complete.
# BENCH_KEEP=DIR keeps a script's working files there (each run's
# figures, one line a run, and the servers' logs) for per-run ratios.

: "${BUILDDIR:=.}"
: "${FOLIOD:=$BUILDDIR/foliod}"
: "${FOLIO_BENCH:=$BUILDDIR/folio-bench}"
: "${FLOOR:=$BUILDDIR/bench/floor}"
: "${REDIS_SERVER:=redis-server}"
: "${REDIS_BENCHMARK:=redis-benchmark}"

BENCH_TMP=$(mktemp -d "${TMPDIR:-/tmp}/folio-bench.XXXXXX")
FOLIOD_PID=""
BEFORE_PID=""
REDIS_PID=""
MEMCACHED_PID=""
FLOOR_PIDS=""

bench_cleanup() {
    [ -n "$FOLIOD_PID" ] && kill "$FOLIOD_PID" 2>/dev/null && wait "$FOLIOD_PID" 2>/dev/null
    [ -n "$BEFORE_PID" ] && kill "$BEFORE_PID" 2>/dev/null && wait "$BEFORE_PID" 2>/dev/null
    [ -n "$REDIS_PID" ] && kill "$REDIS_PID" 2>/dev/null && wait "$REDIS_PID" 2>/dev/null
    [ -n "$MEMCACHED_PID" ] && kill "$MEMCACHED_PID" 2>/dev/null && wait "$MEMCACHED_PID" 2>/dev/null
    # A floor dies of the TERM (status 143): not a failure of the cleanup.
    for _p in $FLOOR_PIDS; do
        kill "$_p" 2>/dev/null && wait "$_p" 2>/dev/null || :
    done
    if [ -n "${BENCH_KEEP:-}" ]; then
        mkdir -p "$BENCH_KEEP" && cp -R "$BENCH_TMP"/. "$BENCH_KEEP"/ 2>/dev/null || :
    fi
    rm -rf "$BENCH_TMP"
}
trap bench_cleanup EXIT
# A signal ends the script too (a trap alone would clean up and go on).
trap 'exit 130' INT TERM

# free_port: a TCP port nobody listens on, chosen by the kernel.
free_port() {
    python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

# wait_for FILE: wait (WAIT_SECS, 10 s by default, at most) until FILE
# exists.
wait_for() {
    _i=0
    while [ ! -s "$1" ]; do
        _i=$((_i + 1))
        [ $_i -gt $((${WAIT_SECS:-10} * 100)) ] && { echo "timed out waiting for $1" >&2; return 1; }
        sleep 0.01
    done
}

# SERVER_WRAP and CLIENT_WRAP prefix the servers' and folio-bench's
# command lines (e.g. "taskset -c 0" and "taskset -c 1": bench/ping.sh's
# PIN).
#
# start_foliod [foliod options...]: FOLIO_PORT, FOLIOD_PID, FOLIO_ADMIN set.
# http_opt ADDR|off: the --http-listen option for $FOLIOD, nothing for a
# foliod older than the HTTP face (a $FOLIOD_BEFORE).
http_opt() {
    if "$FOLIOD" --help 2>/dev/null | grep -q -- --http-listen; then
        echo "--http-listen $1"
    fi
}

start_foliod() {
    FOLIO_ADMIN="$BENCH_TMP/admin.sock"
    rm -f "$BENCH_TMP/ready"
    # shellcheck disable=SC2086,SC2046
    ${FOLIOD_WRAP:-${SERVER_WRAP:-}} "$FOLIOD" -f --listen 127.0.0.1:0 --admin-socket "$FOLIO_ADMIN" \
        --data-dir "$BENCH_TMP/data" --metrics-listen off \
        $(http_opt 127.0.0.1:0) \
        --ready-file "$BENCH_TMP/ready" --log-level warn "$@" \
        >>"$BENCH_TMP/foliod.log" 2>&1 &
    FOLIOD_PID=$!
    wait_for "$BENCH_TMP/ready" || return 1
    FOLIO_PORT=$(sed -n 's/^listen 127.0.0.1:\([0-9]*\)$/\1/p' "$BENCH_TMP/ready" | head -n 1)
    # The HTTP face's port, if it has one.
    # shellcheck disable=SC2034 # read by the scripts
    FOLIO_HTTP_PORT=$(sed -n 's/^http 127.0.0.1:\([0-9]*\)$/\1/p' "$BENCH_TMP/ready" | head -n 1)
}

# start_before [foliod options...]: when $FOLIOD_BEFORE names another
# foliod binary (an older build), start it too, beside the first, so that
# a script runs the two interleaved: BEFORE_PORT, BEFORE_PID set.
# FOLIOD_BEFORE_WRAP, when set (even empty), prefixes it instead of
# FOLIOD_WRAP: e.g. FOLIOD_WRAP="chrt -b 0" FOLIOD_BEFORE_WRAP="".
start_before() {
    [ -n "${FOLIOD_BEFORE:-}" ] || return 0
    _pid=$FOLIOD_PID _port=$FOLIO_PORT _admin=$FOLIO_ADMIN _bin=$FOLIOD
    _wrap=${FOLIOD_WRAP:-}
    FOLIOD=$FOLIOD_BEFORE FOLIOD_WRAP=${FOLIOD_BEFORE_WRAP-$_wrap}
    mkdir -p "$BENCH_TMP/before"
    _tmp=$BENCH_TMP
    BENCH_TMP=$BENCH_TMP/before
    start_foliod "$@"
    # shellcheck disable=SC2034 # read by the scripts
    BEFORE_PID=$FOLIOD_PID BEFORE_PORT=$FOLIO_PORT
    BENCH_TMP=$_tmp FOLIOD=$_bin FOLIOD_WRAP=$_wrap
    FOLIOD_PID=$_pid FOLIO_PORT=$_port FOLIO_ADMIN=$_admin
}

# ready_workers READY_FILE: the "workers N" line of a ready file.
ready_workers() {
    sed -n 's/^workers \([0-9]*\)$/\1/p' "$1" | head -n 1
}

# The floor's request and reply (bench/floor.c): server.ping over
# msgpack-RPC, msgid 1 in folio-bench's 5-byte form, and foliod's reply.
: "${FLOOR_REQUEST:=\x94\x00\xce\x00\x00\x00\x01\xabserver.ping\x90}"
: "${FLOOR_REPLY:=\x94\x01\x01\xc0\xa4pong}"

# start_floor PROCS: bench/floor in PROCS processes over one listening
# socket, answering FLOOR_REQUEST with FLOOR_REPLY; FLOOR_PORT, FLOOR_PID
# (kept for the cleanup) and FLOOR_REPLY_LEN (for folio-bench's
# --raw-reply-len) set.
start_floor() {
    _r="$BENCH_TMP/floor-$1.ready"
    rm -f "$_r"
    # shellcheck disable=SC2086 # FLOOR_ARGS: more options, e.g. --linger-us 5
    ${SERVER_WRAP:-} "$FLOOR" --procs "$1" --ready-file "$_r" ${FLOOR_ARGS:-} \
        "$FLOOR_REQUEST" "$FLOOR_REPLY" >/dev/null &
    FLOOR_PID=$!
    FLOOR_PIDS="$FLOOR_PIDS $FLOOR_PID"
    wait_for "$_r" || return 1
    FLOOR_PORT=$(sed -n 's/^listen 127.0.0.1:\([0-9]*\)$/\1/p' "$_r")
    FLOOR_REPLY_LEN=$(sed -n 's/^reply_bytes //p' "$_r")
}

stop_foliod() {
    kill "$FOLIOD_PID" 2>/dev/null && wait "$FOLIOD_PID" 2>/dev/null
    FOLIOD_PID=""
}

# start_redis: REDIS_PORT, REDIS_PID set.
start_redis() {
    REDIS_PORT=$(free_port)
    ${SERVER_WRAP:-} "$REDIS_SERVER" --port "$REDIS_PORT" --save "" --appendonly no \
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

# start_memcached [options]: MEMCACHED_PORT, MEMCACHED_PID set; two
# threads by default (-t 2: one per core here, as foliod's workers).
start_memcached() {
    MEMCACHED_PORT=$(free_port)
    ${SERVER_WRAP:-} "${MEMCACHED:-memcached}" -l 127.0.0.1 -p "$MEMCACHED_PORT" -U 0 -u nobody \
        -t "${MEMCACHED_THREADS:-2}" "$@" &
    MEMCACHED_PID=$!
    i=0
    until "${FOLIO_BENCH}" --proto memcache \
        -H "127.0.0.1:$MEMCACHED_PORT" -c 1 -n 1 -q >/dev/null 2>&1; do
        i=$((i + 1))
        [ $i -gt 1000 ] && { echo "memcached did not start" >&2; return 1; }
        sleep 0.01
    done
}

stop_memcached() {
    kill "$MEMCACHED_PID" 2>/dev/null && wait "$MEMCACHED_PID" 2>/dev/null
    MEMCACHED_PID=""
}

# fb OUT.json [folio-bench options...]: one run of the one client for
# every server, its JSON summary in OUT.json; prints the CPU seconds the
# client itself used (user + system).
fb() {
    _o=$1
    shift
    # shellcheck disable=SC2086
    cpu_of "$_o" ${CLIENT_WRAP:-} "$FOLIO_BENCH" -q --json "$@"
}

# fb_fields OUT.json: "rps p50_us p99_us server_cpu_us_per_req requests
# client_cpu_us_per_req" of a run (the last: folio-bench's own CPU).
fb_fields() {
    python3 -c '
import json, sys
v = None
for line in open(sys.argv[1]):
    line = line.strip()
    if line.startswith("{"):
        v = json.loads(line)
srv = (v or {}).get("server") or {}
cli = (v or {}).get("client") or {}
def f(x):
    return "-" if x is None else "%.6g" % x
print(f(v.get("rps")), f(v.get("p50_us")), f(v.get("p99_us")),
      f(srv.get("cpu_us_per_req")), f(v.get("requests")),
      f(cli.get("cpu_us_per_req")))' "$1"
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

# json_field JSON KEY: a value from folio-bench --json output; KEY may be a
# dotted path ("server.cpu_us_per_req").  Prints nothing if it is missing.
json_field() {
    printf '%s\n' "$1" | python3 -c '
import json, sys
v = None
for line in sys.stdin:
    line = line.strip()
    if line.startswith("{"):
        v = json.loads(line)
for k in sys.argv[1].split("."):
    v = v.get(k) if isinstance(v, dict) else None
if v is not None:
    print(v)' "$2"
}

# cpu_of OUT CMD...: run CMD with its standard output in the file OUT and
# print the CPU seconds (user + system) it used.  POSIX `times` in a
# subshell reports exactly the children of that subshell.
cpu_of() {
    _out=$1
    shift
    ( "$@" >"$_out"; times ) | tail -n 1 | awk '
        function secs(s) { split(s, a, "m"); sub("s", "", a[2]); return a[1] * 60 + a[2] }
        { printf "%.3f\n", secs($1) + secs($2) }'
}

# random_queries DIR: 10,000 distinct random corpus.match_count queries on
# stdout, the same every time: substrings of random lines of the corpus.
random_queries() {
    awk 'length($0) > 8 { print }' "$1"/* | tr -d '\t' |
        awk 'BEGIN { srand(42) } { l[NR] = $0 } END {
            for (i = 0; i < 10000; i++) {
                s = l[int(rand() * NR) + 1]; n = 3 + int(rand() * 10)
                st = 1 + int(rand() * (length(s) - n)); q = substr(s, st, n)
                if (!(q in seen)) { seen[q] = 1; print q } else i--
            } }'
}

# per_req SECONDS REQUESTS: microseconds per request.
per_req() {
    echo "$1 $2" | awk '{ if ($2 > 0) printf "%.2f", $1 * 1e6 / $2; else print "-" }'
}

# median of the numbers on stdin.
median() {
    sort -g | awk '{a[NR]=$1} END {if (NR % 2) print a[(NR+1)/2]; else print (a[NR/2]+a[NR/2+1])/2}'
}

# col FILE N: the median of column N of a run file (fb_fields's lines).
col() {
    awk -v n="$2" '{print $n}' "$1" | median
}

# cpu_sum FILE: the median server CPU a request plus the median client
# CPU a request (us); cpus_busy FILE: that sum times the median req/s,
# the CPUs the two kept busy.
cpu_sum() {
    echo "$(col "$1" 4) $(col "$1" 6)" | awk '{print $1 + $2}'
}
cpus_busy() {
    echo "$(cpu_sum "$1") $(col "$1" 1)" | awk '{printf "%.2f", $1 * $2 / 1e6}'
}

# m "V1 V2 ...": the median of a space-separated list of figures.
m() {
    # shellcheck disable=SC2086
    printf '%s\n' $1 | median
}
