#!/bin/sh
# dist/callgraph.sh - do the calls between the source files of the
# programs form no circle (STYLE.md section 8: one place decides, lower
# files report and never call back up)?  Every folder that builds a
# library or a program: src/, src/cli/, src/prof/, shm/, worker/,
# master/, bench/.  cscope's "functions calling this function" (-L -3)
# for every function that is not static (universal-ctags finds them),
# turned into one graph of which file calls which, over all the folders
# at once (a circle through two folders is a circle too); a strongly
# connected component of more than one file is a circle.  A function
# defined in several files (prof.c and prof_off.c, one per build) is a
# call to each of them, except from those files themselves.  Prints the
# edges, a line per folder, and every circle; exit 1 if there is one.
# Calls through function pointers (libevent callbacks, the method table,
# folio-bench's table of modes) are not calls here: that is how a lower
# file reports without calling up.
# Usage: sh dist/callgraph.sh [SRCDIR [FOLDER...]]   (make lint-calls)
set -eu
SRCDIR=${1:-$(dirname "$0")/..}
[ $# -gt 0 ] && shift
[ $# -gt 0 ] || set -- src src/cli src/prof shm worker master bench
for tool in cscope ctags python3; do
    command -v $tool >/dev/null 2>&1 || { echo "callgraph.sh: needs $tool" >&2; exit 1; }
done
ctags --version 2>/dev/null | grep -q 'Universal Ctags' ||
    { echo "callgraph.sh: needs universal-ctags" >&2; exit 1; }
T=$(mktemp -d "${TMPDIR:-/tmp}/folio-callgraph.XXXXXX")
trap 'rm -rf "$T"' EXIT INT TERM
python3 - "$SRCDIR" "$T" "$@" <<'PY'
import collections, os, subprocess, sys
top, tmp, folders = sys.argv[1], sys.argv[2], sys.argv[3:]
os.chdir(top)
srcs = sorted(os.path.join(d, f) for d in folders for f in os.listdir(d)
              if f.endswith('.c'))
db = os.path.join(tmp, 'cscope.out')
subprocess.run(['cscope', '-b', '-k', '-f', db] + srcs, check=True)
defs = collections.defaultdict(set)
for s in srcs:
    out = subprocess.run(['ctags', '-f', '-', '--fields=+k', '--c-kinds=f', s],
                         capture_output=True, text=True, check=True).stdout
    for line in out.splitlines():
        fields = line.split('\t')
        if 'file:' not in fields[3:]:      # static functions are file:
            defs[fields[0]].add(s)
edges = collections.defaultdict(lambda: collections.defaultdict(set))
for name, where in defs.items():
    out = subprocess.run(['cscope', '-d', '-f', db, '-L', '-3', name],
                         capture_output=True, text=True, check=True).stdout
    for line in out.splitlines():
        caller = line.split()[0]
        if caller in where or not caller.endswith('.c'):
            continue
        for callee in where:
            edges[caller][callee].add(name)
for a in sorted(edges):
    for b in sorted(edges[a]):
        print('%s -> %s: %s' % (a, b, ' '.join(sorted(edges[a][b]))))
sys.setrecursionlimit(10 * len(srcs) + 100)
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
for v in sorted(edges):
    if v not in index:
        visit(v)
in_circle = {f for c in circles for f in c}
for d in folders:
    mine = [s for s in srcs if os.path.dirname(s) == d]
    calling = [s for s in mine if s in edges]
    bad = sorted(set(mine) & in_circle)
    print('%s/: %d files, %d calling others, %s' %
          (d, len(mine), len(calling),
           'in a circle: ' + ' '.join(bad) if bad else 'no circle'))
for c in circles:
    print('a circle of calls: %s' % ' '.join(c))
sys.exit(1 if circles else 0)
PY
