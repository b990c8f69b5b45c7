/*
 * comments_pg.c - the comments service on PostgreSQL (comments_backend =
 * postgres), for several foliod hosts sharing one store.
 *
 * Each worker has one libpq connection, opened after fork and never
 * waited on: PQconnectStartParams/PQconnectPoll, then every query sent
 * with PQsendQueryParams in pipeline mode, all driven by libevent on
 * PQsocket.  Requests that need the database are held (folio_call_hold)
 * and released when their results arrive.  Work is sent at the end of a
 * loop turn (ev_kick), in units that each end with a Sync:
 *   - a list: SELECT encoded ... ORDER BY id (lists of one page asked while
 *     one is on its way share its answer);
 *   - a batch of posts (group commit): one INSERT per post, then the Sync,
 *     which commits them as one (implicit) transaction; one batch is in
 *     flight at a time and the next one fills meanwhile, so concurrent
 *     posts share a commit (comments_group_commit = off: one transaction
 *     per post, sent at once);
 *   - a delete.
 * Results come back in order.  A post is answered only when its Sync's
 * result is in: PostgreSQL sends it once the COMMIT is done, with its WAL
 * flushed as synchronous_commit says (a failed statement rolls the whole
 * transaction back there instead).
 *
 * Every post carries an idempotency key (this process's random 64 bits
 * and a counter), unique in the table: an INSERT ... ON CONFLICT DO
 * NOTHING that returns the id stored under the key either way.  When the
 * connection fails with posts in flight (their COMMIT may or may not have
 * happened) they are sent again after the reconnect: a post that was
 * committed gets its id back, none is stored twice.
 *
 * comments.list is served from a per-worker cache of encoded pages
 * (comments_cache.c).  Every change to the table NOTIFYs the channel
 * folio_comments with the page as payload (a trigger), and every worker
 * of every host LISTENs on its connection and drops the page: a list is
 * stale for at most the notification's delay.  Notifications sent while
 * a worker is disconnected are lost: the cache is dropped when the
 * connection is back.  Meanwhile cached pages are still served; posts and
 * uncached lists answer 14 UNAVAILABLE, at once when the database is known
 * to be down, else after comments_timeout at most.  Reconnects back off
 * (100 ms doubling to 2 s); each change of state is logged once.
 *
 * This file is the backend's entry (comments_backend.h: h_comments.c
 * calls it through the table) and its deadlines; it calls
 * comments_pg_conn.c (the connection), comments_pg_req.c (requests and
 * answers), conn.c (held calls) and dispatch.c.  Every function is given
 * the backend's state, struct folio_pg.
 */
#include "config.h"

#include <sys/random.h>

#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "shm/comments.h"
#include "shm/stats.h"
#include "src/alloc.h"
#include "src/bytes.h"
#include "src/clock.h"
#include "src/conf.h"
#include "src/err.h"
#include "src/log.h"
#include "worker/comments_backend.h"
#include "worker/comments_cache.h"
#include "worker/comments_pg_int.h"
#include "worker/dispatch.h"
#include "worker/worker_int.h"

/*
 * Answer, from the front, what waited past its deadline in q: a post
 * sent before a connection was lost may have been stored (release_error
 * says so), others were not.
 */
static void
expire_queue(struct folio_pg *pg, struct queue *q, uint64_t now,
             const char *msg)
{
    static const char gone[] =
        "the comments database did not come back within comments_timeout";

    while (q->head != NULL && q->head->deadline_ms <= now) {
        struct req *r = q_pop(q);

        folio_pg_release_error(pg, r, FOLIO_ST_UNAVAILABLE,
                               r->in_doubt && pg->state != C_READY ? gone
                                                                   : msg);
    }
}

