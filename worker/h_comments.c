/*
 * h_comments.c - the comments.* methods (PROTOCOL.md section 3): their
 * params, then the backend (comments_backend.h) this worker uses: the
 * LMDB store of shm/comments.c, below, or PostgreSQL (comments_pg.c).
 * With LMDB each worker opens its own environment after fork.
 *
 * comments.list copies the stored, already-encoded comments straight into
 * the connection's output buffer.  comments.post answers only after its
 * write transaction is committed and synced.  With group commit (the
 * default), a post is validated and copied into this worker's batch and
 * its reply is held (folio_call_hold); once the loop has served every
 * connection that was ready, one write transaction stores the whole batch,
 * one synced commit makes it durable, and only then are the replies
 * released.  A batch that fails gets the error on every reply (a full
 * store is retried post by post, so the posts that fit get in).
 */
#include "config.h"

#include <stdio.h>
#include <string.h>

#include <event2/event.h>

#include "shm/comments.h"
#include "src/page.h"
#include "src/alloc.h"
#include "src/buf.h"
#include "src/conf.h"
#include "src/log.h"
#include "worker/comments_backend.h"
#include "worker/comments_cache.h"
#include "worker/conn.h"
#include "worker/dispatch.h"
#include "worker/h_comments.h"
#include "worker/worker_int.h"

#define BATCH_SOFT_COUNT 256        /* commit early past this many posts */
#define BATCH_SOFT_BYTES (4u << 20) /* or this much text */

static struct folio_comments *store; /* this worker's handle */

/* A post waiting for its batch's commit. */
struct pending {
    struct folio_hold hold;
    size_t off; /* path, author, body back to back in the batch's arena */
    uint32_t path_len, author_len, body_len;
};

struct batch {
    struct pending *p;
    size_t n, cap;
    struct folio_buf arena; /* copies of the posts' text */
};

static struct {
    int on;
    struct event *ev;  /* activated by a batch's first post */
    struct batch b[2]; /* filling, and the one being committed */
    int cur;
    int committing;
    struct folio_comment_in *in; /* a commit's posts */
    size_t *ends;                /* where each one's comment ends */
    int *codes;                  /* each one's status (fallback) */
    size_t in_cap;
    struct folio_buf results; /* the stored comments of a commit */
    uint64_t commits, posts;  /* logged at exit */
} gc;

static void on_commit(evutil_socket_t fd, short what, void *arg);

static const struct folio_comments_backend lmdb_backend;
static const struct folio_comments_backend *be = &lmdb_backend;

/* Where the store's size goes: this worker's stats slot. */
static _Atomic uint64_t *size_stat;

/* The store's size in the stats slot, after a change (comments_bytes). */
static void
publish_size(void)
{
    if (size_stat != NULL && store != NULL)
        folio_stat_set(size_stat, folio_comments_used_bytes(store));
}

/*
 * The LMDB backend's page cache: each page's whole comments.list reply,
 * as the postgres backend keeps it (comments_cache.h), valid while the
 * store's version (folio_comments_version: its last committed transaction
 * id, whoever committed) is the one it was filled at.  Any post or delete,
 * in any worker, moves the version and empties the cache at the next
 * list: never stale, and a hit is one lookup and one copy where a miss
 * walks the page's records with a cursor (15,600 instructions for 50).
 */
static struct folio_ccache *lcache;
static uint64_t lcache_version;

static int
lmdb_init(struct folio_worker *w)
{
    struct folio_comments_opts opts;
    char err[512];
    int rc;

    memset(&opts, 0, sizeof(opts));
    opts.max_size = w->cfg->comments_max_size;
    if ((rc = folio_comments_open(w->cfg->data_dir, &opts, &store, err,
                                  sizeof(err))) != 0) {
        folio_log_errorx("%s", err);
        return rc;
    }
    memset(&gc, 0, sizeof(gc));
    size_stat = w->slot != NULL ? &w->slot->ws_comments_bytes : NULL;
    publish_size();
    lcache_version = 0;
    if (w->cfg->comments_cache_size > 0 &&
        folio_ccache_new(w->cfg->comments_cache_size, &lcache) != 0)
        lcache = NULL; /* no memory: lists walk the store, as without */
    if (!w->cfg->comments_group_commit)
        return 0;
    if ((gc.ev = event_new(w->base, -1, 0, on_commit, NULL)) == NULL ||
        folio_buf_init(&gc.b[0].arena, 65536, 0) != 0 ||
        folio_buf_init(&gc.b[1].arena, 65536, 0) != 0 ||
        folio_buf_init(&gc.results, 65536, 0) != 0) {
        folio_log_errorx("comments: no memory for group commit");
        be->fini(w);
        return FOLIO_ENOMEM;
    }
    gc.on = 1;
    return 0;
}

