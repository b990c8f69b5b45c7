/*
 * http_comments.c - mouthful's JSON shapes over the comments service's
 * msgpack (see http_comments.h).
 */
#include "config.h"

#include <stdio.h>
#include <string.h>

#include <msgpack.h>

#include "src/buf.h"
#include "src/err.h"
#include "src/json.h"
#include "src/rpc.h"
#include "worker/http_comments.h"

int
folio_http_comment_read(struct folio_mp_cur *c, struct folio_comment_view *v)
{
    const char *k, *s;
    uint32_t n, i, klen, slen;
    unsigned seen = 0;

    memset(v, 0, sizeof(*v));
    if (folio_mp_read_map(c, &n) != 0)
        return FOLIO_EPROTO;
    for (i = 0; i < n; i++) {
        if (folio_mp_read_str(c, &k, &klen) != 0)
            return FOLIO_EPROTO;
        if (folio_mp_str_eq(k, klen, "id")) {
            if (folio_mp_read_uint(c, &v->id) != 0)
                return FOLIO_EPROTO;
            seen |= 1;
        } else if (folio_mp_str_eq(k, klen, "created_at")) {
            if (folio_mp_read_uint(c, &v->created_at) != 0)
                return FOLIO_EPROTO;
            seen |= 2;
        } else if (folio_mp_str_eq(k, klen, "reply_to")) {
            if (folio_mp_read_nil(c) == 0)
                continue;
            if (folio_mp_read_uint(c, &v->reply_to) != 0)
                return FOLIO_EPROTO;
            v->has_reply_to = 1;
        } else if (folio_mp_str_eq(k, klen, "path") ||
                   folio_mp_str_eq(k, klen, "author") ||
                   folio_mp_str_eq(k, klen, "body")) {
            if (folio_mp_read_str(c, &s, &slen) != 0)
                return FOLIO_EPROTO;
            if (k[0] == 'p') {
                v->path = s;
                v->path_len = slen;
                seen |= 4;
            } else if (k[0] == 'a') {
                v->author = s;
                v->author_len = slen;
                seen |= 8;
            } else {
                v->body = s;
                v->body_len = slen;
                seen |= 16;
            }
        } else if (folio_mp_skip(c) != 0) {
            return FOLIO_EPROTO;
        }
    }
    return seen == 31 ? 0 : FOLIO_EPROTO;
}

static int
put(struct folio_buf *out, const char *s)
{
    return folio_buf_append(out, s, strlen(s));
}

int
folio_http_comment_json(struct folio_buf *out,
                        const struct folio_comment_view *v)
{
    int rc;

    if ((rc = put(out, "{\"Id\":")) != 0 ||
        (rc = folio_json_put_u64(out, v->id)) != 0 ||
        (rc = put(out, ",\"ThreadId\":")) != 0 ||
        (rc = folio_json_put_str(out, v->path, v->path_len, 0)) != 0 ||
        (rc = put(out, ",\"Body\":")) != 0 ||
        (rc = folio_json_put_str(out, v->body, v->body_len, FOLIO_JSON_HTML)) !=
            0 ||
        (rc = put(out, ",\"Author\":")) != 0 ||
        (rc = folio_json_put_str(out, v->author, v->author_len, 0)) != 0 ||
        (rc = put(out, ",\"Confirmed\":true,\"CreatedAt\":")) != 0 ||
        (rc = folio_json_put_time_ms(out, (int64_t)v->created_at)) != 0)
        return rc;
    if (v->has_reply_to && ((rc = put(out, ",\"ReplyTo\":")) != 0 ||
                            (rc = folio_json_put_u64(out, v->reply_to)) != 0))
        return rc;
    return put(out, "}");
}

int
folio_http_comments_json(struct folio_buf *out, const void *mp, size_t len,
                         uint32_t *count)
{
    struct folio_comment_view v;
    struct folio_mp_cur c;
    size_t mark = folio_buf_mark(out);
    uint32_t n, i;
    int rc;

    folio_mp_cur_init(&c, mp, len);
    if (folio_mp_read_array(&c, &n) != 0)
        return FOLIO_EPROTO;
    if ((rc = put(out, "[")) != 0)
        goto fail;
    for (i = 0; i < n; i++) {
        if (folio_http_comment_read(&c, &v) != 0) {
            rc = FOLIO_EPROTO;
            goto fail;
        }
        if ((i > 0 && (rc = put(out, ",")) != 0) ||
            (rc = folio_http_comment_json(out, &v)) != 0)
            goto fail;
    }
    if ((rc = put(out, "]")) != 0)
        goto fail;
    if (count != NULL)
        *count = n;
    return 0;
fail:
    folio_buf_truncate(out, mark);
    return rc;
}

/* A string field of the body: `what` names it in the message. */
static int
read_str(struct folio_mp_cur *c, const char **s, uint32_t *len, int *has,
         const char *what, char *err, size_t errlen)
{
    if (folio_mp_read_str(c, s, len) != 0) {
        snprintf(err, errlen, "%s must be a string, got %s", what,
                 folio_mp_type_name(folio_mp_type(c)));
        return FOLIO_EINVAL;
    }
    *has = 1;
    return 0;
}

