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
 * A large reply that already exists as shared bytes (a cached page,
 * src/bytes.h) is not copied: the output points at it (struct
 * folio_out_ref), and it is written from there (writev).  Such a page
 * counts against max_output_total once, while any public connection's
 * output points at it, however many do: N slow readers of one page hold
 * it once.  Its room is made before the request runs, as for any large
 * reply, but as budget, not as buffer (folio_out_room_ref), and the
 * reservation gives way to the page once it is queued.
 *
 * Called by conn.c, conn_io.c (what a send took) and face_rpc.c, which
 * move the connections between their states; it keeps the figures and
 * the wait queue, and calls nothing of theirs.
 */
#include "config.h"

#include <sys/uio.h>

#include <malloc.h>

#include "shm/stats.h"
#include "src/buf.h"
#include "src/bytes.h"
#include "src/err.h"
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

static void
publish(struct folio_worker *w)
{
    folio_stat_set(&w->slot->ws_output_bytes, w->out_total);
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
    publish(w);
    return held < was && w->waitq.head != NULL;
}

/* Give back the budget made for a reply by reference; 1: others wait. */
static int
unreserve(struct folio_conn *c)
{
    struct folio_worker *w = c->w;

    if (c->out_resv == 0)
        return 0;
    w->out_total -= c->out_resv;
    c->out_resv = 0;
    publish(w);
    return w->waitq.head != NULL;
}

/* Page b is in c's output now: it counts, once for all its senders. */
static void
page_count(struct folio_conn *c, struct folio_bytes *b)
{
    if (in_budget(c) && b->fb_outrefs++ == 0) {
        c->w->out_total += b->fb_len;
        publish(c->w);
    }
}

/* c's output lets go of page b; 1 when that freed room others wait for. */
static int
page_uncount(struct folio_conn *c, struct folio_bytes *b)
{
    struct folio_worker *w = c->w;

    if (!in_budget(c) || --b->fb_outrefs != 0)
        return 0;
    w->out_total -= b->fb_len;
    publish(w);
    return w->waitq.head != NULL;
}

/* Drop c's oldest reference (sent, or c closes); 1: room freed. */
static int
ref_pop(struct folio_conn *c)
{
    struct folio_out_ref *r = &c->wk->refs[c->ref_head];
    int freed = page_uncount(c, r->b);

    c->out_refbytes -= r->b->fb_len - r->off;
    folio_bytes_unref(r->b);
    r->b = NULL;
    c->ref_head = (c->ref_head + 1) % FOLIO_CONN_REFS;
    c->nrefs--;
    return freed;
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
    c->out_byref = 0;
    c->out_resv = 0;
    c->out_refbytes = 0;
    c->out_refgap = 0;
    c->nrefs = 0;
    c->ref_head = 0;
    c->out.b_max = hard_limit(c);
    (void)count(c); /* it holds nothing before: frees nothing */
}

int
folio_out_forget(struct folio_conn *c)
{
    struct folio_worker *w = c->w;
    int freed = unreserve(c);

    while (c->nrefs > 0)
        freed |= ref_pop(c);
    c->out_refgap = 0;
    if (c->out_held == 0)
        return freed;
    w->out_total -= c->out_held;
    c->out_held = 0;
    publish(w);
    return w->waitq.head != NULL;
}

int
folio_out_settle(struct folio_conn *c)
{
    return unreserve(c);
}

int
folio_out_ref_add(struct folio_conn *c, struct folio_bytes *b)
{
    size_t buf = folio_buf_pending(&c->out);
    struct folio_out_ref *r;

    if (c->nrefs == FOLIO_CONN_REFS)
        return FOLIO_EAGAIN;
    if (c->out.b_max != 0 &&
        folio_conn_out_pending(c) + b->fb_len > c->out.b_max)
        return FOLIO_ETOOBIG;
    r = &c->wk->refs[(c->ref_head + c->nrefs++) % FOLIO_CONN_REFS];
    r->b = folio_bytes_ref(b);
    r->off = 0;
    r->gap = buf - c->out_refgap;
    c->out_refgap = buf;
    c->out_refbytes += b->fb_len;
    page_count(c, b);
    return 0;
}

/* One more iovec of base[0..len), `budget` bytes at most in all. */
static int
iov_add(struct iovec *iov, int n, const char *base, size_t len,
        size_t *budget)
{
    if (len > *budget)
        len = *budget;
    if (len == 0)
        return n;
    iov[n].iov_base = (void *)base;
    iov[n].iov_len = len;
    *budget -= len;
    return n + 1;
}

