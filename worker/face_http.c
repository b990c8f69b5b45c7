/*
 * face_http.c - the HTTP face of a connection (face_http.h): requests
 * read in the connection's input (src/http_parse.c), routed, each route
 * answered by the msgpack-RPC method that serves it, called through
 * folio_dispatch with params packed here (JSON bodies transcoded by
 * src/json.c), its msgpack reply written back as JSON into the
 * connection's output (worker/http_reply.c).  No allocation once the
 * scratch buffers have grown to the largest request and reply.
 *
 * GET /v1/comments answers from the JSON of the page kept with the page's
 * encoded comments in the comments service's cache (folio_ccache_attach):
 * made once from the cached msgpack, and gone when it is.  That JSON is
 * shared bytes (src/bytes.h), sent by reference as an RPC reply of a
 * cached page is (worker/out.c), budgeted the same way before it is
 * queued (folio_out_room_ref): N slow readers of one page hold it once,
 * and a reply that does not fit under max_output_total waits its turn.
 *
 * A held call (the comments service's group commit, PostgreSQL) is
 * answered at its release: the whole response of a REST route (its
 * request consumed), or one response of a JSON-RPC request, which stays
 * in the input (its parse kept: a chunked body was decoded in place) and
 * goes on from its next call when its connection runs again.
 */
#include "config.h"

#include <stdio.h>
#include <string.h>

#include <msgpack.h>

#include "shm/comments.h"
#include "src/alloc.h"
#include "src/buf.h"
#include "src/bytes.h"
#include "src/clock.h"
#include "src/conf.h"
#include "src/err.h"
#include "src/http_cors.h"
#include "src/json.h"
#include "src/page.h"
#include "src/rpc.h"
#include "worker/comments_cache.h"
#include "worker/conn.h"
#include "worker/dispatch.h"
#include "worker/face_http.h"
#include "worker/h_comments.h"
#include "worker/http_comments.h"
#include "worker/http_jsonrpc.h"
#include "worker/http_reply.h"
#include "worker/out.h"

/* Append a string literal. */
#define PUTL(out, lit) folio_buf_append((out), (lit), sizeof(lit) - 1)

/* The routes (c->wk->http.route). */
enum route {
    R_NONE = 0,
    R_STATUS,
    R_COMMENTS_LIST,
    R_COMMENTS_POST,
    R_FREIGHT_QUOTE,
    R_FREIGHT_INFO,
    R_CORPUS_COUNT,
    R_CORPUS_SEARCH,
    R_CORPUS_INFO,
    R_RPC
};

/* A path, the methods it takes, the route of each. */
static const struct {
    const char *path;
    enum route get, post;
} routes[] = {
    {"/status", R_STATUS, R_NONE},
    {"/v1/comments", R_COMMENTS_LIST, R_COMMENTS_POST},
    {"/v1/freight/quote", R_FREIGHT_QUOTE, R_FREIGHT_QUOTE},
    {"/v1/freight/info", R_FREIGHT_INFO, R_NONE},
    {"/v1/corpus/count", R_CORPUS_COUNT, R_NONE},
    {"/v1/corpus/search", R_CORPUS_SEARCH, R_NONE},
    {"/v1/corpus/info", R_CORPUS_INFO, R_NONE},
    {"/rpc", R_NONE, R_RPC},
};

#define QUERY_ARG_MAX FOLIO_HTTP_MAX_URI

/* The face's state in this worker: limits, CORS, scratch. */
static struct {
    struct folio_http_limits lim;
    struct folio_http_cors cors;
    int cors_on;
    struct folio_buf body;         /* a request body as msgpack */
    struct folio_buf params;       /* a call's params (elements, no header) */
    struct folio_buf result;       /* a call's msgpack-RPC reply */
    struct folio_buf json;         /* a page's JSON, before the cache */
    char path[FOLIO_HTTP_MAX_URI]; /* the decoded path */
    char arg[QUERY_ARG_MAX];       /* a decoded query value */
    unsigned row_list, row_ping;   /* stats rows: comments.list, server.ping */
    int up;
} fh;

/* ---- set-up ---- */

int
folio_face_http_setup(struct folio_worker *w)
{
    const struct folio_config *cfg = w->cfg;
    size_t hard = (size_t)cfg->max_output_hard_bytes;

    memset(&fh, 0, sizeof(fh));
    fh.lim.max_uri = FOLIO_HTTP_MAX_URI;
    fh.lim.max_head = FOLIO_HTTP_MAX_HEAD;
    fh.lim.max_headers = FOLIO_HTTP_MAX_HEADERS;
    fh.lim.max_body = cfg->max_message_bytes;
    if (cfg->http_cors_origins != NULL) {
        if (folio_http_cors_init(&fh.cors, cfg->http_cors_origins) != 0)
            return FOLIO_ENOMEM; /* its syntax was checked at load */
        fh.cors_on = 1;
    }
    if (folio_buf_init(&fh.body, 4096, (size_t)cfg->max_message_bytes * 2) !=
            0 ||
        folio_buf_init(&fh.params, 4096, (size_t)cfg->max_message_bytes * 2) !=
            0 ||
        folio_buf_init(&fh.result, 16384, hard) != 0 ||
        folio_buf_init(&fh.json, 16384, hard) != 0) {
        folio_face_http_fini();
        return FOLIO_ENOMEM;
    }
    (void)folio_method_find("comments.list", 13, &fh.row_list);
    (void)folio_method_find("server.ping", 11, &fh.row_ping);
    fh.up = 1;
    return 0;
}

void
folio_face_http_fini(void)
{
    if (fh.cors_on)
        folio_http_cors_free(&fh.cors);
    folio_buf_free(&fh.body);
    folio_buf_free(&fh.params);
    folio_buf_free(&fh.result);
    folio_buf_free(&fh.json);
    memset(&fh, 0, sizeof(fh));
}

/* ---- framing ---- */

void
folio_face_http_frame_init(struct folio_conn *c)
{
    memset(&c->wk->http, 0, sizeof(c->wk->http));
    folio_http_req_init(&c->wk->http.req, &fh.lim);
}

int
folio_face_http_frame(struct folio_conn *c, char *p, size_t avail)
{
    struct folio_http_req *r = &c->wk->http.req;
    int rc = folio_http_req_parse(r, p, avail);

    /* The client waits for a word before it sends its body (curl does
     * past 1 KiB): say go on, once, unless the body is all here. */
    if (rc == FOLIO_HTTP_MORE && (r->flags & FOLIO_HTTP_CONTINUE) &&
        !c->wk->http.continued) {
        c->wk->http.continued = 1;
        (void)PUTL(&c->out, "HTTP/1.1 100 Continue\r\n\r\n");
    }
    return rc;
}

