/*
 * conn.c - a worker's connections: their life, their messages answered in
 * shares of the loop's turns, their states (worker_int.h) and queues.
 * Their sockets and buffers are conn_io.c's, what their bytes mean their
 * face's (face.h: face_rpc.c's, or face_http.c's for a connection of an
 * http_listen address), the room their replies may take out.c's.
 *
 * One place runs a connection: run(), at the turn's end (the connections
 * queued on w->turnq: read in the turn, released from a hold, given a
 * share, drained) and from the write event.  Whatever else wakes one (a
 * read, a release, a share of the run queue, room under the output
 * budget) answers what it may or records what happened, and queues it
 * there: as Redis serves the clients that a blocking operation unblocked
 * in beforeSleep, never from the code that unblocks them.
 *
 * Called by worker.c and accept.c (open, drain, turn end, sweep), and by
 * the handlers for held replies; calls conn_io.c, face_rpc.c, out.c and
 * dispatch.c (the record of a held call).
 */
#include "config.h"

#include <sys/socket.h>

#include <string.h>
#include <unistd.h>

#include "src/addr.h"
#include "src/bytes.h"
#include "src/chan.h"
#include "src/clock.h"
#include "src/err.h"
#include "src/log.h"
#include "worker/conn.h"
#include "worker/conn_io.h"
#include "worker/dispatch.h"
#include "worker/face.h"
#include "worker/out.h"
#include "worker/worker_int.h"

#define SHRINK_IDLE_MS 10000 /* quiet this long before buffers shrink */
/*
 * A connection's share of one turn of the loop: once its messages have
 * taken TURN_NS (each one's time as dispatch measures it, or the clock
 * after each with stats off: one slow message or a run of cheap ones
 * counts alike, by work done, not by a message count), the others get
 * their turn before it goes on (memcached's reqs_per_event, by time).
 * Without it, a client that pipelines notifications (no replies, so no
 * output backpressure) into a buffer grown by a large message had every
 * one of them run before any other connection was looked at: seconds,
 * for expensive calls.
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

static void process(struct folio_conn *c, int share, uint64_t now);
static void on_read(evutil_socket_t fd, short what, void *arg);
static void on_write(evutil_socket_t fd, short what, void *arg);

static const struct timeval zero_tv = {0, 0};

/* ---- states and queues ---- */

/* Whether a hold points at c. */
static inline int
held(const struct folio_conn *c)
{
    return c->state == FOLIO_CONN_HELD || c->state == FOLIO_CONN_HELD_CLOSING;
}

/*
 * Whether c waits for its client alone, with buffers it does not need:
 * its input answered, its output written, no room reserved for a reply.
 */
static inline int
idle(const struct folio_conn *c)
{
    return c->state == FOLIO_CONN_READY && c->in.b_data != NULL &&
           folio_buf_pending(&c->in) == 0 && folio_conn_out_pending(c) == 0 &&
           c->out_resv == 0;
}

/* Whether c's requests wait (for a share, room, its client, a release). */
static inline int
waiting(const struct folio_conn *c)
{
    return c->state != FOLIO_CONN_READY && c->state != FOLIO_CONN_CLOSING;
}

/*
 * c's requests wait, in state st: nothing is read or answered until it is
 * READY again.  YIELDED puts it last on the run queue, for a share of a
 * later turn; out.c has put an OUT_WAIT one on the wait queue already.
 */
static void
conn_wait(struct folio_conn *c, enum folio_conn_state st)
{
    c->state = st;
    event_del(&c->ev_read);
    if (st == FOLIO_CONN_YIELDED) {
        folio_connq_push(&c->w->runq, c, FOLIO_QL_WAIT);
        evtimer_add(c->w->ev_run, &zero_tv);
    }
}

/* c answers its requests again, and reads unless its peer is done. */
static void
conn_ready(struct folio_conn *c)
{
    c->state = FOLIO_CONN_READY;
    if (!(c->flags & CONN_EOF))
        event_add(&c->ev_read, NULL);
}

/* Room under the output budget came free: let the first waiters go. */
static void
wake_waiters(struct folio_worker *w)
{
    struct folio_conn *c;

    while ((c = folio_out_grant(w)) != NULL)
        conn_wait(c, FOLIO_CONN_YIELDED);
}

/* Give back what c's output grew to, now that it is written. */
static void
shrink_out(struct folio_conn *c)
{
    if (!held(c) && folio_out_shrink(c))
        wake_waiters(c->w);
}

