/*
 * stats.c - the master's side of the counters: the server-wide header of
 * the stats region, the SIGUSR2 snapshot and the periodic per-worker line
 * (CPU % of a core, requests/s, allocations per request: a profiler's
 * window, without a profiler).  Folding an exited worker's counters into
 * the retired totals is folio_stats_fold(), called by the reaper.
 */
#include "config.h"

#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "master/master_int.h"
#include "src/clock.h"
#include "src/log.h"

/* Previous sample of each slot, for rates. */
static struct {
    uint64_t seq, ms, req, cpu_us, allocs;
} prev[FOLIO_MAX_SLOTS];

void
folio_stats_publish(struct folio_master *m)
{
    struct folio_stats_header *h = folio_stats_header_of(m->stats);
    const struct folio_dec *d = &m->dec;
    struct folio_dec_counts c;
    int i;

    folio_dec_counts(d, &c);
    folio_stat_set(&h->sh_master_pid, (uint64_t)getpid());
    if (m->cur != NULL)
        folio_stat_set(&h->sh_generation, m->cur->id);
    folio_stat_set(&h->sh_workers, (uint64_t)c.configured);
    folio_stat_set(&h->sh_state, (uint64_t)c.state);
    folio_stat_set(&h->sh_serving, (uint64_t)c.serving);
    folio_stat_set(&h->sh_healthy, (uint64_t)c.healthy);
    folio_stat_set(&h->sh_ready, (uint64_t)c.ready);
#define STATE(NAME, value, count, name, help)                                  \
    folio_stat_set(&h->sh_w_##count, (uint64_t)c.n[FOLIO_WS_##NAME]);
    FOLIO_WORKER_STATE_LIST(STATE)
#undef STATE
#define COUNTER(field, key, kind, family, help)                                \
    folio_stat_set(&h->sh_##field, d->field);
    FOLIO_MASTER_COUNTERS(COUNTER)
#undef COUNTER
    for (i = 0; i < FOLIO_MAX_SLOTS; i++)
        if (folio_dec_live(d, i))
            atomic_store_explicit(
                &folio_stats_slot(m->stats, (unsigned)i)->ws_mstate,
                (uint32_t)d->procs[i].state, memory_order_relaxed);
}

void
folio_stats_log_snapshot(struct folio_master *m)
{
    static struct folio_worker_slot total;
    struct folio_stats_header *h = folio_stats_header_of(m->stats);
    struct folio_worker_slot *s;
    char counters[256] = "";
    size_t n = 0;
    unsigned k;
    int i;

    for (i = 0; i < FOLIO_MAX_SLOTS; i++) {
        if (!folio_dec_live(&m->dec, i))
            continue;
        s = folio_stats_slot(m->stats, (unsigned)i);
        folio_log_notice(
            "stats: worker %d pid %ld %s requests %llu errors %llu conns "
            "%llu cpu %.3fs allocs %llu heap %llu",
            m->dec.procs[i].index, m->dec.procs[i].pid,
            folio_stats_state_name((unsigned)m->dec.procs[i].state),
            (unsigned long long)folio_stat_get(&s->ws_requests),
            (unsigned long long)folio_stat_get(&s->ws_errors),
            (unsigned long long)folio_stat_get(&s->ws_conns_open),
            (double)(folio_stat_get(&s->ws_cpu_user_us) +
                     folio_stat_get(&s->ws_cpu_sys_us)) / 1e6,
            (unsigned long long)folio_stat_get(&s->ws_alloc.ac_calls),
            (unsigned long long)folio_stat_get(&s->ws_heap_inuse));
    }
    /* The master's counters, as server.stats names them. */
    for (k = 0; k < folio_server_nstats; k++) {
        const struct folio_stat_desc *sd = &folio_server_stat_descs[k];

        if (sd->kind == FOLIO_SK_COUNTER && n < sizeof(counters))
            n += (size_t)snprintf(counters + n, sizeof(counters) - n,
                                  " %s %llu", sd->key,
                                  (unsigned long long)folio_stat_raw(h, sd));
    }
    folio_stats_total(m->stats, &total);
    folio_log_notice(
        "stats: total requests %llu errors %llu notifications %llu cpu %.3fs "
        "allocs %llu%s",
        (unsigned long long)folio_stat_get(&total.ws_requests),
        (unsigned long long)folio_stat_get(&total.ws_errors),
        (unsigned long long)folio_stat_get(&total.ws_notifications),
        (double)(folio_stat_get(&total.ws_cpu_user_us) +
                 folio_stat_get(&total.ws_cpu_sys_us)) /
            1e6,
        (unsigned long long)folio_stat_get(&total.ws_alloc.ac_calls), counters);
}

static void
on_stats_log(evutil_socket_t fd, short what, void *arg)
{
    struct folio_master *m = arg;
    struct folio_worker_slot *s;
    uint64_t now, req, cpu, allocs, dms, dreq;
    int i;

    now = folio_mono_ms();
    for (i = 0; i < FOLIO_MAX_SLOTS; i++) {
        if (!folio_dec_live(&m->dec, i))
            continue;
        s = folio_stats_slot(m->stats, (unsigned)i);
        req = folio_stat_get(&s->ws_requests) +
              folio_stat_get(&s->ws_notifications);
        cpu = folio_stat_get(&s->ws_cpu_user_us) +
              folio_stat_get(&s->ws_cpu_sys_us);
        allocs = folio_stat_get(&s->ws_alloc.ac_calls);
        if (prev[i].seq == m->procs[i].seq && now > prev[i].ms) {
            dms = now - prev[i].ms;
            dreq = req - prev[i].req;
            folio_log_notice(
                "window: worker %d pid %ld cpu %.1f%% %.0f req/s %.2f "
                "allocs/req %.1f us cpu/req heap %llu conns %llu",
                m->dec.procs[i].index, m->dec.procs[i].pid,
                (double)(cpu - prev[i].cpu_us) / 10.0 / (double)dms,
                (double)dreq * 1000.0 / (double)dms,
                dreq ? (double)(allocs - prev[i].allocs) / (double)dreq : 0.0,
                dreq ? (double)(cpu - prev[i].cpu_us) / (double)dreq : 0.0,
                (unsigned long long)folio_stat_get(&s->ws_heap_inuse),
                (unsigned long long)folio_stat_get(&s->ws_conns_open));
        }
        prev[i].seq = m->procs[i].seq;
        prev[i].ms = now;
        prev[i].req = req;
        prev[i].cpu_us = cpu;
        prev[i].allocs = allocs;
    }
}

int
folio_stats_log_start(struct folio_master *m)
{
    uint32_t ms = m->cur->cfg.stats_log_interval_ms;
    struct timeval tv;

    if (m->ev_stats_log != NULL) {
        event_free(m->ev_stats_log);
        m->ev_stats_log = NULL;
    }
    if (ms == 0)
        return 0;
    tv.tv_sec = ms / 1000;
    tv.tv_usec = (ms % 1000) * 1000;
    m->ev_stats_log = event_new(m->base, -1, EV_PERSIST, on_stats_log, m);
    if (m->ev_stats_log == NULL || event_add(m->ev_stats_log, &tv) != 0)
        return -1;
    return 0;
}
