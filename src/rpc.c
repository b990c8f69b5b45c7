/*
 * rpc.c - msgpack-RPC message parsing and packing (see rpc.h).
 */
#include "config.h"

#include <string.h>

#include "src/err.h"
#include "src/rpc.h"

int
folio_rpc_read_msgid(struct folio_mp_cur *c, uint32_t *msgid,
                     struct folio_rpc_id *id)
{
    const unsigned char *start = c->p;
    int64_t v;
    uint64_t u;
    int rc = 0;

    if (folio_mp_read_int(c, &v) == 0) {
        if (v < 0 || v > UINT32_MAX)
            rc = FOLIO_ETOOBIG;
        else
            *msgid = (uint32_t)v;
    } else if (folio_mp_read_uint(c, &u) == 0) {
        rc = FOLIO_ETOOBIG; /* above INT64_MAX */
    } else {
        return FOLIO_EPROTO;
    }
    id->raw = (const char *)start;
    id->len = (size_t)(c->p - start);
    return rc;
}

/*
 * The request as every client sends it, read inline: [0, msgid as a
 * positive fixint or uint 8/16/32, method as a fixstr or str 8, params as
 * a fixarray].  Returns 0 with *m filled, -1 for any other form (the
 * general reader below decides: it may still be a valid request).
 */
static int
parse_common(const unsigned char *b, size_t len, struct folio_rpc_msg *m)
{
    const unsigned char *q = b + 2, *end = b + len;
    uint32_t msgid, n;

    if (len < 5 || b[0] != 0x94 || b[1] != FOLIO_RPC_REQUEST)
        return -1;
    if (*q <= 0x7f) {
        msgid = *q++;
    } else if (*q == 0xce && end - q > 5) {
        msgid = (uint32_t)q[1] << 24 | (uint32_t)q[2] << 16 |
                (uint32_t)q[3] << 8 | q[4];
        q += 5;
    } else if (*q == 0xcc && end - q > 2) {
        msgid = q[1];
        q += 2;
    } else if (*q == 0xcd && end - q > 3) {
        msgid = (uint32_t)q[1] << 8 | q[2];
        q += 3;
    } else {
        return -1;
    }
    m->id.raw = (const char *)b + 2;
    m->id.len = (size_t)(q - (b + 2));
    if ((*q & 0xe0) == 0xa0) {
        n = *q++ & 0x1f;
    } else if (*q == 0xd9 && end - q > 2) {
        n = q[1];
        q += 2;
    } else {
        return -1;
    }
    /* The method, then at least the params' header. */
    if ((size_t)(end - q) <= n || (q[n] & 0xf0) != 0x90)
        return -1;
    m->method = (const char *)q;
    m->method_len = n;
    q += n;
    m->nparams = *q++ & 0x0f;
    m->type = FOLIO_RPC_REQUEST;
    m->has_msgid = 1;
    m->msgid = msgid;
    folio_mp_cur_init(&m->params, q, (size_t)(end - q));
    m->error.p = m->error.end = m->result.p = m->result.end = NULL;
    return 0;
}

int
folio_rpc_frame(struct folio_mp_scan *st, const void *p, size_t len)
{
    const unsigned char *b = p, *q = b + 2, *end = b + len;
    uint64_t pos;
    uint32_t n;

    /* A message begins, with room for the envelope's forms: else scan. */
    if (st->pos != 0 || st->depth != 0 || st->done || st->max_depth < 2 ||
        len < 5 || b[0] != 0x94 || b[1] != FOLIO_RPC_REQUEST)
        return folio_mp_scan(st, p, len);
    if (*q <= 0x7f)
        q += 1;
    else if (*q == 0xce)
        q += 5;
    else if (*q == 0xcc)
        q += 2;
    else if (*q == 0xcd)
        q += 3;
    else
        return folio_mp_scan(st, p, len);
    if (q >= end)
        return folio_mp_scan(st, p, len);
    if ((*q & 0xe0) == 0xa0)
        n = 1 + (*q & 0x1f);
    else if (*q == 0xd9 && end - q > 1)
        n = 2 + q[1];
    else
        return folio_mp_scan(st, p, len);
    /* The method, then the params' header, all here. */
    if ((size_t)(end - q) <= n || (q[n] & 0xf0) != 0x90)
        return folio_mp_scan(st, p, len);
    q += n;
    n = *q++ & 0x0f;
    pos = (uint64_t)(q - b);
    if (pos > st->max_bytes || n > st->max_bytes - pos)
        return folio_mp_scan(st, p, len); /* it says what is too big */
    st->pos = pos;
    if (n == 0)
        return FOLIO_MP_DONE;
    /* The params are the envelope's last value: scan them from here. */
    st->depth = 2;
    st->remain[0] = 1;
    st->remain[1] = n;
    return folio_mp_scan(st, p, len);
}

