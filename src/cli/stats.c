/*
 * stats.c - `folio stats`: server.stats (folio-rpc(7)) as a table of
 * worker processes with a totals line, in the manner of top or PHP-FPM's
 * full status page, and the per-method latency table.
 *
 * REQ/S, CPU% and ALLOC/REQ compare two samples: with a previous sample
 * (stats --watch) they are computed over the interval between the two,
 * per worker matched by pid, by the server's own uptime clock; otherwise
 * (one shot, or a worker that was not in the previous sample) since the
 * process started, from its uptime.
 */
#include "config.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "src/cli/cli_int.h"

struct row {
    uint64_t pid;
    const char *state;
    uint32_t state_len;
    double uptime, requests, cpu, allocs, heap, conns;
};

/* Read a worker row or the totals (state NULL) from a map. */
static int
read_row(struct folio_mp_cur m, struct row *r)
{
    double user, sys, pid;

    memset(r, 0, sizeof(*r));
    if (folio_cli_get_num(m, "requests", &r->requests) != 0 ||
        folio_cli_get_num(m, "cpu_user_s", &user) != 0 ||
        folio_cli_get_num(m, "cpu_sys_s", &sys) != 0 ||
        folio_cli_get_num(m, "alloc_calls", &r->allocs) != 0 ||
        folio_cli_get_num(m, "heap_inuse", &r->heap) != 0 ||
        folio_cli_get_num(m, "conns_open", &r->conns) != 0)
        return -1;
    r->cpu = user + sys;
    if (folio_cli_get_num(m, "pid", &pid) == 0) {
        r->pid = (uint64_t)pid;
        if (folio_cli_get_str(m, "state", &r->state, &r->state_len) != 0 ||
            folio_cli_get_num(m, "uptime_s", &r->uptime) != 0)
            return -1;
    }
    return 0;
}

/* Read the "workers" array: *out is calloc'ed (free it), *n rows. */
static int
read_rows(struct folio_mp_cur res, struct row **out, uint32_t *n)
{
    struct folio_mp_cur w;
    uint32_t i;

    *out = NULL;
    if (folio_cli_get(res, "workers", &w) != 0 ||
        folio_mp_read_array(&w, n) != 0)
        return -1;
    if ((*out = calloc(*n + 1, sizeof(**out))) == NULL)
        return -1;
    for (i = 0; i < *n; i++)
        if (read_row(w, &(*out)[i]) != 0 || folio_mp_skip(&w) != 0)
            return -1;
    return 0;
}

static void
print_row(const char *pid, const char *state, const struct row *r,
          const struct row *before)
{
    double dt = r->uptime, dreq = r->requests, dcpu = r->cpu,
           dalloc = r->allocs;
    char up[32], heap[32], apr[32];

    if (before != NULL && r->uptime > before->uptime) {
        dt = r->uptime - before->uptime;
        dreq = r->requests - before->requests;
        dcpu = r->cpu - before->cpu;
        dalloc = r->allocs - before->allocs;
    }
    if (dreq > 0)
        snprintf(apr, sizeof(apr), "%.2f", dalloc / dreq);
    else
        snprintf(apr, sizeof(apr), "-");
    printf("%7s %-8s %6s %10.0f %9.1f %5.1f %9s %10s %5.0f\n", pid, state,
           folio_cli_fmt_duration(up, sizeof(up), r->uptime), r->requests,
           dt > 0 ? dreq / dt : 0.0, dt > 0 ? dcpu / dt * 100 : 0.0, apr,
           folio_cli_fmt_bytes(heap, sizeof(heap), r->heap), r->conns);
}

static void
print_errors(struct folio_mp_cur totals)
{
    struct folio_mp_cur by;
    const char *name;
    uint32_t n, len, i;
    double v;

    if (folio_cli_get(totals, "errors_by_code", &by) != 0 ||
        folio_mp_read_map(&by, &n) != 0 || n == 0)
        return;
    fputs("errors by status: ", stdout);
    for (i = 0; i < n; i++) {
        if (folio_mp_read_str(&by, &name, &len) != 0 ||
            folio_cli_num(&by, &v) != 0)
            break;
        if (i > 0)
            fputs(", ", stdout);
        folio_cli_put_text(stdout, name, len);
        printf(" %.0f", v);
    }
    putchar('\n');
}

static void
print_methods(struct folio_mp_cur totals)
{
    struct folio_mp_cur m, row;
    const char *name;
    uint32_t n, len, i;
    double calls, errors, mean, p50, p99, p999;

    if (folio_cli_get(totals, "methods", &m) != 0 ||
        folio_mp_read_map(&m, &n) != 0 || n == 0)
        return;
    printf("\n%-22s %10s %7s %8s %8s %8s %8s\n", "METHOD", "CALLS", "ERRORS",
           "MEAN_US", "P50_US", "P99_US", "P999_US");
    for (i = 0; i < n; i++) {
        if (folio_mp_read_str(&m, &name, &len) != 0)
            return;
        row = m;
        if (folio_mp_skip(&m) != 0)
            return;
        if (folio_cli_get_num(row, "calls", &calls) != 0 ||
            folio_cli_get_num(row, "errors", &errors) != 0 ||
            folio_cli_get_num(row, "mean_us", &mean) != 0 ||
            folio_cli_get_num(row, "p50_us", &p50) != 0 ||
            folio_cli_get_num(row, "p99_us", &p99) != 0 ||
            folio_cli_get_num(row, "p999_us", &p999) != 0)
            continue;
        folio_cli_put_text(stdout, name, len);
        printf("%*s %10.0f %7.0f %8.1f %8.1f %8.1f %8.1f\n",
               len < 22 ? 22 - (int)len : 0, "", calls, errors, mean, p50, p99,
               p999);
    }
}