void
folio_face_http_frame_reset(struct folio_conn *c)
{
    if (c->wk->http.resume)
        return;
    folio_http_req_init(&c->wk->http.req, &fh.lim);
    c->wk->http.continued = 0;
}

/* ---- answers ---- */

/* Unix seconds now, for the Date header. */
static time_t
now_s(void)
{
    return (time_t)(folio_unix_ms() / 1000);
}

/* Begin c's answer with `status`: the status line, Date, CORS. */
static int
begin(struct folio_conn *c, struct folio_http_reply *rep, int status)
{
    int rc;

    if ((rc = folio_http_reply_begin(&c->out, rep, status, c->wk->http.rflags,
                                     now_s())) != 0)
        return rc;
    if (fh.cors_on && c->wk->http.origin_len > 0 &&
        (rc = folio_http_cors_put(&c->out, &fh.cors, c->wk->http.origin,
                                  c->wk->http.origin_len, 0, NULL, 0)) != 0)
        folio_http_reply_cancel(&c->out, rep);
    folio_stat_add(&c->w->slot->ws_http_requests, 1);
    if (status >= 400)
        folio_stat_add(&c->w->slot->ws_http_errors, 1);
    return rc;
}

/* A whole answer: `status`, a JSON body of len bytes. */
static void
answer(struct folio_conn *c, int status, const char *body, size_t len)
{
    struct folio_http_reply rep;

    if (begin(c, &rep, status) != 0)
        return;
    if (folio_http_reply_body(&c->out, &rep, FOLIO_HTTP_JSON, len) != 0 ||
        folio_buf_append(&c->out, body, len) != 0) {
        folio_http_reply_cancel(&c->out, &rep);
        return;
    }
    folio_http_reply_end(&c->out, &rep);
}

/*
 * An error answer: {"message": msg, "status": status, "code": code} (code
 * only for one of ours), or, for mouthful's routes, the message as a JSON
 * string, as mouthful answers.
 */
static void
answer_error_h(struct folio_conn *c, int status, int code, const char *msg,
               size_t len, const char *header)
{
    struct folio_http_reply rep;
    char num[64];
    int n, rc;

    if (begin(c, &rep, status) != 0)
        return;
    if ((header != NULL &&
         (rc = folio_buf_append(&c->out, header, strlen(header))) != 0) ||
        (rc = folio_http_reply_body(&c->out, &rep, FOLIO_HTTP_JSON,
                                    FOLIO_HTTP_LEN_UNKNOWN)) != 0)
        goto fail;
    if (c->wk->http.route == R_COMMENTS_LIST ||
        c->wk->http.route == R_COMMENTS_POST) {
        rc = folio_json_put_str(&c->out, msg, len, 0);
    } else {
        n = code != 0 ? snprintf(num, sizeof(num),
                                 ",\"status\":%d,\"code\":%d}", status, code)
                      : snprintf(num, sizeof(num), ",\"status\":%d}", status);
        if ((rc = PUTL(&c->out, "{\"message\":")) == 0 &&
            (rc = folio_json_put_str(&c->out, msg, len, 0)) == 0)
            rc = folio_buf_append(&c->out, num, (size_t)n);
    }
    if (rc == 0 && folio_http_reply_end(&c->out, &rep) == 0)
        return;
fail:
    folio_http_reply_cancel(&c->out, &rep);
}

static void
answer_error(struct folio_conn *c, int status, int code, const char *msg,
             size_t len)
{
    answer_error_h(c, status, code, msg, len, NULL);
}

static void
answer_errorf(struct folio_conn *c, int status, const char *msg)
{
    answer_error(c, status, 0, msg, strlen(msg));
}

/* The HTTP status of one of our codes (grpc-gateway's mapping). */
static int
http_status(int code)
{
    switch (code) {
    case FOLIO_ST_OK:
        return 200;
    case FOLIO_ST_INVALID_ARGUMENT:
    case FOLIO_ST_OUT_OF_RANGE:
        return 400;
    case FOLIO_ST_NOT_FOUND:
        return 404;
    case FOLIO_ST_PERMISSION_DENIED:
        return 403;
    case FOLIO_ST_RESOURCE_EXHAUSTED:
        return 429;
    case FOLIO_ST_FAILED_PRECONDITION:
        return 422; /* an Idempotency-Key reused: Stripe's, the IETF draft's */
    case FOLIO_ST_UNIMPLEMENTED:
        return 501;
    case FOLIO_ST_UNAVAILABLE:
        return 503;
    default:
        return 500;
    }
}

/* The state c goes in after an answer: on, or closing (Connection: close). */
static enum folio_conn_state
answered(const struct folio_conn *c)
{
    return (c->wk->http.rflags & FOLIO_HTTP_R_CLOSE) ? FOLIO_CONN_CLOSING
                                                     : FOLIO_CONN_READY;
}

/* ---- calls ---- */

/*
 * Room for a reply of `size` bytes before it is produced, as face_rpc.c
 * makes it: a large one in a share of its own (`share`: it has one); by
 * reference (byref: shared bytes, a page), budget under max_output_total
 * (folio_out_room_ref; 0: the page counts already), given back by
 * folio_out_settle once the request is answered; else room in the
 * output.  READY, or the state the request waits in (nothing done).
 */
static enum folio_conn_state
reply_room(struct folio_conn *c, size_t size, int byref, int share)
{
    if (size > FOLIO_CONN_BUF && !share)
        return FOLIO_CONN_YIELDED;
    return byref ? folio_out_room_ref(c, size) : folio_out_room(c, size);
}

/*
 * Call `method` with the n params in fh.params.  Returns FOLIO_CONN_READY
 * with *reply its answer parsed (or *held set: the handler held it), or
 * the state the request waits in before it is run (nothing done): room
 * for its reply, or a share of its own for a large one (`share`: it has
 * one).
 */
