/*
 * comments_lmdb.c - the comments service on this host's LMDB store
 * (comments_backend = lmdb, the default; shm/comments.c): one of the two
 * backends of comments_backend.h, beside comments_pg.c.  Each worker
 * opens its own environment after fork.
 *
 * comments.list answers a page's whole reply from the page cache (sent by
 * reference when it is large: every connection listing it points at the
 * one copy), or, on a miss, reads it from the store into the cache first;
 * without a cache it copies the stored, already-encoded comments straight
 * into the connection's output buffer.  Reads run in the loop.
 *
 * Writes never do: comments.post and comments.delete are held
 * (folio_call_hold) and done by the worker's writer thread
 * (comments_writer.c), which alone waits for LMDB's writer lock, so that
 * a process holding it (stopped mid-commit) never stops this loop.  A
 * post answers only after its write transaction is committed and synced.
 * With group commit (the default) the posts of a turn of the loop join
 * one batch, copied into the batch's arena; the batch goes to the writer
 * when it is free (posts that come meanwhile fill the next one), one
 * transaction and one synced commit store it, and only then are the
 * replies released.  A batch that fails gets the error on every reply (a
 * full store is retried post by post, so the posts that fit get in).  A
 * batch not written within comments_timeout (the lock held elsewhere) is
 * given up: its posts are answered 14, and nothing of it is written;
 * while the writer still waits for that lock, new posts are answered 14
 * at once.  Called through the backend's table by h_comments.c; calls
 * comments_writer.c, conn.c (held replies) and dispatch.c.
 */
#include "config.h"

#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/event.h>

#include "shm/comments.h"
#include "src/alloc.h"
#include "src/buf.h"
#include "src/bytes.h"
#include "src/clock.h"
#include "src/conf.h"
#include "src/log.h"
#include "worker/comments_backend.h"
#include "worker/comments_cache.h"
#include "worker/comments_writer.h"
#include "worker/conn.h"
#include "worker/dispatch.h"
#include "worker/worker_int.h"

#define BATCH_SOFT_COUNT 256        /* a batch holds this many posts */
#define BATCH_SOFT_BYTES (4u << 20) /* or this much text */
#define BATCH_FIRST_BYTES 65536     /* its buffers' first size */
#define BATCHES_KEPT 4              /* empty batches kept for reuse */
#define ENCODED_EXTRA 128 /* a stored comment's keys and numbers, at most */

/* A post waiting for its batch's commit. */
struct pending {
    struct folio_hold hold;
    size_t off; /* path, author, body, key back to back in the arena */
    uint32_t path_len, author_len, body_len, key_len; /* key_len 0: none */
    int has_reply_to;
    uint64_t reply_to;
};

/*
 * A batch: the writer's job (first, so that a job is its batch) and what
 * the loop keeps for it.  Lent to the writer thread while it is handed
 * over (comments_writer.h): the loop touches nothing of it then.
 */
struct batch {
    struct folio_wjob job;
    struct batch *next; /* lm->out: handed over, in order */
    struct pending *p;  /* posts; for a delete, p[0] holds its call */
    size_t n, cap;
    struct folio_buf arena;      /* copies of the posts' text */
    struct folio_comment_in *in; /* the posts, as the store takes them */
    size_t *ends;                /* where each one's comment ends */
    int *codes;                  /* each one's status (fallback) */
    size_t in_cap;
    struct folio_buf results; /* the stored comments */
    int sync;   /* a call outside a connection waits for it (write_now) */
    int synced; /* ... and it is back */
};

