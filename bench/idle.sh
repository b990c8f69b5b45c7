#!/bin/sh
# bench/idle.sh - what an idle connection costs each server: N connections
# (19,000 by default: the descriptor limit here is 20,000 a process) each
# make one request (server.ping; PING for Redis; version for memcached)
# and then stay open, idle; the growth of the server's private memory
# (Private_Clean + Private_Dirty of every process, /proc/PID/smaps_rollup)
# a connection, and for foliod (one worker) its heap_inuse from
# server.stats, in all and a connection.  Issue 29's goals: at most 1 KB
# of private memory a connection; 19,000 held by one foliod in under 32 MB
# of heap.
# Usage: BUILDDIR=build sh bench/idle.sh [N] [PEER_N]
#   PEER_N (default 4000, the issue's count; 0: none): the connections
#   held by Redis and memcached (-t 1), for comparison.
# Prints a markdown table; RLIMIT_NOFILE is raised to N + 200 (it must
# allow it: ulimit -Hn).
set -eu
. "$(dirname "$0")/lib.sh"

N=${1:-19000}
PEER_N=${2:-4000}
# shellcheck disable=SC3045 # dash and bash have ulimit -n
ulimit -n $((N + 200))
FOLIO_CLI=${FOLIO_CLI:-$BUILDDIR/folio}

# hold HOST PORT N REQUEST REPLY STATS_CMD PIDS...: open N
# connections, one request each, read each reply whole, then measure with
# them all open and idle; prints "N private_bytes_per_conn [heap_before
# heap_after]".
hold() {
    python3 - "$@" <<'PY'
import json, socket, subprocess, sys, time

host, port, n, req, rep, stats = sys.argv[1:7]
pids = sys.argv[7:]
port, n = int(port), int(n)
req = req.encode().decode("unicode_escape").encode("latin-1")
rlen = len(rep.encode().decode("unicode_escape").encode("latin-1"))

def private_kb():
    t = 0
    for p in pids:
        with open("/proc/%s/smaps_rollup" % p) as f:
            for line in f:
                k = line.split(":")[0]
                if k in ("Private_Clean", "Private_Dirty"):
                    t += int(line.split()[1])
    return t

def heap():
    if stats == "-":
        return None
    # heap_inuse is refreshed on the worker's 100 ms tick: wait for two.
    time.sleep(0.3)
    out = subprocess.run(stats.split(), capture_output=True, text=True,
                         check=True).stdout
    return json.loads(out)["workers"][0]["heap_inuse"]

h0, p0 = heap(), private_kb()
socks = []
for i in range(n):
    s = socket.create_connection((host, port))
    s.sendall(req)
    got = b""
    while len(got) < rlen:
        b = s.recv(rlen - len(got))
        if not b:
            sys.exit("connection %d closed by the server" % i)
        got += b
    socks.append(s)
h1 = heap()
time.sleep(0.3)
p1 = private_kb()
line = "%d %.0f" % (n, (p1 - p0) * 1024.0 / n)
if h0 is not None:
    line += " %d %d" % (h0, h1)
print(line)
for s in socks:
    s.close()
PY
}

start_foliod --workers 1 --max-connections $((N + 100))
worker=$(foliod_workers | awk '{print $1}')
# shellcheck disable=SC2046 # the figures, split into $1...
set -- $(hold 127.0.0.1 "$FOLIO_PORT" "$N" "$FLOOR_REQUEST" "$FLOOR_REPLY" \
    "$FOLIO_CLI -U $FOLIO_ADMIN --json stats" "$FOLIOD_PID" "$worker")
echo "| server | idle connections | private memory a connection | heap in use before / after (one worker) | heap a connection |"
echo "|---|---:|---:|---:|---:|"
awk -v n="$1" -v p="$2" -v h0="$3" -v h1="$4" 'BEGIN {
    printf "| foliod -w 1 | %d | %.0f B | %.1f / %.1f MB | %.0f B |\n",
        n, p, h0 / 1e6, h1 / 1e6, (h1 - h0) / n }'
stop_foliod

if [ "$PEER_N" -gt 0 ]; then
    REDIS_PORT=$(free_port)
    "$REDIS_SERVER" --port "$REDIS_PORT" --save "" --appendonly no \
        --maxclients $((PEER_N + 100)) --daemonize no \
        --logfile "$BENCH_TMP/redis.log" &
    REDIS_PID=$!
    until "${REDIS_CLI:-redis-cli}" -p "$REDIS_PORT" ping >/dev/null 2>&1; do
        sleep 0.01
    done
    # shellcheck disable=SC2046
    set -- $(hold 127.0.0.1 "$REDIS_PORT" "$PEER_N" 'PING\r\n' '+PONG\r\n' - \
        "$REDIS_PID")
    printf '| Redis | %d | %.0f B | | |\n' "$1" "$2"
    stop_redis
    MEMCACHED_THREADS=1 start_memcached -c $((PEER_N + 100))
    # shellcheck disable=SC2046
    set -- $(hold 127.0.0.1 "$MEMCACHED_PORT" "$PEER_N" 'version\r\n' \
        "VERSION $("${MEMCACHED:-memcached}" -V | awk '{print $2}')\\r\\n" \
        - "$MEMCACHED_PID")
    printf '| memcached -t 1 | %d | %.0f B | | |\n' "$1" "$2"
    stop_memcached
fi
exit 0
