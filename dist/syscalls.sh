#!/bin/sh
# dist/syscalls.sh - does foliod.service's SystemCallFilter= hold every
# system call foliod makes?  Runs the built foliod under strace through a
# life: start, load over TCP and the admin socket (ping, corpus rounds,
# freight quotes, comments posted and listed), worker recycling, the metrics endpoint,
# CPU and heap profiles, a reload, an
# upgrade to a replaced binary, USR1,
# USR2, stop; with PostgreSQL installed, a second life on the comments'
# postgres backend (posts, lists, the database stopped and started again);
# then expands the unit's
# filter with `systemd-analyze syscall-filter' and lists any call outside
# it.  Exit 0 if none.  No systemd needs to be running.
# Usage: BUILDDIR=build sh dist/syscalls.sh [FOLIOD OPTIONS...]
#   (run by `make lint-syscalls'; CORPUS_DIR, if set, is served, and the
#   example freight tables of SRCDIR/data)
set -eu
: "${BUILDDIR:=.}"
SRCDIR=${SRCDIR:-$(dirname "$0")/..}
UNIT=${UNIT:-$BUILDDIR/dist/foliod.service}
FOLIOD=${FOLIOD:-$BUILDDIR/foliod}
FOLIO_BENCH=${FOLIO_BENCH:-$BUILDDIR/folio-bench}

for tool in strace systemd-analyze python3; do
    command -v $tool >/dev/null 2>&1 || { echo "syscalls.sh: needs $tool" >&2; exit 1; }
done
[ -f "$UNIT" ] || { echo "syscalls.sh: no $UNIT (make dist/foliod.service)" >&2; exit 1; }
# A container may forbid ptrace: say so, and do not fail for it.
if ! strace -qq -o /dev/null true 2>/dev/null; then
    echo "syscalls.sh: strace cannot trace here (ptrace denied?): NOT CHECKED" >&2
    exit 0
fi

T=$(mktemp -d "${TMPDIR:-/tmp}/folio-syscalls.XXXXXX")
PID=""
PGRUN=""
cleanup() {
    [ -n "$PID" ] && kill -9 "$PID" 2>/dev/null
    [ -n "$PGRUN" ] && $PGRUN "$PGBIN/pg_ctl" -D "$T/pg/data" -m immediate stop >/dev/null 2>&1
    rm -rf "$T"
}
trap cleanup EXIT INT TERM

# wait_gen N: wait (10 s at most) until the ready file names generation N.
wait_gen() {
    i=0
    until grep -qx "generation $1" "$T/ready" 2>/dev/null; do
        i=$((i + 1))
        [ $i -gt 1000 ] && { echo "syscalls.sh: foliod not ready" >&2; cat "$T/log" >&2; exit 1; }
        sleep 0.01
    done
}

# Under the unit foliod is not root; here the tests may be.
USER_ARG=""
[ "$(id -u)" -eq 0 ] && USER_ARG="--user root"
CORPUS_ARG="--corpus off"
[ -n "${CORPUS_DIR:-}" ] && CORPUS_ARG="--corpus $CORPUS_DIR"
# The example freight tables: an LMDB import in the master, read-only
# environments in the workers.
FREIGHT_ARG="--freight-dir off --catalog off"
[ -d "$SRCDIR/data/freight" ] &&
    FREIGHT_ARG="--freight-dir $SRCDIR/data/freight --catalog $SRCDIR/data/catalog.csv"

# A copy of foliod, replaced below: the upgrade re-executes the master.
mkdir "$T/bin"
cp "$FOLIOD" "$T/bin/foliod"
# shellcheck disable=SC2086
strace -f -qq -o "$T/trace" "$T/bin/foliod" -f $USER_ARG $CORPUS_ARG $FREIGHT_ARG \
    --listen 127.0.0.1:0 --admin-socket "$T/run/admin.sock" \
    --data-dir "$T/data" --metrics-listen 127.0.0.1:0 --workers auto \
    --max-requests-per-worker 2000 --ready-file "$T/ready" \
    --log-file "$T/log" "$@" &