static void
on_timer(evutil_socket_t fd, short what, void *arg)
{
    struct folio_pg *pg = arg;
    static const char late[] =
        "no answer from the comments database within comments_timeout";
    static const char doubt[] =
        "no answer from the comments database within comments_timeout "
        "(the comment may or may not be stored)";
    uint64_t now = folio_mono_ms();
    struct uqueue keep = {NULL, NULL};
    struct unit *u;

    expire_queue(pg, &pg->posts, now, late);
    /* Each waiting unit answers what is late; those left empty go. */
    keep = pg->waiting;
    pg->waiting.head = pg->waiting.tail = NULL;
    while ((u = uq_pop(&keep)) != NULL) {
        expire_queue(pg, &u->reqs, now, late);
        if (u->reqs.head != NULL)
            uq_push(&pg->waiting, u);
        else
            folio_pg_unit_put(pg, u);
    }
    u = pg->inflight.head;
    if (u != NULL && u->reqs.head != NULL && u->reqs.head->deadline_ms <= now) {
        /*
         * The database sits on what we sent: answer what is late, and
         * start over on a new connection (results come in order: nothing
         * behind it can come first).
         */
        for (u = pg->inflight.head; u != NULL; u = u->next)
            expire_queue(pg, &u->reqs, now, u->kind == U_LIST ? late : doubt);
        folio_pg_reset(pg, "no answer within comments_timeout", 0);
    }
    folio_pg_arm_timer(pg);
}

/* ---- the backend --------------------------------------------------- */

static void pg_close(struct folio_comments_be *be);

static int
pg_open(struct folio_worker *w, struct folio_comments_be **out)
{
    const struct folio_config *cfg = w->cfg;
    uint64_t seed[2] = {0, 0};
    struct folio_pg *pg;
    int i = 0;

    if ((pg = folio_calloc(1, sizeof(*pg))) == NULL) {
        folio_log_errorx("comments: no memory for the PostgreSQL backend");
        return FOLIO_ENOMEM;
    }
    pg->be.ops = &folio_comments_pg;
    pg->w = w;
    pg->cfg = cfg;
    pg->sock = -1;
    if (getrandom(seed, sizeof(seed), 0) != (ssize_t)sizeof(seed)) {
        seed[0] = (uint64_t)getpid() << 32 ^ folio_unix_ms();
        seed[1] = folio_mono_ns();
    }
    pg->key_hi = seed[0];
    /* A key outlives every re-send of its post (comments_timeout). */
    pg->key_window_ms = cfg->comments_key_window_ms > cfg->comments_timeout_ms
                            ? cfg->comments_key_window_ms
                            : cfg->comments_timeout_ms;
    pg->rnd = seed[1] | 1;
    /* Defaults the connection string may override, then what it may not. */
    pg->kw[i] = "application_name";
    pg->val[i++] = "foliod";
    pg->kw[i] = "keepalives_idle";
    pg->val[i++] = "5";
    pg->kw[i] = "keepalives_interval";
    pg->val[i++] = "1";
    pg->kw[i] = "keepalives_count";
    pg->val[i++] = "3";
    pg->kw[i] = "dbname";
    pg->val[i++] = cfg->comments_dsn;
    pg->kw[i] = "client_encoding";
    pg->val[i++] = "UTF8";
    pg->kw[i] = NULL;
    pg->val[i] = NULL;
    if ((pg->ev_timer = evtimer_new(w->base, on_timer, pg)) == NULL ||
        (pg->ev_retry = evtimer_new(w->base, folio_pg_on_retry, pg)) == NULL ||
        (pg->ev_kick = event_new(w->base, -1, 0, folio_pg_on_kick, pg)) ==
            NULL ||
        folio_buf_init(&pg->scratch, 65536, 0) != 0 ||
        (cfg->comments_cache_size > 0 &&
         folio_ccache_new(cfg->comments_cache_size, &pg->cache) != 0)) {
        folio_log_errorx("comments: no memory for the PostgreSQL backend");
        pg_close(&pg->be);
        return FOLIO_ENOMEM;
    }
    snprintf(pg->why, sizeof(pg->why), "not connected yet");
    folio_pg_set_up(pg, 0);
    folio_pg_connect(pg);
    *out = &pg->be;
    return 0;
}

static void
pg_close(struct folio_comments_be *be)
{
    struct folio_pg *pg = (struct folio_pg *)be;
    struct req *r;
    struct unit *u;

    if (pg == NULL)
        return;

    /* Held calls still here: their connections are gone (worker exit). */
    while ((u = uq_pop(&pg->inflight)) != NULL ||
           (u = uq_pop(&pg->waiting)) != NULL) {
        q_prepend(&pg->posts, &u->reqs);
        folio_pg_unit_put(pg, u);
    }
    while ((r = q_pop(&pg->posts)) != NULL)
        folio_pg_req_put(pg, r);
    while ((r = pg->free_reqs) != NULL) {
        pg->free_reqs = r->next;
        folio_buf_free(&r->text);
        folio_free(r);
    }
    while ((u = pg->free_units) != NULL) {
        pg->free_units = u->next;
        folio_free(u);
    }
    folio_pg_sock_off(pg);
    if (pg->conn != NULL)
        PQfinish(pg->conn);
    if (pg->ev_timer != NULL)
        event_free(pg->ev_timer);
    if (pg->ev_retry != NULL)
        event_free(pg->ev_retry);
    if (pg->ev_kick != NULL)
        event_free(pg->ev_kick);
    folio_ccache_free(pg->cache);
    folio_buf_free(&pg->scratch);
    folio_free(pg);
}

