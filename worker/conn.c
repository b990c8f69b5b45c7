/*
 * conn.c - a worker's connections: accept, read, frame, dispatch, write.
 *
 * Each connection owns two buffers allocated once (and kept on a free
 * list with the connection when it closes), so serving a request in steady
 * state allocates nothing: read into `in`, scan for complete messages,
 * pack replies straight into `out`, send.  The write event is added only
 * when the socket is full; reading pauses while more than
 * max_output_bytes of replies are pending (a client that does not read
 * cannot grow the server's memory).
 */
#include "config.h"

#include <sys/socket.h>

#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "src/addr.h"
#include "src/alloc.h"
#include "src/chan.h"
#include "src/clock.h"
#include "src/log.h"
#include "src/rpc.h"
#include "worker/dispatch.h"
#include "worker/worker_int.h"

#define READ_MIN 4096       /* read at least this much room */
#define FREE_CONNS_KEPT 256 /* closed connections kept for reuse */
#define ACCEPTS_PER_EVENT 16
#define SHRINK_IDLE_MS 10000 /* quiet this long before buffers shrink */
/*
 * A connection's share of one turn of the loop: once its messages have
 * taken TURN_NS (the clock is read every TURN_CHECK messages, from the
 * TURN_CHECK-th on), the others get their turn before it goes on (memcached's reqs_per_event, by time, so
 * that cheap pipelined calls rarely yield).  Without it, a client that
 * pipelines notifications (no replies, so no output backpressure) into a
 * buffer grown by a large message had every one of them run before any
 * other connection was looked at: seconds, for expensive calls.
 */
#define TURN_NS 1000000 /* 1 ms */
#define TURN_CHECK 16

static void on_read(evutil_socket_t fd, short what, void *arg);
static void on_write(evutil_socket_t fd, short what, void *arg);
static void on_resume(evutil_socket_t fd, short what, void *arg);

static struct folio_conn *
conn_get(struct folio_worker *w)
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
        folio_buf_free(&c->in);
        folio_buf_free(&c->out);
        folio_free(c);
        return NULL;
    }
    return c;
}

