/*
 * gen.c - configuration generations.  A generation is everything a set of
 * workers is forked with: the configuration, the listening sockets, the
 * shared data.  Start-up makes the first; every reload makes a new one
 * and, once its workers are ready, retires the old one.  What a
 * generation sets in the master itself (its log level, its heap
 * sampling, the counters log, the metrics listener) is applied here
 * alone, when it starts to serve: at start, after an upgrade, at a
 * reload's switch.
 */
#include "config.h"

#include <stdio.h>
#include <string.h>

#include "master/master_int.h"
#include "src/alloc.h"
#include "src/cpus.h"
#include "src/err.h"
#include "src/log.h"
#include "src/prof/prof.h"

struct folio_gen *
folio_gen_open(struct folio_master *m, char *err, size_t errlen)
{
    struct folio_gen *g;
    int action, i;

    if ((g = folio_calloc(1, sizeof(*g))) == NULL) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    for (i = 0; i < FOLIO_MAX_SOCKETS; i++)
        g->listeners[i].fd = -1;
    if (folio_config_load(&g->cfg, m->argc, m->argv, &action, err, errlen) !=
        0)
        goto fail;
    if (folio_listen_check(&g->cfg, err, errlen) != 0)
        goto fail;
    g->nworkers = g->cfg.workers > 0 ? g->cfg.workers : folio_cpu_count();
    if (folio_listen_open(g, m->cur, &m->priv, err, errlen) != 0)
        goto fail;
    return g;
fail:
    folio_gen_free(g, m->cur);
    return NULL;
}

int
folio_gen_load(struct folio_master *m, struct folio_gen *g, char *err,
               size_t errlen)
{
    if (folio_data_load(&g->cfg, &g->data, err, errlen) != 0)
        return -1;
    g->id = ++m->next_gen_id;
    return 0;
}

struct folio_gen *
folio_gen_new(struct folio_master *m, char *err, size_t errlen)
{
    struct folio_gen *g;

    if ((g = folio_gen_open(m, err, errlen)) == NULL)
        return NULL;
    if (folio_gen_load(m, g, err, errlen) != 0) {
        folio_gen_free(g, m->cur);
        return NULL;
    }
    return g;
}

void
folio_gen_params(const struct folio_gen *g, struct folio_dec_gen *out)
{
    out->id = g->id;
    out->nworkers = g->nworkers;
    out->shutdown_ms = g->cfg.shutdown_timeout_ms;
    out->worker_timeout_ms = g->cfg.worker_timeout_ms;
}

void
folio_gen_apply_process(const struct folio_config *cfg)
{
    folio_log_level = cfg->log_level;
    folio_prof_heap_rate(
        cfg->profiling == FOLIO_PROFILING_OFF ? 0 : cfg->profile_heap_rate);
}

static int
same(const char *a, const char *b)
{
    return (a == NULL && b == NULL) ||
           (a != NULL && b != NULL && strcmp(a, b) == 0);
}

int
folio_gen_apply(struct folio_master *m, const struct folio_gen *old, char *err,
                size_t errlen)
{
    const struct folio_config *cfg = &m->cur->cfg;
    int rc = 0, fd;

    folio_gen_apply_process(cfg);
    if (old == NULL) {
        /* -1 at start; after an upgrade, the socket the old image bound. */
        fd = m->metrics_fd;
        m->metrics_fd = -1;
        rc = folio_metrics_start(m, fd, err, errlen);
    } else if (!same(old->cfg.metrics_listen, cfg->metrics_listen)) {
        /* A changed address: the new one, or none if it fails. */
        folio_metrics_stop(m);
        rc = folio_metrics_start(m, -1, err, errlen);
    }
    if (folio_stats_log_start(m) != 0 && rc == 0) {
        snprintf(err, errlen, "cannot start the counters log");
        rc = -1;
    }
    return rc;
}

void
folio_gen_free(struct folio_gen *g, const struct folio_gen *keep)
{
    if (g == NULL)
        return;
    folio_listen_close(g, keep);
    folio_data_free(&g->data);
    folio_config_free(&g->cfg);
    folio_free(g);
}
