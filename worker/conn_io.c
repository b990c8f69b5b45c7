/*
 * conn_io.c - a connection's socket and buffers.  A connection has two
 * buffers while it has work (recv into `in`, send from `out`, with
 * writev when the output points at shared pages, out.c's references),
 * and none while it waits for its client: once its input is answered and
 * its output written, it gives them, with the work area that framed its
 * input (struct folio_conn_work), to the worker's pool, where the next
 * connection with bytes to read takes them, as memcached's idle
 * connections hold no read buffer.  So an idle connection costs its
 * structure alone (576 bytes), and serving a request in steady state allocates
 * nothing (the pool holds as many as the busiest moment of the last
 * POOL_TRIM_MS took, POOL_KEEP at least; what it did not, it frees).
 * The write event is added only while the socket is full.  Called by
 * conn.c; calls out.c for what a send took (the framing's header, an
 * inline, says how large a message is coming).
 */
#include "config.h"

#include <sys/socket.h>
#include <sys/uio.h>

#include <errno.h>
#include <string.h>

#include "shm/stats.h"
#include "src/alloc.h"
#include "src/clock.h"
#include "src/log.h"
#include "src/sys.h"
#include "worker/conn_io.h"
#include "worker/face.h"
#include "worker/face_rpc.h"
#include "worker/out.h"
#include "worker/worker_int.h"

#define READ_MIN 4096       /* read at least this much room */
/*
 * A connection's share of one write: what is left goes at its next write
 * event, in a later turn of the loop.  Two hundred connections each
 * handed megabytes of a page by reference would otherwise fill their
 * sockets' buffers (which grow to 4 MB: tcp_wmem) in one turn, hundreds
 * of milliseconds of copying before any other connection is served.
 */
#define WRITE_SHARE (64u * 1024)
#define FREE_CONNS_KEPT 256 /* closed connections kept for reuse */
#define POOL_TRIM_MS 10000  /* pairs of the pool unused this long: freed, */
#define POOL_KEEP 32        /* but for these (1 MiB) */

/* ---- the buffers: a connection's while it has work, else the pool's ---- */

/*
 * The pool holds work areas, each with the two buffers it came with, as
 * connections take and give them.
 * A work area left in the middle of a message (its connection closed),
 * or new, is framed afresh when taken; one given back by an idle
 * connection is at rest, ready for the next message of its face.
 */
#define FACE_NONE (~0u)

/* c's two buffers (base size, empty) and its work area onto the pool. */
static inline void
pool_push(struct folio_worker *w, struct folio_conn *c, unsigned face)
{
    struct folio_conn_work *wk = c->wk;

    wk->pooled.next = w->pool;
    wk->pooled.in = c->in.b_data;
    wk->pooled.out = c->out.b_data;
    wk->pooled.face = face;
    w->pool = wk;
    w->npool++;
}

/* Whether c's two buffers are at their base size (poolable). */
static inline int
at_base(const struct folio_conn *c)
{
    return c->in.b_cap == FOLIO_CONN_BUF && c->out.b_cap == FOLIO_CONN_BUF;
}

/* c without its buffers and work area: pooled, or freed. */
static inline void
detach(struct folio_conn *c)
{
    c->in.b_data = c->out.b_data = NULL;
    c->wk = NULL;
    c->in.b_off = c->in.b_len = c->in.b_cap = 0;
    c->out.b_off = c->out.b_len = c->out.b_cap = 0;
}

/*
 * c's two buffers and its work area to the pool, or freed when grown or
 * when the worker is on its way out; `face`: what the area is ready for.
 */
static void
pool_give(struct folio_worker *w, struct folio_conn *c, unsigned face)
{
    if (c->wk != NULL && at_base(c) && !w->stopping && !w->retiring) {
        pool_push(w, c, face);
    } else {
        folio_free(c->in.b_data);
        folio_free(c->out.b_data);
        folio_free(c->wk);
    }
    detach(c);
}