static void
conn_put(struct folio_worker *w, struct folio_conn *c)
{
    if (w->nfree >= FREE_CONNS_KEPT || w->stopping || w->retiring) {
        folio_buf_free(&c->in);
        folio_buf_free(&c->out);
        folio_free(c);
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

static void
conn_unlink(struct folio_worker *w, struct folio_conn *c)
{
    event_del(&c->ev_read);
    event_del(&c->ev_write);
    event_del(&c->ev_resume);
    if (c->prev != NULL)
        c->prev->next = c->next;
    else
        w->conns = c->next;
    if (c->next != NULL)
        c->next->prev = c->prev;
    w->nconns--;
    folio_stat_set(&w->slot->ws_conns_open, w->nconns);
}

void
folio_conn_close(struct folio_conn *c)
{
    struct folio_worker *w = c->w;

    if (c->flags & CONN_HELD) {
        /* A held reply points here: close once it is released. */
        c->flags |= CONN_CLOSE_AFTER | CONN_EOF;
        event_del(&c->ev_read);
        event_del(&c->ev_write);
        c->flags &= ~CONN_WRITING;
        return;
    }
    conn_unlink(w, c);
    close(c->fd);
    conn_put(w, c);
    /* Draining: the loop (worker.c) decides whether that was the last. */
    if ((w->stopping || w->retiring) && w->ev_settle != NULL)
        event_active(w->ev_settle, EV_TIMEOUT, 1);
}

void
folio_conn_open(struct folio_worker *w, int fd, unsigned flags,
                const void *data, size_t len)
{
    struct folio_conn *c;
    struct sockaddr_storage ss;
    socklen_t sl = sizeof(ss);

    if (w->nconns >= w->cfg->max_connections + FOLIO_CONN_RESERVE) {
        folio_stat_add(&w->slot->ws_conns_rejected, 1);
        close(fd);
        return;
    }
    if (w->nconns >= w->cfg->max_connections)
        flags |= CONN_REJECT;
    if ((c = conn_get(w)) == NULL) {
        folio_log_warnx("out of memory for a connection: closed");
        close(fd);
        return;
    }
    c->fd = fd;
    c->flags = flags;
    c->w = w;
    c->last_ms = w->now_ms;
    c->msg_start_ms = 0;
    /* Its peer, once, for the watchdog's and the slow log's lines. */
    if (getpeername(fd, (struct sockaddr *)&ss, &sl) == 0)
        folio_addr_pack((struct sockaddr *)&ss, sl, c->peer);
    else
        memset(c->peer, 0, sizeof(c->peer));
    folio_mp_scan_init(&c->scan, w->cfg->max_message_bytes, w->cfg->max_depth);
    event_assign(&c->ev_read, w->base, fd, EV_READ | EV_PERSIST, on_read, c);
    event_assign(&c->ev_write, w->base, fd, EV_WRITE | EV_PERSIST, on_write,
                 c);
    evtimer_assign(&c->ev_resume, w->base, on_resume, c);
    c->prev = NULL;
    c->next = w->conns;
    if (w->conns != NULL)
        w->conns->prev = c;
    w->conns = c;
    w->nconns++;
    folio_stat_set(&w->slot->ws_conns_open, w->nconns);
    folio_stat_add(&w->slot->ws_conns_accepted, 1);
    if (event_add(&c->ev_read, NULL) != 0) {
        folio_log_warnx("event_add failed: connection closed");
        folio_conn_close(c);
        return;
    }
    if (len > 0) {
        /*
         * Bytes read by the worker that handed the connection over.  If
         * they do not fit (a reload lowered max_message_bytes while a large
         * message was arriving), dropping them would make the rest of the
         * message be read as new messages: close instead.
         */
        if (folio_buf_append(&c->in, data, len) != 0) {
            folio_log_warnx("the %zu bytes of a handed-over connection do "
                            "not fit max_message_bytes: closed",
                            len);
            folio_stat_add(&w->slot->ws_protocol_errors, 1);
            folio_conn_close(c);
            return;
        }
        on_read(-1, 0, c);
    }
}

/* Pack an error reply straight into the output. */
static void
reply_error(struct folio_conn *c, uint32_t msgid, int code, const char *msg)
{
    msgpack_packer pk;

    msgpack_packer_init(&pk, &c->out, folio_buf_pack_write);
    folio_rpc_pack_error(&pk, msgid, code, msg, strlen(msg));
    folio_stat_add(&c->w->slot->ws_errors, 1);
}

/*
 * The stream cannot be framed any further: answer the request if its
 * msgid can be read from the bytes we have, then close.
 */
static void
bad_stream(struct folio_conn *c, int why, const char *p, size_t avail)
{
    const struct folio_config *cfg = c->w->cfg;
    struct folio_mp_cur cur;
    char msg[128];
    uint32_t n;
    int64_t type, id;

    folio_mp_cur_init(&cur, p, avail);
    if (folio_mp_read_array(&cur, &n) == 0 && n == 4 &&
        folio_mp_read_int(&cur, &type) == 0 && type == FOLIO_RPC_REQUEST &&
        folio_mp_read_int(&cur, &id) == 0 && id >= 0 && id <= UINT32_MAX) {
        if (why == FOLIO_MP_TOOBIG)
            snprintf(msg, sizeof(msg),
                     "message over max_message_bytes (%llu)",
                     (unsigned long long)cfg->max_message_bytes);
        else if (why == FOLIO_MP_TOODEEP)
            snprintf(msg, sizeof(msg), "nesting deeper than max_depth (%u)",
                     cfg->max_depth);
        else
            snprintf(msg, sizeof(msg), "malformed msgpack");
        reply_error(c, (uint32_t)id,
                    why == FOLIO_MP_TOOBIG ? FOLIO_ST_RESOURCE_EXHAUSTED
                                           : FOLIO_ST_INVALID_ARGUMENT,
                    msg);
    }
    folio_stat_add(&c->w->slot->ws_protocol_errors, 1);
    folio_buf_reset(&c->in);
    c->flags |= CONN_CLOSE_AFTER;
}

/* One complete message: parse it and dispatch it. */
static void
handle_message(struct folio_conn *c, const char *p, size_t len)
{
    struct folio_rpc_msg m;
    const char *why;

    if (folio_rpc_parse(p, len, &m, &why) != 0) {
        if (m.has_msgid) {
            reply_error(c, m.msgid, FOLIO_ST_INVALID_ARGUMENT, why);
        } else {
            folio_stat_add(&c->w->slot->ws_protocol_errors, 1);
            c->flags |= CONN_CLOSE_AFTER;
        }
        return;
    }
    if (m.type == FOLIO_RPC_RESPONSE) {
        reply_error(c, m.msgid, FOLIO_ST_INVALID_ARGUMENT,
                    "foliod takes requests and notifications, not responses");
        return;
    }
    if (c->flags & CONN_REJECT) {
        char msg[96];

        if (m.type == FOLIO_RPC_REQUEST) {
            snprintf(msg, sizeof(msg),
                     "too many connections (max_connections %u per worker)",
                     c->w->cfg->max_connections);
            reply_error(c, m.msgid, FOLIO_ST_RESOURCE_EXHAUSTED, msg);
        }
        folio_stat_add(&c->w->slot->ws_conns_rejected, 1);
        c->flags |= CONN_CLOSE_AFTER;
        return;
    }
    folio_dispatch(c->w, c, &m, (c->flags & CONN_ADMIN) != 0, &c->out);
}

/*
 * This connection has had its share of the turn: read nothing more and
 * process the rest of its input in a later turn, after the others.
 */
static void
yield(struct folio_conn *c)
{
    static const struct timeval now = {0, 0};

    c->flags |= CONN_YIELDED;
    event_del(&c->ev_read);
    evtimer_add(&c->ev_resume, &now);
}

/* Answer the complete messages in the input buffer, a turn's share. */
static void
process(struct folio_conn *c)
{
    struct folio_worker *w = c->w;
    const char *p;
    size_t avail;
    unsigned served = 0;
    uint64_t t0 = 0;
    int r;

    while (!(c->flags & (CONN_CLOSE_AFTER | CONN_READ_PAUSED | CONN_HELD |
                         CONN_YIELDED))) {
        if ((avail = folio_buf_pending(&c->in)) == 0)
            break;
        p = c->in.b_data + c->in.b_off;
        r = folio_mp_scan(&c->scan, p, avail);
        if (r == FOLIO_MP_MORE) {
            if (c->msg_start_ms == 0)
                c->msg_start_ms = w->now_ms;
            break;
        }
        if (r != FOLIO_MP_DONE) {
            bad_stream(c, r, p, avail);
            break;
        }
        handle_message(c, p, (size_t)c->scan.pos);
        folio_buf_consume(&c->in, (size_t)c->scan.pos);
        folio_mp_scan_reset(&c->scan);
        c->msg_start_ms = 0;
        if (folio_buf_pending(&c->out) > w->cfg->max_output_bytes) {
            event_del(&c->ev_read);
            c->flags |= CONN_READ_PAUSED;
        } else if (++served % TURN_CHECK == 0 &&
                   folio_buf_pending(&c->in) > 0 &&
                   !(c->flags & (CONN_CLOSE_AFTER | CONN_HELD))) {
            /* The clock from the first check on: none for short bursts. */
            if (t0 == 0)
                t0 = folio_mono_ns();
            else if (folio_mono_ns() - t0 >= TURN_NS)
                yield(c);
        }
    }
    if ((c->flags & CONN_EOF) &&
        !(c->flags & (CONN_READ_PAUSED | CONN_HELD | CONN_YIELDED)))
        c->flags |= CONN_CLOSE_AFTER;
}

/* Write what is pending.  Returns 0, or -1 when the connection closed. */
static int
flush(struct folio_conn *c)
{
    size_t pending;
    ssize_t n;

    if (c->flags & CONN_HELD)
        return 0; /* the held reply is not complete */
    while ((pending = folio_buf_pending(&c->out)) > 0) {
        n = send(c->fd, c->out.b_data + c->out.b_off, pending, MSG_NOSIGNAL);
        if (n > 0) {
            folio_buf_consume(&c->out, (size_t)n);
            folio_stat_add(&c->w->slot->ws_bytes_out, (uint64_t)n);
            c->last_ms = c->w->now_ms;
            continue;
        }
        if (n == -1 && errno == EINTR)
            continue;
        if (n == -1 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            if (!(c->flags & CONN_WRITING)) {
                event_add(&c->ev_write, NULL);
                c->flags |= CONN_WRITING;
            }
            return 0;
        }
        folio_conn_close(c);
        return -1;
    }
    if (c->flags & CONN_WRITING) {
        event_del(&c->ev_write);
        c->flags &= ~CONN_WRITING;
    }
    if (c->flags & CONN_CLOSE_AFTER) {
        folio_conn_close(c);
        return -1;
    }
    return 0;
}

/* Give c, with the bytes read from it, to the master for a newer worker. */
static int
handoff(struct folio_conn *c)
{
    struct folio_worker *w = c->w;
    uint32_t flags = (c->flags & CONN_ADMIN) ? FOLIO_CHAN_F_ADMIN : 0;

    if (folio_chan_send(w->args->chan_fd, FOLIO_CHAN_HANDOFF, flags, 0,
                        c->in.b_data + c->in.b_off, folio_buf_pending(&c->in),
                        c->fd) != 0) {
        folio_log_warn("handing a connection over");
        return -1;
    }
    folio_stat_add(&w->slot->ws_conns_handed_off, 1);
    folio_conn_close(c);
    return 0;
}

/*
 * While stopping or retiring: a connection between requests with nothing
 * left to write is closed, or handed to a newer worker.
 */
static void
drain_check(struct folio_conn *c)
{
    struct folio_worker *w = c->w;

    if (folio_buf_pending(&c->out) != 0 ||
        (c->flags & (CONN_READ_PAUSED | CONN_HELD | CONN_YIELDED)))
        return;
    if (w->retiring && !(c->flags & CONN_REJECT) &&
        folio_buf_pending(&c->in) <= FOLIO_CHAN_MAX_DATA) {
        if (handoff(c) == 0)
            return;
    } else if (c->msg_start_ms != 0 && !(c->flags & CONN_EOF)) {
        return; /* a request is arriving: answer it first */
    }
    folio_conn_close(c);
}

static void
run(struct folio_conn *c)
{
    struct folio_worker *w = c->w;

    for (;;) {
        process(c);
        if (flush(c) != 0)
            return;
        if ((c->flags & CONN_READ_PAUSED) &&
            folio_buf_pending(&c->out) == 0) {
            c->flags &= ~CONN_READ_PAUSED;
            if (!(c->flags & CONN_EOF))
                event_add(&c->ev_read, NULL);
            if (folio_buf_pending(&c->in) > 0)
                continue;
            if (c->flags & CONN_EOF) {
                c->flags |= CONN_CLOSE_AFTER;
                if (flush(c) != 0)
                    return;
            }
        }
        break;
    }
    if (w->stopping || w->retiring)
        drain_check(c);
}

/* Read once.  Returns 1 if bytes came, 0 if none, -1 if c was closed. */
static int
read_some(struct folio_conn *c)
{
    size_t want = READ_MIN, pending = folio_buf_pending(&c->in);
    ssize_t n;

    /*
     * A large message announced by its header: grow toward it as its bytes
     * arrive (doubling), not for the claim alone, so that a header costs
     * nothing until what it announces comes.
     */
    if (c->scan.pos > pending && c->scan.pos - pending > want) {
        if (pending > want)
            want = pending;
        if (want > c->scan.pos - pending)
            want = (size_t)(c->scan.pos - pending);
    }
    if (folio_buf_space(&c->in) < want &&
        folio_buf_reserve(&c->in, want) != 0) {
        folio_log_warnx("no memory for a %zu-byte message: connection closed",
                        (size_t)c->scan.pos);
        folio_conn_close(c);
        return -1;
    }
    n = recv(c->fd, c->in.b_data + c->in.b_len, folio_buf_space(&c->in), 0);
    if (n > 0) {
        c->in.b_len += (size_t)n;
        folio_stat_add(&c->w->slot->ws_bytes_in, (uint64_t)n);
        c->last_ms = c->w->now_ms;
        return 1;
    }
    if (n == 0) {
        c->flags |= CONN_EOF;
        event_del(&c->ev_read);
        return 0;
    }
    if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)
        return 0;
    folio_conn_close(c);
    return -1;
}

static void
on_read(evutil_socket_t fd, short what, void *arg)
{
    struct folio_conn *c = arg;

    if (fd != -1 && read_some(c) < 0)
        return;
    run(c);
}

static void
on_write(evutil_socket_t fd, short what, void *arg)
{
    run(arg);
}

/* Read again, unless something still holds reading back. */
static void
resume_read(struct folio_conn *c)
{
    if (!(c->flags & (CONN_EOF | CONN_READ_PAUSED | CONN_HELD |
                      CONN_CLOSE_AFTER | CONN_YIELDED)))
        event_add(&c->ev_read, NULL);
}

static void
on_resume(evutil_socket_t fd, short what, void *arg)
{
    struct folio_conn *c = arg;

    c->flags &= ~CONN_YIELDED;
    resume_read(c);
    run(c);
}

int
folio_call_hold(struct folio_call *call, struct folio_hold *h)
{
    struct folio_conn *c = call->conn;

    if (c == NULL || (c->flags & CONN_HELD))
        return -1;
    c->flags |= CONN_HELD;
    event_del(&c->ev_read); /* nothing more until the release */
    h->conn = c;
    h->head = call->head; /* from the first pending byte, as dispatch keeps it */
    h->msgid = call->msgid;
    h->notify = call->notify;
    return 0;
}

void
folio_hold_release(struct folio_hold *h, const void *result, size_t len,
                   int code, const char *msg)
{
    struct folio_conn *c = h->conn;

    c->flags &= ~CONN_HELD;
    if (!h->notify) {
        if (code == 0 && folio_buf_append(&c->out, result, len) != 0) {
            code = FOLIO_ST_RESOURCE_EXHAUSTED;
            msg = "reply too large for memory";
        }
        if (code != 0) {
            folio_buf_truncate(&c->out, h->head);
            reply_error(c, h->msgid, code, msg);
        }
    }
    resume_read(c);
    run(c);
}

void
folio_conn_drain(struct folio_conn *c)
{
    int r, rounds = 16;

    /* Take in what the client has already sent, then answer it. */
    do {
        if ((r = read_some(c)) < 0)
            return;
        process(c);
    } while (r > 0 && --rounds > 0 &&
             !(c->flags & (CONN_CLOSE_AFTER | CONN_READ_PAUSED | CONN_EOF |
                           CONN_YIELDED)));
    run(c);
}

void
folio_conn_accept_cb(evutil_socket_t fd, short what, void *arg)
{
    struct folio_lsn *l = arg;
    struct folio_worker *w = l->w;
    int cfd, i, one = 1;

    for (i = 0; i < ACCEPTS_PER_EVENT; i++) {
        cfd = accept4(fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (cfd == -1) {
            if (errno == EINTR || errno == ECONNABORTED)
                continue;
            if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS ||
                errno == ENOMEM) {
                /* Stop accepting for a tick rather than spin. */
                folio_log_warn("accept4");
                for (int j = 0; j < w->nlsn; j++)
                    event_del(w->lsn[j].ev);
                w->accept_paused = 1;
            }
            return;
        }
        if (l->flags & CONN_TCP)
            setsockopt(cfd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
        folio_conn_open(w, cfd, l->flags & ~CONN_TCP, NULL, 0);
    }
}

void
folio_conn_sweep(struct folio_worker *w)
{
    const struct folio_config *cfg = w->cfg;
    struct folio_conn *c, *next;
    uint64_t now = w->now_ms;

    for (c = w->conns; c != NULL; c = next) {
        next = c->next;
        if (c->msg_start_ms != 0 && cfg->request_timeout_ms != 0 &&
            now - c->msg_start_ms >= cfg->request_timeout_ms) {
            folio_stat_add(&w->slot->ws_timeouts, 1);
            folio_conn_close(c);
        } else if (cfg->idle_timeout_ms != 0 &&
                   now - c->last_ms >= cfg->idle_timeout_ms) {
            folio_stat_add(&w->slot->ws_timeouts, 1);
            folio_conn_close(c);
        } else if (folio_buf_pending(&c->in) == 0 &&
                   folio_buf_pending(&c->out) == 0 &&
                   now - c->last_ms >= SHRINK_IDLE_MS) {
            /*
             * Give back what a large message or reply made us take, once
             * the connection has been quiet a while: a client that sends
             * bursts keeps its buffers instead of reallocating each time.
             */
            folio_buf_shrink(&c->in);
            folio_buf_shrink(&c->out);
        }
    }
}

void
folio_conn_free_all(struct folio_worker *w)
{
    struct folio_conn *c;

    while (w->conns != NULL) {
        c = w->conns;
        conn_unlink(w, c);
        close(c->fd);
        folio_buf_free(&c->in);
        folio_buf_free(&c->out);
        folio_free(c);
    }
    while ((c = w->free_conns) != NULL) {
        w->free_conns = c->next;
        folio_buf_free(&c->in);
        folio_buf_free(&c->out);
        folio_free(c);
    }
    w->nfree = 0;
}