static enum folio_conn_state
call(struct folio_conn *c, const char *method, uint32_t n, int notify,
     int share, uint64_t *ns, struct folio_rpc_msg *reply, int *held)
{
    struct folio_worker *w = c->w;
    struct folio_rpc_msg m;
    /* What sizing learned; dropped if the call waits. */
    struct folio_sized sz = {NULL, FOLIO_SIZED_NONE, NULL};
    enum folio_conn_state st;
    const char *why;
    size_t size;
    int byref;

    *held = 0;
    memset(&m, 0, sizeof(m));
    m.type = notify ? FOLIO_RPC_NOTIFY : FOLIO_RPC_REQUEST;
    m.has_msgid = !notify;
    m.method = method;
    m.method_len = (uint32_t)strlen(method);
    folio_mp_cur_init(&m.params, fh.params.b_data, fh.params.b_len);
    m.nparams = n;
    if (share >= 0 &&
        (size = folio_dispatch_reply_size(w, &m, 0, &sz)) >
            FOLIO_REPLY_SMALL) {
        /*
         * Heavy: in a share of its own, with room for its JSON (half as
         * large again); for a page that will be cached, the JSON goes by
         * reference (answer_comments): budget, not room.
         */
        byref = (size & FOLIO_REPLY_BYREF) != 0;
        size &= ~FOLIO_REPLY_BYREF;
        if ((st = reply_room(c, size + size / 2, byref, share)) !=
            FOLIO_CONN_READY)
            return st;
    }
    folio_buf_reset(&fh.result);
    *ns += folio_dispatch(w, c, &m, 0, &sz, &fh.result);
    if (c->state == FOLIO_CONN_HELD) {
        *held = 1;
        return FOLIO_CONN_READY;
    }
    memset(reply, 0, sizeof(*reply));
    if (!notify &&
        folio_rpc_parse(fh.result.b_data, fh.result.b_len, reply, &why) != 0) {
        /* Not from our dispatch: never. */
        folio_mp_cur_init(&reply->error, "\xc0", 1);
        folio_mp_cur_init(&reply->result, "\xc0", 1);
    }
    return FOLIO_CONN_READY;
}

/* The error of a reply: 0 (none), or its code and message. */
static int
reply_error(const struct folio_rpc_msg *reply, const char **msg, uint32_t *len)
{
    struct folio_mp_cur e = reply->error;
    uint32_t n;
    int64_t code;

    *msg = "";
    *len = 0;
    if (folio_mp_read_nil(&e) == 0)
        return 0;
    if (folio_mp_read_array(&e, &n) != 0 || n != 2 ||
        folio_mp_read_int(&e, &code) != 0 ||
        folio_mp_read_str(&e, msg, len) != 0)
        return FOLIO_ST_INTERNAL;
    return (int)code;
}

/* Pack one str param into fh.params. */
static int
param_str(const char *s, size_t len)
{
    msgpack_packer pk;

    msgpack_packer_init(&pk, &fh.params, folio_buf_pack_write);
    fh.params.b_failed = 0;
    return folio_pack_str(&pk, s, len);
}

/* ---- REST answers from a reply ---- */

/* A reply's result written as the JSON body of a 200 (or its error). */
static void
answer_result(struct folio_conn *c, struct folio_rpc_msg *reply,
              const char *wrap)
{
    struct folio_http_reply rep;
    const char *msg;
    uint32_t mlen;
    int code, rc;

    if ((code = reply_error(reply, &msg, &mlen)) != 0) {
        answer_error(c, http_status(code), code, msg, mlen);
        return;
    }
    if (begin(c, &rep, 200) != 0)
        return;
    rc = folio_http_reply_body(&c->out, &rep, FOLIO_HTTP_JSON,
                               FOLIO_HTTP_LEN_UNKNOWN);
    /* wrap: the result as the one member of an object ({"count": N}). */
    if (rc == 0 && wrap != NULL)
        rc = folio_buf_append(&c->out, wrap, strlen(wrap));
    if (rc == 0)
        rc = folio_json_put_mp(&c->out, &reply->result, -1, 0);
    if (rc == 0 && wrap != NULL)
        rc = PUTL(&c->out, "}");
    if (rc == 0 && folio_http_reply_end(&c->out, &rep) == 0)
        return;
    folio_http_reply_cancel(&c->out, &rep);
    answer_errorf(c, 500, "the reply could not be written");
}

/* Mouthful's "Thread not found" (no uri, or no comment). */
static void
thread_not_found(struct folio_conn *c, int status)
{
    answer_error(c, status, 0, "Thread not found", 16);
}

/* Whether JSON page b goes by reference: large, and a body is sent. */
static int
page_byref(const struct folio_conn *c, const struct folio_bytes *b)
{
    return b->fb_len >= FOLIO_REF_MIN &&
           !(c->wk->http.rflags & FOLIO_HTTP_R_NOBODY);
}

/*
 * A 200 with the JSON body p[0..len): by reference when it is page b
 * (shared bytes, NULL: none) and large, its budget made (reply_room),
 * else copied.
 */
static void
answer_json(struct folio_conn *c, struct folio_bytes *b, const char *p,
            size_t len)
{
    struct folio_http_reply rep;
    int rc;

    if (begin(c, &rep, 200) != 0)
        return;
    if ((rc = folio_http_reply_body(&c->out, &rep, FOLIO_HTTP_JSON, len)) ==
            0 &&
        !(c->wk->http.rflags & FOLIO_HTTP_R_NOBODY)) {
        /* No free reference: copied, as face_rpc.c's pages are then. */
        rc = b != NULL && page_byref(c, b) ? folio_out_ref_add(c, b)
                                           : FOLIO_EAGAIN;
        if (rc == FOLIO_EAGAIN)
            rc = folio_buf_append(&c->out, p, len);
    }
    if (rc == 0)
        return; /* the length was given: nothing to fill in */
    folio_http_reply_cancel(&c->out, &rep);
    answer_errorf(c, 500,
                  "the page is over the connection's output limit "
                  "(max_output_hard_bytes)");
}

/*
 * The comments of a page as mouthful's JSON, a 200, or 404 for a page
 * without comments.  When it is the cached page (np given), the JSON is
 * kept with it and sent from there by reference (its budget made by the
 * caller: reply_room); else it is written straight into the output.
 */
static void
answer_comments(struct folio_conn *c, const void *mp, size_t len,
                const char *np, size_t nlen)
{
    struct folio_ccache *cache = NULL;
    struct folio_http_reply rep;
    struct folio_bytes *b;
    uint32_t count = 0;
    int rc;

    if (np != NULL)
        cache = folio_h_comments_cache();
    if (cache != NULL) {
        folio_buf_reset(&fh.json);
        if (folio_http_comments_json(&fh.json, mp, len, &count) != 0) {
            answer_error(c, 500, 0, "Internal server error", 21);
        } else if (count == 0) {
            thread_not_found(c, 404);
            (void)folio_ccache_attach(cache, np, nlen, mp, len, "[]", 2);
        } else {
            b = folio_ccache_attach(cache, np, nlen, mp, len, fh.json.b_data,
                                    fh.json.b_len) == 0
                    ? folio_ccache_get_extra(cache, np, nlen)
                    : NULL;
            answer_json(c, b, fh.json.b_data, fh.json.b_len);
        }
        return;
    }
    if (begin(c, &rep, 200) != 0)
        return;
    if ((rc = folio_http_reply_body(&c->out, &rep, FOLIO_HTTP_JSON,
                                    FOLIO_HTTP_LEN_UNKNOWN)) == 0)
        rc = folio_http_comments_json(&c->out, mp, len, &count);
    if (rc != 0 || count == 0) {
        folio_http_reply_cancel(&c->out, &rep);
        if (rc != 0)
            answer_error(c, 500, 0, "Internal server error", 21);
        else
            thread_not_found(c, 404);
        return;
    }
    folio_http_reply_end(&c->out, &rep);
}

