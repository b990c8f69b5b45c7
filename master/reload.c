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

#include "master/master_int.h"
#include "src/log.h"

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

void
folio_reload_switch(struct folio_master *m)
{
    struct folio_gen *old = m->cur, *g = m->next;
    char err[512];

    if (g == NULL)
        return;
    m->cur = g;
    m->next = NULL;
    if (folio_gen_apply(m, old, err, sizeof(err)) != 0)
        folio_log_errorx("%s", err);
    folio_gen_free(old, g);
}

void
folio_reload_drop(struct folio_master *m)
{
    folio_gen_free(m->next, m->cur);
    m->next = NULL;
}
