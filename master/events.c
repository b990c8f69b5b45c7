/*
 * events.c - the master's ring of events, in decide.h's vocabulary:
 * signal.c and proc.c post what happened, cycle.c its timers' deadlines
 * and the answers to the actions it carried out, and cycle.c takes them
 * one by one into folio_dec_step() (Postfix's master_sig.c records,
 * master.c's loop acts).  A post activates the cycle's wake event, so
 * what is posted is taken in the same turn of the loop, in order; an
 * answer goes before everything waiting, after the answers given since
 * the last take, so that the answers to a step are stepped next, in the
 * order they were given.  A leaf: it calls nothing of master/.
 */
#include "config.h"

#include <stdio.h>

#include "master/master_int.h"

static void
put(struct folio_ring_ev *e, const struct folio_dec_ev *ev)
{
    e->ev = *ev;
    e->why[0] = '\0';
    if (ev->why != NULL)
        snprintf(e->why, sizeof(e->why), "%s", ev->why);
    e->ev.why = NULL;
}

void
folio_ring_post(struct folio_ring *r, const struct folio_dec_ev *ev)
{
    if (r->tail - r->head >= FOLIO_RING_LEN) {
        r->lost++; /* cycle.c says so; the length makes it impossible */
    } else {
        put(&r->ev[r->tail % FOLIO_RING_LEN], ev);
        r->tail++;
    }
    if (r->wake != NULL)
        event_active(r->wake, EV_TIMEOUT, 1);
}

void
folio_ring_answer(struct folio_ring *r, const struct folio_dec_ev *ev)
{
    if (r->tail - r->head >= FOLIO_RING_LEN) {
        r->lost++;
        return;
    }
    /* At the head, newest first: the next take turns them round. */
    r->head--;
    put(&r->ev[r->head % FOLIO_RING_LEN], ev);
    r->answers++;
}

int
folio_ring_take(struct folio_ring *r, struct folio_dec_ev *ev)
{
    struct folio_ring_ev t;
    unsigned i, j;

    if (r->head == r->tail)
        return 0;
    for (i = 0, j = r->answers - 1; r->answers > 1 && i < j; i++, j--) {
        t = r->ev[(r->head + i) % FOLIO_RING_LEN];
        r->ev[(r->head + i) % FOLIO_RING_LEN] =
            r->ev[(r->head + j) % FOLIO_RING_LEN];
        r->ev[(r->head + j) % FOLIO_RING_LEN] = t;
    }
    r->answers = 0;
    t = r->ev[r->head % FOLIO_RING_LEN];
    r->head++;
    *ev = t.ev;
    snprintf(r->why, sizeof(r->why), "%s", t.why);
    ev->why = t.why[0] != '\0' ? r->why : NULL;
    return 1;
}
