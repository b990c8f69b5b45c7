/*
 * conn.c - a worker's connections: accept, read, frame, dispatch, write.
 *
 * Each connection owns two buffers allocated once (and kept on a free
 * list with the connection when it closes), so serving a request in steady
 * state allocates nothing: read into `in`, scan for complete messages,
 * pack replies straight into `out`, send.  The write event is added only
 * when the socket is full.
 *
 * The output is bounded before it is produced, as Redis bounds a client's
 * output buffer (client-output-buffer-limit), by class of client (public
 * or admin): before a request runs, its reply (an upper bound of its size
 * for methods with large replies, folio_dispatch_reply_size) must fit
 * under the connection's soft limit, else its requests wait until its
 * client has read what is pending; public connections' buffers together
 * hold at most max_output_total beyond their base size, else the request
 * waits its turn for room (w->waitq, first come first served); no
 * buffer grows past the hard limit (a reply over it is error 8); and a
 * connection whose replies do not move for send_timeout is closed.
 */
#include "config.h"

#include <sys/resource.h>
#include <sys/socket.h>

#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
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
#define ACCEPT_DEFER_MS 1   /* a loaded worker leaves new connections to others */
#define SHRINK_IDLE_MS 10000 /* quiet this long before buffers shrink */
#define REFUSED_LOG_MS 10000 /* one line per interval: out of descriptors */
#define OTHER_FDS 64         /* listeners, channel, stores, log... */
/*
 * A connection's share of one turn of the loop: once its messages have
 * taken TURN_NS (each one's time as dispatch measures it, or the clock
 * after each with stats off: one slow message or a run of cheap ones
 * counts alike, by work done, not by a message count), the others get
 * their turn before it goes on (memcached's reqs_per_event, by time).  Without it, a client that pipelines
 * notifications (no replies, so no output backpressure) into a buffer
 * grown by a large message had every one of them run before any other
 * connection was looked at: seconds, for expensive calls.
 */
#define TURN_NS 1000000 /* 1 ms */
/*
 * Heavy work runs from the run queue, one share per turn, after the turn's
 * reads and writes, so that light requests never wait behind more than one
 * share: a connection whose last message took HEAVY_NS or more, or whose
 * next reply may need more than its base buffer (bytes produced).  Admin
 * connections always run at once.
 */
#define HEAVY_NS 100000 /* 100 us */

static void on_read(evutil_socket_t fd, short what, void *arg);
static void on_write(evutil_socket_t fd, short what, void *arg);
static void on_run(evutil_socket_t fd, short what, void *arg);
static void on_accept_back(evutil_socket_t fd, short what, void *arg);

static const struct timeval zero_tv = {0, 0};

/* ---- the output side: one place keeps the figures ---- */

static size_t
soft_limit(const struct folio_conn *c)
{
    const struct folio_config *cfg = c->w->cfg;

    return (size_t)((c->flags & CONN_ADMIN) ? cfg->admin_max_output_bytes
                                            : cfg->max_output_bytes);
}

