/*
 * comments_pg_int.h - the PostgreSQL backend's private parts, shared by
 * worker/comments_pg.c (the requests: what the handlers hand over, their
 * deadlines, their answers), comments_pg_io.c (what is sent in pipeline
 * mode and what comes back) and comments_pg_conn.c (the connection's life:
 * connecting, the schema, losing it, backing off).  worker/ only.
 */
#ifndef FOLIO_COMMENTS_PG_INT_H
#define FOLIO_COMMENTS_PG_INT_H

#include <stdint.h>

#include <event2/event.h>
#include <event2/event_struct.h>
#include <libpq-fe.h>

#include "shm/comments.h"
#include "src/be.h"
#include "src/buf.h"
#include "worker/comments_backend.h"
#include "worker/conn.h"
#include "worker/dispatch.h"

#define CHANNEL "folio_comments" /* LISTEN/NOTIFY: the page changed */

enum conn_state {
    C_DOWN = 0,   /* not connected; the next attempt is on a timer */
    C_CONNECTING, /* PQconnectPoll */
    C_SETUP,      /* the setup query */
    C_READY       /* pipeline mode */
};

enum req_kind { R_LIST, R_POST, R_DELETE };

/* A held call waiting for the database. */
struct req {
    struct folio_hold hold;
    struct req *next;
    uint64_t deadline_ms;
    uint64_t id; /* delete: the id; post: the id stored */
    uint8_t kind;
    uint8_t in_doubt; /* sent before a connection was lost */
    uint8_t alone;    /* post: its batch failed; commit it on its own */
    uint8_t klen;     /* post: the key's bytes */
    uint8_t client_key; /* post: the key is the client's idempotency_key */
    uint8_t key_used;   /* post: the key stored another comment */
    uint8_t replay;     /* post: answered with the comment stored first */
    uint32_t tend;      /* post: text's end of the stored tail */
    uint32_t plen;
    char path[FOLIO_COMMENTS_NPATH_MAX]; /* normalized */
    /* post: author, body, then the comment after its id */
    struct folio_buf text;
    uint32_t alen, blen;
    /* ours (16 random bytes), or 0x01 and the client's */
    unsigned char key[1 + FOLIO_COMMENTS_KEY_MAX];
    unsigned char created_at[8]; /* big-endian, as sent */
    unsigned char key_cut[8];    /* created_at less the key window */
    uint8_t has_reply_to;        /* post: a reply to comment reply_to */
    unsigned char reply_to[8];   /* big-endian, as sent */
};

struct queue {
    struct req *head, *tail;
};

enum unit_kind { U_LIST, U_BATCH, U_DELETE };

/* What one Sync closes: its requests and how their results went. */
struct unit {
    struct unit *next;
    uint8_t kind;
    uint8_t got; /* the current statement has its result */
    uint8_t failed;
    uint8_t sent;
    uint32_t done;     /* statements whose results are complete */
    uint64_t epoch;    /* list: the cache's epoch when sent */
    struct queue reqs; /* list: all asking that page; batch: its posts */
    struct req *cur;   /* batch: the post whose result is next */
    char state[6];     /* SQLSTATE of the first error */
    char msg[256];
};

struct uqueue {
    struct unit *head, *tail;
};

/*
 * This worker's PostgreSQL backend (comments_pg.c opens it): every
 * function of the backend takes it, every callback is given it.
 */
struct folio_pg {
    struct folio_comments_be be; /* first: what h_comments.c holds */
    struct folio_worker *w;
    const struct folio_config *cfg;
    PGconn *conn;
    int state;
    int sock;
    struct event ev_rd, ev_wr; /* on sock (assigned per socket) */
    int rd_on, wr_on;
    struct event *ev_timer; /* the nearest deadline */
    struct event *ev_retry; /* backoff, and the connect time-out */
    struct event *ev_kick;  /* send what waits, at the end of the turn */
    struct queue posts;     /* waiting to be batched */
    struct uqueue waiting;  /* lists and deletes not yet sent */
    struct uqueue inflight; /* sent, in order */
    int batches_out;        /* batches in flight */
    struct req *free_reqs;
    struct unit *free_units;
    struct folio_ccache *cache;
    struct folio_buf scratch; /* a reply being built */
    uint64_t backoff_ms;
    uint64_t down_since_ms;
    uint64_t key_hi, key_seq;
    uint64_t key_window_ms; /* comments_key_window, comments_timeout at least */
    uint64_t prune_at;      /* keys past the window forgotten next then */
    uint64_t rnd;
    int ever_up;
    int down_logged; /* the current outage was logged */
    int warned_sync;
    char why[256]; /* why the database is unavailable */
    const char *kw[10], *val[10];
};

static inline void
q_push(struct queue *q, struct req *r)
{
    r->next = NULL;
    if (q->tail != NULL)
        q->tail->next = r;
    else
        q->head = r;
    q->tail = r;
}

static inline struct req *
q_pop(struct queue *q)
{
    struct req *r = q->head;

    if (r != NULL) {
        q->head = r->next;
        if (q->head == NULL)
            q->tail = NULL;
        r->next = NULL;
    }
    return r;
}