/* This worker's LMDB backend. */
struct folio_lmdb {
    struct folio_comments_be be; /* first: what h_comments.c holds */
    struct folio_worker *w;
    struct folio_comments *store;
    _Atomic uint64_t *size_stat; /* comments_bytes in the slot; NULL: none */
    /*
     * The page cache: each page's whole comments.list reply, as the
     * postgres backend keeps it (comments_cache.h), valid while the
     * store's version (folio_comments_version: its last committed
     * transaction id, whoever committed) is the one it was filled at.  Any
     * post or delete, in any worker, moves the version and empties the
     * cache at the next list: never stale, and a hit is one lookup (and,
     * for a large page, a reference, no copy) where a miss walks the
     * page's records with a cursor (15,600 instructions for 50).
     */
    struct folio_ccache *cache; /* NULL: none */
    uint64_t cache_version;
    /* The writer and its batches. */
    struct folio_writer *wr;
    int efd;                 /* its eventfd */
    struct event *ev_done;   /* on efd: jobs given back */
    struct event *ev_commit; /* the turn's end: hand the open batch over */
    struct event *ev_late;   /* the nearest deadline */
    struct batch *open;      /* posts of this turn, not handed over */
    struct batch *out, *out_tail; /* handed over, in order */
    struct batch *free_batches;
    int nfree_batches;
    int nout;
    int group;               /* comments_group_commit */
    int stuck;               /* a batch given up while the writer waited
                                for the lock: it waits still */
    int maint;               /* a reopen or remap asked of the writer */
    uint64_t commits, posts; /* logged at exit */
};

static void on_done(evutil_socket_t fd, short what, void *arg);
static void on_commit(evutil_socket_t fd, short what, void *arg);
static void on_late(evutil_socket_t fd, short what, void *arg);
static int write_now(struct folio_lmdb *lm, struct folio_call *call,
                     struct batch *b);

/* The store's size in the stats slot, after a change (comments_bytes). */
static void
publish_size(struct folio_lmdb *lm)
{
    if (lm->size_stat != NULL)
        folio_stat_set(lm->size_stat, folio_comments_used_bytes(lm->store));
}

/* ---- batches -------------------------------------------------------- */

static void
batch_free(struct batch *b)
{
    if (b == NULL)
        return;
    folio_free(b->p);
    folio_buf_free(&b->arena);
    folio_free(b->in);
    folio_free(b->ends);
    folio_free(b->codes);
    folio_buf_free(&b->results);
    folio_free(b);
}

/* An empty batch of `kind`, or NULL (no memory). */
static struct batch *
batch_get(struct folio_lmdb *lm, int kind)
{
    struct batch *b = lm->free_batches;

    if (b != NULL) {
        lm->free_batches = b->next;
        lm->nfree_batches--;
    } else if ((b = folio_calloc(1, sizeof(*b))) == NULL ||
               folio_buf_init(&b->arena, BATCH_FIRST_BYTES, 0) != 0 ||
               folio_buf_init(&b->results, BATCH_FIRST_BYTES, 0) != 0) {
        batch_free(b);
        return NULL;
    }
    b->next = NULL;
    b->n = 0;
    b->sync = b->synced = 0;
    memset(&b->job, 0, sizeof(b->job));
    b->job.kind = kind;
    b->job.deadline_ms =
        folio_mono_ms() + lm->w->cfg->comments_timeout_ms;
    folio_buf_reset(&b->arena);
    folio_buf_reset(&b->results);
    return b;
}

static void
batch_put(struct folio_lmdb *lm, struct batch *b)
{
    /*
     * Keep one with the buffers it grew to, and a few more at their
     * first size: posts of several connections in flight at once, each
     * its own batch (comments_group_commit off, or a slow writer), then
     * allocate nothing; a burst's larger others go.
     */
    if (b->arena.b_cap > BATCH_SOFT_BYTES ||
        lm->nfree_batches >= BATCHES_KEPT ||
        (lm->free_batches != NULL && (b->arena.b_cap > BATCH_FIRST_BYTES ||
                                      b->results.b_cap > BATCH_FIRST_BYTES))) {
        batch_free(b);
        return;
    }
    b->next = lm->free_batches;
    lm->free_batches = b;
    lm->nfree_batches++;
}

