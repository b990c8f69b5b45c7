/*
 * worker_int.h - the worker's private structures (the worker, its
 * connections, their states and queues) and the contracts of the files
 * too small for a header of their own.  Included by worker/ (and its
 * tests) only; each other file's contract is in its own header.
 *
 * Who calls whom (no circle: make lint-calls).  worker.c, the one place
 * that decides (the loop: signals, the master's channel, housekeeping,
 * stop and retirement), calls accept.c (new connections, handed to
 * conn.c) and conn.c (connections).  conn.c runs a connection in two
 * places only, the turn's end and its write event; it calls conn_io.c
 * (the socket and the buffers), the connection's face through face.h
 * (what the bytes mean: framing, one message parsed and dispatched, the
 * replies): face_rpc.c for msgpack-RPC, face_http.c for HTTP; and out.c
 * (the output budget).  Each face calls dispatch.c (one request), which
 * calls the handlers (h_*.c) through the method table (methods.c);
 * face_http.c also asks h_comments.c for the page cache.  The handlers
 * call back into dispatch.c (folio_call_error) and conn.c (held replies:
 * a release writes the reply and queues the connection, never runs it)
 * only; h_comments.c reaches its backend (comments_lmdb.c, or
 * comments_pg.c over comments_pg_conn.c, _io.c and _req.c) through the
 * table of comments_backend.h.  A lower file reports what the loop must
 * decide on by activating one of the worker's events (ev_settle,
 * ev_recycle), and what conn.c must act on by a return value (out.c:
 * freed room, conn_io.c: a failed socket), never by calling up.
 * Everything runs in the worker's one thread, in loop context.
 */
#ifndef FOLIO_WORKER_INT_H
#define FOLIO_WORKER_INT_H

#include <signal.h>
#include <stdint.h>

#include <event2/event.h>
#include <event2/event_struct.h>

#include "shm/stats.h"
#include "src/buf.h"
#include "src/http_parse.h"
#include "src/log.h"
#include "src/mp.h"
#include "worker/http_reply.h"
#include "worker/worker.h"

#define FOLIO_CONN_BUF 16384     /* base size of each connection buffer */
#define FOLIO_CONN_RESERVE 64    /* connections above max, only to refuse */
#define FOLIO_SPARE_FDS 4        /* kept open for when descriptors run out */
#define FOLIO_CONN_REFS 8        /* shared pages an output may point at */
#define FOLIO_REF_MIN 16384      /* replies this large go by reference */

/*
 * A connection's state: whether it reads and answers its requests, and if
 * not, what they wait for.  conn.c alone moves a connection from one to
 * another (out.c puts one on w->waitq, which conn.c makes OUT_WAIT).
 */
enum folio_conn_state {
    FOLIO_CONN_READY = 0,    /* reads, and answers what it reads */
    FOLIO_CONN_YIELDED,      /* on w->runq: the rest of its input runs in
                                its share of a later loop turn */
    FOLIO_CONN_PAUSED,       /* its output is over max_output_bytes: its
                                requests wait for its client to read */
    FOLIO_CONN_OUT_WAIT,     /* on w->waitq: its next reply waits for room
                                under max_output_total */
    FOLIO_CONN_HELD,         /* a reply is held (folio_call_hold): nothing
                                is sent, read or answered until the release */
    FOLIO_CONN_HELD_CLOSING, /* held, and closed meanwhile: CLOSING at the
                                release (the structure stays until then) */
    FOLIO_CONN_CLOSING       /* answers nothing more: closes once its
                                output is written */
};

/* Connection flags: facts that hold whatever its state. */
#define CONN_ADMIN 0x01   /* from the admin socket (also a listener's) */
#define CONN_REJECT 0x02  /* over max_connections: refuse its first request */
#define CONN_EOF 0x04     /* the peer will send nothing more */
#define CONN_WRITING 0x08 /* ev_write is added */
#define CONN_TURN 0x10    /* on w->turnq: run at the turn's end */
#define CONN_TCP 0x20     /* a listener's: TCP_NODELAY for its connections */
#define CONN_HTTP 0x40    /* a listener's: the HTTP face (face_http.h) */

struct folio_worker;
struct folio_bytes;