/* Put queue `front` before q (both in order). */
static inline void
q_prepend(struct queue *q, struct queue *front)
{
    if (front->head == NULL)
        return;
    front->tail->next = q->head;
    if (q->tail == NULL)
        q->tail = front->tail;
    q->head = front->head;
    front->head = front->tail = NULL;
}

static inline void
uq_push(struct uqueue *q, struct unit *u)
{
    u->next = NULL;
    if (q->tail != NULL)
        q->tail->next = u;
    else
        q->head = u;
    q->tail = u;
}

static inline struct unit *
uq_pop(struct uqueue *q)
{
    struct unit *u = q->head;

    if (u != NULL) {
        q->head = u->next;
        if (q->head == NULL)
            q->tail = NULL;
        u->next = NULL;
    }
    return u;
}

/*
 * comments_pg_req.c: requests and their answers, the bottom of the
 * backend (it calls none of the files below; they all call it).
 */

/* folio_pg_req_get - a zeroed request, or NULL (no memory). */
struct req *folio_pg_req_get(struct folio_pg *pg);
/* folio_pg_req_put - recycle a request (answered, or dropped at exit). */
void folio_pg_req_put(struct folio_pg *pg, struct req *r);
/* folio_pg_unit_get - a zeroed unit of `kind`, or NULL (no memory). */
struct unit *folio_pg_unit_get(struct folio_pg *pg, int kind);
void folio_pg_unit_put(struct folio_pg *pg, struct unit *u);
/*
 * folio_pg_release_error, folio_pg_release_ok - answer a held request
 * (then recycled) with an error or a result (folio_hold_release: the
 * connection runs at the turn's end, nothing of it here).
 */
void folio_pg_release_error(struct folio_pg *pg, struct req *r, int code,
                            const char *msg);
void folio_pg_release_ok(struct folio_pg *pg, struct req *r, const void *result,
                         size_t len);
/* folio_pg_release_page - answer with page b (folio_hold_release_page). */
struct folio_bytes;
void folio_pg_release_page(struct folio_pg *pg, struct req *r,
                           struct folio_bytes *b);
/* folio_pg_fail_queue - answer all with an error. */
void folio_pg_fail_queue(struct folio_pg *pg, struct queue *q, int code,
                         const char *msg);
/* folio_pg_unavailable_msg - "the comments database is unavailable: why" */
const char *folio_pg_unavailable_msg(struct folio_pg *pg, char *buf,
                                     size_t len);
/* folio_pg_cache_gauge - publish the cache's size in the stats slot. */
void folio_pg_cache_gauge(struct folio_pg *pg);
/* folio_pg_arm_timer - the deadline timer for the nearest deadline. */
void folio_pg_arm_timer(struct folio_pg *pg);
/* folio_pg_kick - send what waits at the end of this loop turn. */
void folio_pg_kick(struct folio_pg *pg);
/* folio_pg_set_why - libpq's message, first line, as pg->why. */
const char *folio_pg_set_why(struct folio_pg *pg, const char *msg);

/* comments_pg_io.c: the pipeline (calls comments_pg_req.c only) */

/*
 * folio_pg_send_waiting - queue into libpq the waiting lists and
 * deletes, and the next batch of posts.  0, or -1 when the connection
 * failed (PQerrorMessage says why).
 */
int folio_pg_send_waiting(struct folio_pg *pg);
/*
 * folio_pg_read_results - take every result that has arrived and answer
 * the units they complete.  0, or -1 when the connection must be reset
 * (pg->why says why).
 */
int folio_pg_read_results(struct folio_pg *pg);
/* folio_pg_read_notifies - drop the pages PostgreSQL notified. */
void folio_pg_read_notifies(struct folio_pg *pg);

/* comments_pg_conn.c: the connection (calls comments_pg_io.c, _req.c) */

/* folio_pg_on_kick - ev_kick: send what waits (folio_pg_send_waiting). */
void folio_pg_on_kick(evutil_socket_t fd, short what, void *arg);
/* folio_pg_set_up - the comments_db_up gauge. */
void folio_pg_set_up(struct folio_pg *pg, int up);
/* folio_pg_sock_off - stop watching the socket. */
void folio_pg_sock_off(struct folio_pg *pg);
/* folio_pg_flush - push libpq's output, watching for writability. 0/-1 */
int folio_pg_flush(struct folio_pg *pg);
/* folio_pg_on_io - the socket's events, in every state. */
void folio_pg_on_io(evutil_socket_t fd, short what, void *arg);
/*
 * folio_pg_reset - the connection failed (failed_connect: it never came
 * up): close it, queue again what was in flight, reconnect now or after
 * the backoff (then answering what waits with 14).  Logs once per outage.
 */
void folio_pg_reset(struct folio_pg *pg, const char *why, int failed_connect);
/* folio_pg_connect - start connecting (PQconnectStartParams). */
void folio_pg_connect(struct folio_pg *pg);
/* folio_pg_on_retry - ev_retry: the backoff ended, or the connect timed out. */
void folio_pg_on_retry(evutil_socket_t fd, short what, void *arg);

#endif
