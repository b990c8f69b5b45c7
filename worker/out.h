/*
 * out.h - the output budget (out.c): the limits on what a connection's
 * replies may hold, and the worker's wait queue for room under
 * max_output_total.  Called by conn.c and face_rpc.c; calls nothing of
 * theirs.  Each function takes the connection it counts for.
 */
#ifndef FOLIO_OUT_H
#define FOLIO_OUT_H

#include <stddef.h>

#include "worker/worker_int.h"

/*
 * folio_out_open - set up the output side of a new connection c (its
 * flags set): its buffer's hard limit, and what it counts (a connection
 * from the free list may be larger than its base).
 */
void folio_out_open(struct folio_conn *c);

/*
 * folio_out_count - take the size of c's output buffer into the worker's
 * total: after anything that may have grown it (folio_out_track).
 */
void folio_out_count(struct folio_conn *c);

/* folio_out_track - folio_out_count, if c's buffer changed size. */
static inline void
folio_out_track(struct folio_conn *c)
{
    if (c->out.b_cap != c->out_cap)
        folio_out_count(c);
}

/*
 * folio_out_room_wait - folio_out_room when the room is not plainly there.
 * Returns FOLIO_CONN_READY, having made the room; FOLIO_CONN_PAUSED when
 * c's pending output and the reply would be over its soft limit (it waits
 * for its client to read); or FOLIO_CONN_OUT_WAIT when the reply's growth
 * does not fit under max_output_total now, or others wait for room before
 * it: then c is last on the wait queue, to be let go by folio_out_grant.
 * The caller puts c in the state returned.
 */
enum folio_conn_state folio_out_room_wait(struct folio_conn *c, size_t size);

/*
 * folio_out_room - whether c may produce its next reply, `size` bytes at
 * most, now: as folio_out_room_wait, at the cost of two comparisons when
 * the room is there already (most calls).
 */
static inline enum folio_conn_state
folio_out_room(struct folio_conn *c, size_t size)
{
    size_t pending = folio_buf_pending(&c->out), need = pending + size;

    if (need <= c->out.b_cap &&
        (pending == 0 || need <= c->w->cfg->max_output_bytes))
        return FOLIO_CONN_READY;
    return folio_out_room_wait(c, size);
}

/*
 * folio_out_growth - the room c's next reply (`size` bytes at most) needs
 * beyond what its buffer has, not over its hard limit: 0 if it fits.
 */
size_t folio_out_growth(const struct folio_conn *c, size_t size);

/*
 * folio_out_shrink - give back what c's output buffer grew to (c not
 * held, its output all written).  Returns 1 when that made room others
 * wait for: then let them go (folio_out_grant).
 */
int folio_out_shrink(struct folio_conn *c);

/*
 * folio_out_forget - c closes: what it held is free.  Returns 1 when
 * others wait for that room (folio_out_grant).
 */
int folio_out_forget(struct folio_conn *c);

/* folio_out_unwait - take c (OUT_WAIT) off the wait queue. */
void folio_out_unwait(struct folio_conn *c);

/*
 * folio_out_grant - the first connection on the wait queue, if its reply
 * fits now: taken off the queue, with the room made for it (its, until it
 * runs).  NULL when none may go.  The caller gives it its turn.
 */
struct folio_conn *folio_out_grant(struct folio_worker *w);

/*
 * folio_out_setup - before the loop: keep the allocator serving large
 * output buffers from mmap, so that the room they give back is returned
 * to the system.
 */
void folio_out_setup(void);

#endif
