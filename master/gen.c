/*
 * gen.c - configuration generations.  A generation is everything a set of
 * workers is forked with: the configuration, the listening sockets, the
 * shared data.  Start-up makes the first; every reload makes a new one
 * and, once its workers are ready, retires the old one.
 */
#include "config.h"

#include <stdio.h>
#include <string.h>

#include "master/master_int.h"
#include "src/alloc.h"
#include "src/cpus.h"
#include "src/err.h"

struct folio_gen *
folio_gen_open(struct folio_master *m, char *err, size_t errlen)
{
    struct folio_gen *g;
    int action, i;

    if ((g = folio_calloc(1, sizeof(*g))) == NULL) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    for (i = 0; i <= FOLIO_MAX_LISTEN; i++)
        g->listeners[i].fd = -1;
    if (folio_config_load(&g->cfg, m->argc, m->argv, &action, err, errlen) !=
        0)
        goto fail;
    if (g->cfg.nlisten == 0 && g->cfg.admin_socket == NULL) {
        snprintf(err, errlen, "nothing to listen on");
        goto fail;
    }
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
folio_gen_free(struct folio_gen *g, const struct folio_gen *keep)
{
    if (g == NULL)
        return;
    folio_listen_close(g, keep);
    folio_data_free(&g->data);
    folio_config_free(&g->cfg);
    folio_free(g);
}