PID=$!
wait_gen 1
MASTER=$(sed -n 's/^pid //p' "$T/ready")   # strace's child, not $PID
PORT=$(sed -n 's/^listen 127.0.0.1:\([0-9]*\)$/\1/p' "$T/ready" | head -n 1)
METRICS=$(sed -n 's/^metrics //p' "$T/ready")
"$FOLIO_BENCH" -q -H "127.0.0.1:$PORT" -c 8 -d 1 >/dev/null
"$FOLIO_BENCH" -q -U "$T/run/admin.sock" -c 2 -d 0.3 >/dev/null
# The services' read paths, when they have data.
[ -n "${CORPUS_DIR:-}" ] &&
    "$FOLIO_BENCH" rounds -q -H "127.0.0.1:$PORT" -n 20 -c 1 --rounds 5 >/dev/null
[ -d "$SRCDIR/data/freight" ] &&
    "$FOLIO_BENCH" -q -H "127.0.0.1:$PORT" -w freight \
        --catalog "$SRCDIR/data/catalog.csv" -c 4 -d 0.5 --max-errors 100% >/dev/null
# Comments: posts are LMDB write transactions, synced, in the workers.
"$FOLIO_BENCH" -q -H "127.0.0.1:$PORT" -w comments -c 4 -d 0.5 >/dev/null
python3 -c "import urllib.request,sys; urllib.request.urlopen('http://' + sys.argv[1] + '/metrics').read()" "$METRICS"
# Profiles: SIGPROF and its timer in every worker and the master, the
# symbolizer's reads, the memfds passed back (foliod(8), PROFILING).
"$FOLIO_BENCH" -q -H "127.0.0.1:$PORT" -c 4 -d 1.2 --profile "$T/cpu.pb.gz" \
    --metrics "$METRICS" >/dev/null
for p in heap allocs 'profile?seconds=1&worker=master'; do
    python3 -c "import urllib.request,sys; urllib.request.urlopen('http://' + sys.argv[1] + '/debug/pprof/' + sys.argv[2]).read()" "$METRICS" "$p"
done
kill -HUP "$MASTER"
wait_gen 2
"$FOLIO_BENCH" -q -H "127.0.0.1:$PORT" -c 8 -d 0.5 >/dev/null
# An upgrade: a new binary under the same name, then HUP.
cp "$FOLIOD" "$T/bin/foliod.new" && mv "$T/bin/foliod.new" "$T/bin/foliod"
kill -HUP "$MASTER"
wait_gen 3
"$FOLIO_BENCH" -q -H "127.0.0.1:$PORT" -c 8 -d 0.3 >/dev/null
mv "$T/log" "$T/log.1"
kill -USR1 "$MASTER"
kill -USR2 "$MASTER"
i=0
until grep -q "stats: total" "$T/log" 2>/dev/null; do
    i=$((i + 1)); [ $i -gt 1000 ] && { echo "syscalls.sh: no USR2 line" >&2; exit 1; }
    sleep 0.01
done
kill -TERM "$MASTER"
wait $PID || { echo "syscalls.sh: foliod exited $?" >&2; exit 1; }
PID=""

