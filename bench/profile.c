/*
 * profile.c - folio-bench --profile FILE: a CPU profile of the server
 * over the measured phase of the run, fetched from its metrics listener
 * (/debug/pprof/profile, PROTOCOL.md section 6) by a thread of its own
 * while the load runs, and written to FILE for pprof; kept decoded for
 * the --html report's top functions.
 */
#include "config.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/bench.h"
#include "src/buf.h"
#include "src/err.h"
#include "src/http.h"
#include "src/prof/pprof.h"

static struct {
    pthread_t th;
    int started;
    const char *addr;
    char path[64];
    int timeout_ms;
    struct folio_http_answer ans;
    int rc;
    char err[512];
    struct folio_pprof taken; /* what was written, decoded */
    int have;
} prof;

static void *
fetch(void *arg)
{
    (void)arg;
    prof.rc = folio_http_get(prof.addr, prof.path, prof.timeout_ms, &prof.ans,
                             prof.err, sizeof(prof.err));
    return NULL;
}

unsigned
folio_bench_profile_seconds(const struct bench_opts *o)
{
    uint64_t ns = 0;
    int i;

    if (o->mode == BENCH_RAMP)
        for (i = 0; i < o->nstages; i++)
            ns += o->stages[i].dur_ns;
    else
        ns = o->duration_ns;
    if (ns == 0)
        return 0;
    ns = (ns + 999999999u) / 1000000000u;
    return ns > 300 ? 300 : (unsigned)ns;
}

int
folio_bench_profile_start(const struct bench_opts *o)
{
    unsigned s = folio_bench_profile_seconds(o);

    if (o->profile == NULL || prof.started)
        return 0;
    prof.addr = o->metrics;
    snprintf(prof.path, sizeof(prof.path), "/debug/pprof/profile?seconds=%u",
             s);
    prof.timeout_ms = (int)(s + 60) * 1000;
    memset(&prof.ans, 0, sizeof(prof.ans));
    if (pthread_create(&prof.th, NULL, fetch, NULL) != 0) {
        prof.rc = FOLIO_ESYS;
        snprintf(prof.err, sizeof(prof.err), "cannot start a thread");
        return -1;
    }
    prof.started = 1;
    return 0;
}

int
folio_bench_profile_finish(const struct bench_opts *o)
{
    FILE *f;
    int ok;

    if (o->profile == NULL)
        return 0;
    if (prof.started)
        pthread_join(prof.th, NULL);
    prof.started = 0;
    if (prof.rc != 0 || prof.ans.status != 200) {
        if (prof.rc == 0) {
            size_t n = folio_buf_pending(&prof.ans.body);

            while (n > 0 && folio_buf_at(&prof.ans.body, 0)[n - 1] == '\n')
                n--;
            snprintf(prof.err, sizeof(prof.err), "%s answered %d: %.*s",
                     prof.addr, prof.ans.status, (int)(n > 300 ? 300 : n),
                     n > 0 ? folio_buf_at(&prof.ans.body, 0) : "");
        }
        fprintf(stderr, "folio-bench: --profile: %s\n", prof.err);
        folio_http_answer_free(&prof.ans);
        return -1;
    }
    ok = (f = fopen(o->profile, "wb")) != NULL &&
         fwrite(folio_buf_at(&prof.ans.body, 0), 1,
                folio_buf_pending(&prof.ans.body),
                f) == folio_buf_pending(&prof.ans.body);
    if (f != NULL && fclose(f) != 0)
        ok = 0;
    if (ok && !prof.have) {
        char why[256];

        prof.have = folio_pprof_decode(folio_buf_at(&prof.ans.body, 0),
                                       folio_buf_pending(&prof.ans.body),
                                       &prof.taken, why, sizeof(why)) == 0;
        if (!prof.have)
            fprintf(stderr, "folio-bench: --profile: %s: %s\n", o->profile,
                    why);
    }
    if (!ok)
        fprintf(stderr, "folio-bench: --profile: cannot write %s\n",
                o->profile);
    else if (!o->quiet)
        fprintf(stderr,
                "folio-bench: the server's CPU profile is in %s (go tool "
                "pprof %s)\n",
                o->profile, o->profile);
    folio_http_answer_free(&prof.ans);
    return ok ? 0 : -1;
}

const struct folio_pprof *
folio_bench_profile_taken(void)
{
    return prof.have ? &prof.taken : NULL;
}