/*
 * c runs at the turn's end (once, last in the queue: in the order they
 * came): ev_turn, made active by the first queued.
 */
static void
turn_queue(struct folio_conn *c)
{
    struct folio_worker *w = c->w;

    if (c->flags & CONN_TURN)
        return;
    if (w->turnq.head == NULL)
        event_active(w->ev_turn, EV_TIMEOUT, 1);
    c->flags |= CONN_TURN;
    folio_connq_push(&w->turnq, c, FOLIO_QL_TURN);
}

/* Off the turn's queue, if on it. */
static void
turn_remove(struct folio_conn *c)
{
    if (!(c->flags & CONN_TURN))
        return;
    folio_connq_remove(&c->w->turnq, c, FOLIO_QL_TURN);
    c->flags &= ~CONN_TURN;
}

/* ---- a connection's life ---- */

static void
conn_unlink(struct folio_worker *w, struct folio_conn *c)
{
    event_del(&c->ev_read);
    event_del(&c->ev_write);
    if (c->state == FOLIO_CONN_OUT_WAIT)
        folio_out_unwait(c);
    else if (c->state == FOLIO_CONN_YIELDED)
        folio_connq_remove(&w->runq, c, FOLIO_QL_WAIT);
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
    if (folio_out_forget(c))
        wake_waiters(w);
}

void
folio_conn_close(struct folio_conn *c)
{
    struct folio_worker *w = c->w;

    if (held(c)) {
        /* A held reply points here: close once it is released. */
        c->state = FOLIO_CONN_HELD_CLOSING;
        c->flags |= CONN_EOF;
        event_del(&c->ev_read);
        event_del(&c->ev_write);
        c->flags &= ~CONN_WRITING;
        return;
    }
    conn_unlink(w, c);
    close(c->fd);
    folio_conn_io_put(w, c);
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
    if ((c = folio_conn_io_get(w)) == NULL) {
        folio_log_warnx("out of memory for a connection: closed");
        close(fd);
        return;
    }
    c->fd = fd;
    c->state = FOLIO_CONN_READY;
    c->flags = flags;
    c->w = w;
    c->last_ms = w->now_ms;
    c->read_ns = w->cfg->stats ? folio_mono_ns() : 0;
    c->msg_start_ms = 0;
    c->out_ms = 0;
    c->heavy = 0;
    memset(c->qprev, 0, sizeof(c->qprev));
    memset(c->qnext, 0, sizeof(c->qnext));
    /* Its peer, once, for the watchdog's and the slow log's lines. */
    if (getpeername(fd, (struct sockaddr *)&ss, &sl) == 0)
        folio_addr_pack((struct sockaddr *)&ss, sl, c->peer);
    else
        memset(c->peer, 0, sizeof(c->peer));
    folio_out_open(c); /* its framing comes with its buffers */
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
        if (folio_conn_io_attach(c) != 0) {
            folio_log_warnx("no memory for a handed-over connection: closed");
            folio_conn_close(c);
            return;
        }
        if (folio_buf_append(&c->in, data, len) != 0) {
            folio_log_warnx("the %zu bytes of a handed-over connection do "
                            "not fit max_message_bytes: closed",
                            len);
            folio_stat_add(&w->slot->ws_protocol_errors, 1);
            folio_conn_close(c);
            return;
        }
        process(c, 0, 0);
        turn_queue(c);
    }
}

/* ---- answering ---- */

/*
 * Answer the complete messages in c's input, while it is READY: a turn's
 * share of them, or (share: from the run queue) its own share; heavy work
 * goes to the run queue.  `now`: a clock reading of just now to time the
 * first message from (the read's), or 0.  `face`: c's (CONN_HTTP or 0),
 * a constant in each of process()'s two copies.
 */