# The comments' PostgreSQL backend (libpq in the workers), when the
# PostgreSQL server is installed: posts and lists, the server stopped
# (reconnects, 14s) and started again.
PGBIN=""
for d in $(command -v initdb 2>/dev/null | xargs -r dirname) /usr/lib/postgresql/*/bin; do
    [ -x "$d/initdb" ] && [ -x "$d/postgres" ] && [ -x "$d/pg_ctl" ] && PGBIN=$d
done
if [ -n "$PGBIN" ]; then
    mkdir -p "$T/pg/sock"
    PGAS=""
    if [ "$(id -u)" -eq 0 ]; then   # PostgreSQL will not run as root
        chmod 755 "$T"
        chown -R nobody "$T/pg"
        PGAS="setpriv --reuid=nobody --regid=nogroup --clear-groups"
    fi
    $PGAS "$PGBIN/initdb" -D "$T/pg/data" -U folio --auth=trust -N >"$T/pg.log" 2>&1 ||
        { cat "$T/pg.log" >&2; exit 1; }
    PGRUN="$PGAS"
    pg_start() {
        $PGAS "$PGBIN/pg_ctl" -D "$T/pg/data" -l "$T/pg/log" -w \
            -o "-k $T/pg/sock -c listen_addresses= -c fsync=off" start >/dev/null
    }
    pg_start
    rm -f "$T/ready"
    # shellcheck disable=SC2086
    strace -f -qq -o "$T/trace.pg" "$FOLIOD" -f $USER_ARG --corpus off \
        --freight-dir off --catalog off --listen 127.0.0.1:0 \
        --admin-socket "$T/run/admin.sock" --data-dir "$T/data" \
        --metrics-listen off --workers 2 --ready-file "$T/ready" \
        --log-file "$T/log.pg" --comments-backend postgres \
        --comments-dsn "host=$T/pg/sock user=folio dbname=postgres" \
        --comments-timeout 1s "$@" &
    PID=$!
    wait_gen 1
    MASTER=$(sed -n 's/^pid //p' "$T/ready")
    PORT=$(sed -n 's/^listen 127.0.0.1:\([0-9]*\)$/\1/p' "$T/ready" | head -n 1)
    "$FOLIO_BENCH" -q -H "127.0.0.1:$PORT" -w comments -c 4 -d 0.5 >/dev/null
    $PGAS "$PGBIN/pg_ctl" -D "$T/pg/data" -m immediate -w stop >/dev/null
    "$FOLIO_BENCH" -q -H "127.0.0.1:$PORT" -w comments -c 2 -d 0.3 \
        --max-errors 100% >/dev/null || true
    pg_start
    "$FOLIO_BENCH" -q -H "127.0.0.1:$PORT" -w comments -c 2 -d 0.5 \
        --max-errors 100% >/dev/null || true
    kill -TERM "$MASTER"
    wait $PID || { echo "syscalls.sh: foliod (postgres) exited $?" >&2; exit 1; }
    PID=""
    cat "$T/trace.pg" >> "$T/trace"
else
    echo "syscalls.sh: no PostgreSQL server: the postgres backend NOT CHECKED" >&2
fi

systemd-analyze syscall-filter > "$T/groups"
python3 - "$UNIT" "$T/groups" "$T/trace" <<'EOF'
import re, sys
unit, groups_file, trace = sys.argv[1:4]
groups, cur = {}, None
for line in open(groups_file):
    line = line.rstrip()
    if line.startswith('@'):
        cur = line.split()[0]
        groups[cur] = []
    elif cur and line.strip() and not line.strip().startswith('#'):
        groups[cur].append(line.strip())
def expand(names):
    out = set()
    for n in names:
        if n.startswith('@'):
            if n not in groups:
                sys.exit('syscalls.sh: unknown group %s' % n)
            out |= expand(groups[n])
        else:
            out.add(n)
    return out
allow, deny = set(), set()
for line in open(unit):
    m = re.match(r'\s*SystemCallFilter=(.*)', line)
    if not m:
        continue
    v = m.group(1).strip()
    if v.startswith('~'):
        deny |= expand(v[1:].split())
    else:
        allow |= expand(v.split())
allowed = allow - deny
used = set()
for line in open(trace):
    m = re.match(r'\d+\s+(?:<\.\.\. )?([a-z0-9_]+)[( ]', line)
    if m:
        used.add(m.group(1))
bad = sorted(used - allowed)
print('foliod made %d distinct system calls' % len(used))
if bad:
    print('outside SystemCallFilter= of %s: %s' % (unit, ' '.join(bad)))
    sys.exit(1)
print('all of them are allowed by %s' % unit)
EOF