int
folio_cli_show_stats(struct folio_mp_cur res, const struct folio_mp_cur *prev)
{
    struct folio_mp_cur server, totals, ptotals;
    struct row *rows = NULL, *prows = NULL, tot, ptot, *before;
    const char *version;
    uint32_t vlen, n, pn = 0, i, j;
    double pid, uptime, puptime = 0, gen, workers, restarts, reloads, errors,
                        bin, bout, accepted, rejected, proto, tmo, serving;
    char up[32], b1[32], b2[32], pidtext[24], state[16];
    int rc = -1;

    if (folio_cli_get(res, "server", &server) != 0 ||
        folio_cli_get(res, "totals", &totals) != 0 ||
        folio_cli_get_str(server, "version", &version, &vlen) != 0 ||
        folio_cli_get_num(server, "pid", &pid) != 0 ||
        folio_cli_get_num(server, "uptime_s", &uptime) != 0 ||
        folio_cli_get_num(server, "generation", &gen) != 0 ||
        folio_cli_get_num(server, "workers", &workers) != 0 ||
        folio_cli_get_num(server, "restarts", &restarts) != 0 ||
        folio_cli_get_num(server, "reloads", &reloads) != 0 ||
        folio_cli_get_num(totals, "errors", &errors) != 0 ||
        folio_cli_get_num(totals, "bytes_in", &bin) != 0 ||
        folio_cli_get_num(totals, "bytes_out", &bout) != 0 ||
        folio_cli_get_num(totals, "conns_accepted", &accepted) != 0 ||
        folio_cli_get_num(totals, "conns_rejected", &rejected) != 0 ||
        folio_cli_get_num(totals, "protocol_errors", &proto) != 0 ||
        folio_cli_get_num(totals, "timeouts", &tmo) != 0 ||
        read_row(totals, &tot) != 0 || read_rows(res, &rows, &n) != 0)
        goto done;
    tot.uptime = uptime;
    /* The previous sample: a bad one is as good as none. */
    if (prev != NULL) {
        if (folio_cli_get(*prev, "totals", &ptotals) == 0 &&
            read_row(ptotals, &ptot) == 0 &&
            folio_cli_get(*prev, "server", &server) == 0 &&
            folio_cli_get_num(server, "uptime_s", &puptime) == 0 &&
            read_rows(*prev, &prows, &pn) == 0) {
            ptot.uptime = puptime;
        } else {
            prev = NULL;
            pn = 0;
        }
    }

    /* A server from before the shortfall was counted: all serve. */
    if (folio_cli_get(res, "server", &server) != 0 ||
        folio_cli_get_num(server, "serving", &serving) != 0)
        serving = workers;
    fputs("foliod ", stdout);
    folio_cli_put_text(stdout, version, vlen);
    printf(", pid %.0f, up %s, generation %.0f, %.0f of %.0f worker%s "
           "serving, %.0f restart%s, %.0f reload%s\n",
           pid, folio_cli_fmt_duration(up, sizeof(up), uptime), gen, serving,
           workers, workers == 1 ? "" : "s", restarts,
           restarts == 1 ? "" : "s", reloads, reloads == 1 ? "" : "s");
    printf("requests %.0f, errors %.0f, in %s, out %s\n", tot.requests, errors,
           folio_cli_fmt_bytes(b1, sizeof(b1), bin),
           folio_cli_fmt_bytes(b2, sizeof(b2), bout));
    print_errors(totals);
    printf("connections %.0f open, %.0f accepted, %.0f rejected, %.0f "
           "protocol errors, %.0f timed out\n",
           tot.conns, accepted, rejected, proto, tmo);
    if (prev != NULL && uptime > puptime)
        printf("rates over the last %.1f s\n\n", uptime - puptime);
    else
        printf("rates since start\n\n");

    printf("%7s %-8s %6s %10s %9s %5s %9s %10s %5s\n", "PID", "STATE", "UPTIME",
           "REQUESTS", "REQ/S", "CPU%", "ALLOC/REQ", "HEAP", "CONNS");
    for (i = 0; i < n; i++) {
        before = NULL;
        for (j = 0; j < pn; j++)
            if (prows[j].pid == rows[i].pid)
                before = &prows[j];
        snprintf(pidtext, sizeof(pidtext), "%" PRIu64, rows[i].pid);
        for (j = 0; j < rows[i].state_len && j < sizeof(state) - 1; j++)
            state[j] = rows[i].state[j] > ' ' && rows[i].state[j] < 0x7f
                           ? rows[i].state[j]
                           : '?';
        state[j] = '\0';
        print_row(pidtext, state, &rows[i], before);
    }
    print_row("TOTAL", "", &tot, prev != NULL ? &ptot : NULL);
    print_methods(totals);
    rc = 0;
done:
    free(rows);
    free(prows);
    return rc;
}
