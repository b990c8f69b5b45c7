#!/bin/sh
# bench/freight-jmeter.sh - the freight case study's own load test: JMeter
# (non-GUI, jmeter -n -t) running bench/freight-http.jmx against foliod's
# HTTP face: THREADS virtual users ramped up over RAMPUP seconds, for
# DURATION seconds, each POSTing a quote of one catalog SKU to a CEP of a
# list in which 7.53% of the CEPs are covered by no carrier (the case
# study's error share: answered 404), every answer held to BUDGET ms.
# Usage: freight-jmeter.sh HOST:PORT [THREADS [RAMPUP [DURATION [BUDGET]]]]
# (defaults 240 1 120 150: the case study's first run; 480 is its second).
# Prints one line of figures, name=value, and the JTL's path:
#   samples= ok= not_found= other= share_404= over_budget= rps= p50= p90= p99=
# Exits 1 if JMeter failed, or an answer was neither 200 nor 404.
set -eu

[ $# -ge 1 ] || { echo "usage: $0 HOST:PORT [THREADS [RAMPUP [DURATION [BUDGET]]]]" >&2; exit 2; }
ADDR=$1 THREADS=${2:-240} RAMPUP=${3:-1} DURATION=${4:-120} BUDGET=${5:-150}
HOST=${ADDR%:*} PORT=${ADDR##*:}
HERE=$(cd "$(dirname "$0")" && pwd)
OUT=${JMETER_OUT:-$(mktemp -d "${TMPDIR:-/tmp}/freight-jmeter.XXXXXX")}
mkdir -p "$OUT"

# 10,000 requests, the same every run: 753 CEPs below 01000000 (no band
# covers them, as folio-bench's freight workload), the others spread over
# the covered range; SKUs of the catalog light enough for every band
# (real and cubic weight under 20 kg), one of each.
CATALOG=${CATALOG:-$HERE/../data/catalog.csv}
awk -F, 'NR > 1 && $2 < 20000 && $3 * $4 * $5 / 6 < 20000 { sku[n++] = $1 }
END {
    if (n == 0) { print "no SKU in the catalog" > "/dev/stderr"; exit 1 }
    for (i = 0; i < 10000; i++) {
        if ((i * 7919) % 10000 < 753)
            cep = sprintf("00%06d", (i * 31337) % 1000000)
        else
            cep = sprintf("%08d", 1000000 + (i * 104729) % 99000000)
        printf "%s,%s,1\n", cep, sku[(i * 17) % n]
    }
}' "$CATALOG" > "$OUT/freight-jmeter.csv"

# JMeter's own log and results beside the CSV; the JTL as CSV, with names.
set -- -n -t "$HERE/freight-http.jmx" -l "$OUT/results.jtl" \
    -j "$OUT/jmeter.log" \
    -Jhost="$HOST" -Jport="$PORT" -Jthreads="$THREADS" -Jrampup="$RAMPUP" \
    -Jduration="$DURATION" -Jbudget="$BUDGET" -Jcsv="$OUT/freight-jmeter.csv" \
    -Jjmeter.save.saveservice.output_format=csv \
    -Jjmeter.save.saveservice.print_field_names=true
jmeter "$@" >"$OUT/jmeter.out" 2>&1 || true
if grep -q ForbiddenClassException "$OUT/jmeter.out"; then
    # Debian's JMeter 2.13 with its XStream 1.4.20, which refuses every
    # class it was not told of: the same JMeter, told (bench/jmeter-xstream.java).
    home=${JMETER_HOME:-/usr/share/jmeter}
    cp=$home/bin/ApacheJMeter.jar:$home/lib/jorphan.jar
    for j in "$home"/lib/ext/*.jar; do cp=$cp:$j; done
    java -Djmeter.home="$home" -cp "$cp" "$HERE/jmeter-xstream.java" "$@" \
        >"$OUT/jmeter.out" 2>&1 || true
fi
if [ ! -s "$OUT/results.jtl" ] || ! grep -q "^summary =" "$OUT/jmeter.out"; then
    echo "freight-jmeter.sh: jmeter failed: see $OUT/jmeter.out" >&2
    tail -n 5 "$OUT/jmeter.out" >&2
    exit 1
fi

# The JTL's columns by name: elapsed, responseCode, success, failureMessage.
awk -F, -v budget="$BUDGET" -v secs="$DURATION" '
NR == 1 { for (i = 1; i <= NF; i++) col[$i] = i; next }
{
    n++
    code = $(col["responseCode"]); e = $(col["elapsed"]) + 0
    t[n] = e
    if (code == "200") ok++
    else if (code == "404") nf++
    else other++
    if (e > budget + 0) over++
    if (first == "" || $(col["timeStamp"]) < first) first = $(col["timeStamp"])
    if ($(col["timeStamp"]) + e > last) last = $(col["timeStamp"]) + e
}
END {
    if (n == 0) { print "samples=0"; exit 1 }
    # percentiles by sorting (insertion into a heap would do; n is small)
    m = asort_n(t, n)
    span = (last - first) / 1000.0
    p99 = int(n * 0.99) + 1
    if (p99 > n) p99 = n
    fmt = "samples=%d ok=%d not_found=%d other=%d share_404=%.2f%% over_budget=%d rps=%.0f p50=%d p90=%d p99=%d\n"
    printf fmt, n, ok, nf, other, 100.0 * nf / n, over, (span > 0 ? n / span : 0), t[int(n * 0.50) + 1], t[int(n * 0.90) + 1], t[p99]
    exit other > 0 ? 1 : 0
}
# A plain sort of t[1..n] (POSIX awk has no asort): heapsort.
function sift(a, s, e,    r, c, x) {
    for (r = s; (c = 2 * r) <= e; r = c) {
        if (c < e && a[c] < a[c + 1]) c++
        if (a[r] >= a[c]) return
        x = a[r]; a[r] = a[c]; a[c] = x
    }
}
function asort_n(a, n,    s, x) {
    for (s = int(n / 2); s >= 1; s--) sift(a, s, n)
    for (; n > 1; n--) { x = a[1]; a[1] = a[n]; a[n] = x; sift(a, 1, n - 1) }
    return n
}' "$OUT/results.jtl"
echo "jtl=$OUT/results.jtl"
