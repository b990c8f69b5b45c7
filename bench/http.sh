#!/bin/sh
# bench/http.sh - the HTTP face's figures for BENCHMARKS.md:
#   1. the mouthful case study as it was written: 100 curl POSTs to
#      /test, then GET /v1/comments?uri=/test at 100 connections, beside
#      nginx serving the same bytes as a static file, the same client for
#      both: hey (-n HEY_N, the case study's 1,000,000 by default), wrk,
#      folio-bench --proto http; server.ping over HTTP (GET /status)
#      beside the cached list; foliod's CPU and heap allocations per
#      request (server.stats, folio-bench --admin);
#   2. freight quotes at 240 and 480 connections (7.5% uncovered CEPs),
#      over HTTP and over msgpack-RPC, folio-bench for both.
# Usage: BUILDDIR=build sh bench/http.sh [SECONDS] [RUNS]  (or make bench-http)
# Each folio-bench and wrk figure is the median of RUNS runs of SECONDS,
# foliod and nginx interleaved; hey runs once each (HEY_N requests).
# Needs nginx, hey and wrk (a missing client's rows are left out).
set -eu
. "$(dirname "$0")/lib.sh"

SECS=${1:-5}
RUNS=${2:-3}
HEY_N=${HEY_N:-1000000}
NGINX=${NGINX:-nginx}
DATA=${DATA:-$(cd "$(dirname "$0")/.." && pwd)/data}
NGINX_PID=""

if ! "$FOLIO_BENCH" --help 2>&1 | grep -q -- '--path'; then
    echo "$FOLIO_BENCH has no --proto http: build a newer one" >&2
    exit 1
fi
command -v "$NGINX" >/dev/null || { echo "nginx is not installed" >&2; exit 1; }

http_cleanup() {
    [ -n "$NGINX_PID" ] && kill "$NGINX_PID" 2>/dev/null && wait "$NGINX_PID" 2>/dev/null
    bench_cleanup
}
trap http_cleanup EXIT INT TERM

start_foliod --workers auto --freight-dir "$DATA/freight" \
    --catalog "$DATA/catalog.csv"
F=127.0.0.1:$FOLIO_HTTP_PORT
[ -n "$FOLIO_HTTP_PORT" ] || { echo "$FOLIOD has no HTTP face" >&2; exit 1; }

# The case study's thread: 100 posts, its own curl command.
for _ in $(seq 100); do
    curl -sf --request POST --url "http://$F/v1/comments" \
        --header 'content-type: application/json' \
        --data '{"path": "/test","body": "this is just a test","author": "vik"}' \
        >/dev/null
done

# nginx: two workers (one a core, as foliod's), the list's bytes as a file.
NGINX_PORT=$(free_port)
mkdir -p "$BENCH_TMP/www" "$BENCH_TMP/nginx"
curl -sf "http://$F/v1/comments?uri=/test" >"$BENCH_TMP/www/test.json"
chmod -R a+rX "$BENCH_TMP"
cat >"$BENCH_TMP/nginx/nginx.conf" <<EOF
worker_processes 2;
error_log $BENCH_TMP/nginx/error.log warn;
pid $BENCH_TMP/nginx/nginx.pid;
events { worker_connections 4096; }
http {
    access_log off;
    keepalive_requests 100000000;
    types { application/json json; }
    client_body_temp_path $BENCH_TMP/nginx;
    proxy_temp_path $BENCH_TMP/nginx;
    fastcgi_temp_path $BENCH_TMP/nginx;
    uwsgi_temp_path $BENCH_TMP/nginx;
    scgi_temp_path $BENCH_TMP/nginx;
    server {
        listen 127.0.0.1:$NGINX_PORT;
        root $BENCH_TMP/www;
    }
}
EOF
${SERVER_WRAP:-} "$NGINX" -p "$BENCH_TMP/nginx" -c "$BENCH_TMP/nginx/nginx.conf" \
    -g 'daemon off;' 2>>"$BENCH_TMP/nginx/error.log" &
NGINX_PID=$!
i=0
until curl -sf "http://127.0.0.1:$NGINX_PORT/test.json" >"$BENCH_TMP/nginx.json"; do
    i=$((i + 1))
    [ $i -gt 1000 ] && { echo "nginx did not start" >&2; cat "$BENCH_TMP/nginx/error.log" >&2; exit 1; }
    sleep 0.01
done
cmp -s "$BENCH_TMP/nginx.json" "$BENCH_TMP/www/test.json" ||
    { echo "nginx does not serve the list's bytes" >&2; exit 1; }
BYTES=$(wc -c <"$BENCH_TMP/www/test.json")
LIST="/v1/comments?uri=/test"

# hey_rps URL: req/s of one hey run; exits 1 unless every answer was 200.
hey_rps() {
    hey -n "$HEY_N" -c 100 "$1" >"$BENCH_TMP/hey.out" 2>&1
    if grep -q 'Error distribution' "$BENCH_TMP/hey.out" ||
        ! grep -q "\[200\][[:space:]]*$HEY_N responses" "$BENCH_TMP/hey.out"; then
        echo "hey $1: not $HEY_N answers of 200" >&2
        cat "$BENCH_TMP/hey.out" >&2
        return 1
    fi
    awk '/Requests\/sec:/ { printf "%.0f", $2 }' "$BENCH_TMP/hey.out"
}

