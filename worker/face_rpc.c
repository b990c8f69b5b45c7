/*
 * face_rpc.c - the msgpack-RPC face of a connection (face_rpc.h): each
 * complete message parsed and answered, refused or dispatched, with room
 * for its reply first (out.c); the error replies to what cannot be
 * parsed or framed; a held call's reply at its release; the reply that
 * refuses a connection at accept.  Called by conn.c and accept.c; calls
 * out.c and dispatch.c.
 */
#include "config.h"

#include <stdio.h>
#include <string.h>

#include "shm/stats.h"
#include "src/buf.h"
#include "src/rpc.h"
#include "worker/conn.h"
#include "worker/dispatch.h"
#include "worker/face_rpc.h"
#include "worker/out.h"
#include "worker/worker_int.h"

/* Pack an error reply to the msgid as the client sent it. */
static void
reply_error(struct folio_conn *c, const struct folio_rpc_id *id, int code,
            const char *msg)
{
    msgpack_packer pk;

    msgpack_packer_init(&pk, &c->out, folio_buf_pack_write);
    folio_rpc_pack_error_id(&pk, id, code, msg, strlen(msg));
    folio_stat_add(&c->w->slot->ws_errors, 1);
}

/*
 * The msgid of the request at p[0..avail), as far as the bytes go: 0 if
 * it is [0, msgid, ... with an integer msgid (in range or not: the reply
 * echoes it).
 */
static int
request_id(const char *p, size_t avail, struct folio_rpc_id *id)
{
    struct folio_mp_cur cur;
    uint32_t n, msgid;
    int64_t type;

    folio_mp_cur_init(&cur, p, avail);
    if (folio_mp_read_array(&cur, &n) != 0 || n != 4 ||
        folio_mp_read_int(&cur, &type) != 0 || type != FOLIO_RPC_REQUEST ||
        folio_rpc_read_msgid(&cur, &msgid, id) == FOLIO_EPROTO)
        return -1;
    return 0;
}

void
folio_face_rpc_bad_stream(struct folio_conn *c, int why, const char *p,
                          size_t avail)
{
    const struct folio_config *cfg = c->w->cfg;
    struct folio_rpc_id id;
    char msg[128];

    if (request_id(p, avail, &id) == 0) {
        if (why == FOLIO_MP_TOOBIG)
            snprintf(msg, sizeof(msg), "message over max_message_bytes (%llu)",
                     (unsigned long long)cfg->max_message_bytes);
        else if (why == FOLIO_MP_TOODEEP)
            snprintf(msg, sizeof(msg), "nesting deeper than max_depth (%u)",
                     cfg->max_depth);
        else
            snprintf(msg, sizeof(msg), "malformed msgpack");
        reply_error(c, &id,
                    why == FOLIO_MP_TOOBIG ? FOLIO_ST_RESOURCE_EXHAUSTED
                                           : FOLIO_ST_INVALID_ARGUMENT,
                    msg);
    }
    folio_stat_add(&c->w->slot->ws_protocol_errors, 1);
}

/* Over max_connections (CONN_REJECT): refuse its first message. */
static enum folio_conn_state
reject(struct folio_conn *c, const struct folio_rpc_msg *m)
{
    const struct folio_config *cfg = c->w->cfg;
    char msg[96];

    if (m->type == FOLIO_RPC_REQUEST) {
        if (c->flags & CONN_ADMIN)
            snprintf(msg, sizeof(msg),
                     "too many admin connections (admin_max_connections "
                     "%u per worker)",
                     cfg->admin_max_connections);
        else
            snprintf(msg, sizeof(msg),
                     "too many connections (max_connections %u per "
                     "worker)",
                     cfg->max_connections);
        reply_error(c, &m->id, FOLIO_ST_RESOURCE_EXHAUSTED, msg);
    }
    folio_stat_add(&c->w->slot->ws_conns_rejected, 1);
    return FOLIO_CONN_CLOSING;
}

