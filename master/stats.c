/*
 * stats.c - the master's view of the workers' counters: totals that never
 * go backwards (what exited workers counted is folded into `dead`), and the
 * SIGUSR2 snapshot.
 */
#include "config.h"

#include <stdio.h>
#include <string.h>

#include "master/master_int.h"
#include "src/log.h"

void
folio_stats_fold(struct folio_master *m, struct folio_worker_slot *s)
{
    struct folio_worker_slot *d = &m->dead;
    unsigned r, k;

#define FOLD(name, help)                                                       \
    folio_stat_add(&d->ws_##name, folio_stat_get(&s->ws_##name));
    FOLIO_WORKER_COUNTERS(FOLD)
#undef FOLD
    folio_stat_add(&d->ws_cpu_user_us, folio_stat_get(&s->ws_cpu_user_us));
    folio_stat_add(&d->ws_cpu_sys_us, folio_stat_get(&s->ws_cpu_sys_us));
    folio_stat_add(&d->ws_alloc.ac_calls, folio_stat_get(&s->ws_alloc.ac_calls));
    folio_stat_add(&d->ws_alloc.ac_bytes, folio_stat_get(&s->ws_alloc.ac_bytes));
    folio_stat_add(&d->ws_alloc.ac_frees, folio_stat_get(&s->ws_alloc.ac_frees));
    folio_stat_add(&d->ws_alloc.ac_freed_bytes,
                   folio_stat_get(&s->ws_alloc.ac_freed_bytes));
    for (r = 0; r < FOLIO_METHOD_ROWS; r++) {
        struct folio_method_stats *dm = &d->ws_methods[r];
        struct folio_method_stats *sm = &s->ws_methods[r];

        for (k = 0; k < FOLIO_ST_MAX; k++)
            folio_stat_add(&dm->ms_codes[k], folio_stat_get(&sm->ms_codes[k]));
        folio_stat_add(&dm->ms_ns, folio_stat_get(&sm->ms_ns));
        for (k = 0; k < FOLIO_LAT_BUCKETS; k++)
            folio_stat_add(&dm->ms_hist[k], folio_stat_get(&sm->ms_hist[k]));
    }
}

void
folio_stats_log_snapshot(struct folio_master *m)
{
    struct folio_worker_slot *s;
    uint64_t req = folio_stat_get(&m->dead.ws_requests);
    uint64_t err = folio_stat_get(&m->dead.ws_errors);
    int i;

    for (i = 0; i < FOLIO_MAX_SLOTS; i++) {
        if (m->procs[i].pid == 0)
            continue;
        s = folio_stats_slot(m->stats, (unsigned)i);
        req += folio_stat_get(&s->ws_requests);
        err += folio_stat_get(&s->ws_errors);
        folio_log_notice(
            "stats: worker %d pid %ld requests %llu errors %llu conns %llu "
            "cpu %.3fs allocs %llu heap %llu",
            m->procs[i].index, (long)m->procs[i].pid,
            (unsigned long long)folio_stat_get(&s->ws_requests),
            (unsigned long long)folio_stat_get(&s->ws_errors),
            (unsigned long long)folio_stat_get(&s->ws_conns_open),
            (double)(folio_stat_get(&s->ws_cpu_user_us) +
                     folio_stat_get(&s->ws_cpu_sys_us)) / 1e6,
            (unsigned long long)folio_stat_get(&s->ws_alloc.ac_calls),
            (unsigned long long)folio_stat_get(&s->ws_heap_inuse));
    }
    folio_log_notice("stats: total requests %llu errors %llu restarts %llu",
                     (unsigned long long)req, (unsigned long long)err,
                     (unsigned long long)m->restarts);
}
