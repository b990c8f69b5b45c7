#!/bin/sh
# bench/hosts.sh - the several-hosts figures of BENCHMARKS.md:
#   1. comments.list of a 50-comment page at 100 connections: the postgres
#      backend (served from its page cache) beside the LMDB backend, runs
#      interleaved (goal: postgres at least 0.9x LMDB);
#   2. durable comments.post at 16 connections on each backend, group
#      commit, both stores on the same file system;
#   3. comments.list of that page at 50 connections through HAProxy
#      (dist/haproxy.cfg) and directly to the same host: the overhead;
#   4. the invalidation delay: a post acknowledged by one host to a list
#      that has it on every worker of another (bench/comments-stale);
#   5. worker instructions per list on each backend (callgrind: a figure
#      a busy machine does not change).
# Usage: BUILDDIR=build sh bench/hosts.sh [SECONDS] [RUNS]
# folio-bench drives 1 to 3 (the same client for every configuration);
# each figure is the median of RUNS.  Needs the PostgreSQL server
# (initdb, postgres, pg_ctl: on PATH or in /usr/lib/postgresql/N/bin) and
# haproxy; PostgreSQL runs durable (fsync on, synchronous_commit on) in a
# cluster of its own under the benchmark's temporary directory.
set -eu
. "$(dirname "$0")/lib.sh"

SECS=${1:-${BENCH_SECS:-5}}
RUNS=${2:-${BENCH_RUNS:-3}}
STALE=${COMMENTS_STALE:-$BUILDDIR/bench/comments-stale}
HAPROXY=${HAPROXY:-$(command -v haproxy || echo /usr/sbin/haproxy)}
SRCDIR=$(cd "$(dirname "$0")/.." && pwd)
ONLY="--corpus off --freight-dir off --catalog off"

