#!/bin/sh
# tests/valgrind-foliod.sh - foliod under Valgrind memcheck, for the
# end-to-end suites: FOLIOD=/path/to/this e2e_SUITE (tests/valgrind-e2e.sh
# does it for every suite).  The workers are forked, not executed, so
# memcheck follows them without --trace-children; it is there for what
# foliod may exec.  One log per process in $FOLIO_VALGRIND_DIR.
set -eu
dir=${FOLIO_VALGRIND_DIR:-/tmp/folio-valgrind}
mkdir -p "$dir"
# Workers that dropped privileges (--user) write their logs here too.
chmod 1777 "$dir" 2>/dev/null || true
exec valgrind --tool=memcheck --trace-children=yes --track-fds=no \
    --leak-check=full --show-leak-kinds=definite,indirect \
    --errors-for-leak-kinds=definite,indirect --num-callers=30 \
    --log-file="$dir/foliod.%p.log" \
    "${FOLIOD_BIN:-$(pwd)/foliod}" "$@"