/* Room for n posts in b's arrays. */
static int
batch_room(struct batch *b, size_t n)
{
    void *p;

    if (n > b->cap) {
        size_t cap = b->cap ? b->cap * 2 : 64;

        if (cap < n)
            cap = n;
        if ((p = folio_realloc(b->p, cap * sizeof(*b->p))) == NULL)
            return -1;
        b->p = p;
        b->cap = cap;
    }
    if (n > b->in_cap) {
        size_t cap = b->cap;

        if ((p = folio_realloc(b->in, cap * sizeof(*b->in))) == NULL)
            return -1;
        b->in = p;
        if ((p = folio_realloc(b->ends, cap * sizeof(*b->ends))) == NULL)
            return -1;
        b->ends = p;
        if ((p = folio_realloc(b->codes, cap * sizeof(*b->codes))) == NULL)
            return -1;
        b->codes = p;
        b->in_cap = cap;
    }
    return 0;
}

/* The earliest deadline of what waits (0: nothing): the timer's. */
static void
arm_late(struct folio_lmdb *lm)
{
    uint64_t d = 0, now;
    struct timeval tv;

    if (lm->open != NULL)
        d = lm->open->job.deadline_ms;
    if (lm->out != NULL && (d == 0 || lm->out->job.deadline_ms < d))
        d = lm->out->job.deadline_ms;
    if (d == 0) {
        evtimer_del(lm->ev_late);
        return;
    }
    now = folio_mono_ms();
    d = d > now ? d - now : 0;
    tv.tv_sec = (time_t)(d / 1000);
    tv.tv_usec = (suseconds_t)(d % 1000) * 1000;
    evtimer_add(lm->ev_late, &tv);
}

/* Lend batch b to the writer, last in line. */
static void
hand_over(struct folio_lmdb *lm, struct batch *b)
{
    size_t i, need = 0;

    if (b->job.kind == FOLIO_WJ_POSTS) {
        const char *t;

        for (i = 0; i < b->n; i++) {
            const struct pending *p = &b->p[i];

            t = folio_buf_at(&b->arena, p->off);
            memset(&b->in[i], 0, sizeof(b->in[i]));
            b->in[i].path = t;
            b->in[i].path_len = p->path_len;
            b->in[i].author = t + p->path_len;
            b->in[i].author_len = p->author_len;
            b->in[i].body = t + p->path_len + p->author_len;
            b->in[i].body_len = p->body_len;
            b->in[i].has_reply_to = p->has_reply_to;
            b->in[i].reply_to = p->reply_to;
            if (p->key_len > 0) {
                b->in[i].key = t + p->path_len + p->author_len + p->body_len;
                b->in[i].key_len = p->key_len;
            }
            b->codes[i] = 0;
            need += p->path_len + p->author_len + p->body_len + ENCODED_EXTRA;
        }
        /* Room made here: the writer's appends reallocate nothing. */
        (void)folio_buf_reserve(&b->results, need);
        b->job.in = b->in;
        b->job.n = b->n;
        b->job.results = &b->results;
        b->job.ends = b->ends;
        b->job.codes = b->codes;
    }
    if (lm->out_tail != NULL)
        lm->out_tail->next = b;
    else
        lm->out = b;
    lm->out_tail = b;
    b->next = NULL;
    lm->nout++;
    folio_writer_submit(lm->wr, &b->job);
    arm_late(lm);
}

/* Take b off lm->out (given back by the writer, or cancelled queued). */
static void
out_remove(struct folio_lmdb *lm, struct batch *b)
{
    struct batch **pp = &lm->out;

    while (*pp != NULL && *pp != b)
        pp = &(*pp)->next;
    if (*pp == NULL)
        return;
    *pp = b->next;
    if (lm->out_tail == b) {
        struct batch *t = lm->out;

        while (t != NULL && t->next != NULL)
            t = t->next;
        lm->out_tail = t;
    }
    b->next = NULL;
    lm->nout--;
}

/* ---- answers -------------------------------------------------------- */

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
    case FOLIO_EAGAIN:
    case FOLIO_ECANCELED:
        return FOLIO_ST_UNAVAILABLE;
    case FOLIO_EKEYUSED:
        return FOLIO_ST_FAILED_PRECONDITION;
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

/* Answer every call of b with error code/msg. */
static void
fail_batch(struct batch *b, int code, const char *msg)
{
    size_t i;

    for (i = 0; i < b->n; i++)
        folio_hold_release(&b->p[i].hold, NULL, 0, code, msg);
    b->n = 0;
}

