/*
 * reload.c - SIGHUP: validate-then-switch.  A new generation is built
 * (configuration, sockets, data); if any of it fails, the old one keeps
 * serving and the reason is logged.  Its workers start beside the old
 * ones; when all are ready the old workers retire, handing their open
 * connections (and any bytes already read from them) over, so clients
 * keep their connections and no request fails.
 */
#include "config.h"

#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "master/master_int.h"
#include "src/log.h"

static void
on_deadline(evutil_socket_t fd, short what, void *arg)
{
    struct folio_master *m = arg;

    if (m->next != NULL)
        folio_reload_abort(m, "new workers not ready in time");
}

void
folio_reload_start(struct folio_master *m)
{
    struct folio_gen *g;
    struct timeval tv;
    char err[1024];
    uint32_t ms;
    int i;

    if (m->stopping)
        return;
    if (m->next != NULL) {
        folio_log_warnx("reload already in progress: SIGHUP ignored");
        return;
    }
    folio_log_notice("reloading");
    folio_notify_reloading();
    if ((g = folio_gen_new(m, err, sizeof(err))) == NULL) {
        folio_stat_add(&folio_stats_header_of(m->stats)->sh_reload_failures,
                       1);
        folio_log_errorx("reload failed: %s; still serving generation %llu",
                         err, (unsigned long long)m->cur->id);
        folio_notify("READY=1\nSTATUS=reload failed: %s; serving generation "
                     "%llu",
                     err, (unsigned long long)m->cur->id);
        return;
    }
    m->next = g;
    for (i = 0; i < g->nworkers; i++) {
        if (folio_proc_spawn(m, g, i, -1) != 0) {
            folio_reload_abort(m, "cannot start new workers");
            return;
        }
    }
    ms = g->cfg.shutdown_timeout_ms > 10000 ? g->cfg.shutdown_timeout_ms
                                            : 10000;
    tv.tv_sec = ms / 1000;
    tv.tv_usec = (ms % 1000) * 1000;
    if (m->ev_deadline == NULL)
        m->ev_deadline = evtimer_new(m->base, on_deadline, m);
    if (m->ev_deadline != NULL)
        evtimer_add(m->ev_deadline, &tv);
}

/* A changed metrics_listen: bind the new address, or keep the old one. */
static void
reload_metrics(struct folio_master *m, const struct folio_gen *old)
{
    const char *a = old->cfg.metrics_listen, *b = m->cur->cfg.metrics_listen;
    char err[512];

    if ((a == NULL && b == NULL) || (a != NULL && b != NULL && strcmp(a, b) == 0))
        return;
    folio_metrics_stop(m);
    if (folio_metrics_start(m, err, sizeof(err)) != 0)
        folio_log_errorx("metrics: %s", err);
}

void
folio_reload_check(struct folio_master *m)
{
    struct folio_gen *old = m->cur, *g = m->next;
    int i;

    if (g == NULL || folio_proc_count(m, g->id, PROC_READY) < g->nworkers)
        return;
    if (m->ev_deadline != NULL)
        evtimer_del(m->ev_deadline);
    for (i = 0; i < FOLIO_MAX_SLOTS; i++)
        if (m->procs[i].pid != 0 && m->procs[i].generation == old->id)
            folio_proc_retire(m, &m->procs[i]);
    for (i = 0; i < FOLIO_MAX_WORKERS; i++) {
        m->idx[i].fails = 0;
        if (m->idx[i].ev_respawn != NULL)
            evtimer_del(m->idx[i].ev_respawn);
    }
    m->cur = g;
    m->next = NULL;
    folio_log_level = g->cfg.log_level;
    folio_stat_add(&folio_stats_header_of(m->stats)->sh_reloads, 1);
    folio_stats_publish(m);
    if (folio_stats_log_start(m) != 0)
        folio_log_errorx("cannot restart the counters log");
    reload_metrics(m, old);
    folio_gen_free(old, g);
    folio_log_notice("reloaded: generation %llu ready with %d workers",
                     (unsigned long long)g->id, g->nworkers);
    m->ready_reported = 0;
    folio_master_ready(m);
}

void
folio_reload_abort(struct folio_master *m, const char *why)
{
    struct folio_gen *g = m->next;
    int i;

    if (g == NULL)
        return;
    if (m->ev_deadline != NULL)
        evtimer_del(m->ev_deadline);
    folio_stat_add(&folio_stats_header_of(m->stats)->sh_reload_failures, 1);
    folio_log_errorx("reload failed: %s; still serving generation %llu", why,
                     (unsigned long long)m->cur->id);
    folio_notify("READY=1\nSTATUS=reload failed: %s; serving generation %llu",
                 why, (unsigned long long)m->cur->id);
    /* Ready ones may have taken connections: they hand them back. */
    for (i = 0; i < FOLIO_MAX_SLOTS; i++)
        if (m->procs[i].pid != 0 && m->procs[i].generation == g->id)
            folio_proc_retire(m, &m->procs[i]);
    m->next = NULL;
    folio_gen_free(g, m->cur);
}
