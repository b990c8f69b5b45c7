/*
 * conn.h - a worker's connections (conn.c): their life for worker.c and
 * accept.c, and the held replies for the handlers.  Each function takes
 * the connection (or the worker) it works on; none keeps a pointer to
 * "the current" one.  Everything runs in the worker's loop.
 */
#ifndef FOLIO_CONN_H
#define FOLIO_CONN_H

#include <stddef.h>
#include <stdint.h>

struct folio_bytes;
struct folio_call;
struct folio_conn;
struct folio_worker;

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
 * answer every complete request, and, at the turn's end, close the
 * connection (stop), or hand it with its unread bytes to the master for a
 * newer worker (retirement), once it is between requests with its output
 * written.
 */
void folio_conn_drain(struct folio_conn *c);

/*
 * folio_conn_setup - before the loop: the events of the run queue and of
 * the turn's end, and the allocator's set-up for output buffers.  Exits
 * (folio_fatalx) when they cannot be made.
 */
void folio_conn_setup(struct folio_worker *w);

/*
 * folio_conn_turn_end - the turn's end, the one place (with the write
 * event) that runs a connection: for every connection queued in the turn
 * (read, released, given a share, drained), answer what its input holds
 * and write its replies, one send per connection.  ev_turn's work, and
 * the loop's (worker.c) once it has ended, for a turn that a loopbreak
 * cut short.
 */
void folio_conn_turn_end(struct folio_worker *w);

/* folio_conn_sweep - close idle and too-slow connections; shrink buffers. */
void folio_conn_sweep(struct folio_worker *w);

/* folio_conn_free_all - release every connection (exit path). */
void folio_conn_free_all(struct folio_worker *w);

/*
 * Held replies, for work that completes later in the loop (the comments
 * service's group commit, its PostgreSQL backend).  A handler calls
 * folio_call_hold() and returns 0 having packed nothing; its reply, and
 * everything after it on that connection, waits until folio_hold_release()
 * supplies the result (or an error).  Meanwhile the connection sends
 * nothing, reads no further request, and is not freed (a close is
 * deferred until the release).
 */
struct folio_hold {
    struct folio_conn *conn;
    size_t head; /* where the reply starts, from the first pending byte */
    uint32_t msgid;
    int notify;
    unsigned row; /* counted at the release, under its final code */
    uint64_t t0;  /* and with the hold in its latency */
};

/*
 * folio_call_hold - hold this call's reply, on call->conn.  Returns 0, or
 * -1 when the call does not come from a connection (the handler must then
 * answer now).  Each successful hold must be released exactly once, unless
 * the worker is exiting (its connections are gone then: drop the holds).
 */
int folio_call_hold(struct folio_call *call, struct folio_hold *h);

/*
 * folio_hold_release - complete a held call: `result` (len bytes, one
 * msgpack value, copied) becomes its result, or, if code != 0, the reply
 * becomes the error [code, msg].  The reply is written into the
 * connection's output and the connection queued for the turn's end, which
 * sends it and goes on with its next requests: nothing of the connection
 * runs here, so a backend may release in the middle of its own work (a
 * loop over its queues) and call again at once.
 */
void folio_hold_release(struct folio_hold *h, const void *result, size_t len,
                        int code, const char *msg);

/*
 * folio_hold_release_page - folio_hold_release with page b (shared bytes,
 * one msgpack value) as the result: a large one is sent by reference
 * (the connection's output points at it, a reference of its own, instead
 * of copying it), a small one, or one that cannot be, as a copy.
 */
void folio_hold_release_page(struct folio_hold *h, struct folio_bytes *b);

/*
 * folio_call_page - page b (shared bytes, one msgpack value: a cached
 * reply) is the call's result.  A large one (FOLIO_REF_MIN bytes or more)
 * is sent by reference: the connection's output points at it, a
 * reference of its own given back once sent, instead of a copy; the room
 * for it was made before the call ran, as budget (its method's
 * reply_size said FOLIO_REPLY_BYREF).  A small one, or a call with no
 * connection (tests, fuzzers), gets a copy.  The handler's last step:
 * nothing is packed after it.  Returns 0, or -1 after folio_call_error
 * (error 8: over the connection's hard limit, or no memory).
 */
int folio_call_page(struct folio_call *call, struct folio_bytes *b);

#endif