int
folio_rpc_parse(const void *p, size_t len, struct folio_rpc_msg *m,
                const char **why)
{
    struct folio_mp_cur c;
    uint32_t n;
    int64_t type;
    int rc;

    /* parse_common sets every field, or fails and the reader starts over. */
    if (parse_common(p, len, m) == 0)
        return 0;
    memset(m, 0, sizeof(*m));
    folio_mp_cur_init(&c, p, len);
    if (folio_mp_read_array(&c, &n) != 0) {
        *why = "message is not an array";
        return FOLIO_EPROTO;
    }
    if (n < 3 || n > 4 || folio_mp_read_int(&c, &type) != 0) {
        *why = "message must be [type, ...] with 3 or 4 elements";
        return FOLIO_EPROTO;
    }
    m->type = (int)type;
    if (type == FOLIO_RPC_REQUEST || type == FOLIO_RPC_RESPONSE) {
        rc = folio_rpc_read_msgid(&c, &m->msgid, &m->id);
        m->has_msgid = rc != FOLIO_EPROTO;
        if (rc != 0) {
            *why = "msgid must be an unsigned 32-bit integer";
            return FOLIO_EPROTO;
        }
        if (n != 4) {
            *why = type == FOLIO_RPC_REQUEST
                       ? "request must be [0, msgid, method, params]"
                       : "response must be [1, msgid, error, result]";
            return FOLIO_EPROTO;
        }
    } else if (type == FOLIO_RPC_NOTIFY) {
        if (n != 3) {
            *why = "notification must be [2, method, params]";
            return FOLIO_EPROTO;
        }
    } else {
        *why = "message type must be 0, 1 or 2";
        return FOLIO_EPROTO;
    }
    if (type == FOLIO_RPC_RESPONSE) {
        m->error = c;
        if (folio_mp_skip(&c) != 0) {
            *why = "truncated response";
            return FOLIO_EPROTO;
        }
        m->result = c;
        return 0;
    }
    /*
     * The method is a str, or a bin from clients of the msgpack-RPC spec
     * written before the str/bin split (msgpack's old "raw"), such as
     * Neovim's: the same bytes either way (PROTOCOL.md section 1).
     */
    if (folio_mp_read_str(&c, &m->method, &m->method_len) != 0 &&
        folio_mp_read_bin(&c, &m->method, &m->method_len) != 0) {
        *why = "method must be a string";
        return FOLIO_EPROTO;
    }
    if (folio_mp_read_array(&c, &m->nparams) != 0) {
        *why = "params must be an array";
        return FOLIO_EPROTO;
    }
    m->params = c;
    return 0;
}

int
folio_pack_str(msgpack_packer *pk, const char *s, size_t len)
{
    if (msgpack_pack_str(pk, len) != 0)
        return -1;
    return msgpack_pack_str_body(pk, s, len);
}

int
folio_pack_cstr(msgpack_packer *pk, const char *s)
{
    return folio_pack_str(pk, s, strlen(s));
}

int
folio_rpc_pack_result_head(msgpack_packer *pk, uint32_t msgid)
{
    /* 0x94 0x01 msgid 0xc0: written in one go. */
    unsigned char h[8];
    size_t n = 0;

    h[n++] = 0x94;
    h[n++] = 0x01;
    if (msgid <= 0x7f) {
        h[n++] = (unsigned char)msgid;
    } else if (msgid <= 0xff) {
        h[n++] = 0xcc;
        h[n++] = (unsigned char)msgid;
    } else if (msgid <= 0xffff) {
        h[n++] = 0xcd;
        h[n++] = (unsigned char)(msgid >> 8);
        h[n++] = (unsigned char)msgid;
    } else {
        return msgpack_pack_array(pk, 4) || msgpack_pack_uint8(pk, 1) ||
               msgpack_pack_uint32(pk, msgid) || msgpack_pack_nil(pk);
    }
    h[n++] = 0xc0;
    return pk->callback(pk->data, (const char *)h, n);
}

int
folio_rpc_pack_error(msgpack_packer *pk, uint32_t msgid, int code,
                     const char *msg, size_t len)
{
    if (msgpack_pack_array(pk, 4) || msgpack_pack_uint8(pk, 1) ||
        msgpack_pack_uint32(pk, msgid) || msgpack_pack_array(pk, 2) ||
        msgpack_pack_int(pk, code) || folio_pack_str(pk, msg, len))
        return -1;
    return msgpack_pack_nil(pk);
}

int
folio_rpc_pack_error_id(msgpack_packer *pk, const struct folio_rpc_id *id,
                        int code, const char *msg, size_t len)
{
    if (msgpack_pack_array(pk, 4) || msgpack_pack_uint8(pk, 1) ||
        pk->callback(pk->data, id->raw, id->len) ||
        msgpack_pack_array(pk, 2) || msgpack_pack_int(pk, code) ||
        folio_pack_str(pk, msg, len))
        return -1;
    return msgpack_pack_nil(pk);
}

int
folio_rpc_pack_request_head(msgpack_packer *pk, int notify, uint32_t msgid,
                            const char *method, uint32_t nparams)
{
    if (notify) {
        if (msgpack_pack_array(pk, 3) || msgpack_pack_uint8(pk, 2))
            return -1;
    } else {
        if (msgpack_pack_array(pk, 4) || msgpack_pack_uint8(pk, 0) ||
            msgpack_pack_uint32(pk, msgid))
            return -1;
    }
    if (folio_pack_cstr(pk, method))
        return -1;
    return msgpack_pack_array(pk, nparams);
}
