/*
 * comments_lmdb.c - the comments service on this host's LMDB store
 * (comments_backend = lmdb, the default; shm/comments.c): one of the two
 * backends of comments_backend.h, beside comments_pg.c.  Each worker
 * opens its own environment after fork.
 *
 * comments.list copies the stored, already-encoded comments straight into
 * the connection's output buffer, or a page's whole reply from the page
 * cache.  comments.post answers only after its write transaction is
 * committed and synced.  With group commit (the default), a post is
 * validated and copied into this worker's batch and its reply is held
 * (folio_call_hold); once the loop has served every connection that was
 * ready, one write transaction stores the whole batch, one synced commit
 * makes it durable, and only then are the replies released.  A batch that
 * fails gets the error on every reply (a full store is retried post by
 * post, so the posts that fit get in).  Called through the backend's
 * table by h_comments.c; calls conn.c (held replies) and dispatch.c.
 */
#include "config.h"

#include <stdio.h>
#include <string.h>

#include <event2/event.h>

#include "shm/comments.h"
#include "src/alloc.h"
#include "src/buf.h"
#include "src/conf.h"
#include "src/log.h"
#include "worker/comments_backend.h"
#include "worker/comments_cache.h"
#include "worker/conn.h"
#include "worker/dispatch.h"
#include "worker/worker_int.h"

#define BATCH_SOFT_COUNT 256        /* commit early past this many posts */
#define BATCH_SOFT_BYTES (4u << 20) /* or this much text */

/* A post waiting for its batch's commit. */
struct pending {
    struct folio_hold hold;
    size_t off; /* path, author, body back to back in the batch's arena */
    uint32_t path_len, author_len, body_len;
    int has_reply_to;
    uint64_t reply_to;
};

/* This worker's LMDB backend. */
struct folio_lmdb {
    struct folio_comments_be be; /* first: what h_comments.c holds */
    struct folio_comments *store;
    _Atomic uint64_t *size_stat; /* comments_bytes in the slot; NULL: none */
    struct folio_worker_slot *slot; /* NULL in tests */
    /*
     * The page cache: each page's whole comments.list reply, as the
     * postgres backend keeps it (comments_cache.h), valid while the
     * store's version (folio_comments_version: its last committed
     * transaction id, whoever committed) is the one it was filled at.  Any
     * post or delete, in any worker, moves the version and empties the
     * cache at the next list: never stale, and a hit is one lookup and one
     * copy where a miss walks the page's records with a cursor (15,600
     * instructions for 50).
     */
    struct folio_ccache *cache; /* NULL: none */
    uint64_t cache_version;
    /*
     * Group commit: the posts held until the next commit (ev_commit,
     * activated by a batch's first post).  A release only queues its
     * connection, so nothing posts while a batch is committed: one batch.
     */
    struct event *ev_commit; /* NULL: group commit off */
    struct pending *p;
    size_t n, cap;
    struct folio_buf arena;      /* copies of the posts' text */
    struct folio_comment_in *in; /* a commit's posts */
    size_t *ends;                /* where each one's comment ends */
    int *codes;                  /* each one's status (fallback) */
    size_t in_cap;
    struct folio_buf results; /* the stored comments of a commit */
    uint64_t commits, posts;  /* logged at exit */
};

static void on_commit(evutil_socket_t fd, short what, void *arg);

/* The store's size in the stats slot, after a change (comments_bytes). */
static void
publish_size(struct folio_lmdb *lm)
{
    if (lm->size_stat != NULL)
        folio_stat_set(lm->size_stat, folio_comments_used_bytes(lm->store));
}