/* mouthful's CreateCommentResponse of the stored comment mp[0..len). */
static void
answer_created(struct folio_conn *c, const void *mp, size_t len)
{
    struct folio_comment_view v;
    struct folio_http_reply rep;
    struct folio_mp_cur cur;

    folio_mp_cur_init(&cur, mp, len);
    if (folio_http_comment_read(&cur, &v) != 0) {
        answer_error(c, 500, 0, "Internal server error", 21);
        return;
    }
    if (begin(c, &rep, 200) != 0)
        return;
    if (folio_http_reply_body(&c->out, &rep, FOLIO_HTTP_JSON,
                              FOLIO_HTTP_LEN_UNKNOWN) != 0 ||
        folio_http_comment_created_json(&c->out, &v, 0, NULL, 0) != 0) {
        folio_http_reply_cancel(&c->out, &rep);
        return;
    }
    folio_http_reply_end(&c->out, &rep);
}

/* ---- routes ---- */

/* The decoded value of query parameter `name` in fh.arg: 1, 0, -1 (bad). */
static int
query(const struct folio_conn *c, const char *p, const char *name, size_t *len)
{
    struct folio_http_span q = c->wk->http.req.query;

    return folio_http_query_get(p + q.off, q.len, name, fh.arg, sizeof(fh.arg),
                                len);
}

static enum folio_conn_state
route_comments_list(struct folio_conn *c, const char *p, int share,
                    uint64_t *ns)
{
    char np[FOLIO_COMMENTS_NPATH_MAX], err[256];
    struct folio_ccache *cache;
    struct folio_rpc_msg reply;
    struct folio_bytes *hit, *mp;
    enum folio_conn_state st;
    const char *msg;
    size_t len, nlen, size;
    uint32_t mlen;
    int held, code;

    if (query(c, p, "uri", &len) != 1 || len == 0) {
        thread_not_found(c, 400); /* as mouthful */
        return answered(c);
    }
    if (folio_comments_path_check(fh.arg, len, err, sizeof(err)) != 0) {
        answer_error(c, 400, FOLIO_ST_INVALID_ARGUMENT, err, strlen(err));
        return answered(c);
    }
    /*
     * The JSON made from the cached page: one lookup, sent from the cache
     * by reference (its budget first, as an RPC reply of the page).
     */
    nlen = folio_comments_normalize(fh.arg, len, np);
    if ((cache = folio_h_comments_cache()) != NULL &&
        (hit = folio_ccache_get_extra(cache, np, nlen)) != NULL) {
        if (hit->fb_len == 2) {
            thread_not_found(c, 404);
        } else {
            /* By reference, it counts once for all its senders. */
            if (page_byref(c, hit))
                size = hit->fb_outrefs > 0 ? 0 : hit->fb_len;
            else if (c->wk->http.rflags & FOLIO_HTTP_R_NOBODY)
                size = FOLIO_REPLY_SMALL;
            else
                size = hit->fb_len + FOLIO_REPLY_SMALL;
            if ((st = reply_room(c, size, page_byref(c, hit), share)) !=
                FOLIO_CONN_READY)
                return st;
            answer_json(c, hit, hit->fb_data, hit->fb_len);
        }
        folio_stat_add(&c->w->slot->ws_comments_cache_hits, 1);
        folio_dispatch_record(c->w, fh.row_list, 0, 0, c->read_ns, c->peer);
        return answered(c);
    }
    if (cache != NULL && (mp = folio_ccache_get(cache, np, nlen)) != NULL) {
        /*
         * The page is cached, its JSON not yet (an RPC client listed it):
         * made from it here, then kept with it and sent from there.  Not
         * through the call, whose room would be the page's budget, none
         * when other outputs send it already.
         */
        size = mp->fb_len + mp->fb_len / 2;
        if ((st = reply_room(c, size, size >= FOLIO_REF_MIN, share)) !=
            FOLIO_CONN_READY)
            return st;
        folio_bytes_ref(mp); /* the attach may evict other pages */
        answer_comments(c, mp->fb_data, mp->fb_len, np, nlen);
        folio_bytes_unref(mp);
        folio_stat_add(&c->w->slot->ws_comments_cache_hits, 1);
        folio_dispatch_record(c->w, fh.row_list, 0, 0, c->read_ns, c->peer);
        return answered(c);
    }
    folio_buf_reset(&fh.params);
    if (param_str(fh.arg, len) != 0)
        return FOLIO_CONN_CLOSING;
    st = call(c, "comments.list", 1, 0, share, ns, &reply, &held);
    if (st != FOLIO_CONN_READY || held)
        return st;
    if ((code = reply_error(&reply, &msg, &mlen)) != 0) {
        answer_error(c, http_status(code), code, msg, mlen);
        return answered(c);
    }
    answer_comments(c, reply.result.p,
                    (size_t)(reply.result.end - reply.result.p), np, nlen);
    return answered(c);
}