/*
 * A reply sent by reference (out.c): a page of shared bytes, with the
 * output buffer's bytes that go before it.  A connection's output is its
 * buffer's pending bytes with its references in between, in the order
 * they were queued: gap bytes of the buffer, the first reference, the
 * next gap, ... then the rest of the buffer.
 */
struct folio_out_ref {
    struct folio_bytes *b; /* one reference, given back once sent */
    size_t off;            /* of it, sent */
    size_t gap;            /* buffer bytes before it, after the one before */
};

/*
 * What the HTTP face keeps of a connection (face_http.c): the request
 * being read, and what a held call's release needs of the request being
 * answered (it is consumed, or, for a JSON-RPC batch, kept in the input
 * and run again from the call after the one released).
 */
struct folio_conn_http {
    struct folio_http_req req;
    uint8_t route;      /* the route being answered (face_http.c) */
    uint8_t rflags;     /* FOLIO_HTTP_R_* of its reply */
    uint8_t resume;     /* a batch runs again from call `next` */
    uint8_t continued;  /* "100 Continue" sent for this request */
    uint8_t batch;      /* a JSON-RPC batch (its responses in [...]) */
    uint8_t origin_len; /* its Origin, for the CORS headers: */
    char origin[127];   /* longer ones are never allowed */
    uint32_t next;      /* a batch: the next call to run */
    uint32_t answered;  /* a batch: responses written */
    struct folio_http_reply reply; /* a batch's open reply */
    uint8_t id_len;     /* a held JSON-RPC call's id, as JSON text */
    char id[96];
};

/*
 * What a connection needs only while it has work: the framing of its
 * input and the pages its output points at.  It comes with the two
 * buffers and goes back to the worker's pool with them (conn_io.c), so
 * an idle connection holds none of it: c->wk is set exactly when
 * c->in.b_data is.
 */
struct folio_conn_work {
    union {
        struct folio_mp_scan scan;   /* framing the input (face_rpc.h) */
        struct folio_conn_http http; /* the HTTP face's (CONN_HTTP) */
    };
    union {
        struct folio_out_ref refs[FOLIO_CONN_REFS]; /* a ring (out.c) */
        /* In the worker's pool (conn_io.c), with no page to point at. */
        struct {
            struct folio_conn_work *next;
            char *in, *out; /* the buffers that go with it */
            unsigned face;  /* CONN_HTTP or 0: its framing is at rest for
                               that face's next message; else unknown */
        } pooled;
    };
};

struct folio_conn {
    int fd;
    enum folio_conn_state state;
    unsigned flags; /* CONN_* */
    struct folio_worker *w;
    struct event ev_read;
    struct event ev_write;
    struct folio_buf in;
    struct folio_buf out;
    struct folio_conn_work *wk; /* with its buffers, or NULL */
    uint64_t last_ms;      /* last read */
    uint64_t read_ns;      /* monotonic ns of the last read (stats on) */
    uint64_t msg_start_ms; /* a message began arriving then; 0: none */
    uint64_t peer[3];      /* its peer, folio_addr_pack: for the logs */
    uint64_t out_ms;       /* replies pending, unmoved since; 0: none */
    size_t out_cap;        /* out's capacity when last counted */
    size_t out_held;       /* out's capacity beyond its base, as counted in
                              w->out_total (0 for admin connections) */
    size_t out_want;       /* OUT_WAIT: the size of its next reply */
    int out_byref;         /* ... which goes by reference: it waits for
                              budget, not for buffer room */
    size_t out_resv;       /* budget made for a reply by reference that
                              is not queued yet (out.c) */
    size_t out_refbytes;   /* of its references, the bytes not yet sent */
    size_t out_refgap;     /* buffer bytes before the last one's end */
    unsigned nrefs, ref_head; /* wk->refs[], oldest at ref_head */
    int heavy;             /* its last message took HEAVY_NS or more */
    struct folio_conn *prev, *next; /* w->conns or w->free_conns */
    /* Its links in the queues it is on (enum folio_conn_link). */
    struct folio_conn *qprev[2], *qnext[2];
};

/*
 * A connection's two pairs of queue links: one for w->waitq or w->runq
 * (never both), one for w->turnq.
 */
