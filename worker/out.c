/*
 * out.c - the output budget: what a worker's replies may hold.  The output
 * is bounded before it is produced, as Redis bounds a client's output
 * buffer (client-output-buffer-limit), by class of client (public or
 * admin): before a request runs, its reply (an upper bound of its size
 * for methods with large replies, folio_dispatch_reply_size) must fit
 * under the connection's soft limit, else its requests wait until its
 * client has read what is pending; public connections' buffers together
 * hold at most max_output_total beyond their base size, else the request
 * waits its turn for room (w->waitq, first come first served); no buffer
 * grows past the hard limit (a reply over it is error 8).  (A connection
 * whose replies do not move for send_timeout is closed: conn.c's sweep.)
 *
 * Called by conn.c and face_rpc.c, which move the connections between
 * their states; it keeps the figures and the wait queue, and calls
 * nothing of theirs.
 */
#include "config.h"

#include <malloc.h>

#include "shm/stats.h"
#include "src/buf.h"
#include "worker/out.h"
#include "worker/worker_int.h"

static size_t
soft_limit(const struct folio_conn *c)
{
    const struct folio_config *cfg = c->w->cfg;

    return (size_t)((c->flags & CONN_ADMIN) ? cfg->admin_max_output_bytes
                                            : cfg->max_output_bytes);
}

static size_t
hard_limit(const struct folio_conn *c)
{
    const struct folio_config *cfg = c->w->cfg;
    uint64_t soft, hard;

    if (c->flags & CONN_ADMIN) {
        soft = cfg->admin_max_output_bytes;
        hard = cfg->admin_max_output_hard_bytes;
    } else {
        soft = cfg->max_output_bytes;
        hard = cfg->max_output_hard_bytes;
    }
    return (size_t)(hard > soft ? hard : soft);
}

/* Whether c's output counts toward max_output_total. */
static int
in_budget(const struct folio_conn *c)
{
    return !(c->flags & CONN_ADMIN) && c->w->cfg->max_output_total != 0;
}

/* Take c's buffer size into the total; 1 if that freed room for waiters. */
static int
count(struct folio_conn *c)
{
    struct folio_worker *w = c->w;
    size_t held = 0, was = c->out_held;

    c->out_cap = c->out.b_cap;
    if (in_budget(c) && c->out.b_cap > c->out.b_base)
        held = c->out.b_cap - c->out.b_base;
    if (held == was)
        return 0;
    w->out_total = w->out_total - was + held;
    c->out_held = held;
    folio_stat_set(&w->slot->ws_output_bytes, w->out_total);
    return held < was && w->waitq.head != NULL;
}

void
folio_out_count(struct folio_conn *c)
{
    (void)count(c);
}

void
folio_out_open(struct folio_conn *c)
{
    c->out_cap = 0;
    c->out_held = 0;
    c->out_want = 0;
    c->out.b_max = hard_limit(c);
    (void)count(c); /* it holds nothing before: frees nothing */
}

int
folio_out_forget(struct folio_conn *c)
{
    struct folio_worker *w = c->w;

    if (c->out_held == 0)
        return 0;
    w->out_total -= c->out_held;
    c->out_held = 0;
    folio_stat_set(&w->slot->ws_output_bytes, w->out_total);
    return w->waitq.head != NULL;
}

int
folio_out_shrink(struct folio_conn *c)
{
    if (folio_buf_pending(&c->out) != 0 || c->out.b_cap <= c->out.b_base)
        return 0;
    folio_buf_shrink(&c->out);
    return c->out.b_cap != c->out_cap && count(c);
}

size_t
folio_out_growth(const struct folio_conn *c, size_t size)
{
    size_t need = folio_buf_pending(&c->out) + size;

    if (c->out.b_max != 0 && need > c->out.b_max)
        need = c->out.b_max;
    return need > c->out.b_cap ? need - c->out.b_cap : 0;
}

/* Whether `grow` more bytes for c fit under max_output_total now. */
static int
budget_fits(const struct folio_conn *c, size_t grow)
{
    const struct folio_worker *w = c->w;

    /* Nobody else holds anything: go, whatever the size. */
    return w->out_total + grow <= w->cfg->max_output_total ||
           w->out_total <= c->out_held;
}

/* Make the room (exactly: packing then grows nothing) and count it. */
static void
reserve(struct folio_conn *c, size_t size)
{
    size_t need = folio_buf_pending(&c->out) + size;

    if (c->out.b_max != 0 && need > c->out.b_max)
        need = c->out.b_max;
    /* On failure the handler's packing reports it (error 8). */
    (void)folio_buf_reserve(&c->out, need - folio_buf_pending(&c->out));
    folio_out_track(c);
}

void
folio_out_unwait(struct folio_conn *c)
{
    folio_connq_remove(&c->w->waitq, c, FOLIO_QL_WAIT);
}

struct folio_conn *
folio_out_grant(struct folio_worker *w)
{
    struct folio_conn *c = w->waitq.head;
    size_t grow;

    if (c == NULL)
        return NULL;
    grow = folio_out_growth(c, c->out_want);
    if (grow > 0 && !budget_fits(c, grow))
        return NULL;
    folio_out_unwait(c);
    if (grow > 0)
        reserve(c, c->out_want); /* its, until it runs */
    return c;
}

enum folio_conn_state
folio_out_room_wait(struct folio_conn *c, size_t size)
{
    struct folio_worker *w = c->w;
    size_t pending = folio_buf_pending(&c->out), grow;

    if (pending > 0 && pending + size > soft_limit(c)) {
        folio_stat_add(&w->slot->ws_output_waits, 1);
        return FOLIO_CONN_PAUSED;
    }
    if ((grow = folio_out_growth(c, size)) == 0)
        return FOLIO_CONN_READY;
    if (in_budget(c) && (w->waitq.head != NULL || !budget_fits(c, grow)) &&
        w->out_total > c->out_held) {
        /* Behind the others that wait: first come, first served. */
        c->out_want = size;
        folio_connq_push(&w->waitq, c, FOLIO_QL_WAIT);
        folio_stat_add(&w->slot->ws_output_waits, 1);
        return FOLIO_CONN_OUT_WAIT;
    }
    reserve(c, size);
    return FOLIO_CONN_READY;
}

void
folio_out_setup(void)
{
#ifdef M_MMAP_THRESHOLD
    /*
     * Output buffers grow for large replies and give the room back: keep
     * glibc from raising its mmap threshold as they are freed (it would
     * then serve them from the heap, whose freed middle stays resident).
     */
    mallopt(M_MMAP_THRESHOLD, 256 * 1024);
#endif
}
