/*
 * worker_int.h - the worker's private structures: the process-wide worker
 * state and connections.  Included by worker/ only.
 */
#ifndef FOLIO_WORKER_INT_H
#define FOLIO_WORKER_INT_H

#include <stdint.h>

#include <event2/event.h>
#include <event2/event_struct.h>

#include "shm/stats.h"
#include "src/buf.h"
#include "src/mp.h"
#include "worker/worker.h"

#define FOLIO_CONN_BUF 16384     /* base size of each connection buffer */
#define FOLIO_CONN_RESERVE 64    /* connections above max, only to refuse */

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
#define CONN_YIELDED 0x100    /* served its share of this loop turn: the
                                 rest of its input waits for ev_resume */

struct folio_worker;

struct folio_conn {
    int fd;
    unsigned flags;
    struct folio_worker *w;
    struct event ev_read;
    struct event ev_write;
    struct event ev_resume;  /* a zero time-out: the next turn's share */
    struct folio_buf in;
    struct folio_buf out;
    struct folio_mp_scan scan;
    uint64_t last_ms;      /* last read */
    uint64_t msg_start_ms; /* a message began arriving then; 0: none */
    struct folio_conn *prev, *next; /* w->conns or w->free_conns */
};

/* A listening socket as the worker watches it. */
struct folio_lsn {
    struct folio_worker *w;
    int fd;
    unsigned flags; /* CONN_ADMIN, CONN_TCP for its connections */
    struct event *ev;
};

struct folio_worker {
    const struct folio_worker_args *args;
    const struct folio_config *cfg;
    struct event_base *base;
    struct folio_worker_slot *slot;
    struct folio_lsn lsn[FOLIO_MAX_LISTEN + 1];
    int nlsn;
    int accept_paused;           /* EMFILE: listeners off for a moment */
    struct event *ev_chan;
    struct event *ev_tick;       /* housekeeping, every 100 ms */
    struct event *ev_sig[6];
    struct folio_conn *conns;    /* open connections */
    struct folio_conn *free_conns;
    uint32_t nconns;
    uint32_t nfree;
    int stopping;                /* TERM: answer what is in flight, exit */
    int retiring;                /* RETIRE: hand connections back, exit */
    uint64_t deadline_ms;        /* exit by then when stopping/retiring */
    uint64_t now_ms;             /* cached monotonic clock, set each tick */
    uint64_t served;             /* requests, for max_requests_per_worker */
    uint64_t recycle_at;         /* 0: never */
    int recycle_sent;
    struct folio_conn *dispatching; /* whose request a handler is serving */
};

/* The one worker of this process (set by folio_worker_main). */
extern struct folio_worker *folio_worker_self;

/* conn.c */

/*
 * folio_conn_open - serve `fd` (non-blocking).  `data` holds bytes already
 * read from it (a connection handed over at reload).  Takes ownership of
 * fd: closes it on failure.
 */
void folio_conn_open(struct folio_worker *w, int fd, unsigned flags,
                     const void *data, size_t len);

/* folio_conn_close - close now and recycle the structure. */
void folio_conn_close(struct folio_conn *c);

/*
 * folio_conn_drain - for stop and retirement: read what the socket holds,
 * answer every complete request, and close (or hand off) the connection
 * once it is between requests with its output written.
 */
void folio_conn_drain(struct folio_conn *c);

/* folio_conn_accept_cb - libevent callback of a listening socket (arg: lsn). */
void folio_conn_accept_cb(evutil_socket_t fd, short what, void *arg);

/* folio_conn_sweep - close idle and too-slow connections. */
void folio_conn_sweep(struct folio_worker *w);

/* folio_conn_free_all - release every connection (exit path). */
void folio_conn_free_all(struct folio_worker *w);

/* worker.c */

/* folio_worker_handoff - give c to the master for a newer worker. */
int folio_worker_handoff(struct folio_worker *w, struct folio_conn *c);

/* folio_worker_conn_gone - a connection closed; may end a drain. */
void folio_worker_conn_gone(struct folio_worker *w);

/* folio_worker_count_request - count one request toward recycling. */
void folio_worker_count_request(struct folio_worker *w);

/* folio_now_ms - monotonic milliseconds. */
uint64_t folio_now_ms(void);

/* folio_now_ns - monotonic nanoseconds. */
uint64_t folio_now_ns(void);

#endif
