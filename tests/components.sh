#!/bin/sh
# tests/components.sh - the end of make check: which components (programs,
# the corpus, privileges) each suite required, from the lines
# "e2e-component: SUITE WHAT STATE DETAIL" that e2e_require and e2e_want
# (tests/e2e_util.c) write into the suites' logs.  A reader of a CI log
# sees there that PostgreSQL, HAProxy, Prometheus, Chromium, go and
# google-pprof ran, and what was missing.
# Usage: sh tests/components.sh LOG...
LC_ALL=C
export LC_ALL
[ $# -gt 0 ] || exit 0
grep -h '^e2e-component: ' "$@" 2>/dev/null | sort -u | awk '
    {
        suite = $2; what = $3; state = $4
        if (!(suite in seen)) { seen[suite] = 1; order[n++] = suite }
        if (state == "used") {
            if (index(" " used[suite] " ", " " what " ") == 0)
                used[suite] = used[suite] (used[suite] == "" ? "" : " ") what
        } else {
            detail = $0
            sub(/^e2e-component: [^ ]+ [^ ]+ [^ ]+ /, "", detail)
            lack = lack sprintf("  %-26s %s %s %s\n", suite, state, what, detail)
        }
    }
    END {
        if (n == 0)
            exit 0
        for (i = 0; i < n; i++)
            if (used[order[i]] != "") {
                if (!said++)
                    print "Components the suites required (e2e_require, tests/e2e_util.h):"
                printf "  %-26s %s\n", order[i], used[order[i]]
            }
        if (lack != "")
            printf "Not there:\n%s", lack
    }'
exit 0