enum folio_conn_state
folio_face_rpc_message(struct folio_conn *c, const char *p, size_t len,
                       int share, uint64_t *ns)
{
    struct folio_worker *w = c->w;
    enum folio_conn_state st;
    struct folio_rpc_msg m;
    struct folio_sized sz; /* dropped if the call waits */
    const char *why;
    size_t size;
    int admin = (c->flags & CONN_ADMIN) != 0, byref;

    *ns = 0; /* none if it is not dispatched */
    /* Every message may have a reply, an error at least: room first. */
    if ((st = folio_out_room(c, FOLIO_REPLY_SMALL)) != FOLIO_CONN_READY)
        return st;
    if (folio_rpc_parse(p, len, &m, &why) != 0) {
        if (m.has_msgid) {
            reply_error(c, &m.id, FOLIO_ST_INVALID_ARGUMENT, why);
            return FOLIO_CONN_READY;
        }
        folio_stat_add(&w->slot->ws_protocol_errors, 1);
        return FOLIO_CONN_CLOSING;
    }
    if (m.type == FOLIO_RPC_RESPONSE) {
        reply_error(c, &m.id, FOLIO_ST_INVALID_ARGUMENT,
                    "foliod takes requests and notifications, not responses");
        return FOLIO_CONN_READY;
    }
    if (c->flags & CONN_REJECT)
        return reject(c, &m);
    if ((size = folio_dispatch_reply_size(w, &m, admin, &sz)) >
        FOLIO_REPLY_SMALL) {
        /* A shared page sent by reference: budget, if it is not counted. */
        if ((byref = (size & FOLIO_REPLY_BYREF) != 0))
            size &= ~FOLIO_REPLY_BYREF;
        /* A large reply is heavy work: in a share of its own, later. */
        if (size > FOLIO_CONN_BUF && !share && !admin)
            return FOLIO_CONN_YIELDED;
        st = byref ? folio_out_room_ref(c, size) : folio_out_room(c, size);
        if (st != FOLIO_CONN_READY)
            return st;
        if (byref) {
            *ns = folio_dispatch(w, c, &m, admin, &sz, &c->out);
            folio_out_track(c);
            /* The room made for a page the reply did not take: back. */
            folio_out_settle(c);
            return FOLIO_CONN_READY;
        }
    }
    *ns = folio_dispatch(w, c, &m, admin, &sz, &c->out);
    folio_out_track(c);
    return FOLIO_CONN_READY;
}

int
folio_face_rpc_release(struct folio_conn *c, const struct folio_hold *h,
                       const void *result, size_t len, int code,
                       const char *msg)
{
    msgpack_packer pk;

    if (h->notify)
        return code;
    if (code == 0 && len > 0 && folio_buf_append(&c->out, result, len) != 0) {
        code = FOLIO_ST_RESOURCE_EXHAUSTED;
        msg = "reply too large for memory";
    }
    if (code != 0) {
        folio_buf_truncate(&c->out, h->head);
        msgpack_packer_init(&pk, &c->out, folio_buf_pack_write);
        folio_rpc_pack_error(&pk, h->msgid, code, msg, strlen(msg));
    }
    return code;
}

/* A packer's output into a fixed array: no allocation, -1 when full. */
struct fixed_out {
    char *b;
    size_t n, cap;
};

static int
fixed_write(void *data, const char *p, size_t len)
{
    struct fixed_out *o = data;

    if (len > o->cap - o->n)
        return -1;
    memcpy(o->b + o->n, p, len);
    o->n += len;
    return 0;
}

size_t
folio_face_rpc_refusal(const char *in, size_t n, const char *msg, char *out,
                       size_t cap)
{
    struct fixed_out o = {out, 0, cap};
    struct folio_rpc_id id;
    msgpack_packer pk;

    if (request_id(in, n, &id) != 0)
        return 0;
    msgpack_packer_init(&pk, &o, fixed_write);
    if (folio_rpc_pack_error_id(&pk, &id, FOLIO_ST_RESOURCE_EXHAUSTED, msg,
                                strlen(msg)) != 0)
        return 0;
    return o.n;
}