/* Hold `call` in request r; -1 (after folio_call_error) if it cannot be. */
static int
hold(struct folio_pg *pg, struct folio_call *call, struct req *r, int kind)
{
    if (folio_call_hold(call, &r->hold) != 0) {
        folio_pg_req_put(pg, r);
        return folio_call_error(call, FOLIO_ST_UNAVAILABLE,
                                "the comments database answers only "
                                "requests of a connection");
    }
    r->kind = (uint8_t)kind;
    r->deadline_ms = folio_mono_ms() + pg->cfg->comments_timeout_ms;
    return 0;
}

static int
no_memory(struct folio_pg *pg, struct folio_call *call, struct req *r)
{
    if (r != NULL)
        folio_pg_req_put(pg, r);
    return folio_call_error(call, FOLIO_ST_RESOURCE_EXHAUSTED, "out of memory");
}

static int
down(struct folio_pg *pg, struct folio_call *call)
{
    char msg[384];

    folio_stat_add(&pg->w->slot->ws_comments_db_unavailable, 1);
    return folio_call_error(call, FOLIO_ST_UNAVAILABLE, "%s",
                            folio_pg_unavailable_msg(pg, msg, sizeof(msg)));
}

/*
 * A list of page np that a new one may share: one not sent yet, or one
 * on its way that no invalidation of the page has overtaken.
 */
static struct unit *
find_list(struct folio_pg *pg, const char *np, size_t nlen)
{
    struct unit *u;
    struct uqueue *qs[2] = {&pg->waiting, &pg->inflight};
    int i;

    for (i = 0; i < 2; i++)
        for (u = qs[i]->head; u != NULL; u = u->next)
            if (u->kind == U_LIST && u->reqs.head != NULL &&
                u->reqs.head->plen == nlen &&
                memcmp(u->reqs.head->path, np, nlen) == 0 &&
                (!u->sent ||
                 (pg->cache != NULL &&
                  folio_ccache_fresh(pg->cache, np, nlen, u->epoch))))
                return u;
    return NULL;
}

/* Queue a list or delete unit of one request r, holding call. */
static int
queue_unit(struct folio_pg *pg, struct folio_call *call, struct req *r,
           int ukind, int rkind)
{
    struct unit *u;

    if ((u = folio_pg_unit_get(pg, ukind)) == NULL)
        return no_memory(pg, call, r);
    if (hold(pg, call, r, rkind) != 0) {
        folio_pg_unit_put(pg, u);
        return -1;
    }
    q_push(&u->reqs, r);
    uq_push(&pg->waiting, u);
    folio_pg_kick(pg);
    folio_pg_arm_timer(pg);
    return 0;
}

static int
pg_list(struct folio_comments_be *be, struct folio_call *call, const char *path,
        uint32_t len)
{
    struct folio_pg *pg = (struct folio_pg *)be;
    char np[FOLIO_COMMENTS_NPATH_MAX], err[256];
    struct folio_bytes *hit = call->page; /* reply_size's (dispatch.h) */
    struct unit *u;
    struct req *r;
    size_t nlen = 0;

    if (hit == NULL) {
        if (folio_comments_path_check(path, len, err, sizeof(err)) != 0)
            return folio_call_error(call, FOLIO_ST_INVALID_ARGUMENT, "%s",
                                    err);
        nlen = folio_comments_normalize(path, len, np);
        if (pg->cache != NULL)
            hit = folio_ccache_get(pg->cache, np, nlen);
    }
    if (hit != NULL) {
        folio_stat_add(&call->w->slot->ws_comments_cache_hits, 1);
        return folio_call_page(call, hit);
    }
    folio_stat_add(&call->w->slot->ws_comments_cache_misses, 1);
    if (pg->state == C_DOWN)
        return down(pg, call);
    if ((r = folio_pg_req_get(pg)) == NULL)
        return no_memory(pg, call, NULL);
    memcpy(r->path, np, nlen);
    r->plen = (uint32_t)nlen;
    if ((u = find_list(pg, np, nlen)) == NULL)
        return queue_unit(pg, call, r, U_LIST, R_LIST);
    if (hold(pg, call, r, R_LIST) != 0)
        return -1;
    q_push(&u->reqs, r);
    return 0;
}