int
folio_conn_io_attach_slow(struct folio_conn *c)
{
    struct folio_worker *w = c->w;
    struct folio_conn_work *wk = w->pool;

    if (wk != NULL) {
        c->in.b_data = wk->pooled.in;
        c->out.b_data = wk->pooled.out;
        c->wk = wk;
        w->pool = wk->pooled.next;
        if (--w->npool < w->pool_low)
            w->pool_low = w->npool;
        c->in.b_cap = c->out.b_cap = FOLIO_CONN_BUF;
        /* Left in the middle of a message, or the other face's. */
        if (wk->pooled.face != (c->flags & CONN_HTTP))
            folio_face_frame_init(c);
        return 0;
    }
    if ((c->in.b_data = folio_malloc(FOLIO_CONN_BUF)) == NULL ||
        (c->out.b_data = folio_malloc(FOLIO_CONN_BUF)) == NULL ||
        (c->wk = folio_malloc(sizeof(*c->wk))) == NULL) {
        folio_free(c->in.b_data);
        folio_free(c->out.b_data);
        c->in.b_data = c->out.b_data = NULL;
        return -1;
    }
    c->in.b_cap = c->out.b_cap = FOLIO_CONN_BUF;
    folio_face_frame_init(c);
    return 0;
}

void
folio_conn_io_idle(struct folio_conn *c)
{
    struct folio_worker *w = c->w;

    /* Grown buffers are kept a while (folio_conn_sweep shrinks them). */
    if (!at_base(c))
        return;
    if (w->stopping || w->retiring) {
        pool_give(w, c, FACE_NONE); /* freed */
        return;
    }
    pool_push(w, c, c->flags & CONN_HTTP); /* at rest */
    detach(c);
}

/* The pool's newest area freed, with its buffers. */
static void
pool_free_one(struct folio_worker *w)
{
    struct folio_conn_work *wk = w->pool;

    w->pool = wk->pooled.next;
    w->npool--;
    folio_free(wk->pooled.in);
    folio_free(wk->pooled.out);
    folio_free(wk);
}

void
folio_conn_io_trim(struct folio_worker *w)
{
    if (w->now_ms - w->pool_trim_ms < POOL_TRIM_MS)
        return;
    /*
     * What no connection took since the last trim is not needed, but for
     * POOL_KEEP pairs: a moment with more connections at work than usual
     * (a few, now and then) takes them without allocating.
     */
    for (; w->pool_low > 0 && w->npool > POOL_KEEP; w->pool_low--)
        pool_free_one(w);
    w->pool_low = w->npool;
    w->pool_trim_ms = w->now_ms;
}

/* ---- the structures ---- */

struct folio_conn *
folio_conn_io_get(struct folio_worker *w)
{
    struct folio_conn *c = w->free_conns;

    if (c != NULL) {
        w->free_conns = c->next;
        w->nfree--;
        return c;
    }
    if ((c = folio_calloc(1, sizeof(*c))) == NULL)
        return NULL;
    /* Its buffers come with its first bytes (folio_conn_io_attach). */
    c->w = w;
    c->in.b_base = c->out.b_base = FOLIO_CONN_BUF;
    c->in.b_max = w->cfg->max_message_bytes + FOLIO_CONN_BUF;
    return c;
}

void
folio_conn_io_free(struct folio_conn *c)
{
    folio_buf_free(&c->in);
    folio_buf_free(&c->out);
    folio_free(c->wk);
    folio_free(c);
}

void
folio_conn_io_put(struct folio_worker *w, struct folio_conn *c)
{
    pool_give(w, c, FACE_NONE); /* closed: maybe in a message */
    if (w->nfree >= FREE_CONNS_KEPT || w->stopping || w->retiring) {
        folio_free(c);
        return;
    }
    c->prev = NULL;
    c->next = w->free_conns;
    w->free_conns = c;
    w->nfree++;
}

void
folio_conn_io_free_kept(struct folio_worker *w)
{
    struct folio_conn *c;

    while ((c = w->free_conns) != NULL) {
        w->free_conns = c->next;
        folio_conn_io_free(c);
    }
    w->nfree = 0;
    while (w->pool != NULL)
        pool_free_one(w);
    w->pool_low = 0;
}

