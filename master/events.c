/*
 * events.c - the queue through which signal.c and proc.c report what
 * happened to cycle.c, which decides (Postfix's master_sig.c records,
 * master.c's loop acts).  A post activates the cycle's wake event, so the
 * events are taken in the same turn of the loop, in the order posted.
 * A leaf: it calls nothing of master/.
 */
#include "config.h"

#include "master/master_int.h"

void
folio_mq_post(struct folio_mq *q, int type, int arg, uint64_t seq)
{
    struct folio_mev *e;

    if (q->tail - q->head >= FOLIO_MQ_LEN) {
        q->lost++; /* cycle.c says so; the length makes it impossible */
    } else {
        e = &q->ev[q->tail % FOLIO_MQ_LEN];
        e->type = type;
        e->arg = arg;
        e->seq = seq;
        q->tail++;
    }
    if (q->wake != NULL)
        event_active(q->wake, EV_TIMEOUT, 1);
}

int
folio_mq_take(struct folio_mq *q, struct folio_mev *ev)
{
    if (q->head == q->tail)
        return 0;
    *ev = q->ev[q->head % FOLIO_MQ_LEN];
    q->head++;
    return 1;
}