/*
 * A cached page's size (and by reference, when large); one not cached is
 * told only when the database answers, and counts then.
 */
static size_t
pg_list_size(struct folio_comments_be *be, struct folio_call *call,
             const char *path, uint32_t len)
{
    struct folio_pg *pg = (struct folio_pg *)be;
    char np[FOLIO_COMMENTS_NPATH_MAX], err[256];
    struct folio_bytes *b;
    size_t nlen;

    if (pg->cache == NULL ||
        folio_comments_path_check(path, len, err, sizeof(err)) != 0)
        return FOLIO_REPLY_SMALL;
    nlen = folio_comments_normalize(path, len, np);
    if ((b = folio_ccache_get(pg->cache, np, nlen)) == NULL)
        return FOLIO_REPLY_SMALL;
    call->page = b; /* the list is this page (pg_list) */
    if (b->fb_len < FOLIO_REF_MIN)
        return b->fb_len;
    return FOLIO_REPLY_BYREF | (b->fb_outrefs > 0 ? 0 : b->fb_len);
}

static int
pg_post(struct folio_comments_be *be, struct folio_call *call,
        const struct folio_comment_in *in)
{
    struct folio_pg *pg = (struct folio_pg *)be;
    struct req *r;
    uint64_t now = folio_unix_ms();

    if (pg->state == C_DOWN)
        return down(pg, call);
    if ((r = folio_pg_req_get(pg)) == NULL)
        return no_memory(pg, call, NULL);
    r->plen =
        (uint32_t)folio_comments_normalize(in->path, in->path_len, r->path);
    r->alen = (uint32_t)in->author_len;
    r->blen = (uint32_t)in->body_len;
    folio_be64_put(r->created_at, now);
    folio_be64_put(r->key_cut,
                   now > pg->key_window_ms ? now - pg->key_window_ms : 0);
    r->client_key = in->key != NULL;
    if (r->client_key) {
        r->key[0] = 0x01; /* ours are 16 bytes: never one of these */
        memcpy(r->key + 1, in->key, in->key_len);
        r->klen = (uint8_t)(1 + in->key_len);
    } else {
        folio_be64_put(r->key, pg->key_hi);
        folio_be64_put(r->key + 8, ++pg->key_seq);
        r->klen = 16;
    }
    r->has_reply_to = (uint8_t)in->has_reply_to;
    folio_be64_put(r->reply_to, in->reply_to);
    if ((r->text.b_data == NULL &&
         folio_buf_init(&r->text, in->author_len + in->body_len * 2 + 2048,
                        0) != 0) ||
        folio_buf_append(&r->text, in->author, in->author_len) != 0 ||
        folio_buf_append(&r->text, in->body, in->body_len) != 0 ||
        folio_comments_encode_tail(&r->text, r->path, r->plen, in, now) != 0)
        return no_memory(pg, call, r);
    r->tend = (uint32_t)folio_buf_mark(&r->text);
    if (hold(pg, call, r, R_POST) != 0)
        return -1;
    q_push(&pg->posts, r);
    folio_pg_kick(pg);
    folio_pg_arm_timer(pg);
    return 0;
}

static int
pg_delete(struct folio_comments_be *be, struct folio_call *call, uint64_t id)
{
    struct folio_pg *pg = (struct folio_pg *)be;
    struct req *r;

    if (pg->state == C_DOWN)
        return down(pg, call);
    if ((r = folio_pg_req_get(pg)) == NULL)
        return no_memory(pg, call, NULL);
    r->id = id == 0 ? UINT64_MAX : id; /* 0 means "deleted" below */
    return queue_unit(pg, call, r, U_DELETE, R_DELETE);
}

/* Kept valid by the database's notifications (comments_pg_conn.c). */
static struct folio_ccache *
pg_cache(struct folio_comments_be *be)
{
    return ((struct folio_pg *)be)->cache;
}

const struct folio_comments_backend folio_comments_pg = {
    "postgres", pg_open,   pg_close,  pg_list,
    pg_list_size, pg_post, pg_delete, pg_cache,
};