enum folio_conn_link { FOLIO_QL_WAIT = 0, FOLIO_QL_TURN = 1 };

/* A queue of connections, first in first out (through one pair of links). */
struct folio_conn_q {
    struct folio_conn *head, *tail;
};

/* folio_connq_push - put c last on q, through its links `l`. */
static inline void
folio_connq_push(struct folio_conn_q *q, struct folio_conn *c,
                 enum folio_conn_link l)
{
    c->qnext[l] = NULL;
    c->qprev[l] = q->tail;
    if (q->tail != NULL)
        q->tail->qnext[l] = c;
    else
        q->head = c;
    q->tail = c;
}

/* folio_connq_remove - take c off q (it is on it, through its links `l`). */
static inline void
folio_connq_remove(struct folio_conn_q *q, struct folio_conn *c,
                   enum folio_conn_link l)
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

/*
 * folio_conn_out_pending - what c's output still has to send: its
 * buffer's pending bytes and its references' (out.c).
 */
static inline size_t
folio_conn_out_pending(const struct folio_conn *c)
{
    return folio_buf_pending(&c->out) + c->out_refbytes;
}

/* A listening socket as the worker watches it. */
struct folio_lsn {
    struct folio_worker *w;
    int fd;
    int passed;     /* systemd's: not shut down when the master dies */
    unsigned flags; /* CONN_ADMIN, CONN_TCP for its connections */
    struct event *ev;
};

/*
 * The parent-death signal (prctl PR_SET_PDEATHSIG): the kernel sends it
 * when the master dies, and its handler shuts the listening sockets down.
 */
#define FOLIO_WORKER_DEATH_SIG (SIGRTMIN + 1)

struct folio_worker {
    const struct folio_worker_args *args;
    const struct folio_config *cfg;
    struct event_base *base;
    struct folio_worker_slot *slot;
    struct folio_lsn lsn[FOLIO_MAX_SOCKETS];
    int nlsn;
    int accept_paused;           /* EMFILE: listeners off for a moment */
    /*
     * Accepting in balance (accept.c): the public listeners are off while
     * ev_accept (ACCEPT_DEFER_MS) is pending, this worker leaving new
     * connections to less loaded ones; then it takes one whatever the
     * balance (accept_force), so that a stalled peer never stops accepts.
     */
    int accept_force;
    struct event *ev_accept;
    struct event *ev_chan;
    struct event *ev_tick;       /* housekeeping and heartbeat, every 100 ms */
    int tick_fd;                 /* its timerfd */
    struct event *ev_settle;     /* a connection closed while draining */
    struct event *ev_recycle;    /* served reached recycle_at */
    struct event *ev_sig[6];
    struct folio_conn *conns;    /* open connections */
    struct folio_conn *free_conns;
    uint32_t nconns;
    uint32_t nadmin;             /* of which from the admin socket */
    uint32_t nfree;
    /*
     * Work areas, each with its two buffers of FOLIO_CONN_BUF bytes, that
     * no connection holds (conn_io.c: an idle connection gives them
     * back), linked through the areas; pool_low, the fewest there were
     * since pool_trim_ms.
     */
    struct folio_conn_work *pool;
    uint32_t npool, pool_low;
    uint64_t pool_trim_ms;
    /*
     * The output budget (out.c), kept here for every connection: what the
     * output buffers of public connections hold beyond their base
     * capacity, the shared pages their outputs point at (each once,
     * however many send it) and the room made for replies about to be
     * queued (bounded together by max_output_total), and the connections
     * whose next reply waits for room in it, first come first served.  A
     * connection's own pending output is folio_conn_out_pending(c).
     */
    size_t out_total;
    struct folio_conn_q waitq;
    /*
     * Heavy work (large replies, slow calls, a connection's input beyond
     * its share of a turn) waits on runq, and ev_run gives its head one
     * share each turn of the loop, after the turn's reads and writes: a
     * light request waits behind one share at most.
     */
    struct folio_conn_q runq;
    struct event *ev_run;
    /*
     * The connections to run at the end of this turn of the loop: those
     * read in it, released from a hold, given a share or drained.  Their
     * replies are written once, there, as Redis writes its pending
     * replies (and serves the clients a blocking operation unblocked)
     * in beforeSleep.  ev_turn, made active when the first is queued,
     * runs after every callback libevent already has for the turn (the
     * active queue is first in, first out), before it polls.
     */
    struct folio_conn_q turnq;
    struct event *ev_turn;
    /*
     * Descriptors held open (on /dev/null) for when the process runs out
     * (EMFILE, accept.c): one to accept and close a public connection it cannot
     * serve, the others for admin connections.
     */
    int spare[FOLIO_SPARE_FDS];
    int nspare;
    struct folio_log_rate refused_log; /* connections closed at accept */
    int refused_err;                   /* and why: EMFILE, ENFILE... */
    int stopping;                /* TERM: answer what is in flight, exit */
    int retiring;                /* RETIRE: hand connections back, exit */
    uint64_t deadline_ms;        /* exit by then when stopping/retiring */
    uint64_t now_ms;             /* cached monotonic clock, set each turn */
    /*
     * The clock chained from one call to the next (dispatch.c), while
     * conn.c's process() answers a connection's messages: each call starts
     * when the one before it ended, or when the bytes were read (the
     * first after a read), so that a call costs one clock reading, not
     * two.  clock_chain: process() is running; clock_ns: the reading to
     * start from (0: none yet).
     */
    int clock_chain;
    uint64_t clock_ns;
    uint64_t served;             /* requests, for max_requests_per_worker */
    uint64_t recycle_at;         /* 0: never */
    int recycle_sent;
    const struct folio_conn *published; /* whose peer the slot holds */
};

