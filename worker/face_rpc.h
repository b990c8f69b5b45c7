/*
 * face_rpc.h - the msgpack-RPC face of a connection (face_rpc.c): what
 * its input's bytes mean and how its replies are written.  conn.c runs
 * the connection (buffers, reads, writes, states, queues) and asks the
 * face three things: where the next message ends (framing), what to do
 * with one (parse, refuse, or dispatch it, and what it must wait for),
 * and what a held reply becomes at its release.  accept.c asks it for
 * the reply that refuses a connection.  The face calls out.c (room for a
 * reply) and dispatch.c (the call), never conn.c.
 */
#ifndef FOLIO_FACE_RPC_H
#define FOLIO_FACE_RPC_H

#include <stddef.h>
#include <stdint.h>

#include "src/mp.h"
#include "src/rpc.h"
#include "worker/worker_int.h"

struct folio_hold;

/* ---- framing: a message is one msgpack value ---- */

/* folio_face_rpc_frame_init - frame a new connection's input. */
static inline void
folio_face_rpc_frame_init(struct folio_conn *c)
{
    const struct folio_config *cfg = c->w->cfg;

    folio_mp_scan_init(&c->wk->scan, cfg->max_message_bytes, cfg->max_depth);
}

/*
 * folio_face_rpc_frame - whether c's input p[0..avail) (from its first
 * pending byte, the same start at each call until the message is taken)
 * begins with a complete message.  Returns FOLIO_MP_DONE (its length:
 * folio_face_rpc_frame_len), FOLIO_MP_MORE when more bytes must come, or
 * a negative folio_mp_scan_result when the stream cannot be framed any
 * further.
 */
static inline int
folio_face_rpc_frame(struct folio_conn *c, const char *p, size_t avail)
{
    return folio_rpc_frame(&c->wk->scan, p, avail);
}

/* folio_face_rpc_frame_len - after FOLIO_MP_DONE: the message's length. */
static inline size_t
folio_face_rpc_frame_len(const struct folio_conn *c)
{
    return (size_t)c->wk->scan.pos;
}

/*
 * folio_face_rpc_frame_need - after FOLIO_MP_MORE: the length the message
 * needs at least, as far as its header told (maybe more than is there).
 */
static inline uint64_t
folio_face_rpc_frame_need(const struct folio_conn *c)
{
    return c->wk->scan.pos;
}

/*
 * folio_face_rpc_frame_reset - start on the next message: after one is
 * taken, or when one must be framed again later (a deferred message).
 */
static inline void
folio_face_rpc_frame_reset(struct folio_conn *c)
{
    folio_mp_scan_reset(&c->wk->scan);
}

/* ---- messages and replies ---- */

/*
 * folio_face_rpc_message - one complete message of c, p[0..len): parse it,
 * and answer, refuse or dispatch it, its reply packed into c->out.
 * `share`: c runs in its own share of the turn (from the run queue), so a
 * request with a large reply may run now.  Returns the state c goes into:
 * FOLIO_CONN_READY, the message taken (a handler that held its reply has
 * made c HELD), *ns the call's time (folio_dispatch; 0 when not timed or
 * not dispatched); FOLIO_CONN_CLOSING, the message taken and answered as
 * far as it can be: nothing more is read; or, the message left in the
 * input to run again later, the state it waits in: FOLIO_CONN_YIELDED (a
 * large reply, for a share of its own), FOLIO_CONN_PAUSED or
 * FOLIO_CONN_OUT_WAIT (no room for its reply: folio_out_room).
 */
enum folio_conn_state folio_face_rpc_message(struct folio_conn *c,
                                             const char *p, size_t len,
                                             int share, uint64_t *ns);

/*
 * folio_face_rpc_bad_stream - c's input p[0..avail) cannot be framed
 * (why: a negative folio_mp_scan_result): answer the request whose msgid
 * can be read from the bytes there are, if any, and count the error.  The
 * caller drops the input and closes once the output is written.
 */
void folio_face_rpc_bad_stream(struct folio_conn *c, int why, const char *p,
                               size_t avail);

/*
 * folio_face_rpc_release - write held call h's reply in c->out: `result`
 * (len bytes, one msgpack value), or the error [code, msg] if code != 0
 * (or if the result does not fit).  Nothing for a notification.  Returns
 * the call's final status code.
 */
int folio_face_rpc_release(struct folio_conn *c, const struct folio_hold *h,
                           const void *result, size_t len, int code,
                           const char *msg);

/*
 * folio_face_rpc_refusal - the reply to the first request of a connection
 * refused at accept (out of descriptors), whose first bytes are
 * in[0..n): error 8 with `msg`, packed into out (cap bytes).  Returns its
 * length, 0 when there is none to send (no request's msgid there).
 */
size_t folio_face_rpc_refusal(const char *in, size_t n, const char *msg,
                              char *out, size_t cap);

#endif
