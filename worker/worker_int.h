/*
 * worker_int.h - the worker's private structures and the contracts
 * between the files of worker/.  Included by worker/ (and its tests) only.
 *
 * Who calls whom (no circle): worker.c, the one place that decides (the
 * loop: signals, the master's channel, housekeeping, stop and retirement),
 * calls conn.c (connections), which calls dispatch.c (one request), which
 * calls the handlers through the method table (methods.c); the handlers
 * call back into dispatch.c (folio_call_error) and conn.c (held replies)
 * only.  A lower file reports what the loop must decide on by activating
 * one of the worker's events (ev_settle, ev_recycle), never by calling
 * worker.c.  Everything runs in the worker's one thread, in loop context.
 */
#ifndef FOLIO_WORKER_INT_H
#define FOLIO_WORKER_INT_H

#include <signal.h>
#include <stdint.h>

#include <event2/event.h>
#include <event2/event_struct.h>

#include "shm/stats.h"
#include "src/buf.h"
#include "src/log.h"
#include "src/mp.h"
#include "worker/worker.h"

#define FOLIO_CONN_BUF 16384     /* base size of each connection buffer */
#define FOLIO_CONN_RESERVE 64    /* connections above max, only to refuse */
#define FOLIO_SPARE_FDS 4        /* kept open for when descriptors run out */

/* Connection flags */
#define CONN_ADMIN 0x01       /* from the admin socket */
#define CONN_REJECT 0x02      /* over max_connections: refuse its first request */
#define CONN_CLOSE_AFTER 0x04 /* close once the output is written */
#define CONN_READ_PAUSED 0x08 /* output over max_output_bytes */
#define CONN_WRITING 0x10     /* ev_write is added */
#define CONN_EOF 0x20         /* the peer will send nothing more */
#define CONN_TCP 0x40
#define CONN_HELD 0x80        /* a reply is held (folio_call_hold): no
                                 sending, no reading, no next request */
#define CONN_YIELDED 0x100    /* on w->runq: the rest of its input runs
                                 in its share of a later loop turn */
#define CONN_OUT_WAIT 0x200   /* its next reply waits for room under
                                 max_output_total (on w->waitq) */
#define CONN_TURN 0x400       /* read this turn: its replies go out at the
                                 turn's end (on w->turnq) */
/* Its requests wait: nothing is read or dispatched until it clears. */
#define CONN_WAITING                                                           \
    (CONN_READ_PAUSED | CONN_HELD | CONN_YIELDED | CONN_OUT_WAIT)

struct folio_worker;