static void
lmdb_close(struct folio_comments_be *be)
{
    struct folio_lmdb *lm = (struct folio_lmdb *)be;

    if (lm == NULL)
        return;
    /*
     * Posts still waiting (a QUIT): their connections are gone already;
     * nothing was acknowledged, nothing is stored.
     */
    if (lm->commits > 0)
        folio_log_info("comments: %llu posts in %llu group commits",
                       (unsigned long long)lm->posts,
                       (unsigned long long)lm->commits);
    if (lm->ev_commit != NULL)
        event_free(lm->ev_commit);
    folio_free(lm->p);
    folio_buf_free(&lm->arena);
    folio_free(lm->in);
    folio_free(lm->ends);
    folio_free(lm->codes);
    folio_buf_free(&lm->results);
    folio_ccache_free(lm->cache);
    folio_comments_close(lm->store);
    folio_free(lm);
}

static int
lmdb_open(struct folio_worker *w, struct folio_comments_be **out)
{
    struct folio_comments_opts opts;
    struct folio_lmdb *lm;
    char err[512];
    int rc;

    if ((lm = folio_calloc(1, sizeof(*lm))) == NULL)
        return FOLIO_ENOMEM;
    lm->be.ops = &folio_comments_lmdb;
    memset(&opts, 0, sizeof(opts));
    opts.max_size = w->cfg->comments_max_size;
    if ((rc = folio_comments_open(w->cfg->data_dir, &opts, &lm->store, err,
                                  sizeof(err))) != 0) {
        folio_log_errorx("%s", err);
        folio_free(lm);
        return rc;
    }
    lm->size_stat = w->slot != NULL ? &w->slot->ws_comments_bytes : NULL;
    lm->slot = w->slot;
    publish_size(lm);
    if (w->cfg->comments_cache_size > 0 &&
        folio_ccache_new(w->cfg->comments_cache_size, &lm->cache) != 0)
        lm->cache = NULL; /* no memory: lists walk the store, as without */
    /* ev_commit is only ever made active; EV_PERSIST spares its event_del. */
    if (w->cfg->comments_group_commit &&
        ((lm->ev_commit = event_new(w->base, -1, EV_PERSIST, on_commit, lm)) ==
             NULL ||
         folio_buf_init(&lm->arena, 65536, 0) != 0 ||
         folio_buf_init(&lm->results, 65536, 0) != 0)) {
        folio_log_errorx("comments: no memory for group commit");
        lmdb_close(&lm->be);
        return FOLIO_ENOMEM;
    }
    *out = &lm->be;
    return 0;
}

/* The RPC status of a store error (PROTOCOL.md section 2). */
static int
status_of(int rc)
{
    switch (rc) {
    case 0:
        return FOLIO_ST_OK;
    case FOLIO_EINVAL:
        return FOLIO_ST_INVALID_ARGUMENT;
    case FOLIO_ENOTFOUND:
        return FOLIO_ST_NOT_FOUND;
    case FOLIO_EFULL:
    case FOLIO_ETOOBIG:
    case FOLIO_ENOMEM:
        return FOLIO_ST_RESOURCE_EXHAUSTED;
    default:
        return FOLIO_ST_INTERNAL;
    }
}

/* A store error as the RPC error PROTOCOL.md section 2 gives it. */
static int
store_error(struct folio_call *call, int rc, const char *msg)
{
    return folio_call_error(call, status_of(rc), "%s", msg);
}

/* Make room for n posts in the commit's scratch arrays. */
static int
commit_room(struct folio_lmdb *lm, size_t n)
{
    void *a, *b, *c;

    if (n <= lm->in_cap)
        return 0;
    a = folio_realloc(lm->in, n * sizeof(*lm->in));
    if (a != NULL)
        lm->in = a;
    b = folio_realloc(lm->ends, n * sizeof(*lm->ends));
    if (b != NULL)
        lm->ends = b;
    c = folio_realloc(lm->codes, n * sizeof(*lm->codes));
    if (c != NULL)
        lm->codes = c;
    if (a == NULL || b == NULL || c == NULL)
        return -1;
    lm->in_cap = n;
    return 0;
}

