/*
 * face_http.h - the HTTP face of a connection (face_http.c): HTTP/1.1
 * requests read in place (src/http_parse.h) and answered with JSON, each
 * route by a call of the msgpack-RPC method that serves it, through the
 * same dispatch, handlers and counters: one handler serves both faces.
 * Keep-alive and pipelining as the msgpack-RPC face: requests answered
 * in order, each reply packed into the connection's output.  The routes
 * are folio-http(7)'s: mouthful's /status and /v1/comments, the freight
 * and corpus routes, JSON-RPC 2.0 at /rpc.
 *
 * The functions are face_rpc.h's, for an HTTP connection (CONN_HTTP),
 * called by conn.c through face.h; the face calls out.c (room for a
 * reply), dispatch.c (the calls) and h_comments.c (the page cache).
 */
#ifndef FOLIO_FACE_HTTP_H
#define FOLIO_FACE_HTTP_H

#include <stddef.h>
#include <stdint.h>

#include "worker/worker_int.h"

struct folio_hold;

/*
 * folio_face_http_setup - before the loop: the face's limits, its CORS
 * origins (http_cors_origins, checked when the configuration was read)
 * and its scratch buffers.  Returns 0 or FOLIO_ENOMEM.
 */
int folio_face_http_setup(struct folio_worker *w);

/* folio_face_http_fini - exit path: what setup made. */
void folio_face_http_fini(void);

void folio_face_http_frame_init(struct folio_conn *c);

/*
 * folio_face_http_frame - the request at p[0..avail) as far as it has
 * come (folio_http_req_parse: a chunked body is decoded in place).  Sends
 * "100 Continue" once when the client waits for it.  FOLIO_HTTP_DONE,
 * FOLIO_HTTP_MORE or FOLIO_HTTP_ERROR (folio_face_http_bad_stream).
 */
int folio_face_http_frame(struct folio_conn *c, char *p, size_t avail);

static inline size_t
folio_face_http_frame_len(const struct folio_conn *c)
{
    return (size_t)c->wk->http.req.total;
}

/* The length the request needs, once its head told (0 until then). */
static inline uint64_t
folio_face_http_frame_need(const struct folio_conn *c)
{
    const struct folio_http_req *r = &c->wk->http.req;

    if (!(r->flags & FOLIO_HTTP_HEAD_DONE) || (r->flags & FOLIO_HTTP_CHUNKED))
        return 0;
    return r->head_len + r->content_length;
}

/*
 * folio_face_http_frame_reset - on to the next request; unless the one
 * read waits to run again (a JSON-RPC batch past a held call, a request
 * waiting for room): its parse stays, the bytes decoded in place too.
 */
void folio_face_http_frame_reset(struct folio_conn *c);

/*
 * folio_face_http_message - one whole request, p[0..len): route it,
 * answer it (or hold it, or leave it to run again), as
 * folio_face_rpc_message.  FOLIO_CONN_HELD: a JSON-RPC request waits in
 * the input for a held call's release, to go on with its next call.
 */
enum folio_conn_state folio_face_http_message(struct folio_conn *c, char *p,
                                              size_t len, int share,
                                              uint64_t *ns);

/*
 * folio_face_http_bad_stream - the request could not be read (its status
 * in c->wk->http.req: 400, 411, 413, 414, 417, 431, 501, 505): answer that
 * status with a JSON body that says why, "Connection: close"; counted.
 */
void folio_face_http_bad_stream(struct folio_conn *c, int why, const char *p,
                                size_t avail);

/*
 * folio_face_http_release - write the answer of held call h: the whole
 * response of a REST route, or one JSON-RPC response of a request that
 * goes on.  Returns the call's final status code.
 */
int folio_face_http_release(struct folio_conn *c, const struct folio_hold *h,
                            const void *result, size_t len, int code,
                            const char *msg);

/* folio_face_http_timed_out - a 408, with "Connection: close". */
void folio_face_http_timed_out(struct folio_conn *c);

/*
 * folio_face_http_refusal - the 503 response that refuses a connection at
 * accept, saying `msg`, into out (cap bytes).  Returns its length (0 if
 * it does not fit).
 */
size_t folio_face_http_refusal(const char *msg, char *out, size_t cap);

#endif