int
folio_conn_io_read(struct folio_conn *c)
{
    size_t want = READ_MIN, pending = folio_buf_pending(&c->in);
    uint64_t need;
    ssize_t n;

    if (folio_conn_io_attach(c) != 0) {
        folio_log_warnx("no memory for a connection's buffers: closed");
        return -1;
    }
    need = folio_face_frame_need(c);
    /*
     * A large message announced by its header: grow toward it as its bytes
     * arrive (doubling), not for the claim alone, so that a header costs
     * nothing until what it announces comes.
     */
    if (need > pending && need - pending > want) {
        if (pending > want)
            want = pending;
        if (want > need - pending)
            want = (size_t)(need - pending);
    }
    if (folio_buf_space(&c->in) < want &&
        folio_buf_reserve(&c->in, want) != 0) {
        folio_log_warnx("no memory for a %zu-byte message: connection closed",
                        (size_t)need);
        return -1;
    }
    n = folio_sys_recv(c->fd, c->in.b_data + c->in.b_len,
                       folio_buf_space(&c->in));
    if (n > 0) {
        c->in.b_len += (size_t)n;
        folio_stat_add(&c->w->slot->ws_bytes_in, (uint64_t)n);
        c->last_ms = c->w->now_ms;
        /* Every message complete now was complete with these bytes. */
        if (c->w->cfg->stats)
            c->read_ns = folio_mono_ns();
        return 1;
    }
    if (n == 0) {
        c->flags |= CONN_EOF;
        event_del(&c->ev_read);
        return 0;
    }
    if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)
        return 0;
    return -1;
}

/* The socket is full (or c's share of the turn written): the rest later. */
static int
write_later(struct folio_conn *c)
{
    if (c->out_ms == 0)
        c->out_ms = c->w->now_ms; /* send_timeout from now */
    if (!(c->flags & CONN_WRITING)) {
        event_add(&c->ev_write, NULL);
        c->flags |= CONN_WRITING;
    }
    return 1;
}

/*
 * A large output, or one that points at pages: sendmsg of what the
 * buffer and the pages hold, in order, up to c's share of the turn.
 */
static int
write_large(struct folio_conn *c)
{
    struct folio_worker *w = c->w;
    struct iovec iov[2 * FOLIO_CONN_REFS + 1];
    struct msghdr mh;
    size_t sent = 0;
    int freed = 0;
    ssize_t n;

    while (folio_conn_out_pending(c) > 0) {
        if (sent >= WRITE_SHARE)
            return write_later(c) | freed;
        memset(&mh, 0, sizeof(mh));
        mh.msg_iov = iov;
        mh.msg_iovlen = (size_t)folio_out_iov(c, iov, 2 * FOLIO_CONN_REFS + 1,
                                              WRITE_SHARE - sent);
        if ((n = folio_sys_sendmsg(c->fd, &mh, MSG_NOSIGNAL)) > 0) {
            if (folio_out_sent(c, (size_t)n))
                freed = FOLIO_IO_FREED;
            folio_stat_add(&w->slot->ws_bytes_out, (uint64_t)n);
            c->last_ms = c->out_ms = w->now_ms;
            sent += (size_t)n;
            continue;
        }
        if (n == -1 && errno == EINTR)
            continue;
        if (n == -1 && (errno == EAGAIN || errno == EWOULDBLOCK))
            return write_later(c) | freed;
        return -1;
    }
    return freed; /* 0: all written (the caller ends the wait) */
}

int
folio_conn_io_write(struct folio_conn *c)
{
    struct folio_worker *w = c->w;
    size_t pending;
    ssize_t n;
    int r;

    while ((pending = folio_buf_pending(&c->out)) > 0) {
        if (c->nrefs > 0 || pending > WRITE_SHARE) {
            r = write_large(c);
            goto written;
        }
        n = folio_sys_send(c->fd, c->out.b_data + c->out.b_off, pending,
                           MSG_NOSIGNAL);
        if (n > 0) {
            folio_buf_consume(&c->out, (size_t)n);
            folio_stat_add(&w->slot->ws_bytes_out, (uint64_t)n);
            c->last_ms = c->out_ms = w->now_ms;
            continue;
        }
        if (n == -1 && errno == EINTR)
            continue;
        if (n == -1 && (errno == EAGAIN || errno == EWOULDBLOCK))
            return write_later(c);
        return -1;
    }
    r = c->nrefs > 0 ? write_large(c) : 0;
written:
    if (r != 0 && r != FOLIO_IO_FREED)
        return r;
    c->out_ms = 0;
    if (c->flags & CONN_WRITING) {
        event_del(&c->ev_write);
        c->flags &= ~CONN_WRITING;
    }
    return r;
}