PGBIN=""
for d in $(command -v initdb 2>/dev/null | xargs -r dirname) /usr/lib/postgresql/*/bin; do
    [ -x "$d/initdb" ] && [ -x "$d/postgres" ] && [ -x "$d/pg_ctl" ] && PGBIN=$d
done
[ -n "$PGBIN" ] || { echo "hosts.sh: no PostgreSQL server (initdb, postgres, pg_ctl)" >&2; exit 1; }
[ -x "$HAPROXY" ] || { echo "hosts.sh: no haproxy" >&2; exit 1; }
[ -x "$STALE" ] || { echo "hosts.sh: no $STALE (make)" >&2; exit 1; }

HOST_PIDS=""
HAP_PID=""
PGAS=""
hosts_cleanup() {
    set +e  # clean up everything, whatever fails
    for p in $HOST_PIDS $HAP_PID; do
        kill "$p" 2>/dev/null && wait "$p" 2>/dev/null
    done
    [ -d "$BENCH_TMP/pg/data" ] &&
        $PGAS "$PGBIN/pg_ctl" -D "$BENCH_TMP/pg/data" -m fast -w stop >/dev/null 2>&1
    bench_cleanup
}
trap hosts_cleanup EXIT INT TERM

# PostgreSQL, durable, on the file system of the LMDB data directories.
mkdir -p "$BENCH_TMP/pg/sock"
if [ "$(id -u)" -eq 0 ]; then   # PostgreSQL will not run as root
    chmod 755 "$BENCH_TMP"
    chown -R nobody "$BENCH_TMP/pg"
    PGAS="setpriv --reuid=nobody --regid=nogroup --clear-groups"
fi
$PGAS "$PGBIN/initdb" -D "$BENCH_TMP/pg/data" -U folio --auth=trust >"$BENCH_TMP/initdb.log" 2>&1 ||
    { cat "$BENCH_TMP/initdb.log" >&2; exit 1; }
$PGAS "$PGBIN/pg_ctl" -D "$BENCH_TMP/pg/data" -l "$BENCH_TMP/pg/log" -w \
    -o "-k $BENCH_TMP/pg/sock -c listen_addresses= -c max_connections=200" start >/dev/null
DSN="host=$BENCH_TMP/pg/sock user=folio dbname=postgres"
FS=$(df -T "$BENCH_TMP" | awk 'NR == 2 {print $2}')

# start_host NAME [foliod options]: NAME_PORT, NAME_ADMIN set
start_host() {
    name=$1; shift
    dir="$BENCH_TMP/$name"
    mkdir -p "$dir"
    # shellcheck disable=SC2086
    # shellcheck disable=SC2046
    "$FOLIOD" -f --listen 127.0.0.1:0 --admin-socket "$dir/admin.sock" \
        $(http_opt off) \
        --data-dir "$dir/data" --metrics-listen off --ready-file "$dir/ready" \
        --log-level warn --workers auto $ONLY "$@" 2>>"$dir/foliod.log" &
    HOST_PIDS="$HOST_PIDS $!"
    wait_for "$dir/ready"
    port=$(sed -n 's/^listen 127.0.0.1:\([0-9]*\)$/\1/p' "$dir/ready" | head -n 1)
    eval "${name}_PORT=$port ${name}_ADMIN=$dir/admin.sock"
}

start_host lmdb --comments-backend lmdb
start_host pg1 --comments-backend postgres --comments-dsn "$DSN"
start_host pg2 --comments-backend postgres --comments-dsn "$DSN"

# HAProxy with the recipe, in front of pg1 alone (direct and proxied then
# reach the same host): its addresses, no chroot, user or log.
HAP_PORT=$(free_port)
awk -v bind="127.0.0.1:$HAP_PORT" -v srv="127.0.0.1:$pg1_PORT" -v sock="$BENCH_TMP/hap.sock" '
    $1 == "chroot" || $1 == "user" || $1 == "group" || $1 == "daemon" { next }
    $1 == "log" && $2 != "global" { next }
    $1 == "maxconn" { print "    maxconn 1000"; next }
    $1 == "stats" && $2 == "socket" { print "    stats socket " sock " mode 600 level admin"; next }
    $1 == "bind" { print "    bind " bind; next }
    $1 == "server" { if (!done) { $3 = srv; print "    " $0; done = 1 } next }
    { print }' "$SRCDIR/dist/haproxy.cfg" >"$BENCH_TMP/haproxy.cfg"
"$HAPROXY" -db -f "$BENCH_TMP/haproxy.cfg" >"$BENCH_TMP/haproxy.log" 2>&1 &
HAP_PID=$!
i=0
until "$FOLIO_BENCH" -q -H "127.0.0.1:$HAP_PORT" -c 1 -n 1 >/dev/null 2>&1; do
    i=$((i + 1)); [ $i -gt 500 ] && { echo "hosts.sh: haproxy not up" >&2; cat "$BENCH_TMP/haproxy.log" >&2; exit 1; }
    sleep 0.02
done

# the 50-comment page (folio-bench's most popular), on each store
for port in "$lmdb_PORT" "$pg1_PORT"; do
    "$FOLIO_BENCH" -H "127.0.0.1:$port" -w comments --pages 1 --write-ratio 1 \
        -c 1 -n 50 -q >/dev/null
done

# bench PORT ADMIN ARGS...: folio-bench's comments workload, its JSON
bench() {
    port=$1; admin=$2; shift 2
    "$FOLIO_BENCH" -H "127.0.0.1:$port" -w comments -t 2 -d "$SECS" \
        --warmup 0.5 ${admin:+--admin "$admin"} --json -q "$@"
}

row() {  # row LABEL OUTS: "| label | rps | p50 / p99 | allocs/req |"
    rps=""; p50=""; p99=""; al=""
    for out in $2; do
        rps="$rps $(json_field "$out" rps)"
        p50="$p50 $(json_field "$out" p50_us)"
        p99="$p99 $(json_field "$out" p99_us)"
        al="$al $(json_field "$out" server.allocs_per_req)"
    done
    printf '| %s | %.0f | %.0f / %.0f | %s |\n' "$1" "$(m "$rps")" "$(m "$p50")" \
        "$(m "$p99")" "$(m "$al")"
}

ratio() {  # ratio OUTS_A OUTS_B: median req/s of A over B's
    a=$(for o in $1; do json_field "$o" rps; done | median)
    b=$(for o in $2; do json_field "$o" rps; done | median)
    echo "$a $b" | awk '{printf "%.2f", ($2 > 0) ? $1 / $2 : 0}'
}

l_lmdb=""; l_pg=""
for _ in $(seq "$RUNS"); do
    l_lmdb="$l_lmdb $(bench "$lmdb_PORT" "$lmdb_ADMIN" --pages 1 --write-ratio 0 -c 100 | tr -d ' ')"
    l_pg="$l_pg $(bench "$pg1_PORT" "$pg1_ADMIN" --pages 1 --write-ratio 0 -c 100 | tr -d ' ')"
done
echo "### comments.list, 50-comment page, 100 connections, backends interleaved"
echo
echo "| backend | req/s | p50 / p99 (us) | allocs/req |"
echo "|---|---:|---:|---:|"
row "lmdb" "$l_lmdb"
row "postgres (page cache)" "$l_pg"
printf '\npostgres / lmdb: %s (goal: at least 0.90)\n\n' "$(ratio "$l_pg" "$l_lmdb")"

h_direct=""; h_hap=""
for _ in $(seq "$RUNS"); do
    h_direct="$h_direct $(bench "$pg1_PORT" "" --pages 1 --write-ratio 0 -c 50 | tr -d ' ')"
    h_hap="$h_hap $(bench "$HAP_PORT" "" --pages 1 --write-ratio 0 -c 50 | tr -d ' ')"
done
echo "### comments.list, 50 connections: through HAProxy vs direct (same host)"
echo
echo "| path | req/s | p50 / p99 (us) | allocs/req |"
echo "|---|---:|---:|---:|"
row "direct" "$h_direct"
row "HAProxy (dist/haproxy.cfg, tcp)" "$h_hap"
printf '\nHAProxy / direct: %s\n\n' "$(ratio "$h_hap" "$h_direct")"

echo "### invalidation delay: posted on one host, listed on every worker of another"
echo
out=$("$STALE" --post "127.0.0.1:$pg1_PORT" --list "127.0.0.1:$pg2_PORT" \
    --conns 4 -n 200 --json)
printf '| posts | lists | p50 (us) | p99 (us) | max (us) |\n|---:|---:|---:|---:|---:|\n'
printf '| %s | %s | %s | %s | %s |\n' "$(json_field "$out" posts)" \
    "$(json_field "$out" lists)" "$(json_field "$out" p50_us)" \
    "$(json_field "$out" p99_us)" "$(json_field "$out" max_us)"

# last: the posts make the pages grow
p_lmdb=""; p_pg=""
for _ in $(seq "$RUNS"); do
    p_lmdb="$p_lmdb $(bench "$lmdb_PORT" "$lmdb_ADMIN" --pages 16 --write-ratio 1 -c 16 | tr -d ' ')"
    p_pg="$p_pg $(bench "$pg1_PORT" "$pg1_ADMIN" --pages 16 --write-ratio 1 -c 16 | tr -d ' ')"
done
echo "### comments.post, durable, group commit, 16 connections ($FS)"
echo
echo "| backend | posts/s | p50 / p99 (us) | allocs/req |"
echo "|---|---:|---:|---:|"
row "lmdb (fdatasync)" "$p_lmdb"
row "postgres (synchronous_commit = on)" "$p_pg"
echo


# Worker instructions per comments.list of the 50-comment page on each
# backend (callgrind: the same on a busy machine): one worker under
# valgrind, N and 2N lists, the difference divided by N; each run on a
# fresh store (a database of its own for postgres).  Skipped without
# valgrind.
instr() {  # instr lmdb|postgres N: sets INSTR
    be=$1; n=$2
    RUN=$((RUN + 1))
    d="$BENCH_TMP/cg$RUN"
    mkdir -p "$d"
    if [ "$be" = postgres ]; then
        "$PGBIN/createdb" -h "$BENCH_TMP/pg/sock" -U folio "cg$RUN"
        set -- --comments-backend postgres \
            --comments-dsn "host=$BENCH_TMP/pg/sock user=folio dbname=cg$RUN"
    else
        set -- --comments-backend lmdb
    fi
    # shellcheck disable=SC2086,SC2046
    valgrind --tool=callgrind --callgrind-out-file="$d/cg.%p" "$FOLIOD" -f \
        --listen 127.0.0.1:0 --admin-socket "$d/admin.sock" --data-dir "$d/data" \
        $(http_opt off) \
        --metrics-listen off --ready-file "$d/ready" --log-level warn \
        --workers 1 --request-timeout 0 --idle-timeout 0 $ONLY "$@" \
        2>>"$d/foliod.log" &
    vg=$!
    wait_for "$d/ready"
    port=$(sed -n 's/^listen 127.0.0.1:\([0-9]*\)$/\1/p' "$d/ready" | head -n 1)
    "$FOLIO_BENCH" -H "127.0.0.1:$port" -w comments --pages 1 --write-ratio 1 \
        -c 1 -n 50 -q >/dev/null
    "$FOLIO_BENCH" -H "127.0.0.1:$port" -w comments --pages 1 --write-ratio 0 \
        -c 1 -n "$n" -q >/dev/null
    kill "$vg"; wait "$vg" 2>/dev/null || true
    INSTR=$(for f in "$d"/cg.*; do
        [ "${f##*.}" = "$vg" ] && continue
        sed -n 's/^summary: *//p' "$f"
    done | sort -n | tail -n 1)
}
if command -v valgrind >/dev/null 2>&1; then
    RUN=0
    N=2000
    echo "### worker instructions per comments.list (callgrind, 50-comment page)"
    echo
    echo "| backend | instructions per list |"
    echo "|---|---:|"
    for be in lmdb postgres; do
        instr "$be" "$N"; a=$INSTR
        instr "$be" $((2 * N)); b=$INSTR
        eval "i_$be=$(( (b - a) / N ))"
        printf '| %s | %d |\n' "$be" $(( (b - a) / N ))
    done
    # shellcheck disable=SC2154
    printf '\npostgres / lmdb: %s of the instructions\n' \
        "$(echo "$i_postgres $i_lmdb" | awk '{printf "%.2f", ($2 > 0) ? $1 / $2 : 0}')"
else
    echo "hosts.sh: no valgrind: instructions per list not measured" >&2
fi