/* replyTo: an id as a number or as decimal digits; null is none. */
static int
read_reply_to(struct folio_mp_cur *c, struct folio_http_comment_post *p,
              char *err, size_t errlen)
{
    const char *s;
    uint32_t len, i;
    uint64_t v = 0;

    p->has_reply_to = 0;
    if (folio_mp_read_nil(c) == 0)
        return 0;
    if (folio_mp_read_uint(c, &p->reply_to) == 0) {
        p->has_reply_to = 1;
        return 0;
    }
    if (folio_mp_read_str(c, &s, &len) != 0)
        goto bad;
    if (len == 0 || len > 19)
        goto bad;
    for (i = 0; i < len; i++) {
        if (s[i] < '0' || s[i] > '9')
            goto bad;
        v = v * 10 + (uint64_t)(s[i] - '0');
    }
    p->reply_to = v;
    p->has_reply_to = 1;
    return 0;
bad:
    snprintf(err, errlen, "replyTo must be a comment's id");
    return FOLIO_EINVAL;
}

int
folio_http_comment_post_read(const void *mp, size_t len,
                             struct folio_http_comment_post *p, char *err,
                             size_t errlen)
{
    struct folio_mp_cur c;
    const char *k;
    uint32_t n, i, klen;
    int rc = 0;

    memset(p, 0, sizeof(*p));
    p->path = p->author = p->body = ""; /* missing: empty, as in Go */
    folio_mp_cur_init(&c, mp, len);
    if (folio_mp_read_map(&c, &n) != 0) {
        snprintf(err, errlen, "the body must be a JSON object, got %s",
                 folio_mp_type_name(folio_mp_type(&c)));
        return FOLIO_EINVAL;
    }
    for (i = 0; i < n && rc == 0; i++) {
        if (folio_mp_read_str(&c, &k, &klen) != 0) {
            snprintf(err, errlen, "malformed object");
            return FOLIO_EINVAL;
        }
        if (folio_json_key_eq(k, klen, "path")) {
            rc = read_str(&c, &p->path, &p->path_len, &p->has_path, "path", err,
                          errlen);
        } else if (folio_json_key_eq(k, klen, "body")) {
            rc = read_str(&c, &p->body, &p->body_len, &p->has_body, "body", err,
                          errlen);
        } else if (folio_json_key_eq(k, klen, "author")) {
            rc = read_str(&c, &p->author, &p->author_len, &p->has_author,
                          "author", err, errlen);
        } else if (folio_json_key_eq(k, klen, "email")) {
            p->has_email = 0; /* null: none, as Go's *string */
            if (folio_mp_read_nil(&c) != 0)
                rc = read_str(&c, &p->email, &p->email_len, &p->has_email,
                              "email", err, errlen);
        } else if (folio_json_key_eq(k, klen, "replyTo")) {
            rc = read_reply_to(&c, p, err, errlen);
        } else if (folio_mp_skip(&c) != 0) {
            snprintf(err, errlen, "malformed object");
            return FOLIO_EINVAL;
        }
    }
    return rc;
}

int
folio_http_comment_post_params(struct folio_buf *out,
                               const struct folio_http_comment_post *p,
                               const char *key, size_t klen)
{
    msgpack_packer pk;
    size_t mark = folio_buf_mark(out);

    msgpack_packer_init(&pk, out, folio_buf_pack_write);
    out->b_failed = 0;
    if (msgpack_pack_map(&pk, 3 + (p->has_reply_to != 0) + (klen > 0)) != 0 ||
        folio_pack_cstr(&pk, "path") != 0 ||
        folio_pack_str(&pk, p->path, p->path_len) != 0 ||
        folio_pack_cstr(&pk, "author") != 0 ||
        folio_pack_str(&pk, p->author, p->author_len) != 0 ||
        folio_pack_cstr(&pk, "body") != 0 ||
        folio_pack_str(&pk, p->body, p->body_len) != 0 ||
        (p->has_reply_to && (folio_pack_cstr(&pk, "reply_to") != 0 ||
                             msgpack_pack_uint64(&pk, p->reply_to) != 0)) ||
        (klen > 0 && (folio_pack_cstr(&pk, "idempotency_key") != 0 ||
                      folio_pack_str(&pk, key, klen) != 0))) {
        folio_buf_truncate(out, mark);
        return out->b_failed != 0 ? out->b_failed : FOLIO_ENOMEM;
    }
    return 0;
}

int
folio_http_comment_created_json(struct folio_buf *out,
                                const struct folio_comment_view *v,
                                int has_email, const char *email, size_t elen)
{
    int rc;

    if ((rc = put(out, "{\"id\":")) != 0 ||
        (rc = folio_json_put_u64(out, v->id)) != 0 ||
        (rc = put(out, ",\"path\":")) != 0 ||
        (rc = folio_json_put_str(out, v->path, v->path_len, 0)) != 0 ||
        (rc = put(out, ",\"body\":")) != 0 ||
        (rc = folio_json_put_str(out, v->body, v->body_len, FOLIO_JSON_HTML)) !=
            0 ||
        (rc = put(out, ",\"author\":")) != 0 ||
        (rc = folio_json_put_str(out, v->author, v->author_len, 0)) != 0)
        return rc;
    if (has_email && ((rc = put(out, ",\"email\":")) != 0 ||
                      (rc = folio_json_put_str(out, email, elen, 0)) != 0))
        return rc;
    if (v->has_reply_to && ((rc = put(out, ",\"replyTo\":")) != 0 ||
                            (rc = folio_json_put_u64(out, v->reply_to)) != 0))
        return rc;
    return put(out, "}");
}