static enum folio_conn_state
route_comments_post(struct folio_conn *c, char *p, int share, uint64_t *ns)
{
    const struct folio_http_req *r = &c->wk->http.req;
    struct folio_http_comment_post post;
    struct folio_comment_view v;
    struct folio_rpc_msg reply;
    struct folio_http_reply rep;
    struct folio_json_err e;
    enum folio_conn_state st;
    char err[256], np[FOLIO_COMMENTS_NPATH_MAX];
    const char *msg;
    uint32_t mlen;
    int held, code;

    folio_buf_reset(&fh.body);
    if (folio_json_to_mp(p + r->body.off, r->body.len, c->w->cfg->max_depth,
                         &fh.body, &e) != 0) {
        answer_error(c, 400, 0, e.msg, strlen(e.msg));
        return answered(c);
    }
    if (folio_http_comment_post_read(fh.body.b_data, fh.body.b_len, &post, err,
                                     sizeof(err)) != 0) {
        answer_error(c, 400, 0, err, strlen(err));
        return answered(c);
    }
    if (post.has_email) {
        /*
         * mouthful's honeypot: a bot filled the hidden field.  Answered
         * as if stored, stored nothing: id 0, which no comment has.
         */
        memset(&v, 0, sizeof(v));
        v.path = np;
        v.path_len = post.path_len <= FOLIO_COMMENTS_PATH_MAX
                         ? (uint32_t)folio_comments_normalize(post.path,
                                                              post.path_len, np)
                         : 0;
        v.author = post.author;
        v.author_len = post.author_len;
        v.body = post.body;
        v.body_len = post.body_len;
        v.has_reply_to = post.has_reply_to;
        v.reply_to = post.reply_to;
        if (begin(c, &rep, 200) != 0)
            return answered(c);
        if (folio_http_reply_body(&c->out, &rep, FOLIO_HTTP_JSON,
                                  FOLIO_HTTP_LEN_UNKNOWN) != 0 ||
            folio_http_comment_created_json(&c->out, &v, 1, post.email,
                                            post.email_len) != 0)
            folio_http_reply_cancel(&c->out, &rep);
        else
            folio_http_reply_end(&c->out, &rep);
        return answered(c);
    }
    folio_buf_reset(&fh.params);
    if (folio_http_comment_post_params(&fh.params, &post,
                                       p + r->idempotency_key.off,
                                       r->idempotency_key.len) != 0)
        return FOLIO_CONN_CLOSING;
    st = call(c, "comments.post", 1, 0, share, ns, &reply, &held);
    if (st != FOLIO_CONN_READY || held)
        return st;
    if ((code = reply_error(&reply, &msg, &mlen)) != 0) {
        answer_error(c, http_status(code), code, msg, mlen);
        return answered(c);
    }
    answer_created(c, reply.result.p,
                   (size_t)(reply.result.end - reply.result.p));
    return answered(c);
}

/* A method's params by name, from the JSON object of the body. */
static int
params_by_name(struct folio_conn *c, const char *method, uint32_t *n)
{
    struct folio_jsonrpc_call jc;
    const struct folio_method *m;
    char err[256];
    unsigned row;
    int rc;

    m = folio_method_find(method, (uint32_t)strlen(method), &row);
    memset(&jc, 0, sizeof(jc));
    folio_mp_cur_init(&jc.params, fh.body.b_data, fh.body.b_len);
    if (folio_mp_type(&jc.params) != FOLIO_MP_MAP) {
        answer_errorf(c, 400, "the body must be a JSON object");
        return -1;
    }
    jc.by_name = 1;
    folio_buf_reset(&fh.params);
    if ((rc = folio_jsonrpc_by_name(m->signature, &jc, &fh.params, n, err,
                                    sizeof(err))) != 0) {
        if (rc == FOLIO_JSONRPC_INVALID_PARAMS)
            answer_error(c, 400, FOLIO_ST_INVALID_ARGUMENT, err, strlen(err));
        else
            answer_errorf(c, 500, "params could not be packed");
        return -1;
    }
    return 0;
}

/* GET ?cep=...&sku=SKU:QTY... : freight.quote's params. */
static int
quote_params(struct folio_conn *c, const char *p)
{
    struct folio_http_span q = c->wk->http.req.query;
    struct folio_http_query it = {p + q.off, p + q.off + q.len};
    const char *k, *v, *colon;
    size_t kl, vl, len;
    uint32_t items = 0;
    uint64_t qty;
    long d;
    msgpack_packer pk;

    if (query(c, p, "cep", &len) != 1 || len == 0) {
        answer_errorf(c, 400, "cep= is missing");
        return -1;
    }
    folio_buf_reset(&fh.params);
    if (param_str(fh.arg, len) != 0)
        return -1;
    while (folio_http_query_next(&it, &k, &kl, &v, &vl))
        items += kl == 3 && memcmp(k, "sku", 3) == 0;
    msgpack_packer_init(&pk, &fh.params, folio_buf_pack_write);
    msgpack_pack_array(&pk, items);
    it.p = p + q.off;
    while (folio_http_query_next(&it, &k, &kl, &v, &vl)) {
        if (kl != 3 || memcmp(k, "sku", 3) != 0)
            continue;
        if (vl > sizeof(fh.arg) ||
            (d = folio_http_unescape(v, vl, fh.arg, 1)) <= 0) {
            answer_errorf(c, 400, "sku= must be SKU or SKU:QTY");
            return -1;
        }
        qty = 1;
        len = (size_t)d;
        if ((colon = memchr(fh.arg, ':', len)) != NULL) {
            const char *n = colon + 1, *end = fh.arg + len;

            for (qty = 0; n < end && *n >= '0' && *n <= '9' && qty < 100000;
                 n++)
                qty = qty * 10 + (uint64_t)(*n - '0');
            if (n != end || n == colon + 1) {
                answer_errorf(c, 400, "sku= must be SKU or SKU:QTY");
                return -1;
            }
            len = (size_t)(colon - fh.arg);
        }
        msgpack_pack_map(&pk, 2);
        folio_pack_cstr(&pk, "sku");
        folio_pack_str(&pk, fh.arg, len);
        folio_pack_cstr(&pk, "qty");
        msgpack_pack_uint64(&pk, qty);
    }
    return fh.params.b_failed != 0 ? -1 : 0;
}

static enum folio_conn_state
route_freight_quote(struct folio_conn *c, char *p, int share, uint64_t *ns)
{
    const struct folio_http_req *r = &c->wk->http.req;
    struct folio_rpc_msg reply;
    struct folio_json_err e;
    enum folio_conn_state st;
    uint32_t n = 2;
    int held;

    if (r->method == FOLIO_HTTP_POST) {
        folio_buf_reset(&fh.body);
        if (folio_json_to_mp(p + r->body.off, r->body.len, c->w->cfg->max_depth,
                             &fh.body, &e) != 0) {
            answer_error(c, 400, 0, e.msg, strlen(e.msg));
            return answered(c);
        }
        if (params_by_name(c, "freight.quote", &n) != 0)
            return answered(c);
    } else if (quote_params(c, p) != 0) {
        return answered(c);
    }
    st = call(c, "freight.quote", n, 0, share, ns, &reply, &held);
    if (st != FOLIO_CONN_READY || held)
        return st;
    answer_result(c, &reply, NULL);
    return answered(c);
}

/* A method without params (the info routes). */
static enum folio_conn_state
route_info(struct folio_conn *c, const char *method, int share, uint64_t *ns)
{
    struct folio_rpc_msg reply;
    enum folio_conn_state st;
    int held;

    folio_buf_reset(&fh.params);
    st = call(c, method, 0, 0, share, ns, &reply, &held);
    if (st != FOLIO_CONN_READY || held)
        return st;
    answer_result(c, &reply, NULL);
    return answered(c);
}

