/*
 * conn_io.c - a connection's socket and buffers.  Each connection owns
 * two buffers allocated once and kept with it on a free list when it
 * closes, so that serving a request in steady state allocates nothing:
 * recv into `in`, send from `out` (with writev when the output points at
 * shared pages, out.c's references).  The write event is added only
 * while the socket is full.  Called by conn.c; calls out.c for what a
 * send took (the framing's header, an inline, says how large a message
 * is coming).
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
    if (folio_buf_init(&c->in, FOLIO_CONN_BUF,
                       w->cfg->max_message_bytes + FOLIO_CONN_BUF) != 0 ||
        folio_buf_init(&c->out, FOLIO_CONN_BUF, 0) != 0) {
        folio_conn_io_free(c);
        return NULL;
    }
    return c;
}

void
folio_conn_io_free(struct folio_conn *c)
{
    folio_buf_free(&c->in);
    folio_buf_free(&c->out);
    folio_free(c);
}

void
folio_conn_io_put(struct folio_worker *w, struct folio_conn *c)
{
    if (w->nfree >= FREE_CONNS_KEPT || w->stopping || w->retiring) {
        folio_conn_io_free(c);
        return;
    }
    folio_buf_reset(&c->in);
    folio_buf_reset(&c->out);
    folio_buf_shrink(&c->in);
    folio_buf_shrink(&c->out);
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
}

int
folio_conn_io_read(struct folio_conn *c)
{
    size_t want = READ_MIN, pending = folio_buf_pending(&c->in);
    uint64_t need = folio_face_frame_need(c);
    ssize_t n;

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