struct folio_conn {
    int fd;
    unsigned flags;
    struct folio_worker *w;
    struct event ev_read;
    struct event ev_write;
    struct folio_buf in;
    struct folio_buf out;
    struct folio_mp_scan scan;
    uint64_t last_ms;      /* last read */
    uint64_t read_ns;      /* monotonic ns of the last read (stats on) */
    uint64_t msg_start_ms; /* a message began arriving then; 0: none */
    uint64_t peer[3];      /* its peer, folio_addr_pack: for the logs */
    uint64_t out_ms;       /* replies pending, unmoved since; 0: none */
    size_t out_cap;        /* out's capacity when last counted */
    size_t out_held;       /* out's capacity beyond its base, as counted in
                              w->out_total (0 for admin connections) */
    size_t out_want;       /* CONN_OUT_WAIT: the size of its next reply */
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
    struct folio_lsn lsn[FOLIO_MAX_LISTEN + 1];
    int nlsn;
    int accept_paused;           /* EMFILE: listeners off for a moment */
    /*
     * Accepting in balance (conn.c): the public listeners are off while
     * ev_accept (ACCEPT_DEFER_MS) is pending, this worker leaving new
     * connections to less loaded ones; then it takes one whatever the
     * balance (accept_force), so that a stalled peer never stops accepts.
     */
    int accept_force;
    struct event *ev_accept;
    struct event *ev_chan;
    struct event *ev_tick;       /* housekeeping and heartbeat, every 100 ms */
    struct event *ev_settle;     /* a connection closed while draining */
    struct event *ev_recycle;    /* served reached recycle_at */
    struct event *ev_sig[6];
    struct folio_conn *conns;    /* open connections */
    struct folio_conn *free_conns;
    uint32_t nconns;
    uint32_t nadmin;             /* of which from the admin socket */
    uint32_t nfree;
    /*
     * The output side, kept here for every connection: what the output
     * buffers of public connections hold beyond their base capacity
     * (bounded by max_output_total), and the connections whose next reply
     * waits for room in it, first come first served.  A connection's own
     * pending output is folio_buf_pending(&c->out).
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
    struct folio_conn *running; /* whose share ev_run is running */
    /*
     * The connections read in this turn of the loop: their replies are
     * written once, at the turn's end, as Redis writes its pending
     * replies before it sleeps.  ev_turn, made active when the first is
     * queued, runs after every callback libevent already has for the
     * turn (the active queue is first in, first out), before it polls.
     */
    struct folio_conn_q turnq;
    struct event *ev_turn;
    uint64_t call_ns;            /* the last call's time (stats on) */
    /*
     * Descriptors held open (on /dev/null) for when the process runs out
     * (EMFILE): one to accept and close a public connection it cannot
     * serve, the others for admin connections.
     */
    int spare[FOLIO_SPARE_FDS];
    int nspare;
    struct folio_log_rate refused_log; /* connections closed at accept */
    int refused_err;                   /* and why: EMFILE, ENFILE... */
    int stopping;                /* TERM: answer what is in flight, exit */
    int retiring;                /* RETIRE: hand connections back, exit */
    uint64_t deadline_ms;        /* exit by then when stopping/retiring */
    uint64_t now_ms;             /* cached monotonic clock, set each tick */
    uint64_t served;             /* requests, for max_requests_per_worker */
    uint64_t recycle_at;         /* 0: never */
    int recycle_sent;
    const struct folio_conn *published; /* whose peer the slot holds */
};

/*
 * conn.c: connections.  Each function takes the connection (or the worker)
 * it works on; none keeps a pointer to "the current" one.
 */

/*
 * folio_conn_open - serve `fd` (non-blocking, close-on-exec).  `data`
 * (len bytes, copied) holds bytes already read from it: a connection
 * handed over at a reload.  Takes ownership of fd: on failure it is closed
 * (and counted).  The connection is w's until folio_conn_close.
 */
void folio_conn_open(struct folio_worker *w, int fd, unsigned flags,
                     const void *data, size_t len);

/*
 * folio_conn_close - close now and recycle the structure (deferred while a
 * held reply points at it).  When the worker drains, activates
 * w->ev_settle so that worker.c may end the drain.
 */
void folio_conn_close(struct folio_conn *c);

/*
 * folio_conn_drain - for stop and retirement: read what the socket holds,
 * answer every complete request, and close the connection (stop), or hand
 * it with its unread bytes to the master for a newer worker (retirement),
 * once it is between requests with its output written.
 */
void folio_conn_drain(struct folio_conn *c);

/*
 * folio_conn_setup - before the loop: raise RLIMIT_NOFILE toward what
 * max_connections needs (up to the hard limit; a shortfall is logged) and
 * open the spare descriptors.
 */
void folio_conn_setup(struct folio_worker *w);

/*
 * folio_conn_turn_end - write the replies of every connection read in
 * the turn, one send per connection: ev_turn's work, and the loop's
 * (worker.c) once it has ended, for a turn that a loopbreak cut short.
 */
void folio_conn_turn_end(struct folio_worker *w);

/* folio_conn_accept_cb - libevent callback of a listening socket (arg: lsn). */
void folio_conn_accept_cb(evutil_socket_t fd, short what, void *arg);

/* folio_conn_sweep - close idle and too-slow connections. */
void folio_conn_sweep(struct folio_worker *w);

/* folio_conn_free_all - release every connection (exit path). */
void folio_conn_free_all(struct folio_worker *w);

/*
 * dispatch.c: folio_dispatch (dispatch.h) runs one request of connection
 * c (NULL outside a connection: tests, fuzzers): publishes it in the
 * stats slot as the request in progress while its handler runs, counts
 * it, logs it when slower than slow_request, and activates w->ev_recycle
 * when the worker has served max_requests_per_worker.
 */

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
 * its params summarized (rate-limited: see slowlog.c).  dispatch.c only.
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