static size_t
hard_limit(const struct folio_worker *w, unsigned flags)
{
    const struct folio_config *cfg = w->cfg;
    uint64_t soft, hard;

    if (flags & CONN_ADMIN) {
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

static void wake_waiters(struct folio_worker *w);

/*
 * Take the size of c's output buffer into w->out_total: call after
 * anything that may grow or shrink it.  Freed room goes to the waiters.
 */
static void
out_count(struct folio_conn *c)
{
    struct folio_worker *w = c->w;
    size_t held = 0, was = c->out_held;

    c->out_cap = c->out.b_cap;
    if (in_budget(c) && c->out.b_cap > c->out.b_base)
        held = c->out.b_cap - c->out.b_base;
    if (held == was)
        return;
    w->out_total = w->out_total - was + held;
    c->out_held = held;
    folio_stat_set(&w->slot->ws_output_bytes, w->out_total);
    if (held < was && w->waitq.head != NULL)
        wake_waiters(w);
}

static inline void
out_track(struct folio_conn *c)
{
    if (c->out.b_cap != c->out_cap)
        out_count(c);
}

/* c closes: what it held is free for the others. */
static void
out_forget(struct folio_conn *c)
{
    struct folio_worker *w = c->w;

    if (c->out_held == 0)
        return;
    w->out_total -= c->out_held;
    c->out_held = 0;
    folio_stat_set(&w->slot->ws_output_bytes, w->out_total);
    if (w->waitq.head != NULL)
        wake_waiters(w);
}

/* Give back what c's output grew to, now that it is written. */
static void
out_shrink(struct folio_conn *c)
{
    if (folio_buf_pending(&c->out) == 0 && c->out.b_cap > c->out.b_base &&
        !(c->flags & CONN_HELD)) {
        folio_buf_shrink(&c->out);
        out_track(c);
    }
}

/* Put c last on q, through its links `l`. */
static void
q_push(struct folio_conn_q *q, struct folio_conn *c, enum folio_conn_link l)
{
    c->qnext[l] = NULL;
    c->qprev[l] = q->tail;
    if (q->tail != NULL)
        q->tail->qnext[l] = c;
    else
        q->head = c;
    q->tail = c;
}

static void
q_remove(struct folio_conn_q *q, struct folio_conn *c, enum folio_conn_link l)
{
    if (c->qprev[l] != NULL)
        c->qprev[l]->qnext[l] = c->qnext[l];
    else
        q->head = c->qnext[l];
    if (c->qnext[l] != NULL)
        c->qnext[l]->qprev[l] = c->qprev[l];
    else
        q->tail = c->qprev[l];
    c->qprev[l] = c->qnext[l] = NULL;
}

/* Off whichever queue c is on. */
static void
unqueue(struct folio_conn *c)
{
    if (c->flags & CONN_OUT_WAIT)
        q_remove(&c->w->waitq, c, FOLIO_QL_WAIT);
    else if (c->flags & CONN_YIELDED)
        q_remove(&c->w->runq, c, FOLIO_QL_WAIT);
    c->flags &= ~(CONN_OUT_WAIT | CONN_YIELDED);
}

/*
 * Give c a share of a later turn, after the others on the run queue:
 * read nothing more until then.
 */
static void
yield(struct folio_conn *c)
{
    struct folio_worker *w = c->w;

    c->flags |= CONN_YIELDED;
    event_del(&c->ev_read);
    q_push(&w->runq, c, FOLIO_QL_WAIT);
    evtimer_add(w->ev_run, &zero_tv);
}

/*
 * The room c's next reply (`size` bytes at most) needs beyond what its
 * buffer has, not over its hard limit.
 */
static size_t
out_growth(const struct folio_conn *c, size_t size)
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
out_reserve(struct folio_conn *c, size_t size)
{
    size_t need = folio_buf_pending(&c->out) + size;

    if (c->out.b_max != 0 && need > c->out.b_max)
        need = c->out.b_max;
    /* On failure the handler's packing reports it (error 8). */
    (void)folio_buf_reserve(&c->out, need - folio_buf_pending(&c->out));
    out_track(c);
}

/* Let the first waiters go, as long as their replies fit. */
static void
wake_waiters(struct folio_worker *w)
{
    struct folio_conn *c;
    size_t grow;

    while ((c = w->waitq.head) != NULL) {
        grow = out_growth(c, c->out_want);
        if (grow > 0 && !budget_fits(c, grow))
            break;
        unqueue(c);
        if (grow > 0)
            out_reserve(c, c->out_want); /* theirs, until they run */
        yield(c);
    }
}

/*
 * Whether c may produce its next reply, `size` bytes at most, now.  If
 * not, its requests wait (the message stays in its input): for its
 * client to read (CONN_READ_PAUSED, undone by run() once the output is
 * written), or for room under max_output_total (CONN_OUT_WAIT, undone by
 * wake_waiters()).
 */
static int
out_room_wait(struct folio_conn *c, size_t size)
{
    struct folio_worker *w = c->w;
    size_t pending = folio_buf_pending(&c->out), grow;

    if (pending > 0 && pending + size > soft_limit(c)) {
        c->flags |= CONN_READ_PAUSED;
        event_del(&c->ev_read);
        folio_stat_add(&w->slot->ws_output_waits, 1);
        return 0;
    }
    if ((grow = out_growth(c, size)) == 0)
        return 1;
    if (in_budget(c) && (w->waitq.head != NULL || !budget_fits(c, grow)) &&
        w->out_total > c->out_held) {
        /* Behind the others that wait: first come, first served. */
        c->flags |= CONN_OUT_WAIT;
        c->out_want = size;
        q_push(&w->waitq, c, FOLIO_QL_WAIT);
        event_del(&c->ev_read);
        folio_stat_add(&w->slot->ws_output_waits, 1);
        return 0;
    }
    out_reserve(c, size);
    return 1;
}

static inline int
out_room(struct folio_conn *c, size_t size)
{
    size_t pending = folio_buf_pending(&c->out), need = pending + size;

    /* Most calls: nothing pending, or little, and room already there. */
    if (need <= c->out.b_cap &&
        (pending == 0 || need <= c->w->cfg->max_output_bytes))
        return 1;
    return out_room_wait(c, size);
}

/* ---- connections ---- */

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

/* Open spare descriptors again, up to FOLIO_SPARE_FDS, as some are free. */
static void
spare_refill(struct folio_worker *w)
{
    int fd;

    while (w->nspare < FOLIO_SPARE_FDS &&
           (fd = open("/dev/null", O_RDONLY | O_CLOEXEC)) != -1)
        w->spare[w->nspare++] = fd;
}

/* Off the turn's queue, if on it. */
static void
turn_remove(struct folio_conn *c)
{
    if (!(c->flags & CONN_TURN))
        return;
    q_remove(&c->w->turnq, c, FOLIO_QL_TURN);
    c->flags &= ~CONN_TURN;
}

static void
conn_unlink(struct folio_worker *w, struct folio_conn *c)
{
    event_del(&c->ev_read);
    event_del(&c->ev_write);
    unqueue(c);
    turn_remove(c);
    if (c->prev != NULL)
        c->prev->next = c->next;
    else
        w->conns = c->next;
    if (c->next != NULL)
        c->next->prev = c->prev;
    w->nconns--;
    if (c->flags & CONN_ADMIN)
        w->nadmin--;
    folio_stat_set(&w->slot->ws_conns_open, w->nconns);
    out_forget(c);
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
    if (w->nspare < FOLIO_SPARE_FDS)
        spare_refill(w);
    /* Draining: the loop (worker.c) decides whether that was the last. */
    if ((w->stopping || w->retiring) && w->ev_settle != NULL)
        event_active(w->ev_settle, EV_TIMEOUT, 1);
}

void
folio_conn_open(struct folio_worker *w, int fd, unsigned flags,
                const void *data, size_t len)
{
    const struct folio_config *cfg = w->cfg;
    struct sockaddr_storage ss;
    socklen_t sl = sizeof(ss);
    struct folio_conn *c;
    uint32_t n, max;

    /* The admin socket has its own limit: a flood of the public port
     * never locks the operator out. */
    if (flags & CONN_ADMIN) {
        n = w->nadmin;
        max = cfg->admin_max_connections;
    } else {
        n = w->nconns - w->nadmin;
        max = cfg->max_connections;
    }
    if (n >= max + FOLIO_CONN_RESERVE) {
        folio_stat_add(&w->slot->ws_conns_rejected, 1);
        close(fd);
        return;
    }
    if (n >= max)
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
    c->read_ns = w->cfg->stats ? folio_mono_ns() : 0;
    c->msg_start_ms = 0;
    c->out_ms = 0;
    c->out_cap = 0;
    c->out_held = 0;
    c->out_want = 0;
    c->heavy = 0;
    memset(c->qprev, 0, sizeof(c->qprev));
    memset(c->qnext, 0, sizeof(c->qnext));
    /* Its peer, once, for the watchdog's and the slow log's lines. */
    if (getpeername(fd, (struct sockaddr *)&ss, &sl) == 0)
        folio_addr_pack((struct sockaddr *)&ss, sl, c->peer);
    else
        memset(c->peer, 0, sizeof(c->peer));
    c->out.b_max = hard_limit(w, flags);
    out_count(c); /* a connection from the free list may be larger */
    folio_mp_scan_init(&c->scan, cfg->max_message_bytes, cfg->max_depth);
    event_assign(&c->ev_read, w->base, fd, EV_READ | EV_PERSIST, on_read, c);
    event_assign(&c->ev_write, w->base, fd, EV_WRITE | EV_PERSIST, on_write,
                 c);
    c->prev = NULL;
    c->next = w->conns;
    if (w->conns != NULL)
        w->conns->prev = c;
    w->conns = c;
    w->nconns++;
    if (flags & CONN_ADMIN)
        w->nadmin++;
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

/* Pack an error reply to the msgid as the client sent it. */
static void
reply_error(struct folio_conn *c, const struct folio_rpc_id *id, int code,
            const char *msg)
{
    msgpack_packer pk;

    msgpack_packer_init(&pk, &c->out, folio_buf_pack_write);
    folio_rpc_pack_error_id(&pk, id, code, msg, strlen(msg));
    folio_stat_add(&c->w->slot->ws_errors, 1);
}

/*
 * The msgid of the request at p[0..avail), as far as the bytes go: 0 if
 * it is [0, msgid, ... with an integer msgid (in range or not: the reply
 * echoes it).
 */
static int
request_id(const char *p, size_t avail, struct folio_rpc_id *id)
{
    struct folio_mp_cur cur;
    uint32_t n, msgid;
    int64_t type;

    folio_mp_cur_init(&cur, p, avail);
    if (folio_mp_read_array(&cur, &n) != 0 || n != 4 ||
        folio_mp_read_int(&cur, &type) != 0 || type != FOLIO_RPC_REQUEST ||
        folio_rpc_read_msgid(&cur, &msgid, id) == FOLIO_EPROTO)
        return -1;
    return 0;
}

/*
 * The stream cannot be framed any further: answer the request if its
 * msgid can be read from the bytes we have, then close.
 */
static void
bad_stream(struct folio_conn *c, int why, const char *p, size_t avail)
{
    const struct folio_config *cfg = c->w->cfg;
    struct folio_rpc_id id;
    char msg[128];

    if (request_id(p, avail, &id) == 0) {
        if (why == FOLIO_MP_TOOBIG)
            snprintf(msg, sizeof(msg),
                     "message over max_message_bytes (%llu)",
                     (unsigned long long)cfg->max_message_bytes);
        else if (why == FOLIO_MP_TOODEEP)
            snprintf(msg, sizeof(msg), "nesting deeper than max_depth (%u)",
                     cfg->max_depth);
        else
            snprintf(msg, sizeof(msg), "malformed msgpack");
        reply_error(c, &id,
                    why == FOLIO_MP_TOOBIG ? FOLIO_ST_RESOURCE_EXHAUSTED
                                           : FOLIO_ST_INVALID_ARGUMENT,
                    msg);
    }
    folio_stat_add(&c->w->slot->ws_protocol_errors, 1);
    folio_buf_reset(&c->in);
    c->flags |= CONN_CLOSE_AFTER;
}

/*
 * One complete message: parse it and dispatch it.  Returns 0 once it is
 * dealt with, or -1 when it must wait for room in the output (it stays
 * in the input, to run later).
 */
static int
handle_message(struct folio_conn *c, const char *p, size_t len)
{
    struct folio_worker *w = c->w;
    struct folio_rpc_msg m;
    const char *why;
    size_t size;
    int admin = (c->flags & CONN_ADMIN) != 0;

    /* Every message may have a reply, an error at least: room first. */
    if (!out_room(c, FOLIO_REPLY_SMALL))
        return -1;
    if (folio_rpc_parse(p, len, &m, &why) != 0) {
        if (m.has_msgid) {
            reply_error(c, &m.id, FOLIO_ST_INVALID_ARGUMENT, why);
        } else {
            folio_stat_add(&w->slot->ws_protocol_errors, 1);
            c->flags |= CONN_CLOSE_AFTER;
        }
        return 0;
    }
    if (m.type == FOLIO_RPC_RESPONSE) {
        reply_error(c, &m.id, FOLIO_ST_INVALID_ARGUMENT,
                    "foliod takes requests and notifications, not responses");
        return 0;
    }
    if (c->flags & CONN_REJECT) {
        char msg[96];

        if (m.type == FOLIO_RPC_REQUEST) {
            if (admin)
                snprintf(msg, sizeof(msg),
                         "too many admin connections (admin_max_connections "
                         "%u per worker)",
                         w->cfg->admin_max_connections);
            else
                snprintf(msg, sizeof(msg),
                         "too many connections (max_connections %u per "
                         "worker)",
                         w->cfg->max_connections);
            reply_error(c, &m.id, FOLIO_ST_RESOURCE_EXHAUSTED, msg);
        }
        folio_stat_add(&w->slot->ws_conns_rejected, 1);
        c->flags |= CONN_CLOSE_AFTER;
        return 0;
    }
    if ((size = folio_dispatch_reply_size(w, &m, admin)) > FOLIO_REPLY_SMALL) {
        /* A large reply is heavy work: in a share of its own, later. */
        if (size > FOLIO_CONN_BUF && w->running != c && !admin) {
            yield(c);
            return -1;
        }
        if (!out_room(c, size))
            return -1;
    }
    folio_dispatch(w, c, &m, admin, &c->out);
    out_track(c);
    return 0;
}

/*
 * Answer the complete messages in the input buffer, a turn's share: heavy
 * work goes to the run queue (it runs from there, in shares of TURN_NS).
 */
static void
process(struct folio_conn *c)
{
    struct folio_worker *w = c->w;
    const char *p;
    size_t avail;
    uint64_t t1 = 0, t2, dt, spent = 0;
    int r, deferred, timed = folio_dispatch_times(w);

    while (!(c->flags & (CONN_CLOSE_AFTER | CONN_WAITING))) {
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
        if (!timed && t1 == 0)
            t1 = folio_mono_ns(); /* else dispatch measures each call */
        if (c->heavy && w->running != c && !(c->flags & CONN_ADMIN)) {
            yield(c); /* its last message was slow: this one may be too */
            deferred = 1;
        } else {
            /* -1: it waits, on the run queue or for room. */
            w->call_ns = 0; /* none if it is not dispatched */
            deferred = handle_message(c, p, (size_t)c->scan.pos) != 0;
        }
        if (deferred) {
            /* Scanned again when its turn comes (the scanner, once done,
             * would go on into the next message); it has arrived whole. */
            folio_mp_scan_reset(&c->scan);
            c->msg_start_ms = 0;
            break;
        }
        folio_buf_consume(&c->in, (size_t)c->scan.pos);
        folio_mp_scan_reset(&c->scan);
        c->msg_start_ms = 0;
        if (timed) {
            dt = w->call_ns;
        } else {
            t2 = folio_mono_ns();
            dt = t2 - t1;
            t1 = t2;
        }
        c->heavy = dt >= HEAVY_NS;
        spent += dt;
        if (folio_buf_pending(&c->in) > 0 &&
            !(c->flags & (CONN_CLOSE_AFTER | CONN_WAITING)) &&
            spent >= TURN_NS)
            yield(c);
    }
    if ((c->flags & CONN_EOF) && !(c->flags & CONN_WAITING))
        c->flags |= CONN_CLOSE_AFTER;
}

/* Write what is pending.  Returns 0, or -1 when the connection closed. */
static int
flush(struct folio_conn *c)
{
    struct folio_worker *w = c->w;
    size_t pending;
    ssize_t n;

    if (c->flags & CONN_HELD)
        return 0; /* the held reply is not complete */
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
            return 0;
        }
        folio_conn_close(c);
        return -1;
    }
    c->out_ms = 0;
    if (c->flags & CONN_WRITING) {
        event_del(&c->ev_write);
        c->flags &= ~CONN_WRITING;
    }
    if (c->flags & CONN_CLOSE_AFTER) {
        folio_conn_close(c);
        return -1;
    }
    /*
     * Others wait for room: give back what is written, unless requests of
     * its own are there to use it (a client that reads keeps its room).
     */
    if (w->waitq.head != NULL && c->out_held > 0 &&
        folio_buf_pending(&c->in) == 0)
        out_shrink(c);
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

    if (folio_buf_pending(&c->out) != 0 || (c->flags & CONN_WAITING))
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
        /* Its client read: the room it waits for may be its own now. */
        if ((c->flags & CONN_OUT_WAIT) && out_growth(c, c->out_want) == 0) {
            unqueue(c);
            yield(c);
        }
        if ((c->flags & CONN_READ_PAUSED) &&
            folio_buf_pending(&c->out) == 0) {
            c->flags &= ~CONN_READ_PAUSED;
            if (!(c->flags & (CONN_EOF | CONN_WAITING)))
                event_add(&c->ev_read, NULL);
            if (folio_buf_pending(&c->in) > 0)
                continue;
            if ((c->flags & CONN_EOF) && !(c->flags & CONN_WAITING)) {
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
    folio_conn_close(c);
    return -1;
}

/*
 * Bytes came: answer them now, write the replies at the turn's end.  A
 * turn reads every connection epoll reported before it writes any reply,
 * so that the clients woken by the replies (on this machine, competing
 * with the worker for the CPU) find it done with its reads: the replies
 * of one turn leave together, and the worker is not preempted halfway
 * through the connections that are ready.  Measured at 50 connections,
 * one request each: the worker was preempted 0.13 times a request (15,000
 * times a second) writing each reply as soon as it was packed.
 */
static void
on_read(evutil_socket_t fd, short what, void *arg)
{
    struct folio_conn *c = arg;
    struct folio_worker *w = c->w;

    if (fd != -1 && read_some(c) < 0)
        return;
    process(c);
    if (c->flags & (CONN_TURN | CONN_HELD))
        return; /* already queued; or its reply comes with the release */
    if (w->turnq.head == NULL) {
        /* Nothing else in this turn (one connection, say): write now. */
        if (w->ev_turn == NULL ||
            event_base_get_num_events(w->base, EVENT_BASE_COUNT_ACTIVE) == 0) {
            run(c);
            return;
        }
        event_active(w->ev_turn, EV_TIMEOUT, 1);
    }
    /* Last in the queue: the replies go out in the order of the reads. */
    c->flags |= CONN_TURN;
    q_push(&w->turnq, c, FOLIO_QL_TURN);
}

static void
on_turn_end(evutil_socket_t fd, short what, void *arg)
{
    folio_conn_turn_end(arg);
}

void
folio_conn_turn_end(struct folio_worker *w)
{
    struct folio_conn *c;

    while ((c = w->turnq.head) != NULL) {
        turn_remove(c);
        run(c);
    }
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
    if (!(c->flags & (CONN_EOF | CONN_CLOSE_AFTER | CONN_WAITING)))
        event_add(&c->ev_read, NULL);
}

/* One share of this turn: for the connection at the head of the run queue. */
static void
on_run(evutil_socket_t fd, short what, void *arg)
{
    struct folio_worker *w = arg;
    struct folio_conn *c;

    if ((c = w->runq.head) == NULL)
        return;
    unqueue(c);
    w->running = c;
    resume_read(c);
    run(c);
    w->running = NULL;
    if (w->runq.head != NULL)
        evtimer_add(w->ev_run, &zero_tv); /* the next, next turn */
}

int
folio_call_hold(struct folio_call *call, struct folio_hold *h)
{
    struct folio_conn *c = call->conn;

    if (c == NULL || (c->flags & CONN_HELD))
        return -1;
    c->flags |= CONN_HELD;
    event_del(&c->ev_read); /* nothing more until the release */
    if (call->w->cfg->stats)
        folio_stat_add(&call->w->slot->ws_in_flight, 1);
    h->conn = c;
    h->head = call->head; /* from the first pending byte, as dispatch keeps it */
    h->msgid = call->msgid;
    h->notify = call->notify;
    h->row = call->row;
    h->t0 = call->t0;
    call->held = 1;
    return 0;
}

void
folio_hold_release(struct folio_hold *h, const void *result, size_t len,
                   int code, const char *msg)
{
    struct folio_conn *c = h->conn;
    _Atomic uint64_t *in_flight = &c->w->slot->ws_in_flight;
    msgpack_packer pk;

    c->flags &= ~CONN_HELD;
    if (c->w->cfg->stats && folio_stat_get(in_flight) > 0)
        folio_stat_set(in_flight, folio_stat_get(in_flight) - 1);
    if (!h->notify) {
        if (code == 0 && folio_buf_append(&c->out, result, len) != 0) {
            code = FOLIO_ST_RESOURCE_EXHAUSTED;
            msg = "reply too large for memory";
        }
        if (code != 0) {
            folio_buf_truncate(&c->out, h->head);
            msgpack_packer_init(&pk, &c->out, folio_buf_pack_write);
            folio_rpc_pack_error(&pk, h->msgid, code, msg, strlen(msg));
        }
        out_track(c);
    }
    /* Counted now, with its outcome, the hold in its latency. */
    folio_dispatch_record(c->w, h->row, h->notify, code, h->t0);
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
             !(c->flags & (CONN_CLOSE_AFTER | CONN_EOF | CONN_WAITING)));
    run(c);
}

/* ---- accepting ---- */

void
folio_conn_setup(struct folio_worker *w)
{
    const struct folio_config *cfg = w->cfg;
    struct rlimit rl;
    rlim_t want = (rlim_t)cfg->max_connections + cfg->admin_max_connections +
                  2 * FOLIO_CONN_RESERVE + FOLIO_SPARE_FDS + OTHER_FDS;

    /* As Redis does for maxclients: raise the soft limit, up to the hard. */
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < want) {
        rl.rlim_cur = rl.rlim_max != RLIM_INFINITY && rl.rlim_max < want
                          ? rl.rlim_max
                          : want;
        if (setrlimit(RLIMIT_NOFILE, &rl) != 0)
            getrlimit(RLIMIT_NOFILE, &rl);
        if (rl.rlim_cur < want)
            folio_log_warnx("max_connections %u needs about %llu file "
                            "descriptors but RLIMIT_NOFILE is %llu: "
                            "connections over it will be closed at accept "
                            "(raise the limit: LimitNOFILE=, ulimit -n)",
                            cfg->max_connections, (unsigned long long)want,
                            (unsigned long long)rl.rlim_cur);
    }
    spare_refill(w);
#ifdef M_MMAP_THRESHOLD
    /*
     * Output buffers grow for large replies and give the room back: keep
     * glibc from raising its mmap threshold as they are freed (it would
     * then serve them from the heap, whose freed middle stays resident).
     */
    mallopt(M_MMAP_THRESHOLD, 256 * 1024);
#endif
    if ((w->ev_run = evtimer_new(w->base, on_run, w)) == NULL ||
        (w->ev_accept = evtimer_new(w->base, on_accept_back, w)) == NULL ||
        (w->ev_turn = event_new(w->base, -1, 0, on_turn_end, w)) == NULL)
        folio_fatalx("cannot set up the worker's run queue");
}

/* n connections closed at accept, err the reason: one line. */
static void
log_refused(uint64_t n, int err)
{
    struct rlimit rl;

    if (getrlimit(RLIMIT_NOFILE, &rl) != 0)
        rl.rlim_cur = 0;
    folio_log_warnx("accept4: %s (RLIMIT_NOFILE %llu): %llu connection%s "
                    "closed at accept in the last %d s",
                    strerror(err), (unsigned long long)rl.rlim_cur,
                    (unsigned long long)n, n == 1 ? "" : "s",
                    REFUSED_LOG_MS / 1000);
}

/* Closed at accept for want of descriptors: told once per interval. */
static void
refused(struct folio_worker *w, int err)
{
    uint64_t n;

    folio_stat_add(&w->slot->ws_conns_rejected, 1);
    w->refused_err = err;
    if ((n = folio_log_rate_hit(&w->refused_log, w->now_ms,
                                REFUSED_LOG_MS)) > 0)
        log_refused(n, err);
}

/* A packer's output into a fixed array: no allocation, -1 when full. */
struct fixed_out {
    char b[128];
    size_t n;
};

static int
fixed_write(void *data, const char *p, size_t len)
{
    struct fixed_out *o = data;

    if (len > sizeof(o->b) - o->n)
        return -1;
    memcpy(o->b + o->n, p, len);
    o->n += len;
    return 0;
}

/*
 * Accepted when no descriptor is left: answer its first request with
 * error 8 if it is already there, then close, so that the client knows at
 * once rather than waiting in the listen queue.
 */
static void
refuse(struct folio_worker *w, int fd, int err)
{
    static const char msg[] = "out of file descriptors: try again later";
    struct folio_rpc_id id;
    struct fixed_out out;
    msgpack_packer pk;
    char buf[512];
    ssize_t n;

    n = recv(fd, buf, sizeof(buf), MSG_DONTWAIT);
    if (n > 0 && request_id(buf, (size_t)n, &id) == 0) {
        out.n = 0;
        msgpack_packer_init(&pk, &out, fixed_write);
        if (folio_rpc_pack_error_id(&pk, &id, FOLIO_ST_RESOURCE_EXHAUSTED,
                                    msg, sizeof(msg) - 1) == 0)
            (void)send(fd, out.b, out.n, MSG_NOSIGNAL | MSG_DONTWAIT);
    }
    close(fd);
    refused(w, err);
}

/*
 * accept4 failed with EMFILE or ENFILE on l (it takes a descriptor before
 * it looks at the queue): use a spare descriptor to accept anyway.  An
 * admin connection is served (while two spares are left), any other
 * closed at once.  Returns 0 if one was taken off the queue, 1 if the
 * queue is empty, -1 if there is no spare (errno as accept4 left it).
 */
static int
accept_spare(struct folio_worker *w, struct folio_lsn *l)
{
    int err = errno, cfd, again;

    if (w->nspare == 0) {
        errno = err;
        return -1;
    }
    close(w->spare[--w->nspare]);
    cfd = accept4(l->fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (cfd == -1) {
        again = errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR ||
                errno == ECONNABORTED;
        spare_refill(w);
        errno = err;
        return again ? 1 : -1;
    }
    if ((l->flags & CONN_ADMIN) && w->nspare >= 1) {
        folio_conn_open(w, cfd, l->flags & ~CONN_TCP, NULL, 0);
        return 0; /* it keeps the spare: refilled as descriptors free up */
    }
    refuse(w, cfd, err);
    spare_refill(w);
    return 0;
}

/*
 * Accepting in balance.  Every worker watches the one listening socket and
 * every one is woken by a new connection; the first awake takes it, and up
 * to ACCEPTS_PER_EVENT more, so a burst of connects landed 17/34, 42/9 on
 * two workers and the busier one's queue made the tail.  A worker holding
 * more connections than the least loaded other worker that accepts (by
 * one, and an eighth of that one's count) leaves new connections to it:
 * like nginx's ngx_accept_disabled, against the peers' counts in the
 * stats region rather than a fraction of worker_connections.  It stops
 * watching its public listeners for ACCEPT_DEFER_MS, then takes one
 * connection whatever the balance, so a stalled peer delays accepts by
 * that much and never stops them.  SO_REUSEPORT would balance by a hash,
 * no better for 50 connections, and drops what waits in a closed
 * socket's queue at every recycle and reload; EPOLLEXCLUSIVE wakes the
 * same worker again and again.
 */
static int
accept_ahead(const struct folio_worker *w)
{
    const struct folio_worker_slot *s;
    uint32_t least = UINT32_MAX, n;
    unsigned i, nslots;

    if (w->args->stats == NULL)
        return 0;
    nslots = folio_stats_nslots(w->args->stats);
    for (i = 0; i < nslots; i++) {
        s = folio_stats_slot(w->args->stats, i);
        if (s == w->slot || atomic_load_explicit(&s->ws_state,
                                                 memory_order_relaxed) !=
                                FOLIO_WS_READY ||
            atomic_load_explicit(&s->ws_mstate, memory_order_relaxed) ==
                FOLIO_WS_HUNG)
            continue;
        n = (uint32_t)folio_stat_get(&s->ws_conns_open);
        if (n < least)
            least = n;
    }
    return least != UINT32_MAX && w->nconns > least + 1 + least / 8;
}

/* Leave the public listeners to the others for ACCEPT_DEFER_MS. */
static void
accept_defer(struct folio_worker *w)
{
    static const struct timeval tv = {0, ACCEPT_DEFER_MS * 1000};
    int i;

    for (i = 0; i < w->nlsn; i++)
        if (!(w->lsn[i].flags & CONN_ADMIN) && w->lsn[i].ev != NULL)
            event_del(w->lsn[i].ev);
    evtimer_add(w->ev_accept, &tv);
}

static void
on_accept_back(evutil_socket_t fd, short what, void *arg)
{
    struct folio_worker *w = arg;
    int i;

    if (w->stopping || w->retiring || w->accept_paused)
        return; /* no accepting, or the tick resumes it */
    w->accept_force = 1;
    for (i = 0; i < w->nlsn; i++)
        if (w->lsn[i].ev != NULL)
            event_add(w->lsn[i].ev, NULL);
}

void
folio_conn_accept_cb(evutil_socket_t fd, short what, void *arg)
{
    struct folio_lsn *l = arg;
    struct folio_worker *w = l->w;
    int cfd, i, r, one = 1;

    for (i = 0; i < ACCEPTS_PER_EVENT; i++) {
        if (!(l->flags & CONN_ADMIN) && !evtimer_pending(w->ev_accept, NULL)) {
            if (w->accept_force)
                w->accept_force = 0; /* this one, whatever the balance */
            else if (accept_ahead(w)) {
                accept_defer(w);
                return;
            }
        }
        cfd = accept4(fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (cfd == -1) {
            if (errno == EINTR || errno == ECONNABORTED)
                continue;
            if (errno == EMFILE || errno == ENFILE) {
                if ((r = accept_spare(w, l)) == 0)
                    continue;
                if (r > 0)
                    return; /* none waiting */
            }
            if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS ||
                errno == ENOMEM) {
                /* Not even a spare: stop accepting for a tick, not spin. */
                refused(w, errno);
                event_del(l->ev);
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
    uint64_t now = w->now_ms, n;

    if ((n = folio_log_rate_due(&w->refused_log, now, REFUSED_LOG_MS)) > 0)
        log_refused(n, w->refused_err);
    if (w->nspare < FOLIO_SPARE_FDS)
        spare_refill(w);
    for (c = w->conns; c != NULL; c = next) {
        next = c->next;
        if (c->msg_start_ms != 0 && cfg->request_timeout_ms != 0 &&
            now - c->msg_start_ms >= cfg->request_timeout_ms) {
            folio_stat_add(&w->slot->ws_timeouts, 1);
            folio_conn_close(c);
        } else if (c->out_ms != 0 && cfg->send_timeout_ms != 0 &&
                   now - c->out_ms >= cfg->send_timeout_ms) {
            /* Its client takes none of its replies: they hold memory. */
            folio_stat_add(&w->slot->ws_timeouts, 1);
            folio_conn_close(c);
        } else if (cfg->idle_timeout_ms != 0 &&
                   now - c->last_ms >= cfg->idle_timeout_ms) {
            folio_stat_add(&w->slot->ws_timeouts, 1);
            folio_conn_close(c);
        } else if (folio_buf_pending(&c->in) == 0 &&
                   folio_buf_pending(&c->out) == 0 &&
                   (now - c->last_ms >= SHRINK_IDLE_MS ||
                    w->waitq.head != NULL)) {
            /*
             * Give back what a large message or reply made us take, once
             * the connection has been quiet a while (a client that sends
             * bursts keeps its buffers instead of reallocating each time),
             * or at once when other connections wait for room.
             */
            folio_buf_shrink(&c->in);
            out_shrink(c);
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
    while (w->nspare > 0)
        close(w->spare[--w->nspare]);
    /* What the last interval held back, before the worker goes. */
    if (w->refused_log.count > 0)
        log_refused(w->refused_log.count, w->refused_err);
    w->refused_log.count = 0;
    if (w->ev_run != NULL) {
        event_free(w->ev_run);
        w->ev_run = NULL;
    }
    if (w->ev_accept != NULL) {
        event_free(w->ev_accept);
        w->ev_accept = NULL;
    }
    if (w->ev_turn != NULL) {
        event_free(w->ev_turn);
        w->ev_turn = NULL;
    }
}