/* Store the batch in one transaction, then release its replies. */
static void
commit_batch(struct folio_lmdb *lm)
{
    size_t n = lm->n, i, start;
    char err[256];
    int rc;

    if (n == 0)
        return;
    lm->commits++;
    lm->posts += n;
    folio_buf_reset(&lm->results);
    if (commit_room(lm, n) != 0) {
        rc = FOLIO_ENOMEM;
        snprintf(err, sizeof(err), "out of memory");
    } else {
        for (i = 0; i < n; i++) {
            const struct pending *p = &lm->p[i];
            const char *t = folio_buf_at(&lm->arena, p->off);

            lm->in[i].path = t;
            lm->in[i].path_len = p->path_len;
            lm->in[i].author = t + p->path_len;
            lm->in[i].author_len = p->author_len;
            lm->in[i].body = t + p->path_len + p->author_len;
            lm->in[i].body_len = p->body_len;
            lm->in[i].has_reply_to = p->has_reply_to;
            lm->in[i].reply_to = p->reply_to;
        }
        rc = folio_comments_post_batch(lm->store, lm->in, n, &lm->results,
                                       lm->ends, lm->codes, NULL, err,
                                       sizeof(err));
        if (rc == FOLIO_EFULL && n > 1) {
            /* Not all fit: one by one, so the ones that fit get in. */
            folio_buf_reset(&lm->results);
            for (i = 0; i < n; i++) {
                lm->codes[i] =
                    folio_comments_post(lm->store, &lm->in[i], &lm->results,
                                        NULL, err, sizeof(err));
                lm->ends[i] = folio_buf_mark(&lm->results);
            }
            rc = 0;
        }
        publish_size(lm); /* before the replies: a client sees it then */
    }
    for (i = 0, start = 0; i < n; i++) {
        int code = rc != 0 ? status_of(rc) : status_of(lm->codes[i]);

        if (code == 0)
            folio_hold_release(&lm->p[i].hold,
                               folio_buf_at(&lm->results, start),
                               lm->ends[i] - start, 0, NULL);
        else if (rc == 0 && lm->codes[i] == FOLIO_EINVAL)
            folio_hold_release(&lm->p[i].hold, NULL, 0, code,
                               FOLIO_COMMENTS_BAD_REPLY);
        else
            folio_hold_release(&lm->p[i].hold, NULL, 0, code, err);
        if (rc == 0)
            start = lm->ends[i];
    }
    lm->n = 0;
    folio_buf_reset(&lm->arena);
}

static void
on_commit(evutil_socket_t fd, short what, void *arg)
{
    commit_batch(arg);
}

/* Join the batch: copy the post's text and hold its reply. */
static int
enqueue(struct folio_lmdb *lm, struct folio_call *call,
        const struct folio_comment_in *in)
{
    size_t need = in->path_len + in->author_len + in->body_len, off;
    struct pending *p;

    if (lm->n > 0 && (lm->n >= BATCH_SOFT_COUNT ||
                      lm->arena.b_len + need > BATCH_SOFT_BYTES))
        commit_batch(lm);
    if (lm->n == lm->cap) {
        size_t cap = lm->cap ? lm->cap * 2 : 64;

        if ((p = folio_realloc(lm->p, cap * sizeof(*p))) == NULL)
            return -1;
        lm->p = p;
        lm->cap = cap;
    }
    off = folio_buf_mark(&lm->arena);
    if (folio_buf_append(&lm->arena, in->path, in->path_len) != 0 ||
        folio_buf_append(&lm->arena, in->author, in->author_len) != 0 ||
        folio_buf_append(&lm->arena, in->body, in->body_len) != 0) {
        folio_buf_truncate(&lm->arena, off);
        return -1;
    }
    p = &lm->p[lm->n];
    if (folio_call_hold(call, &p->hold) != 0) {
        folio_buf_truncate(&lm->arena, off);
        return -1;
    }
    p->off = off;
    p->path_len = (uint32_t)in->path_len;
    p->author_len = (uint32_t)in->author_len;
    p->body_len = (uint32_t)in->body_len;
    p->has_reply_to = in->has_reply_to;
    p->reply_to = in->reply_to;
    if (lm->n++ == 0)
        event_active(lm->ev_commit, EV_TIMEOUT, 1);
    return 0;
}

