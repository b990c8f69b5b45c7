/*
 * h_comments.c - the comments.* methods (PROTOCOL.md section 3): their
 * params read and checked, then handed to the backend (comments_backend.h)
 * this worker opened at its start: the LMDB store on this host
 * (comments_lmdb.c) or PostgreSQL (comments_pg.c).  Called through the
 * method table (methods.c); reaches the backend through its table.
 */
#include "config.h"

#include <string.h>

#include "shm/comments.h"
#include "src/conf.h"
#include "worker/comments_backend.h"
#include "worker/dispatch.h"
#include "worker/h_comments.h"
#include "worker/worker_int.h"

/* This worker's backend, opened by folio_h_comments_init; NULL: none. */
static struct folio_comments_be *be;

static int
not_open(struct folio_call *call)
{
    return folio_call_error(call, FOLIO_ST_UNAVAILABLE,
                            "the comments store is not open");
}

int
folio_h_comments_list(struct folio_call *call)
{
    const char *path;
    uint32_t len;

    if (folio_mp_read_str(&call->params, &path, &len) != 0)
        return folio_call_error(
            call, FOLIO_ST_INVALID_ARGUMENT, "path must be a str, got %s",
            folio_mp_type_name(folio_mp_type(&call->params)));
    if (be == NULL)
        return not_open(call);
    return be->ops->list(be, call, path, len);
}

size_t
folio_h_comments_list_size(struct folio_call *call)
{
    const char *path;
    uint32_t len;

    if (be == NULL || folio_mp_read_str(&call->params, &path, &len) != 0)
        return FOLIO_REPLY_SMALL; /* the call fails */
    return be->ops->list_size(be, call, path, len);
}

int
folio_h_comments_post(struct folio_call *call)
{
    static const char *const names[3] = {"path", "author", "body"};
    struct folio_mp_cur *c = &call->params;
    struct folio_comment_in in;
    const char *key, *s;
    uint32_t n, i, klen, slen;
    unsigned seen = 0;
    char err[256];
    int f;

    memset(&in, 0, sizeof(in));
    if (folio_mp_read_map(c, &n) != 0)
        return folio_call_error(call, FOLIO_ST_INVALID_ARGUMENT,
                                "comments.post takes a map {\"path\", "
                                "\"author\", \"body\"}, got %s",
                                folio_mp_type_name(folio_mp_type(c)));
    for (i = 0; i < n; i++) {
        if (folio_mp_read_str(c, &key, &klen) != 0)
            return folio_call_error(call, FOLIO_ST_INVALID_ARGUMENT,
                                    "comment keys must be str, got %s",
                                    folio_mp_type_name(folio_mp_type(c)));
        if (folio_mp_str_eq(key, klen, "idempotency_key")) {
            if (in.key != NULL)
                return folio_call_error(call, FOLIO_ST_INVALID_ARGUMENT,
                                        "duplicate key \"idempotency_key\"");
            if (folio_mp_read_nil(c) == 0)
                continue; /* nil: none */
            if (folio_mp_read_str(c, &s, &slen) != 0)
                return folio_call_error(
                    call, FOLIO_ST_INVALID_ARGUMENT,
                    "idempotency_key must be a str of 1 to %d bytes, got %s",
                    FOLIO_COMMENTS_KEY_MAX,
                    folio_mp_type_name(folio_mp_type(c)));
            in.key = s;
            in.key_len = slen;
            continue;
        }
        if (folio_mp_str_eq(key, klen, "reply_to")) {
            if (in.has_reply_to)
                return folio_call_error(call, FOLIO_ST_INVALID_ARGUMENT,
                                        "duplicate key \"reply_to\"");
            if (folio_mp_read_nil(c) == 0)
                continue; /* nil: not a reply */
            if (folio_mp_read_uint(c, &in.reply_to) != 0)
                return folio_call_error(
                    call, FOLIO_ST_INVALID_ARGUMENT,
                    "reply_to must be a comment's id (int), got %s",
                    folio_mp_type_name(folio_mp_type(c)));
            in.has_reply_to = 1;
            continue;
        }
        for (f = 0; f < 3; f++)
            if (folio_mp_str_eq(key, klen, names[f]))
                break;
        if (f == 3) { /* not ours: ignored, as mouthful's JSON decoder does */
            if (folio_mp_skip(c) != 0)
                return folio_call_error(call, FOLIO_ST_INVALID_ARGUMENT,
                                        "malformed comment");
            continue;
        }
        if (seen & (1u << f))
            return folio_call_error(call, FOLIO_ST_INVALID_ARGUMENT,
                                    "duplicate key \"%s\"", names[f]);
        seen |= 1u << f;
        if (folio_mp_read_str(c, &s, &slen) != 0)
            return folio_call_error(call, FOLIO_ST_INVALID_ARGUMENT,
                                    "%s must be a str, got %s", names[f],
                                    folio_mp_type_name(folio_mp_type(c)));
        if (f == 0) {
            in.path = s;
            in.path_len = slen;
        } else if (f == 1) {
            in.author = s;
            in.author_len = slen;
        } else {
            in.body = s;
            in.body_len = slen;
        }
    }
    for (f = 0; f < 3; f++)
        if (!(seen & (1u << f)))
            return folio_call_error(call, FOLIO_ST_INVALID_ARGUMENT,
                                    "missing \"%s\"", names[f]);
    if (folio_comments_validate(&in, err, sizeof(err)) != 0)
        return folio_call_error(call, FOLIO_ST_INVALID_ARGUMENT, "%s", err);
    if (be == NULL)
        return not_open(call);
    return be->ops->post(be, call, &in);
}

int
folio_h_comments_delete(struct folio_call *call)
{
    uint64_t id;

    if (folio_mp_read_uint(&call->params, &id) != 0)
        return folio_call_error(
            call, FOLIO_ST_INVALID_ARGUMENT,
            "id must be a non-negative int, got %s",
            folio_mp_type_name(folio_mp_type(&call->params)));
    if (be == NULL)
        return not_open(call);
    return be->ops->del(be, call, id);
}

int
folio_h_comments_init(struct folio_worker *w)
{
    const struct folio_comments_backend *ops =
        w->cfg->comments_backend == FOLIO_COMMENTS_POSTGRES
            ? &folio_comments_pg
            : &folio_comments_lmdb;

    be = NULL;
    return ops->open(w, &be);
}

void
folio_h_comments_fini(struct folio_worker *w)
{
    if (be != NULL)
        be->ops->close(be);
    be = NULL;
}

struct folio_ccache *
folio_h_comments_cache(void)
{
    return be != NULL ? be->ops->cache(be) : NULL;
}