/* A non-negative decimal query parameter into the map being packed. */
static int
pack_uint_arg(struct folio_conn *c, const char *p, msgpack_packer *pk,
              const char *name)
{
    size_t len, i;
    uint64_t v = 0;

    if (query(c, p, name, &len) != 1)
        return 0;
    for (i = 0; i < len && fh.arg[i] >= '0' && fh.arg[i] <= '9' && i < 12; i++)
        v = v * 10 + (uint64_t)(fh.arg[i] - '0');
    if (len == 0 || i != len) {
        answer_errorf(c, 400, "limit= and offset= must be numbers");
        return -1;
    }
    folio_pack_cstr(pk, name);
    msgpack_pack_uint64(pk, v);
    return 1;
}

static enum folio_conn_state
route_corpus(struct folio_conn *c, const char *p, int search, int share,
             uint64_t *ns)
{
    struct folio_rpc_msg reply;
    enum folio_conn_state st;
    msgpack_packer pk;
    size_t len, map;
    int held, a, b;

    if (query(c, p, "q", &len) != 1) {
        answer_errorf(c, 400, "q= is missing");
        return answered(c);
    }
    folio_buf_reset(&fh.params);
    if (param_str(fh.arg, len) != 0)
        return FOLIO_CONN_CLOSING;
    if (search) {
        /* opts: {limit, offset} as given; the header counts them after. */
        msgpack_packer_init(&pk, &fh.params, folio_buf_pack_write);
        map = folio_buf_mark(&fh.params);
        (void)PUTL(&fh.params, "\x80");
        if ((a = pack_uint_arg(c, p, &pk, "limit")) < 0 ||
            (b = pack_uint_arg(c, p, &pk, "offset")) < 0)
            return answered(c);
        *folio_buf_at(&fh.params, map) = (char)(0x80 | (a + b));
    }
    st = call(c, search ? "corpus.search" : "corpus.match_count",
              search ? 2 : 1, 0, share, ns, &reply, &held);
    if (st != FOLIO_CONN_READY || held)
        return st;
    answer_result(c, &reply, search ? NULL : "{\"count\":");
    return answered(c);
}

/* ---- JSON-RPC 2.0 ---- */

/* Keep call jc's id (its JSON text) for its release. */
static int
keep_id(struct folio_conn *c, const struct folio_jsonrpc_call *jc)
{
    struct folio_buf b;
    struct folio_mp_cur id = jc->id;

    c->wk->http.id_len = 0;
    if (!jc->has_id)
        return 0;
    b.b_data = c->wk->http.id;
    b.b_off = b.b_len = 0;
    b.b_cap = b.b_base = b.b_max = sizeof(c->wk->http.id);
    b.b_failed = 0;
    if (folio_json_put_mp(&b, &id, -1, 0) != 0)
        return -1;
    c->wk->http.id_len = (uint8_t)b.b_len;
    return 0;
}

/* A response object of a request kept over a hold: its id kept as text. */
static int
put_kept_response(struct folio_conn *c, const void *result, size_t len,
                  int code, const char *msg)
{
    struct folio_buf *out = &c->out;
    struct folio_mp_cur res;
    size_t mark = folio_buf_mark(out);
    char num[64];
    int n, rc;

    if (code == 0) {
        folio_mp_cur_init(&res, result, len);
        rc = PUTL(out, "{\"jsonrpc\":\"2.0\",\"result\":");
        if (rc == 0)
            rc = folio_json_put_mp(out, &res, -1, 0);
    } else {
        n = snprintf(num, sizeof(num),
                     "{\"jsonrpc\":\"2.0\",\"error\":{\"code\":%d,",
                     folio_jsonrpc_code(code));
        rc = folio_buf_append(out, num, (size_t)n);
        if (rc == 0)
            rc = PUTL(out, "\"message\":");
        if (rc == 0)
            rc = folio_json_put_str(out, msg, strlen(msg), 0);
        n = snprintf(num, sizeof(num),
                     ",\"data\":{\"code\":%d,\"status\":\"%s\"}}", code,
                     folio_status_name(code));
        if (rc == 0)
            rc = folio_buf_append(out, num, (size_t)n);
    }
    if (rc == 0)
        rc = PUTL(out, ",\"id\":");
    if (rc == 0)
        rc = folio_buf_append(out, c->wk->http.id, c->wk->http.id_len);
    if (rc == 0)
        rc = PUTL(out, "}");
    if (rc != 0)
        folio_buf_truncate(out, mark);
    return rc;
}

/* The separator before the next response of a batch. */
static void
next_response(struct folio_conn *c, int batch)
{
    if (batch && c->wk->http.answered > 0)
        (void)PUTL(&c->out, ",");
    c->wk->http.answered++;
}

/*
 * Run JSON-RPC request jc (one of the body's): its response (if it has an
 * id) written.  Returns 1 when the call was held (answered at its
 * release), else 0.
 */
static int
rpc_run(struct folio_conn *c, struct folio_jsonrpc_call *jc, int batch,
        uint64_t *ns)
{
    const struct folio_method *m;
    struct folio_rpc_msg reply;
    char name[72], err[256];
    const char *msg;
    uint32_t n = jc->nparams, mlen;
    unsigned row;
    int held, code;

    if (jc->has_id && keep_id(c, jc) != 0) {
        next_response(c, batch);
        (void)folio_jsonrpc_put_error(
            &c->out, NULL, FOLIO_JSONRPC_INVALID_REQUEST, "id too long", 11, 0);
        return 0;
    }
    snprintf(name, sizeof(name), "%.*s",
             jc->method_len < 64 ? (int)jc->method_len : 64, jc->method);
    folio_buf_reset(&fh.params);
    if (jc->by_name) {
        m = folio_method_find(jc->method, jc->method_len, &row);
        if (m != NULL && folio_jsonrpc_by_name(m->signature, jc, &fh.params, &n,
                                               err, sizeof(err)) != 0) {
            if (jc->has_id) {
                next_response(c, batch);
                (void)folio_jsonrpc_put_error(
                    &c->out, &jc->id, FOLIO_JSONRPC_INVALID_PARAMS, err,
                    strlen(err), FOLIO_ST_INVALID_ARGUMENT);
            }
            return 0;
        }
    } else {
        /* The array's elements as they lie: one copy into params. */
        struct folio_mp_cur e = jc->params;
        const unsigned char *from = e.p;
        uint32_t i;

        for (i = 0; i < n; i++)
            (void)folio_mp_skip(&e);
        (void)folio_buf_append(&fh.params, from, (size_t)(e.p - from));
    }
    /* A long method name: unknown anyway; dispatch says so, cut. */
    if (jc->method_len >= 64)
        snprintf(name, sizeof(name), "%.60s...", jc->method);
    (void)call(c, name, n, !jc->has_id, -1, ns, &reply, &held);
    if (held)
        return 1;
    if (!jc->has_id)
        return 0;
    next_response(c, batch);
    if ((code = reply_error(&reply, &msg, &mlen)) != 0)
        (void)folio_jsonrpc_put_error(
            &c->out, &jc->id, folio_jsonrpc_code(code), msg, mlen, code);
    else if (folio_jsonrpc_put_result(&c->out, &jc->id, &reply.result) != 0)
        (void)folio_jsonrpc_put_error(
            &c->out, &jc->id, FOLIO_JSONRPC_INTERNAL_ERROR,
            "the result could not be written", 31, FOLIO_ST_INTERNAL);
    return 0;
}