# wrk_rps URL: req/s of one wrk run (2 threads, 100 connections).
wrk_rps() {
    wrk -t 2 -c 100 -d "${SECS}s" "$1" >"$BENCH_TMP/wrk.out" 2>&1
    if grep -q 'Non-2xx\|Socket errors' "$BENCH_TMP/wrk.out"; then
        cat "$BENCH_TMP/wrk.out" >&2
        return 1
    fi
    awk '/Requests\/sec:/ { printf "%.0f", $2 }' "$BENCH_TMP/wrk.out"
}

# fbh ADDR PATH [options]: one folio-bench --proto http run, its JSON.
fbh() {
    _a=$1 _p=$2
    shift 2
    # shellcheck disable=SC2086
    ${CLIENT_WRAP:-} "$FOLIO_BENCH" --proto http -H "$_a" --path "$_p" -c 100 \
        -t 2 -d "$SECS" --warmup 0.5 --json -q "$@"
}

ratio() {
    echo "$1 $2" | awk '{ if ($2 > 0) printf "%.2f", $1 / $2; else print "-" }'
}

echo "### GET /v1/comments?uri=/test (100 comments, $BYTES bytes), 100 connections"
echo
echo "| client | foliod req/s | nginx req/s | foliod / nginx |"
echo "|---|---:|---:|---:|"
if command -v hey >/dev/null; then
    fh=$(hey_rps "http://$F$LIST")
    nh=$(hey_rps "http://127.0.0.1:$NGINX_PORT/test.json")
    echo "| hey -n $HEY_N -c 100 | $fh | $nh | $(ratio "$fh" "$nh") |"
else
    echo "hey is not installed: its row is left out" >&2
fi
fw=""; nw=""; ff=""; nf=""; fp=""; fcpu=""; falloc=""; pcpu=""; palloc=""
for _ in $(seq "$RUNS"); do
    if command -v wrk >/dev/null; then
        fw="$fw $(wrk_rps "http://$F$LIST")"
        nw="$nw $(wrk_rps "http://127.0.0.1:$NGINX_PORT/test.json")"
    fi
    out=$(fbh "$F" "$LIST" --admin "$FOLIO_ADMIN" --server-pid "$FOLIOD_PID")
    ff="$ff $(json_field "$out" rps)"
    fcpu="$fcpu $(json_field "$out" server.cpu_us_per_req)"
    falloc="$falloc $(json_field "$out" server.allocs_per_req)"
    out=$(fbh "127.0.0.1:$NGINX_PORT" /test.json)
    nf="$nf $(json_field "$out" rps)"
    out=$(fbh "$F" /status --admin "$FOLIO_ADMIN" --server-pid "$FOLIOD_PID")
    fp="$fp $(json_field "$out" rps)"
    pcpu="$pcpu $(json_field "$out" server.cpu_us_per_req)"
    palloc="$palloc $(json_field "$out" server.allocs_per_req)"
done
if [ -n "$fw" ]; then
    a=$(m "$fw"); b=$(m "$nw")
    printf '| wrk -t 2 -c 100 -d %ss | %.0f | %.0f | %s |\n' "$SECS" "$a" "$b" "$(ratio "$a" "$b")"
fi
a=$(m "$ff"); b=$(m "$nf"); p=$(m "$fp")
printf '| folio-bench --proto http -c 100 -d %s | %.0f | %.0f | %s |\n' "$SECS" "$a" "$b" "$(ratio "$a" "$b")"
echo
echo "| foliod, folio-bench --proto http | req/s | server CPU us/req | allocs/req |"
echo "|---|---:|---:|---:|"
printf '| GET %s | %.0f | %s | %s |\n' "$LIST" "$a" "$(m "$fcpu")" "$(m "$falloc")"
printf '| GET /status (server.ping) | %.0f | %s | %s |\n' "$p" "$(m "$pcpu")" "$(m "$palloc")"
printf '\ncached list / server.ping over HTTP: %s (goal: at least 0.83, within 1.2x)\n\n' \
    "$(ratio "$a" "$p")"

echo "### freight.quote, 7.5% uncovered CEPs: HTTP and msgpack-RPC"
echo
echo "| connections | HTTP req/s | HTTP p50 / p99 (us) | RPC req/s | RPC p50 / p99 (us) | HTTP / RPC |"
echo "|---:|---:|---:|---:|---:|---:|"
for c in 240 480; do
    hr=""; h50=""; h99=""; rr=""; r50=""; r99=""
    for _ in $(seq "$RUNS"); do
        out=$("$FOLIO_BENCH" --proto http -H "$F" -w freight \
            --catalog "$DATA/catalog.csv" --uncovered 7.5 -c "$c" -t 2 \
            -d "$SECS" --warmup 0.5 --json -q)
        hr="$hr $(json_field "$out" rps)"
        h50="$h50 $(json_field "$out" p50_us)"
        h99="$h99 $(json_field "$out" p99_us)"
        out=$("$FOLIO_BENCH" -H "127.0.0.1:$FOLIO_PORT" -w freight \
            --catalog "$DATA/catalog.csv" --uncovered 7.5 -c "$c" -t 2 \
            -d "$SECS" --warmup 0.5 --json -q)
        rr="$rr $(json_field "$out" rps)"
        r50="$r50 $(json_field "$out" p50_us)"
        r99="$r99 $(json_field "$out" p99_us)"
    done
    a=$(m "$hr"); b=$(m "$rr")
    printf '| %s | %.0f | %.0f / %.0f | %.0f | %.0f / %.0f | %s |\n' "$c" \
        "$a" "$(m "$h50")" "$(m "$h99")" "$b" "$(m "$r50")" "$(m "$r99")" \
        "$(ratio "$a" "$b")"
done
echo