/* The writer gave b back, done: answer its calls. */
static void
complete(struct folio_lmdb *lm, struct batch *b)
{
    const struct folio_wjob *j = &b->job;
    size_t i, start;
    int code;

    if (j->kind == FOLIO_WJ_MAINT)
        return;
    if (j->kind == FOLIO_WJ_DELETE) {
        if (j->rc == 0)
            folio_hold_release(&b->p[0].hold, "\xc3", 1, 0, NULL); /* true */
        else
            folio_hold_release(&b->p[0].hold, NULL, 0, status_of(j->rc),
                               j->err);
        publish_size(lm);
        return;
    }
    lm->commits++;
    lm->posts += b->n;
    publish_size(lm); /* before the replies: a client sees it then */
    for (i = 0, start = 0; i < b->n; i++) {
        code = j->rc != 0 ? status_of(j->rc) : status_of(b->codes[i]);
        if (code == 0)
            folio_hold_release(&b->p[i].hold,
                               folio_buf_at(&b->results, start),
                               b->ends[i] - start, 0, NULL);
        else if (j->rc == 0 && b->codes[i] == FOLIO_EINVAL)
            folio_hold_release(&b->p[i].hold, NULL, 0, code,
                               FOLIO_COMMENTS_BAD_REPLY);
        else if (j->rc == 0 && b->codes[i] == FOLIO_EKEYUSED)
            folio_hold_release(&b->p[i].hold, NULL, 0, code,
                               FOLIO_COMMENTS_KEY_USED);
        else
            folio_hold_release(&b->p[i].hold, NULL, 0, code, j->err);
        if (j->rc == 0)
            start = b->ends[i];
    }
    b->n = 0;
}

/* What a post given up on is told: nothing of it was written. */
static const char *
late_msg(struct folio_lmdb *lm, int waiting, char *buf, size_t len)
{
    snprintf(buf, len,
             waiting ? "the comments store's writer lock has been held by "
                       "another process for longer than comments_timeout "
                       "(%u ms): not stored, try again"
                     : "the comments store's writer is busy for longer "
                       "than comments_timeout (%u ms): not stored, try "
                       "again",
             lm->w->cfg->comments_timeout_ms);
    return buf;
}

static void
on_done(evutil_socket_t fd, short what, void *arg)
{
    struct folio_lmdb *lm = arg;
    struct folio_wjob *j, *next;

    for (j = folio_writer_done(lm->wr); j != NULL; j = next) {
        struct batch *b = (struct batch *)j;

        next = j->next;
        out_remove(lm, b);
        if (b->sync) {
            b->synced = 1; /* write_now answers it */
            continue;
        }
        if (atomic_load(&j->state) == FOLIO_WJ_CANCELLED)
            lm->stuck = 0; /* answered already; the writer is back */
        else
            complete(lm, b);
        if (j->kind == FOLIO_WJ_MAINT)
            lm->maint = 0;
        batch_put(lm, b);
    }
    /* Free again: the posts that came meanwhile, as one batch. */
    if (lm->open != NULL && lm->nout == 0)
        hand_over(lm, lm->open), lm->open = NULL;
    arm_late(lm);
}

static void
on_commit(evutil_socket_t fd, short what, void *arg)
{
    struct folio_lmdb *lm = arg;

    /* The writer busy: this turn's posts wait to join the next turn's. */
    if (lm->open != NULL && (lm->nout == 0 || !lm->group)) {
        hand_over(lm, lm->open);
        lm->open = NULL;
    }
}

