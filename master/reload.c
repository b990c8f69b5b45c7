/*
 * reload.c - SIGHUP's generations: validate-then-switch.  A new generation
 * is built (configuration, sockets, data); if any of it fails, the old one
 * keeps serving and the reason is logged.  When decide.c has seen every
 * new worker ready it switches: the new settings apply and the old
 * generation's resources go (its workers retire: they hand their open
 * connections, and any bytes already read from them, over, so clients
 * keep their connections and no request fails).  Called by cycle.c only.
 */
#include "config.h"

#include <stdio.h>
#include <string.h>

#include "master/master_int.h"
#include "src/log.h"
#include "src/title.h"

int
folio_reload_build(struct folio_master *m, char *err, size_t errlen)
{
    struct folio_gen *g;

    if (m->next != NULL) {
        snprintf(err, errlen, "a reload is already in progress");
        return -1;
    }
    if ((g = folio_gen_new(m, err, errlen)) == NULL)
        return -1;
    m->next = g;
    return 0;
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
    if (folio_metrics_start(m, -1, err, sizeof(err)) != 0)
        folio_log_errorx("metrics: %s", err);
}

void
folio_reload_switch(struct folio_master *m)
{
    struct folio_gen *old = m->cur, *g = m->next;

    if (g == NULL)
        return;
    m->cur = g;
    m->next = NULL;
    folio_log_level = g->cfg.log_level;
    if (folio_stats_log_start(m) != 0)
        folio_log_errorx("cannot restart the counters log");
    reload_metrics(m, old);
    folio_gen_free(old, g);
    folio_title_set("foliod: master (generation %llu)",
                    (unsigned long long)g->id);
}

void
folio_reload_drop(struct folio_master *m)
{
    folio_gen_free(m->next, m->cur);
    m->next = NULL;
}