static inline __attribute__((always_inline)) void
process_face(struct folio_conn *c, int share, uint64_t now, unsigned face)
{
    struct folio_worker *w = c->w;
    enum folio_conn_state st;
    char *p;
    size_t avail, len;
    uint64_t t1 = 0, t2, dt = 0, spent = 0;
    int r, timed = folio_dispatch_times(w->cfg);

    w->clock_chain = 1;
    w->clock_ns = now;
    while (c->state == FOLIO_CONN_READY) {
        if ((avail = folio_buf_pending(&c->in)) == 0)
            break;
        p = c->in.b_data + c->in.b_off;
        r = folio_face_frame(c, face, p, avail);
        if (r == FOLIO_FACE_MORE) {
            if (c->msg_start_ms == 0)
                c->msg_start_ms = w->now_ms;
            break;
        }
        if (r != FOLIO_FACE_DONE) {
            folio_face_bad_stream(c, r, p, avail);
            folio_buf_reset(&c->in);
            c->state = FOLIO_CONN_CLOSING;
            break;
        }
        len = folio_face_frame_len(c, face);
        if (!timed && t1 == 0)
            t1 = folio_mono_ns(); /* else dispatch measures each call */
        if (c->heavy && !share && !(c->flags & CONN_ADMIN))
            st = FOLIO_CONN_YIELDED; /* its last message was slow: this too? */
        else
            st = folio_face_message(c, face, p, len, share, &dt);
        folio_face_frame_reset(c, face);
        c->msg_start_ms = 0;
        if (st != FOLIO_CONN_READY && st != FOLIO_CONN_CLOSING) {
            /* It waits in the input, framed again when its turn comes
             * (the framer, once done, would go on into the next message);
             * it has arrived whole. */
            conn_wait(c, st);
            break;
        }
        folio_buf_consume(&c->in, len);
        if (st == FOLIO_CONN_CLOSING) {
            c->state = st;
            break;
        }
        if (!timed) {
            t2 = folio_mono_ns();
            dt = t2 - t1;
            t1 = t2;
        }
        c->heavy = dt >= HEAVY_NS;
        spent += dt;
        if (folio_buf_pending(&c->in) > 0 && c->state == FOLIO_CONN_READY &&
            spent >= TURN_NS)
            conn_wait(c, FOLIO_CONN_YIELDED);
    }
    w->clock_chain = 0;
    w->clock_ns = 0;
    if ((c->flags & CONN_EOF) && c->state == FOLIO_CONN_READY)
        c->state = FOLIO_CONN_CLOSING;
}

static void
process(struct folio_conn *c, int share, uint64_t now)
{
    if (c->flags & CONN_HTTP)
        process_face(c, share, now, CONN_HTTP);
    else
        process_face(c, share, now, 0);
}

/* ---- writing ---- */

/* Write what is pending.  Returns 0, or -1 when the connection closed. */
static int
flush(struct folio_conn *c)
{
    int r;

    if (held(c))
        return 0; /* the held reply is not complete */
    if ((r = folio_conn_io_write(c)) != 0) {
        if (r & FOLIO_IO_FREED) /* a page sent whole: room for others */
            wake_waiters(c->w);
        if (r > 0 && r != FOLIO_IO_FREED)
            return 0; /* the rest when the socket takes more */
        if (r < 0) {
            folio_conn_close(c);
            return -1;
        }
    }
    if (c->state == FOLIO_CONN_CLOSING) {
        folio_conn_close(c);
        return -1;
    }
    /*
     * Others wait for room: give back what is written, unless requests of
     * its own are there to use it (a client that reads keeps its room).
     */
    if (c->w->waitq.head != NULL && c->out_held > 0 &&
        folio_buf_pending(&c->in) == 0)
        shrink_out(c);
    return 0;
}

/* ---- stop and retirement ---- */

