#!/bin/sh
# tests/lint-sleeps.sh - `make lint-tests` (CI runs it): no sleep stands in
# for synchronization in tests/ (STYLE.md section 10).  A test waits for a
# state the server reports, bounded, through e2e_wait_more; a delay that is
# part of the scenario (a slow reader's pace) goes through e2e_pace_ms.
# Any other sleep in tests/ fails: usleep, nanosleep, clock_nanosleep,
# sleep(), poll(NULL, ...), select() without descriptors, and sleep in the
# Python and shell scripts.  The allowed places, each with its reason:
#   tests/e2e_util.c  pause_ms        the pause of e2e_wait_more, e2e_pace_ms
#                                     and the util's own bounded waits
#   tests/eio_shim.c  (the file)      a slow disk inside foliod: the fault
#                                     itself, not the test waiting
# Usage: sh tests/lint-sleeps.sh TESTS_DIR
set -eu
dir=${1:-tests}
status=0
for f in "$dir"/*.c "$dir"/*.h; do
    [ -e "$f" ] || continue
    case ${f##*/} in
    eio_shim.c) continue ;;
    esac
    awk -v file="${f#"$dir"/}" '
        # the function a line is in: our definitions start at column 0
        /^[A-Za-z_][A-Za-z0-9_]*\(/ {
            fn = $0
            sub(/\(.*/, "", fn)
            if (fn == "START_TEST") {
                fn = $0
                sub(/^START_TEST\(/, "", fn)
                sub(/\).*/, "", fn)
            }
        }
        {
            line = $0
            sub(/\/\*.*\*\//, "", line)    # a comment on the line
            if (line ~ /^[ \t]*(\*|\/\*)/)
                next
            if (line ~ /(^|[^A-Za-z0-9_])(usleep|nanosleep|clock_nanosleep|sleep)[ \t]*\(/ ||
                line ~ /poll[ \t]*\([ \t]*NULL[ \t]*,/ ||
                line ~ /select[ \t]*\([ \t]*0[ \t]*,/) {
                if (file == "e2e_util.c" && fn == "pause_ms")
                    next
                printf "%s:%d: in %s: a sleep (wait with e2e_wait_more, or pace with e2e_pace_ms): %s\n", file, NR, fn, $0
                bad = 1
            }
        }
        END { exit bad }' "$f" || status=1
done
for f in "$dir"/*.py "$dir"/*.sh; do
    [ -e "$f" ] || continue
    case ${f##*/} in
    lint-sleeps.sh) continue ;;
    esac
    if grep -n -E '(^|[^A-Za-z0-9_.])(time\.)?sleep([ (]|$)' "$f" |
        grep -v -E '^[0-9]+:[[:space:]]*#'; then
        echo "$f: a sleep (above): wait for a state, bounded" >&2
        status=1
    fi
done
[ $status -eq 0 ] || echo "lint-tests: sleeps used as waits in $dir (see tests/lint-sleeps.sh)" >&2
exit $status
