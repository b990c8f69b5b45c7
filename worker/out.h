/*
 * out.h - the output budget (out.c): the limits on what a connection's
 * replies may hold, and the worker's wait queue for room under
 * max_output_total, and the replies sent by reference (shared pages
 * that the output points at instead of holding a copy).  Called by
 * conn.c, conn_io.c and face_rpc.c; calls nothing of theirs.  Each
 * function takes the connection it counts for.
 */
#ifndef FOLIO_OUT_H
#define FOLIO_OUT_H

#include <stddef.h>

#include "worker/worker_int.h"

struct folio_bytes;
struct iovec;

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
    size_t pending = folio_conn_out_pending(c), need = pending + size;

    if (need <= c->out.b_cap &&
        (pending == 0 || need <= c->w->cfg->max_output_bytes))
        return FOLIO_CONN_READY;
    return folio_out_room_wait(c, size);
}

/*
 * folio_out_room_ref - whether c may queue a reply by reference (a shared
 * page) that needs `size` bytes of budget (0: the page counts already,
 * another output sends it): READY, the budget made (a reservation that
 * the page takes over when it is queued, folio_out_ref_add, and that
 * folio_out_settle gives back); PAUSED when c's output is over its soft
 * limit or has no free reference (its client reads first); OUT_WAIT as
 * folio_out_room_wait.
 */
enum folio_conn_state folio_out_room_ref(struct folio_conn *c, size_t size);

/*
 * folio_out_ref_add - queue page b in c's output after what its buffer
 * holds (a reference of its own; b counts in the budget once, for all of
 * its public senders).  Returns 0; FOLIO_EAGAIN when c has no free
 * reference, FOLIO_ETOOBIG when its output would pass its hard limit
 * (nothing queued: copy or refuse it).
 */
int folio_out_ref_add(struct folio_conn *c, struct folio_bytes *b);

/*
 * folio_out_settle - after a message: give back the budget made for a
 * reply by reference that was not queued (or whose page counted
 * already).  Returns 1 when that made room others wait for.
 */
int folio_out_settle(struct folio_conn *c);

/*
 * folio_out_iov - c's pending output, `limit` bytes of it at most, as at
 * most max iovecs (buffer segments and the pages between them, in
 * order), for writev; returns how many.  max >= 2 * FOLIO_CONN_REFS + 1
 * takes all of it.
 */
int folio_out_iov(const struct folio_conn *c, struct iovec *iov, int max,
                  size_t limit);

/*
 * folio_out_sent - n bytes of c's output were sent: consume them from the
 * buffer and the pages, letting go of the pages sent whole.  Returns 1
 * when that made room others wait for (folio_out_grant).
 */
int folio_out_sent(struct folio_conn *c, size_t n);

/*
 * folio_out_own_room - whether c (OUT_WAIT) now has in its own buffer the
 * room it waits for (its client read): not for a reply by reference,
 * whose room is budget.
 */
int folio_out_own_room(const struct folio_conn *c);

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
 * folio_out_forget - c closes: what it held is free (its buffer's
 * growth, its pages, its reservation).  Returns 1 when others wait for
 * that room (folio_out_grant).
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
