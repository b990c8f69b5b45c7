/*
 * comments_util.c - comments.* calls for the end-to-end suites (see
 * comments_util.h).
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include <msgpack.h>

#include "src/rpc.h"
#include "tests/comments_util.h"

/* A post, a reply to comment `to` if has_to, with `key` if not NULL. */
static int
post(struct folio_client *c, const char *path, const char *author,
     const char *body, size_t body_len, int has_to, uint64_t to,
     const char *key, struct folio_reply *r)
{
    msgpack_packer *pk = folio_client_request(c, 0, "comments.post", 1, NULL);

    msgpack_pack_map(pk, 3 + (has_to ? 1 : 0) + (key != NULL ? 1 : 0));
    if (key != NULL) {
        folio_pack_cstr(pk, "idempotency_key");
        folio_pack_cstr(pk, key);
    }
    folio_pack_cstr(pk, "path");
    folio_pack_cstr(pk, path);
    folio_pack_cstr(pk, "author");
    folio_pack_cstr(pk, author);
    folio_pack_cstr(pk, "body");
    folio_pack_str(pk, body, body_len);
    if (has_to) {
        folio_pack_cstr(pk, "reply_to");
        msgpack_pack_uint64(pk, to);
    }
    if (folio_client_flush(c) != 0)
        return -1;
    return folio_client_reply(c, r) == 1 ? 0 : -1;
}

int
e2e_comment_post(struct folio_client *c, const char *path, const char *author,
                 const char *body, size_t body_len, struct folio_reply *r)
{
    return post(c, path, author, body, body_len, 0, 0, NULL, r);
}

int
e2e_comment_post_key(struct folio_client *c, const char *path,
                     const char *author, const char *body, const char *key,
                     struct folio_reply *r)
{
    return post(c, path, author, body, strlen(body), 0, 0, key, r);
}

int
e2e_comment_reply(struct folio_client *c, const char *path,
                  const char *author, const char *body, uint64_t to,
                  struct folio_reply *r)
{
    return post(c, path, author, body, strlen(body), 1, to, NULL, r);
}

int
e2e_comment_decode(struct folio_mp_cur *c, struct e2e_comment *d)
{
    static const char *const keys[5] = {"id", "path", "author", "body",
                                        "created_at"};
    const char *k;
    uint32_t n, len, i;
    int bad = 0;

    d->start = c->p;
    d->has_reply_to = 0;
    if (folio_mp_read_map(c, &n) != 0 || (n != 5 && n != 6))
        return -1;
    for (i = 0; i < 5 && !bad; i++) {
        if (folio_mp_read_str(c, &k, &len) != 0 ||
            !folio_mp_str_eq(k, len, keys[i]))
            return -1;
        switch (i) {
        case 0:
            bad = folio_mp_read_uint(c, &d->id);
            break;
        case 1:
            bad = folio_mp_read_str(c, &d->path, &d->path_len);
            break;
        case 2:
            bad = folio_mp_read_str(c, &d->author, &d->author_len);
            break;
        case 3:
            bad = folio_mp_read_str(c, &d->body, &d->body_len);
            break;
        default:
            bad = folio_mp_read_uint(c, &d->created_at);
        }
    }
    if (n == 6 && !bad) {
        if (folio_mp_read_str(c, &k, &len) != 0 ||
            !folio_mp_str_eq(k, len, "reply_to") ||
            folio_mp_read_uint(c, &d->reply_to) != 0)
            return -1;
        d->has_reply_to = 1;
    }
    d->len = (size_t)(c->p - d->start);
    return bad ? -1 : 0;
}

int
e2e_comment_list(struct folio_client *c, const char *path,
                 struct e2e_comment **out)
{
    struct folio_reply r;
    uint32_t n, i;
    struct e2e_comment *v;

    *out = NULL;
    if (folio_client_call_str(c, "comments.list", path, &r) != 1 ||
        r.code != 0 || folio_mp_read_array(&r.result, &n) != 0)
        return -1;
    v = calloc(n + 1, sizeof(*v));
    for (i = 0; i < n; i++) {
        if (e2e_comment_decode(&r.result, &v[i]) != 0) {
            free(v);
            return -1;
        }
    }
    *out = v;
    return (int)n;
}