static void
lmdb_fini(struct folio_worker *w)
{
    int i;

    /*
     * Posts still waiting (a QUIT): their connections are gone already;
     * nothing was acknowledged, nothing is stored.
     */
    if (gc.commits > 0)
        folio_log_info("comments: %llu posts in %llu group commits",
                       (unsigned long long)gc.posts,
                       (unsigned long long)gc.commits);
    if (gc.ev != NULL)
        event_free(gc.ev);
    for (i = 0; i < 2; i++) {
        folio_free(gc.b[i].p);
        folio_buf_free(&gc.b[i].arena);
    }
    folio_free(gc.in);
    folio_free(gc.ends);
    folio_free(gc.codes);
    folio_buf_free(&gc.results);
    memset(&gc, 0, sizeof(gc));
    folio_ccache_free(lcache);
    lcache = NULL;
    folio_comments_close(store);
    store = NULL;
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
commit_room(size_t n)
{
    void *a, *b, *c;

    if (n <= gc.in_cap)
        return 0;
    a = folio_realloc(gc.in, n * sizeof(*gc.in));
    if (a != NULL)
        gc.in = a;
    b = folio_realloc(gc.ends, n * sizeof(*gc.ends));
    if (b != NULL)
        gc.ends = b;
    c = folio_realloc(gc.codes, n * sizeof(*gc.codes));
    if (c != NULL)
        gc.codes = c;
    if (a == NULL || b == NULL || c == NULL)
        return -1;
    gc.in_cap = n;
    return 0;
}

/*
 * Store the filling batch in one transaction, then release its replies.
 * Posts that a release lets through go to the other batch.
 */
static void
commit_batch(void)
{
    struct batch *b = &gc.b[gc.cur];
    size_t n = b->n, i, start;
    char err[256];
    int rc;

    if (n == 0 || gc.committing)
        return;
    gc.committing = 1;
    gc.cur ^= 1;
    gc.commits++;
    gc.posts += n;
    folio_buf_reset(&gc.results);
    if (commit_room(n) != 0) {
        rc = FOLIO_ENOMEM;
        snprintf(err, sizeof(err), "out of memory");
    } else {
        for (i = 0; i < n; i++) {
            const char *t = folio_buf_at(&b->arena, b->p[i].off);

            gc.in[i].path = t;
            gc.in[i].path_len = b->p[i].path_len;
            gc.in[i].author = t + b->p[i].path_len;
            gc.in[i].author_len = b->p[i].author_len;
            gc.in[i].body = t + b->p[i].path_len + b->p[i].author_len;
            gc.in[i].body_len = b->p[i].body_len;
            gc.codes[i] = 0;
        }
        rc = folio_comments_post_batch(store, gc.in, n, &gc.results, gc.ends,
                                       NULL, err, sizeof(err));
        if (rc == FOLIO_EFULL && n > 1) {
            /* Not all fit: one by one, so the ones that fit get in. */
            folio_buf_reset(&gc.results);
            for (i = 0; i < n; i++) {
                gc.codes[i] = folio_comments_post(store, &gc.in[i], &gc.results,
                                                  NULL, err, sizeof(err));
                gc.ends[i] = folio_buf_mark(&gc.results);
            }
            rc = 0;
        }
        publish_size(); /* before the replies: a client sees it then */
    }
    for (i = 0, start = 0; i < n; i++) {
        int code = rc != 0 ? status_of(rc) : status_of(gc.codes[i]);

        if (code == 0)
            folio_hold_release(&b->p[i].hold, folio_buf_at(&gc.results, start),
                               gc.ends[i] - start, 0, NULL);
        else
            folio_hold_release(&b->p[i].hold, NULL, 0, code, err);
        if (rc == 0)
            start = gc.ends[i];
    }
    b->n = 0;
    folio_buf_reset(&b->arena);
    gc.committing = 0;
}

static void
on_commit(evutil_socket_t fd, short what, void *arg)
{
    commit_batch();
}

/* Join the batch: copy the post's text and hold its reply. */
static int
enqueue(struct folio_call *call, const struct folio_comment_in *in)
{
    struct batch *b = &gc.b[gc.cur];
    size_t need = in->path_len + in->author_len + in->body_len, off;
    struct pending *p;

    if (b->n > 0 && !gc.committing &&
        (b->n >= BATCH_SOFT_COUNT ||
         b->arena.b_len + need > BATCH_SOFT_BYTES)) {
        commit_batch();
        b = &gc.b[gc.cur];
    }
    if (b->n == b->cap) {
        size_t cap = b->cap ? b->cap * 2 : 64;

        if ((p = folio_realloc(b->p, cap * sizeof(*p))) == NULL)
            return -1;
        b->p = p;
        b->cap = cap;
    }
    off = folio_buf_mark(&b->arena);
    if (folio_buf_append(&b->arena, in->path, in->path_len) != 0 ||
        folio_buf_append(&b->arena, in->author, in->author_len) != 0 ||
        folio_buf_append(&b->arena, in->body, in->body_len) != 0) {
        folio_buf_truncate(&b->arena, off);
        return -1;
    }
    p = &b->p[b->n];
    if (folio_call_hold(call, &p->hold) != 0) {
        folio_buf_truncate(&b->arena, off);
        return -1;
    }
    p->off = off;
    p->path_len = (uint32_t)in->path_len;
    p->author_len = (uint32_t)in->author_len;
    p->body_len = (uint32_t)in->body_len;
    if (b->n++ == 0)
        event_active(gc.ev, EV_TIMEOUT, 1);
    return 0;
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
    return be->list(call, path, len);
}

static int
lmdb_list(struct folio_call *call, const char *path, uint32_t len)
{
    struct folio_worker_slot *slot = call->w->slot; /* NULL in tests */
    char err[256], np[FOLIO_COMMENTS_NPATH_MAX];
    const void *hit;
    size_t nlen = 0, hlen, mark;
    uint64_t v = 0;
    int rc;

    if (store == NULL)
        return folio_call_error(call, FOLIO_ST_UNAVAILABLE,
                                "the comments store is not open");
    if (lcache != NULL && (v = folio_comments_version(store)) != 0 &&
        folio_comments_path_check(path, len, err, sizeof(err)) == 0) {
        if (v != lcache_version) {
            folio_ccache_clear(lcache);
            lcache_version = v;
            if (slot != NULL)
                folio_stat_add(&slot->ws_comments_cache_invalidations, 1);
        }
        nlen = folio_comments_normalize(path, len, np);
        if ((hit = folio_ccache_get(lcache, np, nlen, &hlen)) != NULL) {
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
    rc = folio_comments_list(store, path, len, call->out,
                             (size_t)call->w->cfg->max_message_bytes, NULL, err,
                             sizeof(err));
    if (rc != 0)
        return store_error(call, rc, err);
    /* Read at v or later: good while the version stays v (see above). */
    if (v != 0)
        (void)folio_ccache_put(lcache, np, nlen, folio_buf_at(call->out, mark),
                               folio_buf_mark(call->out) - mark);
    return 0;
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
    if ((rc = folio_comments_validate(&in, err, sizeof(err))) != 0)
        return store_error(call, rc, err);
    return be->post(call, &in);
}

static int
lmdb_post(struct folio_call *call, const struct folio_comment_in *in)
{
    char err[256];
    int rc;

    if (store == NULL)
        return folio_call_error(call, FOLIO_ST_UNAVAILABLE,
                                "the comments store is not open");
    if (gc.on && enqueue(call, in) == 0)
        return 0; /* answered by commit_batch */
    rc = folio_comments_post(store, in, call->out, NULL, err, sizeof(err));
    publish_size();
    return rc == 0 ? 0 : store_error(call, rc, err);
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
    return be->del(call, id);
}

static int
lmdb_delete(struct folio_call *call, uint64_t id)
{
    char err[256];
    int rc;

    if (store == NULL)
        return folio_call_error(call, FOLIO_ST_UNAVAILABLE,
                                "the comments store is not open");
    rc = folio_comments_delete(store, id, err, sizeof(err));
    publish_size();
    if (rc != 0)
        return store_error(call, rc, err);
    return msgpack_pack_true(call->pk);
}

static const struct folio_comments_backend lmdb_backend = {
    "lmdb", lmdb_init, lmdb_fini, lmdb_list, lmdb_post, lmdb_delete,
};

int
folio_h_comments_init(struct folio_worker *w)
{
    be = w->cfg->comments_backend == FOLIO_COMMENTS_POSTGRES
             ? &folio_comments_pg
             : &lmdb_backend;
    return be->init(w);
}

void
folio_h_comments_fini(struct folio_worker *w)
{
    be->fini(w);
}
