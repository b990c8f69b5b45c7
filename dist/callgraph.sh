#!/bin/sh
# dist/callgraph.sh - do the calls between the files of master/ and of
# worker/ form no circle (STYLE.md section 8: one place decides, lower
# files report and never call back up)?  For each folder: cscope's
# "functions calling this function" (-L -3) for every function that is
# not static (universal-ctags finds them), turned into a graph of which
# file calls which; a strongly connected component of more than one file
# is a circle.  Prints the edges, and every circle; exit 1 if there is one.
# Calls through function pointers (libevent callbacks, the method table)
# are not calls here: that is how a lower file reports without calling up.
# Usage: sh dist/callgraph.sh [SRCDIR]   (run by `make lint-calls')
set -eu
SRCDIR=${1:-$(dirname "$0")/..}
for tool in cscope ctags python3; do
    command -v $tool >/dev/null 2>&1 || { echo "callgraph.sh: needs $tool" >&2; exit 1; }
done
ctags --version 2>/dev/null | grep -q 'Universal Ctags' ||
    { echo "callgraph.sh: needs universal-ctags" >&2; exit 1; }
T=$(mktemp -d "${TMPDIR:-/tmp}/folio-callgraph.XXXXXX")
trap 'rm -rf "$T"' EXIT INT TERM
status=0
for dir in master worker; do
    python3 - "$SRCDIR" "$dir" "$T" <<'PY' || status=1
import collections, os, subprocess, sys
top, folder, tmp = sys.argv[1:4]
os.chdir(top)
srcs = sorted(os.path.join(folder, f) for f in os.listdir(folder)
              if f.endswith('.c'))
db = os.path.join(tmp, 'cscope.' + folder)
subprocess.run(['cscope', '-b', '-k', '-f', db] + srcs, check=True)
defs = {}
for s in srcs:
    out = subprocess.run(['ctags', '-f', '-', '--fields=+k', '--c-kinds=f', s],
                         capture_output=True, text=True, check=True).stdout
    for line in out.splitlines():
        fields = line.split('\t')
        if 'file:' not in fields[3:]:      # static functions are file:
            defs[fields[0]] = s
edges = collections.defaultdict(lambda: collections.defaultdict(set))
for name, where in defs.items():
    out = subprocess.run(['cscope', '-d', '-f', db, '-L', '-3', name],
                         capture_output=True, text=True, check=True).stdout
    for line in out.splitlines():
        caller = line.split()[0]
        if caller != where and caller.endswith('.c'):
            edges[caller][where].add(name)
for a in sorted(edges):
    for b in sorted(edges[a]):
        print('%s -> %s: %s' % (a, b, ' '.join(sorted(edges[a][b]))))
index, low, stack, on, circles = {}, {}, [], set(), []
def visit(v):
    index[v] = low[v] = len(index)
    stack.append(v)
    on.add(v)
    for w in edges.get(v, {}):
        if w not in index:
            visit(w)
            low[v] = min(low[v], low[w])
        elif w in on:
            low[v] = min(low[v], index[w])
    if low[v] == index[v]:
        comp = []
        while True:
            w = stack.pop()
            on.discard(w)
            comp.append(w)
            if w == v:
                break
        if len(comp) > 1:
            circles.append(sorted(comp))
for v in list(edges):
    if v not in index:
        visit(v)
if circles:
    for c in circles:
        print('%s/: a circle of calls: %s' % (folder, ' '.join(c)))
    sys.exit(1)
print('%s/: %d files, %d calling others, no circle' %
      (folder, len(srcs), len(edges)))
PY
done
exit $status
