/*
 * h_comments.c - the comments.* methods (PROTOCOL.md section 3) over the
 * store in shm/comments.c, and the service's per-worker set-up: each
 * worker opens its own LMDB environment after fork.
 *
 * comments.list copies the stored, already-encoded comments straight into
 * the connection's output buffer; comments.post answers only after its
 * write transaction is committed and synced.
 */
#include "config.h"

#include <stdio.h>
#include <string.h>

#include "shm/comments.h"
#include "src/buf.h"
#include "src/log.h"
#include "worker/dispatch.h"
#include "worker/h_comments.h"
#include "worker/worker_int.h"

static struct folio_comments *store; /* this worker's handle */

int
folio_h_comments_init(struct folio_worker *w)
{
    struct folio_comments_opts opts;
    char err[512];
    int rc;

    memset(&opts, 0, sizeof(opts));
    opts.max_size = w->cfg->comments_max_size;
    if ((rc = folio_comments_open(w->cfg->data_dir, &opts, &store, err,
                                  sizeof(err))) != 0)
        folio_log_errorx("%s", err);
    return rc;
}

void
folio_h_comments_fini(struct folio_worker *w)
{
    folio_comments_close(store);
    store = NULL;
}

/* A store error as the RPC error PROTOCOL.md section 2 gives it. */
static int
store_error(struct folio_call *call, int rc, const char *msg)
{
    int code;

    switch (rc) {
    case FOLIO_EINVAL:
        code = FOLIO_ST_INVALID_ARGUMENT;
        break;
    case FOLIO_ENOTFOUND:
        code = FOLIO_ST_NOT_FOUND;
        break;
    case FOLIO_EFULL:
    case FOLIO_ETOOBIG:
    case FOLIO_ENOMEM:
        code = FOLIO_ST_RESOURCE_EXHAUSTED;
        break;
    default:
        code = FOLIO_ST_INTERNAL;
        break;
    }
    return folio_call_error(call, code, "%s", msg);
}

int
folio_h_comments_list(struct folio_call *call)
{
    const char *path;
    uint32_t len;
    char err[256];
    int rc;

    if (folio_mp_read_str(&call->params, &path, &len) != 0)
        return folio_call_error(
            call, FOLIO_ST_INVALID_ARGUMENT, "path must be a str, got %s",
            folio_mp_type_name(folio_mp_type(&call->params)));
    if (store == NULL)
        return folio_call_error(call, FOLIO_ST_UNAVAILABLE,
                                "the comments store is not open");
    rc = folio_comments_list(store, path, len, call->out,
                             (size_t)call->w->cfg->max_message_bytes, NULL,
                             err, sizeof(err));
    return rc == 0 ? 0 : store_error(call, rc, err);
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
    int f, rc;

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
    if (store == NULL)
        return folio_call_error(call, FOLIO_ST_UNAVAILABLE,
                                "the comments store is not open");
    rc = folio_comments_post(store, &in, call->out, NULL, err, sizeof(err));
    return rc == 0 ? 0 : store_error(call, rc, err);
}

int
folio_h_comments_delete(struct folio_call *call)
{
    uint64_t id;
    char err[256];
    int rc;

    if (folio_mp_read_uint(&call->params, &id) != 0)
        return folio_call_error(
            call, FOLIO_ST_INVALID_ARGUMENT,
            "id must be a non-negative int, got %s",
            folio_mp_type_name(folio_mp_type(&call->params)));
    if (store == NULL)
        return folio_call_error(call, FOLIO_ST_UNAVAILABLE,
                                "the comments store is not open");
    if ((rc = folio_comments_delete(store, id, err, sizeof(err))) != 0)
        return store_error(call, rc, err);
    return msgpack_pack_true(call->pk);
}
