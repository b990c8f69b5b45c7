/*
 * conn_io.c - a connection's socket and buffers.  Each connection owns
 * two buffers allocated once and kept with it on a free list when it
 * closes, so that serving a request in steady state allocates nothing:
 * recv into `in`, send from `out`.  The write event is added only while
 * the socket is full.  Called by conn.c; calls none of worker/ (the
 * framing's header, an inline, says how large a message is coming).
 */
#include "config.h"

#include <sys/socket.h>

#include <errno.h>

#include "shm/stats.h"
#include "src/alloc.h"
#include "src/clock.h"
#include "src/log.h"
#include "worker/conn_io.h"
#include "worker/face.h"
#include "worker/worker_int.h"

#define READ_MIN 4096       /* read at least this much room */
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
    n = recv(c->fd, c->in.b_data + c->in.b_len, folio_buf_space(&c->in), 0);
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

int
folio_conn_io_write(struct folio_conn *c)
{
    struct folio_worker *w = c->w;
    size_t pending;
    ssize_t n;

    while ((pending = folio_buf_pending(&c->out)) > 0) {
        n = send(c->fd, c->out.b_data + c->out.b_off, pending, MSG_NOSIGNAL);
        if (n > 0) {
            folio_buf_consume(&c->out, (size_t)n);
            folio_stat_add(&w->slot->ws_bytes_out, (uint64_t)n);
            c->last_ms = c->out_ms = w->now_ms;
            continue;
        }
        if (n == -1 && errno == EINTR)
            continue;
        if (n == -1 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            if (c->out_ms == 0)
                c->out_ms = w->now_ms; /* send_timeout from now */
            if (!(c->flags & CONN_WRITING)) {
                event_add(&c->ev_write, NULL);
                c->flags |= CONN_WRITING;
            }
            return 1;
        }
        return -1;
    }
    c->out_ms = 0;
    if (c->flags & CONN_WRITING) {
        event_del(&c->ev_write);
        c->flags &= ~CONN_WRITING;
    }
    return 0;
}