/* Past the deadline: give up on what the writer has not started writing. */
static void
on_late(evutil_socket_t fd, short what, void *arg)
{
    struct folio_lmdb *lm = arg;
    uint64_t now = folio_mono_ms();
    struct batch *b, *next;
    /* Whether what waits, waits for a lock held elsewhere. */
    int r, held = folio_writer_waiting_since(lm->wr) != 0;
    char msg[256];

    if (lm->open != NULL && lm->open->job.deadline_ms <= now) {
        fail_batch(lm->open, FOLIO_ST_UNAVAILABLE,
                   late_msg(lm, held, msg, sizeof(msg)));
        batch_put(lm, lm->open);
        lm->open = NULL;
    }
    for (b = lm->out; b != NULL; b = next) {
        next = b->next;
        if (b->job.deadline_ms > now || b->n == 0)
            continue;
        if ((r = folio_writer_cancel(lm->wr, &b->job)) == 0)
            continue; /* writing: it will be done */
        fail_batch(b, FOLIO_ST_UNAVAILABLE,
                   late_msg(lm, r == 2 || held, msg, sizeof(msg)));
        if (b->job.kind == FOLIO_WJ_DELETE)
            b->n = 0;
        if (r == 1) {
            out_remove(lm, b); /* never started: ours again */
            batch_put(lm, b);
        } else {
            lm->stuck = 1; /* it comes back once it has the lock */
            folio_log_warnx("comments: %s", msg);
        }
    }
    arm_late(lm);
}

/* ---- the backend ---------------------------------------------------- */

static void
lmdb_close(struct folio_comments_be *be)
{
    struct folio_lmdb *lm = (struct folio_lmdb *)be;
    struct batch *b;
    int abandoned = 0;

    if (lm == NULL)
        return;
    /*
     * Posts still waiting (a QUIT): their connections are gone already;
     * nothing was acknowledged.  The writer ends once its queue is done,
     * unless it still waits for the lock: then it is left to the exit,
     * with the store it uses.
     */
    if (lm->commits > 0)
        folio_log_info("comments: %llu posts in %llu group commits",
                       (unsigned long long)lm->posts,
                       (unsigned long long)lm->commits);
    if (lm->wr != NULL && folio_writer_stop(lm->wr) != 0)
        abandoned = 1;
    if (lm->ev_done != NULL)
        event_free(lm->ev_done);
    if (lm->ev_commit != NULL)
        event_free(lm->ev_commit);
    if (lm->ev_late != NULL)
        event_free(lm->ev_late);
    if (abandoned)
        return; /* the thread still points at all of it */
    batch_free(lm->open);
    while ((b = lm->out) != NULL) {
        lm->out = b->next;
        batch_free(b);
    }
    while ((b = lm->free_batches) != NULL) {
        lm->free_batches = b->next;
        batch_free(b);
    }
    folio_ccache_free(lm->cache);
    folio_comments_close(lm->store);
    folio_free(lm);
}

static int
lmdb_open(struct folio_worker *w, struct folio_comments_be **out)
{
    const struct folio_config *cfg = w->cfg;
    struct folio_comments_opts opts;
    struct folio_lmdb *lm;
    char err[512];
    int rc, fd;

    if ((lm = folio_calloc(1, sizeof(*lm))) == NULL)
        return FOLIO_ENOMEM;
    lm->be.ops = &folio_comments_lmdb;
    lm->w = w;
    lm->group = cfg->comments_group_commit;
    memset(&opts, 0, sizeof(opts));
    opts.max_size = cfg->comments_max_size;
    /*
     * The whole ceiling mapped at once (address space, not memory): the
     * map is never grown under the loop's reads while the writer writes.
     */
    opts.map_init = cfg->comments_max_size;
    opts.threaded = 1;
    /* One rule for both backends: never shorter than comments_timeout. */
    opts.key_window_ms = cfg->comments_key_window_ms > cfg->comments_timeout_ms
                             ? cfg->comments_key_window_ms
                             : cfg->comments_timeout_ms;
    if ((rc = folio_comments_open(cfg->data_dir, &opts, &lm->store, err,
                                  sizeof(err))) != 0) {
        folio_log_errorx("%s", err);
        folio_free(lm);
        return rc;
    }
    lm->size_stat = w->slot != NULL ? &w->slot->ws_comments_bytes : NULL;
    publish_size(lm);
    if (cfg->comments_cache_size > 0 &&
        folio_ccache_new(cfg->comments_cache_size, &lm->cache) != 0)
        lm->cache = NULL; /* no memory: lists walk the store, as without */
    /* ev_commit is only ever made active; EV_PERSIST spares its event_del. */
    if ((rc = folio_writer_start(lm->store, w->slot, &lm->wr, &fd)) != 0 ||
        (lm->efd = fd,
         lm->ev_done = event_new(w->base, fd, EV_READ | EV_PERSIST, on_done,
                                 lm)) == NULL ||
        event_add(lm->ev_done, NULL) != 0 ||
        (lm->ev_commit = event_new(w->base, -1, EV_PERSIST, on_commit, lm)) ==
            NULL ||
        (lm->ev_late = evtimer_new(w->base, on_late, lm)) == NULL) {
        folio_log_errorx("comments: cannot set up the writer");
        lmdb_close(&lm->be);
        return rc != 0 ? rc : FOLIO_ENOMEM;
    }
    *out = &lm->be;
    return 0;
}