/* Give c, with the bytes read from it, to the master for a newer worker. */
static int
handoff(struct folio_conn *c)
{
    struct folio_worker *w = c->w;
    uint32_t flags = ((c->flags & CONN_ADMIN) ? FOLIO_CHAN_F_ADMIN : 0) |
                     ((c->flags & CONN_HTTP) ? FOLIO_CHAN_F_HTTP : 0);
    size_t n = folio_buf_pending(&c->in);

    if (folio_chan_send(w->args->chan_fd, FOLIO_CHAN_HANDOFF, flags, 0,
                        n > 0 ? c->in.b_data + c->in.b_off : NULL, n,
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

    if (folio_conn_out_pending(c) != 0 || waiting(c))
        return;
    if (w->retiring && !(c->flags & CONN_REJECT) &&
        folio_buf_pending(&c->in) <= FOLIO_CHAN_MAX_DATA &&
        folio_face_handoff_ok(c)) {
        if (handoff(c) == 0)
            return;
    } else if (c->msg_start_ms != 0 && !(c->flags & CONN_EOF)) {
        return; /* a request is arriving: answer it first */
    }
    folio_conn_close(c);
}

/* ---- running: at the turn's end, and when the socket takes more ---- */

/*
 * Run c: answer what its input holds, write its replies, and take it out
 * of the waits that this resolves (its client read what was pending).
 */
static void
run(struct folio_conn *c)
{
    struct folio_worker *w = c->w;

    for (;;) {
        /* Input to answer (after a release), or the peer's end to take. */
        if (c->state == FOLIO_CONN_READY &&
            (folio_buf_pending(&c->in) > 0 || (c->flags & CONN_EOF)))
            process(c, 0, 0);
        if (flush(c) != 0)
            return;
        /* Its client read: the room it waits for may be its own now. */
        if (c->state == FOLIO_CONN_OUT_WAIT && folio_out_own_room(c)) {
            folio_out_unwait(c);
            conn_wait(c, FOLIO_CONN_YIELDED);
        }
        if (c->state == FOLIO_CONN_PAUSED && folio_conn_out_pending(c) == 0) {
            conn_ready(c);
            if (folio_buf_pending(&c->in) > 0)
                continue;
            if (c->flags & CONN_EOF) {
                c->state = FOLIO_CONN_CLOSING;
                if (flush(c) != 0)
                    return;
            }
        }
        break;
    }
    if (idle(c))
        folio_conn_io_idle(c); /* its buffers to the pool */
    if (w->stopping || w->retiring)
        drain_check(c);
}

/*
 * The turn's end: run `alone` (the one connection of its turn, never
 * queued), then the turn's queue, with what running them queues.
 */
static void
turn_end(struct folio_worker *w, struct folio_conn *alone)
{
    struct folio_conn *c;

    if (alone != NULL)
        run(alone);
    while ((c = w->turnq.head) != NULL) {
        turn_remove(c);
        run(c);
    }
}

void
folio_conn_turn_end(struct folio_worker *w)
{
    turn_end(w, NULL);
}

static void
on_turn_end(evutil_socket_t fd, short what, void *arg)
{
    turn_end(arg, NULL);
}

/*
 * c, read or given its share in this turn, runs at the turn's end: at
 * once when no other connection can be in the turn (the poll found one
 * socket ready, this one, or none: c has a share of the run queue; a
 * timer of the worker's may run after it), else last in the queue.
 */
static inline void
turn_join(struct folio_conn *c)
{
    struct folio_worker *w = c->w;

    if (w->turnq.head == NULL && folio_loop_ready <= 1)
        turn_end(w, c);
    else
        turn_queue(c);
}

static void
on_write(evutil_socket_t fd, short what, void *arg)
{
    run(arg);
}

/* ---- waking: each answers what it can, and queues for the turn's end ---- */

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
    int r;

    if ((r = folio_conn_io_read(c)) < 0) {
        folio_conn_close(c);
        return;
    }
    process(c, 0, r > 0 ? c->read_ns : 0); /* the read's clock (stats on) */
    if (c->state != FOLIO_CONN_HELD) /* else the release queues it */
        turn_join(c); /* the replies go out in the order of the reads */
}

/* One share of this turn: for the connection at the head of the run queue. */
static void
on_run(evutil_socket_t fd, short what, void *arg)
{
    struct folio_worker *w = arg;
    struct folio_conn *c;

    if ((c = w->runq.head) == NULL)
        return;
    folio_connq_remove(&w->runq, c, FOLIO_QL_WAIT);
    conn_ready(c);
    process(c, 1, 0);
    if (c->state != FOLIO_CONN_HELD)
        turn_join(c);
    if (w->runq.head != NULL)
        evtimer_add(w->ev_run, &zero_tv); /* the next, next turn */
}

int
folio_call_hold(struct folio_call *call, struct folio_hold *h)
{
    struct folio_conn *c = call->conn;

    if (c == NULL || held(c))
        return -1;
    conn_wait(c, FOLIO_CONN_HELD); /* nothing more until the release */
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

    if (c->w->cfg->stats && folio_stat_get(in_flight) > 0)
        folio_stat_set(in_flight, folio_stat_get(in_flight) - 1);
    code = folio_face_release(c, h, result, len, code, msg);
    folio_out_track(c);
    /* Counted now, with its outcome, the hold in its latency. */
    folio_dispatch_record(c->w, h->row, h->notify, code, h->t0, c->peer);
    if (c->state == FOLIO_CONN_HELD_CLOSING)
        c->state = FOLIO_CONN_CLOSING;
    else
        conn_ready(c);
    turn_queue(c);
}

/*
 * Queue page b as the reply of connection c by reference, if it is
 * large enough to be worth it: 0, or a folio_out_ref_add error (or
 * FOLIO_EINVAL: small, or no connection) when it must be copied instead.
 */
static int
page_ref(struct folio_conn *c, struct folio_bytes *b)
{
    if (c == NULL || b->fb_len < FOLIO_REF_MIN)
        return FOLIO_EINVAL;
    return folio_out_ref_add(c, b);
}

void
folio_hold_release_page(struct folio_hold *h, struct folio_bytes *b)
{
    if (h->notify || page_ref(h->conn, b) != 0)
        folio_hold_release(h, b->fb_data, b->fb_len, 0, NULL);
    else
        folio_hold_release(h, NULL, 0, 0, NULL); /* the page follows */
}

int
folio_call_page(struct folio_call *call, struct folio_bytes *b)
{
    int rc = FOLIO_EINVAL;

    if (call->notify)
        return 0; /* nothing is sent */
    if (call->conn != NULL && call->out == &call->conn->out &&
        !call->out->b_failed)
        rc = page_ref(call->conn, b);
    if (rc != 0 && rc != FOLIO_ETOOBIG)
        rc = folio_buf_append(call->out, b->fb_data, b->fb_len);
    if (rc == FOLIO_ETOOBIG)
        return folio_call_error(call, FOLIO_ST_RESOURCE_EXHAUSTED,
                                "reply too large: over the connection's "
                                "output limit (max_output_hard_bytes)");
    if (rc != 0)
        return folio_call_error(call, FOLIO_ST_RESOURCE_EXHAUSTED,
                                "reply too large for memory");
    return 0;
}

void
folio_conn_drain(struct folio_conn *c)
{
    int r, rounds = 16;

    /* Take in what the client has already sent, then answer it. */
    do {
        if ((r = folio_conn_io_read(c)) < 0) {
            folio_conn_close(c);
            return;
        }
        process(c, 0, 0);
    } while (r > 0 && --rounds > 0 && c->state == FOLIO_CONN_READY &&
             !(c->flags & CONN_EOF));
    turn_queue(c);
}

/* ---- housekeeping ---- */

void
folio_conn_setup(struct folio_worker *w)
{
    folio_out_setup();
    if (folio_face_http_setup(w) != 0)
        folio_fatalx("no memory for the HTTP face");
    /* ev_turn is only ever made active; EV_PERSIST spares its event_del. */
    if ((w->ev_run = evtimer_new(w->base, on_run, w)) == NULL ||
        (w->ev_turn = event_new(w->base, -1, EV_PERSIST, on_turn_end, w)) ==
            NULL)
        folio_fatalx("cannot set up the worker's run queue");
    /*
     * libevent allocates its heap of timers with the first one, and the
     * worker's timers (a share of the run queue, an accept deferred) are
     * armed only now and then (worker.c: no tick among them): make it
     * now, not during a request, which allocates nothing.
     */
    evtimer_add(w->ev_run, &zero_tv);
    event_del(w->ev_run);
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
            if (c->state == FOLIO_CONN_READY) {
                /* Say why (HTTP: 408), as far as the socket takes it. */
                folio_face_timed_out(c);
                (void)folio_conn_io_write(c);
            }
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
                   folio_conn_out_pending(c) == 0 &&
                   (now - c->last_ms >= SHRINK_IDLE_MS ||
                    w->waitq.head != NULL)) {
            /*
             * Give back what a large message or reply made us take, once
             * the connection has been quiet a while (a client that sends
             * bursts keeps its buffers instead of reallocating each time),
             * or at once when other connections wait for room.
             */
            folio_buf_shrink(&c->in);
            shrink_out(c);
            if (idle(c))
                folio_conn_io_idle(c);
        }
    }
    folio_conn_io_trim(w);
    /* Room given back where no write or close looked (a reservation). */
    if (w->waitq.head != NULL)
        wake_waiters(w);
}

void
folio_conn_free_all(struct folio_worker *w)
{
    struct folio_conn *c;

    while (w->conns != NULL) {
        c = w->conns;
        conn_unlink(w, c);
        close(c->fd);
        folio_conn_io_free(c);
    }
    folio_conn_io_free_kept(w);
    folio_face_http_fini();
    if (w->ev_run != NULL) {
        event_free(w->ev_run);
        w->ev_run = NULL;
    }
    if (w->ev_turn != NULL) {
        event_free(w->ev_turn);
        w->ev_turn = NULL;
    }
}