/*
 * POST /rpc: the body's request, or batch of requests, from call
 * c->wk->http.next on (0 at first; past a held one when it runs again).
 */
static enum folio_conn_state
route_rpc(struct folio_conn *c, char *p, uint64_t *ns)
{
    const struct folio_http_req *r = &c->wk->http.req;
    struct folio_http_reply *rep = &c->wk->http.reply;
    struct folio_jsonrpc_call jc;
    struct folio_json_err e;
    struct folio_mp_cur cur;
    const char *why;
    uint32_t n = 1, i;
    int batch;

    folio_buf_reset(&fh.body);
    if (folio_json_to_mp(p + r->body.off, r->body.len, c->w->cfg->max_depth,
                         &fh.body, &e) != 0) {
        if (begin(c, rep, 200) == 0 &&
            folio_http_reply_body(&c->out, rep, FOLIO_HTTP_JSON,
                                  FOLIO_HTTP_LEN_UNKNOWN) == 0 &&
            folio_jsonrpc_put_error(&c->out, NULL, FOLIO_JSONRPC_PARSE_ERROR,
                                    e.msg, strlen(e.msg), 0) == 0)
            folio_http_reply_end(&c->out, rep);
        return answered(c);
    }
    folio_mp_cur_init(&cur, fh.body.b_data, fh.body.b_len);
    batch = folio_mp_read_array(&cur, &n) == 0;
    c->wk->http.batch = (uint8_t)batch;
    if (c->wk->http.next == 0) {
        c->wk->http.answered = 0;
        if (begin(c, rep, 200) != 0 ||
            folio_http_reply_body(&c->out, rep, FOLIO_HTTP_JSON,
                                  FOLIO_HTTP_LEN_UNKNOWN) != 0)
            return FOLIO_CONN_CLOSING;
        if (batch && n == 0) {
            (void)folio_jsonrpc_put_error(&c->out, NULL,
                                          FOLIO_JSONRPC_INVALID_REQUEST,
                                          "an empty batch", 14, 0);
            folio_http_reply_end(&c->out, rep);
            return answered(c);
        }
        if (batch)
            (void)PUTL(&c->out, "[");
    }
    for (i = 0; i < n; i++) {
        if (i < c->wk->http.next) { /* answered before a hold */
            (void)folio_mp_skip(&cur);
            continue;
        }
        if (folio_jsonrpc_read(&cur, &jc, &why) != 0) {
            next_response(c, batch);
            (void)folio_jsonrpc_put_error(&c->out, jc.has_id ? &jc.id : NULL,
                                          FOLIO_JSONRPC_INVALID_REQUEST, why,
                                          strlen(why), 0);
            continue;
        }
        if (rpc_run(c, &jc, batch, ns)) {
            /* Held: answered at its release; the rest after it. */
            c->wk->http.next = i + 1;
            c->wk->http.resume = 1;
            return FOLIO_CONN_HELD;
        }
    }
    c->wk->http.next = 0;
    if (c->wk->http.answered == 0) {
        /* Notifications only: nothing to say (JSON-RPC 2.0, 6). */
        folio_http_reply_cancel(&c->out, rep);
        if (begin(c, rep, 204) == 0 &&
            folio_http_reply_body(&c->out, rep, NULL, 0) == 0)
            folio_http_reply_end(&c->out, rep);
        return answered(c);
    }
    if (batch)
        (void)PUTL(&c->out, "]");
    if (folio_http_reply_end(&c->out, rep) != 0) {
        folio_http_reply_cancel(&c->out, rep);
        answer_errorf(c, 500, "the response could not be written");
    }
    return answered(c);
}

/* ---- a request ---- */

/* OPTIONS: a CORS preflight (or a plain question) on a route. */
static void
preflight(struct folio_conn *c, const char *p)
{
    const struct folio_http_req *r = &c->wk->http.req;
    struct folio_http_reply rep;

    if (folio_http_reply_begin(&c->out, &rep, 204, c->wk->http.rflags,
                               now_s()) != 0)
        return;
    folio_stat_add(&c->w->slot->ws_http_requests, 1);
    if ((fh.cors_on && c->wk->http.origin_len > 0 &&
         folio_http_cors_put(&c->out, &fh.cors, c->wk->http.origin,
                             c->wk->http.origin_len, 1, p + r->acr_headers.off,
                             r->acr_headers.len) != 0) ||
        PUTL(&c->out, "Allow: GET, POST, HEAD, OPTIONS\r\n") != 0 ||
        folio_http_reply_body(&c->out, &rep, NULL, 0) != 0) {
        folio_http_reply_cancel(&c->out, &rep);
        return;
    }
    folio_http_reply_end(&c->out, &rep);
}