/*
 * The store's version, the cache emptied if it is not the one the cache
 * was filled at (see struct folio_lmdb); 0 when it cannot be told.
 */
static uint64_t
valid_version(struct folio_lmdb *lm, struct folio_worker_slot *slot)
{
    uint64_t v = folio_comments_version(lm->store);

    if (v != 0 && v != lm->cache_version) {
        folio_ccache_clear(lm->cache);
        lm->cache_version = v;
        if (slot != NULL)
            folio_stat_add(&slot->ws_comments_cache_invalidations, 1);
    }
    return v;
}

static struct folio_ccache *
lmdb_cache(struct folio_comments_be *be)
{
    struct folio_lmdb *lm = (struct folio_lmdb *)be;

    if (lm->cache == NULL || valid_version(lm, lm->slot) == 0)
        return NULL;
    return lm->cache;
}

static int
lmdb_list(struct folio_comments_be *be, struct folio_call *call,
          const char *path, uint32_t len)
{
    struct folio_lmdb *lm = (struct folio_lmdb *)be;
    struct folio_worker_slot *slot = call->w->slot; /* NULL in tests */
    char err[256], np[FOLIO_COMMENTS_NPATH_MAX];
    const void *hit;
    size_t nlen = 0, hlen, mark;
    uint64_t v = 0;
    int rc;

    if (lm->cache != NULL && (v = valid_version(lm, slot)) != 0 &&
        folio_comments_path_check(path, len, err, sizeof(err)) == 0) {
        nlen = folio_comments_normalize(path, len, np);
        if ((hit = folio_ccache_get(lm->cache, np, nlen, &hlen)) != NULL) {
            if (slot != NULL)
                folio_stat_add(&slot->ws_comments_cache_hits, 1);
            if (folio_buf_append(call->out, hit, hlen) != 0)
                return folio_call_error(call, FOLIO_ST_RESOURCE_EXHAUSTED,
                                        "reply too large for memory");
            return 0;
        }
        if (slot != NULL)
            folio_stat_add(&slot->ws_comments_cache_misses, 1);
    } else {
        v = 0; /* a bad path: the list says why; no cache: nothing kept */
    }
    mark = folio_buf_mark(call->out);
    rc = folio_comments_list(lm->store, path, len, call->out,
                             (size_t)call->w->cfg->max_message_bytes, NULL, err,
                             sizeof(err));
    if (rc != 0)
        return store_error(call, rc, err);
    /* Read at v or later: good while the version stays v (see above). */
    if (v != 0)
        (void)folio_ccache_put(lm->cache, np, nlen,
                               folio_buf_at(call->out, mark),
                               folio_buf_mark(call->out) - mark);
    return 0;
}

static int
lmdb_post(struct folio_comments_be *be, struct folio_call *call,
          const struct folio_comment_in *in)
{
    struct folio_lmdb *lm = (struct folio_lmdb *)be;
    char err[256];
    int rc;

    if (lm->ev_commit != NULL && enqueue(lm, call, in) == 0)
        return 0; /* answered by commit_batch */
    rc = folio_comments_post(lm->store, in, call->out, NULL, err, sizeof(err));
    publish_size(lm);
    return rc == 0 ? 0 : store_error(call, rc, err);
}

static int
lmdb_delete(struct folio_comments_be *be, struct folio_call *call, uint64_t id)
{
    struct folio_lmdb *lm = (struct folio_lmdb *)be;
    char err[256];
    int rc;

    rc = folio_comments_delete(lm->store, id, err, sizeof(err));
    publish_size(lm);
    if (rc != 0)
        return store_error(call, rc, err);
    return msgpack_pack_true(call->pk);
}

const struct folio_comments_backend folio_comments_lmdb = {
    "lmdb", lmdb_open, lmdb_close, lmdb_list, lmdb_post, lmdb_delete,
    lmdb_cache,
};
