/*
 * face.h - the faces of a connection: what its bytes mean.  A connection
 * from a listen address speaks msgpack-RPC (face_rpc.h), one from an
 * http_listen address HTTP/1.1 (face_http.h, CONN_HTTP); conn.c runs
 * both alike and asks through these, each the face's function of the
 * same name (see face_rpc.h for what each one does).  Both faces frame
 * with 0 for a whole message, 1 for more bytes to come, < 0 for a stream
 * that cannot be framed.  The four that conn.c calls for every message
 * take the face (c->flags & CONN_HTTP) as an argument: it reads it once,
 * and each face's loop is compiled with the choice made.
 */
#ifndef FOLIO_FACE_H
#define FOLIO_FACE_H

#include "src/http_parse.h"
#include "src/mp.h"
#include "worker/face_http.h"
#include "worker/face_rpc.h"

#define FOLIO_FACE_DONE 0
#define FOLIO_FACE_MORE 1
_Static_assert(FOLIO_MP_DONE == FOLIO_FACE_DONE &&
                   FOLIO_HTTP_DONE == FOLIO_FACE_DONE &&
                   FOLIO_MP_MORE == FOLIO_FACE_MORE &&
                   FOLIO_HTTP_MORE == FOLIO_FACE_MORE,
               "the faces frame alike");

static inline void
folio_face_frame_init(struct folio_conn *c)
{
    if (c->flags & CONN_HTTP)
        folio_face_http_frame_init(c);
    else
        folio_face_rpc_frame_init(c);
}

static inline int
folio_face_frame(struct folio_conn *c, unsigned face, char *p, size_t avail)
{
    if (face & CONN_HTTP)
        return folio_face_http_frame(c, p, avail);
    return folio_face_rpc_frame(c, p, avail);
}

static inline size_t
folio_face_frame_len(const struct folio_conn *c, unsigned face)
{
    if (face & CONN_HTTP)
        return folio_face_http_frame_len(c);
    return folio_face_rpc_frame_len(c);
}

static inline uint64_t
folio_face_frame_need(const struct folio_conn *c)
{
    if (c->flags & CONN_HTTP)
        return folio_face_http_frame_need(c);
    return folio_face_rpc_frame_need(c);
}

static inline void
folio_face_frame_reset(struct folio_conn *c, unsigned face)
{
    if (face & CONN_HTTP)
        folio_face_http_frame_reset(c);
    else
        folio_face_rpc_frame_reset(c);
}

static inline enum folio_conn_state
folio_face_message(struct folio_conn *c, unsigned face, char *p, size_t len,
                   int share, uint64_t *ns)
{
    if (face & CONN_HTTP)
        return folio_face_http_message(c, p, len, share, ns);
    return folio_face_rpc_message(c, p, len, share, ns);
}

static inline void
folio_face_bad_stream(struct folio_conn *c, int why, const char *p,
                      size_t avail)
{
    if (c->flags & CONN_HTTP)
        folio_face_http_bad_stream(c, why, p, avail);
    else
        folio_face_rpc_bad_stream(c, why, p, avail);
}

static inline int
folio_face_release(struct folio_conn *c, const struct folio_hold *h,
                   const void *result, size_t len, int code, const char *msg)
{
    if (c->flags & CONN_HTTP)
        return folio_face_http_release(c, h, result, len, code, msg);
    return folio_face_rpc_release(c, h, result, len, code, msg);
}

/*
 * folio_face_timed_out - c's request did not arrive within
 * request_timeout: what the face says before it closes (HTTP: 408).
 */
static inline void
folio_face_timed_out(struct folio_conn *c)
{
    if (c->flags & CONN_HTTP)
        folio_face_http_timed_out(c);
}

/*
 * folio_face_handoff_ok - whether c's unread bytes mean to a newer worker
 * what they mean here: not for a chunked request whose body was decoded
 * in place already (it is answered here first).
 */
static inline int
folio_face_handoff_ok(const struct folio_conn *c)
{
    return !(c->flags & CONN_HTTP) || c->wk == NULL ||
           !(c->wk->http.req.flags & FOLIO_HTTP_CHUNKED);
}

/* folio_face_refusal - as folio_face_rpc_refusal, for a listener's face. */
static inline size_t
folio_face_refusal(unsigned flags, const char *in, size_t n, const char *msg,
                   char *out, size_t cap)
{
    if (flags & CONN_HTTP)
        return folio_face_http_refusal(msg, out, cap);
    return folio_face_rpc_refusal(in, n, msg, out, cap);
}

#endif