enum folio_conn_state
folio_face_http_message(struct folio_conn *c, char *p, size_t len, int share,
                        uint64_t *ns)
{
    struct folio_http_req *r = &c->wk->http.req;
    enum folio_conn_state st;
    size_t i;
    long plen;
    int resumed = c->wk->http.resume, route, get;

    (void)len;
    *ns = 0;
    c->wk->http.resume = 0;
    /* Every request has an answer, an error at least: room first. */
    if (!resumed &&
        (st = folio_out_room(c, FOLIO_REPLY_SMALL)) != FOLIO_CONN_READY) {
        c->wk->http.resume = 1; /* run again: its parse stays */
        return st;
    }
    if (resumed && c->wk->http.route == R_RPC) {
        st = route_rpc(c, p, ns);
        goto out;
    }
    c->wk->http.next = 0;
    c->wk->http.route = R_NONE;
    c->wk->http.rflags = (r->flags & FOLIO_HTTP_KEEPALIVE)
                             ? (r->minor == 0 ? FOLIO_HTTP_R_KEEPALIVE : 0)
                             : FOLIO_HTTP_R_CLOSE;
    if (r->method == FOLIO_HTTP_HEAD)
        c->wk->http.rflags |= FOLIO_HTTP_R_NOBODY;
    c->wk->http.origin_len = 0;
    if (r->origin.len > 0 && r->origin.len <= sizeof(c->wk->http.origin)) {
        memcpy(c->wk->http.origin, p + r->origin.off, r->origin.len);
        c->wk->http.origin_len = (uint8_t)r->origin.len;
    }
    if (c->flags & CONN_REJECT) {
        c->wk->http.rflags = FOLIO_HTTP_R_CLOSE;
        answer_errorf(c, 503, "too many connections: try again later");
        folio_stat_add(&c->w->slot->ws_conns_rejected, 1);
        return FOLIO_CONN_CLOSING;
    }
    if (r->method == FOLIO_HTTP_OTHER || r->method == FOLIO_HTTP_CONNECT ||
        r->method == FOLIO_HTTP_TRACE) {
        answer_errorf(c, 501, "method not implemented");
        return answered(c);
    }
    if (r->method == FOLIO_HTTP_OPTIONS) {
        preflight(c, p);
        return answered(c);
    }
    plen = folio_http_unescape(p + r->path.off, r->path.len, fh.path, 0);
    if (plen < 0) {
        answer_errorf(c, 400, "malformed percent-encoding in the path");
        return answered(c);
    }
    for (i = 0; i < sizeof(routes) / sizeof(routes[0]); i++)
        if (strlen(routes[i].path) == (size_t)plen &&
            memcmp(routes[i].path, fh.path, (size_t)plen) == 0)
            break;
    if (i == sizeof(routes) / sizeof(routes[0])) {
        answer_errorf(c, 404, "no such route");
        return answered(c);
    }
    get = r->method == FOLIO_HTTP_GET || r->method == FOLIO_HTTP_HEAD;
    route = get                            ? routes[i].get
            : r->method == FOLIO_HTTP_POST ? routes[i].post
                                           : R_NONE;
    if (route == R_NONE) {
        /* 405 says what is allowed (RFC 9110, 15.5.6). */
        if (routes[i].get != R_NONE && routes[i].post != R_NONE)
            answer_error_h(c, 405, 0, "use GET or POST", 15,
                           "Allow: GET, HEAD, POST, OPTIONS\r\n");
        else if (routes[i].get != R_NONE)
            answer_error_h(c, 405, 0, "use GET", 7,
                           "Allow: GET, HEAD, OPTIONS\r\n");
        else
            answer_error_h(c, 405, 0, "use POST", 8,
                           "Allow: POST, OPTIONS\r\n");
        return answered(c);
    }
    c->wk->http.route = (uint8_t)route;
    switch (route) {
    case R_STATUS:
        answer(c, 200, "{\"message\":\"OK\"}", 16);
        folio_dispatch_record(c->w, fh.row_ping, 0, 0, c->read_ns, c->peer);
        st = answered(c);
        break;
    case R_COMMENTS_LIST:
        st = route_comments_list(c, p, share, ns);
        break;
    case R_COMMENTS_POST:
        st = route_comments_post(c, p, share, ns);
        break;
    case R_FREIGHT_QUOTE:
        st = route_freight_quote(c, p, share, ns);
        break;
    case R_FREIGHT_INFO:
        st = route_info(c, "freight.info", share, ns);
        break;
    case R_CORPUS_INFO:
        st = route_info(c, "corpus.info", share, ns);
        break;
    case R_CORPUS_COUNT:
    case R_CORPUS_SEARCH:
        st = route_corpus(c, p, route == R_CORPUS_SEARCH, share, ns);
        break;
    default:
        st = route_rpc(c, p, ns);
    }
out:
    folio_out_track(c);
    /* Waits before it ran (room, a share): it runs again as it is. */
    if (st == FOLIO_CONN_YIELDED || st == FOLIO_CONN_PAUSED ||
        st == FOLIO_CONN_OUT_WAIT)
        c->wk->http.resume =
            c->wk->http.route == R_RPC ? c->wk->http.resume : 1;
    else /* the budget made for a page the answer did not take: back */
        folio_out_settle(c);
    return st;
}

void
folio_face_http_bad_stream(struct folio_conn *c, int why, const char *p,
                           size_t avail)
{
    const struct folio_http_req *r = &c->wk->http.req;

    (void)why;
    (void)p;
    (void)avail;
    c->wk->http.route = R_NONE;
    c->wk->http.rflags = FOLIO_HTTP_R_CLOSE;
    c->wk->http.origin_len = 0;
    answer_errorf(c, r->status != 0 ? r->status : 400,
                  r->why != NULL ? r->why : "malformed request");
    folio_stat_add(&c->w->slot->ws_protocol_errors, 1);
}

int
folio_face_http_release(struct folio_conn *c, const struct folio_hold *h,
                        const void *result, size_t len, int code,
                        const char *msg)
{
    if (h->notify)
        return code;
    switch (c->wk->http.route) {
    case R_COMMENTS_LIST:
        if (code != 0)
            answer_error(c, http_status(code), code, msg, strlen(msg));
        else /* JSON kept for the cache once the page is there */
            answer_comments(c, result, len, NULL, 0);
        break;
    case R_COMMENTS_POST:
        if (code != 0)
            answer_error(c, http_status(code), code, msg, strlen(msg));
        else
            answer_created(c, result, len);
        break;
    case R_RPC:
        next_response(c, c->wk->http.batch);
        if (put_kept_response(c, result, len, code, msg) != 0)
            code = FOLIO_ST_RESOURCE_EXHAUSTED;
        break;
    default:
        answer_errorf(c, 500, "a held call of no route");
    }
    return code;
}

void
folio_face_http_timed_out(struct folio_conn *c)
{
    c->wk->http.route = R_NONE;
    c->wk->http.rflags = FOLIO_HTTP_R_CLOSE;
    c->wk->http.origin_len = 0;
    answer_errorf(c, 408,
                  "the request did not arrive in time "
                  "(request_timeout)");
}

size_t
folio_face_http_refusal(const char *msg, char *out, size_t cap)
{
    char body[256];
    int b = snprintf(body, sizeof(body), "{\"message\":\"%s\",\"status\":503}",
                     msg);
    int n = snprintf(out, cap,
                     "HTTP/1.1 503 Service Unavailable\r\n"
                     "Content-Type: " FOLIO_HTTP_JSON "\r\n"
                     "Connection: close\r\n"
                     "Content-Length: %d\r\n\r\n%s",
                     b, body);

    return b > 0 && (size_t)b < sizeof(body) && n > 0 && (size_t)n < cap
               ? (size_t)n
               : 0;
}