/* A read found the store needing its writer: ask for it, once. */
static void
ask_maintenance(struct folio_lmdb *lm)
{
    struct batch *b;

    if (lm->maint || (b = batch_get(lm, FOLIO_WJ_MAINT)) == NULL)
        return;
    lm->maint = 1;
    b->job.deadline_ms = UINT64_MAX; /* nobody waits for it */
    hand_over(lm, b);
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

/* The page cache as valid now, for the HTTP face's JSON; NULL: none. */
static struct folio_ccache *
lmdb_cache(struct folio_comments_be *be)
{
    struct folio_lmdb *lm = (struct folio_lmdb *)be;

    if (lm->cache == NULL || valid_version(lm, lm->w->slot) == 0)
        return NULL;
    return lm->cache;
}

/*
 * The page cache, valid for the store's version now (emptied when a
 * commit, in any worker, moved it), with path normalized into np: NULL
 * when there is none, or the path is bad (the list says why).
 */
static struct folio_ccache *
cache_for(struct folio_lmdb *lm, struct folio_worker_slot *slot,
          const char *path, uint32_t len, char *np, size_t *nlen)
{
    char err[256];

    if (lm->cache == NULL || valid_version(lm, slot) == 0 ||
        folio_comments_path_check(path, len, err, sizeof(err)) != 0)
        return NULL;
    *nlen = folio_comments_normalize(path, len, np);
    return lm->cache;
}

static size_t
lmdb_list_size(struct folio_comments_be *be, struct folio_call *call,
               const char *path, uint32_t len)
{
    struct folio_lmdb *lm = (struct folio_lmdb *)be;
    char err[256], np[FOLIO_COMMENTS_NPATH_MAX];
    struct folio_ccache *cache;
    struct folio_bytes *b;
    size_t nlen = 0, size;

    cache = cache_for(lm, call->w->slot, path, len, np, &nlen);
    if (cache != NULL && (b = folio_ccache_get(cache, np, nlen)) != NULL) {
        call->page = b; /* the list is this page (lmdb_list) */
        if (b->fb_len < FOLIO_REF_MIN)
            return b->fb_len; /* copied */
        /* by reference: it counts once, for all of its senders */
        return FOLIO_REPLY_BYREF | (b->fb_outrefs > 0 ? 0 : b->fb_len);
    }
    /* Not cached: its size, from a walk of its records (no copy). */
    if (folio_comments_list_size(lm->store, path, len,
                                 (size_t)call->w->cfg->max_message_bytes,
                                 &size, err, sizeof(err)) != 0)
        return FOLIO_REPLY_SMALL; /* the list fails */
    if (cache != NULL && size >= FOLIO_REF_MIN)
        return FOLIO_REPLY_BYREF | size; /* cached, then sent from there */
    return size;
}

static int
lmdb_list(struct folio_comments_be *be, struct folio_call *call,
          const char *path, uint32_t len)
{
    struct folio_lmdb *lm = (struct folio_lmdb *)be;
    struct folio_worker_slot *slot = call->w->slot; /* NULL in tests */
    char err[256], np[FOLIO_COMMENTS_NPATH_MAX];
    struct folio_ccache *cache = NULL;
    struct folio_bytes *b;
    size_t nlen = 0, max = (size_t)call->w->cfg->max_message_bytes;
    int rc;

    b = call->page; /* the page reply_size found (dispatch.h), or NULL */
    if (b == NULL &&
        (cache = cache_for(lm, slot, path, len, np, &nlen)) == NULL) {
        rc = folio_comments_list(lm->store, path, len, call->out, max, NULL,
                                 err, sizeof(err));
        goto done;
    }
    if (b != NULL || (b = folio_ccache_get(cache, np, nlen)) != NULL) {
        if (slot != NULL)
            folio_stat_add(&slot->ws_comments_cache_hits, 1);
        return folio_call_page(call, b);
    }
    if (slot != NULL)
        folio_stat_add(&slot->ws_comments_cache_misses, 1);
    if ((rc = folio_comments_list_bytes(lm->store, path, len, max, &b, err,
                                        sizeof(err))) != 0)
        goto done;
    /* Read at the version cached or later: good while it stays so. */
    (void)folio_ccache_put(cache, np, nlen, b);
    rc = folio_call_page(call, b);
    folio_bytes_unref(b);
    return rc;
done:
    if (rc == FOLIO_EAGAIN)
        ask_maintenance(lm); /* a reopen or a remap: the writer's */
    return rc == 0 ? 0 : store_error(call, rc, err);
}

/* Join this turn's batch: copy the post's text and hold its reply. */
static int
enqueue(struct folio_lmdb *lm, struct folio_call *call,
        const struct folio_comment_in *in)
{
    size_t need = in->path_len + in->author_len + in->body_len + in->key_len,
           off;
    struct batch *b = lm->open;
    struct pending *p;

    if (b != NULL && (b->n >= (lm->group ? BATCH_SOFT_COUNT : 1) ||
                      b->arena.b_len + need > BATCH_SOFT_BYTES)) {
        hand_over(lm, b); /* full: in line, the next one opens */
        b = lm->open = NULL;
    }
    if (b == NULL && (b = lm->open = batch_get(lm, FOLIO_WJ_POSTS)) == NULL)
        return folio_call_error(call, FOLIO_ST_RESOURCE_EXHAUSTED,
                                "out of memory");
    if (batch_room(b, b->n + 1) != 0)
        return folio_call_error(call, FOLIO_ST_RESOURCE_EXHAUSTED,
                                "out of memory");
    off = folio_buf_mark(&b->arena);
    if (folio_buf_append(&b->arena, in->path, in->path_len) != 0 ||
        folio_buf_append(&b->arena, in->author, in->author_len) != 0 ||
        folio_buf_append(&b->arena, in->body, in->body_len) != 0 ||
        (in->key_len > 0 &&
         folio_buf_append(&b->arena, in->key, in->key_len) != 0)) {
        folio_buf_truncate(&b->arena, off);
        return folio_call_error(call, FOLIO_ST_RESOURCE_EXHAUSTED,
                                "out of memory");
    }
    p = &b->p[b->n];
    if (call->conn == NULL) {
        /* Not from a connection: alone, at once. */
        struct batch *one = batch_get(lm, FOLIO_WJ_POSTS);

        if (one == NULL || batch_room(one, 1) != 0 ||
            folio_buf_append(&one->arena, folio_buf_at(&b->arena, off),
                             need) != 0) {
            folio_buf_truncate(&b->arena, off);
            if (one != NULL)
                batch_put(lm, one);
            return folio_call_error(call, FOLIO_ST_RESOURCE_EXHAUSTED,
                                    "out of memory");
        }
        folio_buf_truncate(&b->arena, off);
        p = &one->p[0];
        p->off = 0;
        p->path_len = (uint32_t)in->path_len;
        p->author_len = (uint32_t)in->author_len;
        p->body_len = (uint32_t)in->body_len;
        p->has_reply_to = in->has_reply_to;
        p->reply_to = in->reply_to;
        p->key_len = (uint32_t)in->key_len;
        one->n = 1;
        return write_now(lm, call, one);
    }
    if (folio_call_hold(call, &p->hold) != 0) {
        folio_buf_truncate(&b->arena, off);
        return folio_call_error(call, FOLIO_ST_UNAVAILABLE,
                                "the comments store answers only requests "
                                "of a connection");
    }
    p->off = off;
    p->path_len = (uint32_t)in->path_len;
    p->author_len = (uint32_t)in->author_len;
    p->body_len = (uint32_t)in->body_len;
    p->has_reply_to = in->has_reply_to;
    p->reply_to = in->reply_to;
    p->key_len = (uint32_t)in->key_len;
    if (b->n++ == 0) {
        b->job.deadline_ms = folio_mono_ms() + lm->w->cfg->comments_timeout_ms;
        event_active(lm->ev_commit, EV_TIMEOUT, 1);
        arm_late(lm);
    }
    return 0;
}

/*
 * A call outside a connection (the tests' and fuzzers' dispatch, which
 * cannot hold): batch b written before it returns, the loop waiting for
 * the writer (which only such callers do), and answered as a handler.
 */
static int
write_now(struct folio_lmdb *lm, struct folio_call *call, struct batch *b)
{
    struct pollfd pfd;
    int rc;

    b->sync = 1;
    b->job.deadline_ms = UINT64_MAX;
    if (lm->open != NULL) {
        hand_over(lm, lm->open);
        lm->open = NULL;
    }
    hand_over(lm, b);
    while (!b->synced) {
        pfd.fd = lm->efd;
        pfd.events = POLLIN;
        (void)poll(&pfd, 1, -1);
        on_done(lm->efd, EV_READ, lm);
    }
    rc = b->job.rc != 0 ? b->job.rc
         : b->job.kind == FOLIO_WJ_POSTS ? b->codes[0]
                                         : 0;
    if (rc == 0)
        rc = b->job.kind == FOLIO_WJ_POSTS
                 ? folio_buf_append(call->out, folio_buf_at(&b->results, 0),
                                    b->ends[0])
                 : msgpack_pack_true(call->pk);
    else
        rc = store_error(call, rc, b->job.err);
    batch_put(lm, b);
    return rc;
}

/* While the writer waits for a lock held elsewhere: 14 at once. */
static int
writer_stuck(struct folio_lmdb *lm, struct folio_call *call)
{
    uint64_t since = folio_writer_waiting_since(lm->wr), now = folio_mono_ms();

    return folio_call_error(call, FOLIO_ST_UNAVAILABLE,
                            "the comments store's writer lock is held by "
                            "another process (for %.1f s now): not stored, "
                            "try again",
                            since != 0 && now > since ? (now - since) / 1e3
                                                      : 0.0);
}

static int
lmdb_post(struct folio_comments_be *be, struct folio_call *call,
          const struct folio_comment_in *in)
{
    struct folio_lmdb *lm = (struct folio_lmdb *)be;

    if (lm->stuck)
        return writer_stuck(lm, call);
    return enqueue(lm, call, in); /* answered by complete() */
}

static int
lmdb_delete(struct folio_comments_be *be, struct folio_call *call, uint64_t id)
{
    struct folio_lmdb *lm = (struct folio_lmdb *)be;
    struct batch *b;

    if (lm->stuck)
        return writer_stuck(lm, call);
    if ((b = batch_get(lm, FOLIO_WJ_DELETE)) == NULL || batch_room(b, 1) != 0) {
        if (b != NULL)
            batch_put(lm, b);
        return folio_call_error(call, FOLIO_ST_RESOURCE_EXHAUSTED,
                                "out of memory");
    }
    b->n = 1;
    b->job.id = id;
    if (call->conn == NULL)
        return write_now(lm, call, b);
    if (folio_call_hold(call, &b->p[0].hold) != 0) {
        batch_put(lm, b);
        return folio_call_error(call, FOLIO_ST_UNAVAILABLE,
                                "the comments store answers only requests "
                                "of a connection");
    }
    /* After the posts before it. */
    if (lm->open != NULL) {
        hand_over(lm, lm->open);
        lm->open = NULL;
    }
    hand_over(lm, b);
    return 0;
}

const struct folio_comments_backend folio_comments_lmdb = {
    "lmdb",    lmdb_open, lmdb_close,  lmdb_list,
    lmdb_list_size, lmdb_post, lmdb_delete, lmdb_cache,
};