/*
 * dispatch.c: folio_dispatch (dispatch.h) runs one request of connection
 * c (NULL outside a connection: tests, fuzzers): publishes it in the
 * stats slot as the request in progress while its handler runs, counts
 * it, logs it when slower than slow_request, and activates w->ev_recycle
 * when the worker has served max_requests_per_worker.
 */

/*
 * loop.c: folio_loop_watch - time every turn of this thread's event loop
 * into slot s (its histogram and longest turn), set *now_ms (monotonic
 * ms) as each starts, poll busy_poll_us without sleeping after each turn
 * that served (0: never), and yield the CPU before polling after such a
 * turn if poll_yield; NULL stops.  worker.c, around its loop.
 */
struct folio_worker_slot;
void folio_loop_watch(struct folio_worker_slot *s, uint64_t *now_ms,
                      uint32_t busy_poll_us, int poll_yield);

/*
 * loop.c: folio_loop_ready - the events this thread's last poll returned
 * (descriptors ready; timers not counted): conn.c writes a connection's
 * replies at once when it is the only one.
 */
extern _Thread_local int folio_loop_ready;

/*
 * profile.c: /debug/pprof/ in a worker.  folio_worker_profile_init after
 * fork (own sampling intervals, the heap rate of the configuration);
 * folio_worker_profile_msg for a FOLIO_CHAN_PROFILE from the master
 * (answered with FOLIO_CHAN_PROFILE_DONE, at once or at the end of a CPU
 * profile); folio_worker_profile_fini on the way out, before the channel
 * closes (a CPU profile running is sent as it is).
 */
struct folio_chan_hdr;
void folio_worker_profile_init(struct folio_worker *w);
void folio_worker_profile_msg(struct folio_worker *w,
                              const struct folio_chan_hdr *h,
                              const void *data);
void folio_worker_profile_fini(struct folio_worker *w);

/*
 * slowlog.c: folio_slowlog_note - log request `method` of connection
 * peer `peer` (folio_addr_pack; NULL: none) that took `ns` nanoseconds,
 * its params summarized (NULL: a held call's, not kept) (rate-limited:
 * see slowlog.c).  dispatch.c only.
 */
struct folio_mp_cur;
void folio_slowlog_note(struct folio_worker *w, const char *method,
                        uint64_t ns, const uint64_t peer[3],
                        const struct folio_mp_cur *params, uint32_t nparams);

/*
 * folio_slowlog_summary - params (nparams values at *params, not moved)
 * as JSON-like printable text ("[\"the\", {\"limit\": 1000}]"), cut to
 * cap - 1 bytes with "...".  Returns buf.
 */
const char *folio_slowlog_summary(const struct folio_mp_cur *params,
                                  uint32_t nparams, char *buf, size_t cap);

#endif