int
folio_out_iov(const struct folio_conn *c, struct iovec *iov, int max,
              size_t limit)
{
    const char *p = c->out.b_data + c->out.b_off;
    size_t left = folio_buf_pending(&c->out);
    unsigned i;
    int n = 0;

    for (i = 0; i < c->nrefs && n + 2 <= max && limit > 0; i++) {
        const struct folio_out_ref *r =
            &c->wk->refs[(c->ref_head + i) % FOLIO_CONN_REFS];

        n = iov_add(iov, n, p, r->gap, &limit);
        p += r->gap;
        left -= r->gap;
        n = iov_add(iov, n, r->b->fb_data + r->off, r->b->fb_len - r->off,
                    &limit);
    }
    if (i == c->nrefs && n < max)
        n = iov_add(iov, n, p, left, &limit);
    return n;
}

int
folio_out_sent(struct folio_conn *c, size_t n)
{
    int freed = 0;
    size_t k;

    while (n > 0 && c->nrefs > 0) {
        struct folio_out_ref *r = &c->wk->refs[c->ref_head];

        if ((k = r->gap < n ? r->gap : n) > 0) {
            folio_buf_consume(&c->out, k);
            r->gap -= k;
            c->out_refgap -= k;
            n -= k;
        }
        if (r->gap > 0)
            break; /* n is spent */
        k = r->b->fb_len - r->off;
        if (k > n)
            k = n;
        r->off += k;
        c->out_refbytes -= k;
        n -= k;
        if (r->off == r->b->fb_len)
            freed |= ref_pop(c);
    }
    if (n > 0)
        folio_buf_consume(&c->out, n);
    return freed;
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
           w->out_total <= c->out_held + c->out_resv;
}

/* Make `size` bytes of budget for c's reply by reference, and count it. */
static void
reserve_budget(struct folio_conn *c, size_t size)
{
    if (size <= c->out_resv)
        return;
    c->w->out_total += size - c->out_resv;
    c->out_resv = size;
    publish(c->w);
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
    if (c->out_byref)
        grow = c->out_want > c->out_resv ? c->out_want - c->out_resv : 0;
    else
        grow = folio_out_growth(c, c->out_want);
    if (grow > 0 && !budget_fits(c, grow))
        return NULL;
    folio_out_unwait(c);
    if (c->out_byref)
        reserve_budget(c, c->out_want); /* its, until it runs */
    else if (grow > 0)
        reserve(c, c->out_want);
    return c;
}

int
folio_out_own_room(const struct folio_conn *c)
{
    return !c->out_byref && folio_out_growth(c, c->out_want) == 0;
}

/* Wait last in the queue for `size` bytes of room (byref: of budget). */
static enum folio_conn_state
wait_room(struct folio_conn *c, size_t size, int byref)
{
    struct folio_worker *w = c->w;

    /* Behind the others that wait: first come, first served. */
    c->out_want = size;
    c->out_byref = byref;
    folio_connq_push(&w->waitq, c, FOLIO_QL_WAIT);
    folio_stat_add(&w->slot->ws_output_waits, 1);
    return FOLIO_CONN_OUT_WAIT;
}

/* Whether c's pending output and a reply of `size` are over its soft limit. */
static int
over_soft(struct folio_conn *c, size_t size)
{
    size_t pending = folio_conn_out_pending(c);

    if (pending == 0 || pending + size <= soft_limit(c))
        return 0;
    folio_stat_add(&c->w->slot->ws_output_waits, 1);
    return 1;
}

enum folio_conn_state
folio_out_room_wait(struct folio_conn *c, size_t size)
{
    struct folio_worker *w = c->w;
    size_t grow;

    if (over_soft(c, size))
        return FOLIO_CONN_PAUSED;
    if ((grow = folio_out_growth(c, size)) == 0)
        return FOLIO_CONN_READY;
    if (in_budget(c) && (w->waitq.head != NULL || !budget_fits(c, grow)) &&
        w->out_total > c->out_held + c->out_resv)
        return wait_room(c, size, 0);
    reserve(c, size);
    return FOLIO_CONN_READY;
}

enum folio_conn_state
folio_out_room_ref(struct folio_conn *c, size_t size)
{
    struct folio_worker *w = c->w;
    size_t grow;

    if (c->nrefs == FOLIO_CONN_REFS) {
        /* Its client has 8 pages to read: it reads first. */
        folio_stat_add(&w->slot->ws_output_waits, 1);
        return FOLIO_CONN_PAUSED;
    }
    if (over_soft(c, size))
        return FOLIO_CONN_PAUSED;
    if (!in_budget(c) || size <= c->out_resv)
        return FOLIO_CONN_READY;
    grow = size - c->out_resv;
    if ((w->waitq.head != NULL || !budget_fits(c, grow)) &&
        w->out_total > c->out_held + c->out_resv)
        return wait_room(c, size, 1);
    reserve_budget(c, size);
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
