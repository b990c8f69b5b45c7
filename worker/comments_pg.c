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
 */
#include "config.h"

#include <sys/random.h>

#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "shm/comments.h"
#include "shm/stats.h"
#include "src/alloc.h"
#include "src/clock.h"
#include "src/conf.h"
#include "src/err.h"
#include "src/log.h"
#include "worker/comments_backend.h"
#include "worker/comments_cache.h"
#include "worker/comments_pg_int.h"
#include "worker/dispatch.h"
#include "worker/worker_int.h"

/* Answer, from the front, what waited past its deadline in q. */
static void
expire_queue(struct queue *q, uint64_t now, const char *msg)
{
    while (q->head != NULL && q->head->deadline_ms <= now)
        folio_pg_release_error(q_pop(q), FOLIO_ST_UNAVAILABLE, msg);
}

static void
on_timer(evutil_socket_t fd, short what, void *arg)
{
    static const char late[] =
        "no answer from the comments database within comments_timeout";
    static const char doubt[] =
        "no answer from the comments database within comments_timeout "
        "(the comment may or may not be stored)";
    uint64_t now = folio_mono_ms();
    struct unit *u;

    struct uqueue keep = {NULL, NULL};

    expire_queue(&folio_pg.posts, now, late);
    /* A release may queue more: take the waiting units out first. */
    keep = folio_pg.waiting;
    folio_pg.waiting.head = folio_pg.waiting.tail = NULL;
    while ((u = uq_pop(&keep)) != NULL) {
        expire_queue(&u->reqs, now, late);
        if (u->reqs.head != NULL)
            uq_push(&folio_pg.waiting, u);
        else
            folio_pg_unit_put(u);
    }
    u = folio_pg.inflight.head;
    if (u != NULL && u->reqs.head != NULL && u->reqs.head->deadline_ms <= now) {
        /*
         * The database sits on what we sent: answer what is late, and
         * start over on a new connection (results come in order: nothing
         * behind it can come first).
         */
        for (u = folio_pg.inflight.head; u != NULL; u = u->next)
            expire_queue(&u->reqs, now, u->kind == U_LIST ? late : doubt);
        folio_pg_reset("no answer within comments_timeout", 0);
    }
    folio_pg_arm_timer();
}

/* ---- the backend --------------------------------------------------- */

static int
pg_init(struct folio_worker *w)
{
    const struct folio_config *cfg = w->cfg;
    uint64_t seed[2] = {0, 0};
    int i = 0;

    memset(&folio_pg, 0, sizeof(folio_pg));
    folio_pg.w = w;
    folio_pg.cfg = cfg;
    folio_pg.sock = -1;
    if (getrandom(seed, sizeof(seed), 0) != (ssize_t)sizeof(seed)) {
        seed[0] = (uint64_t)getpid() << 32 ^ folio_unix_ms();
        seed[1] = folio_mono_ns();
    }
    folio_pg.key_hi = seed[0];
    folio_pg.rnd = seed[1] | 1;
    /* Defaults the connection string may override, then what it may not. */
    folio_pg.kw[i] = "application_name";
    folio_pg.val[i++] = "foliod";
    folio_pg.kw[i] = "keepalives_idle";
    folio_pg.val[i++] = "5";
    folio_pg.kw[i] = "keepalives_interval";
    folio_pg.val[i++] = "1";
    folio_pg.kw[i] = "keepalives_count";
    folio_pg.val[i++] = "3";
    folio_pg.kw[i] = "dbname";
    folio_pg.val[i++] = cfg->comments_dsn;
    folio_pg.kw[i] = "client_encoding";
    folio_pg.val[i++] = "UTF8";
    folio_pg.kw[i] = NULL;
    folio_pg.val[i] = NULL;
    if ((folio_pg.ev_timer = evtimer_new(w->base, on_timer, NULL)) == NULL ||
        (folio_pg.ev_retry = evtimer_new(w->base, folio_pg_on_retry, NULL)) ==
            NULL ||
        (folio_pg.ev_kick =
             event_new(w->base, -1, 0, folio_pg_on_kick, NULL)) == NULL ||
        folio_buf_init(&folio_pg.scratch, 65536, 0) != 0 ||
        (cfg->comments_cache_size > 0 &&
         folio_ccache_new(cfg->comments_cache_size, &folio_pg.cache) != 0)) {
        folio_log_errorx("comments: no memory for the PostgreSQL backend");
        folio_comments_pg.fini(w);
        return FOLIO_ENOMEM;
    }
    snprintf(folio_pg.why, sizeof(folio_pg.why), "not connected yet");
    folio_pg_set_up(0);
    folio_pg_connect();
    return 0;
}

static void
pg_fini(struct folio_worker *w)
{
    struct req *r;
    struct unit *u;

    /* Held calls still here: their connections are gone (worker exit). */
    while ((u = uq_pop(&folio_pg.inflight)) != NULL ||
           (u = uq_pop(&folio_pg.waiting)) != NULL) {
        q_prepend(&folio_pg.posts, &u->reqs);
        folio_pg_unit_put(u);
    }
    while ((r = q_pop(&folio_pg.posts)) != NULL)
        folio_pg_req_put(r);
    while ((r = folio_pg.free_reqs) != NULL) {
        folio_pg.free_reqs = r->next;
        folio_buf_free(&r->text);
        folio_free(r);
    }
    while ((u = folio_pg.free_units) != NULL) {
        folio_pg.free_units = u->next;
        folio_free(u);
    }
    folio_pg_sock_off();
    if (folio_pg.conn != NULL)
        PQfinish(folio_pg.conn);
    if (folio_pg.ev_timer != NULL)
        event_free(folio_pg.ev_timer);
    if (folio_pg.ev_retry != NULL)
        event_free(folio_pg.ev_retry);
    if (folio_pg.ev_kick != NULL)
        event_free(folio_pg.ev_kick);
    folio_ccache_free(folio_pg.cache);
    folio_buf_free(&folio_pg.scratch);
    memset(&folio_pg, 0, sizeof(folio_pg));
}

/* Hold `call` in request r; -1 (after folio_call_error) if it cannot be. */
static int
hold(struct folio_call *call, struct req *r, int kind)
{
    if (folio_call_hold(call, &r->hold) != 0) {
        folio_pg_req_put(r);
        return folio_call_error(call, FOLIO_ST_UNAVAILABLE,
                                "the comments database answers only "
                                "requests of a connection");
    }
    r->kind = (uint8_t)kind;
    r->deadline_ms = folio_mono_ms() + folio_pg.cfg->comments_timeout_ms;
    return 0;
}

static int
no_memory(struct folio_call *call, struct req *r)
{
    if (r != NULL)
        folio_pg_req_put(r);
    return folio_call_error(call, FOLIO_ST_RESOURCE_EXHAUSTED, "out of memory");
}

static int
down(struct folio_call *call)
{
    char msg[384];

    folio_stat_add(&folio_pg.w->slot->ws_comments_db_unavailable, 1);
    return folio_call_error(call, FOLIO_ST_UNAVAILABLE, "%s",
                            folio_pg_unavailable_msg(msg, sizeof(msg)));
}

/*
 * A list of page np that a new one may share: one not sent yet, or one
 * on its way that no invalidation of the page has overtaken.
 */
static struct unit *
find_list(const char *np, size_t nlen)
{
    struct unit *u;
    struct uqueue *qs[2] = {&folio_pg.waiting, &folio_pg.inflight};
    int i;

    for (i = 0; i < 2; i++)
        for (u = qs[i]->head; u != NULL; u = u->next)
            if (u->kind == U_LIST && u->reqs.head != NULL &&
                u->reqs.head->plen == nlen &&
                memcmp(u->reqs.head->path, np, nlen) == 0 &&
                (!u->sent ||
                 (folio_pg.cache != NULL &&
                  folio_ccache_fresh(folio_pg.cache, np, nlen, u->epoch))))
                return u;
    return NULL;
}

/* Queue a list or delete unit of one request r, holding call. */
static int
queue_unit(struct folio_call *call, struct req *r, int ukind, int rkind)
{
    struct unit *u;

    if ((u = folio_pg_unit_get(ukind)) == NULL)
        return no_memory(call, r);
    if (hold(call, r, rkind) != 0) {
        folio_pg_unit_put(u);
        return -1;
    }
    q_push(&u->reqs, r);
    uq_push(&folio_pg.waiting, u);
    folio_pg_kick();
    folio_pg_arm_timer();
    return 0;
}

static int
pg_list(struct folio_call *call, const char *path, uint32_t len)
{
    char np[FOLIO_COMMENTS_NPATH_MAX], err[256];
    const void *hit;
    struct unit *u;
    struct req *r;
    size_t nlen, hlen;

    if (folio_comments_path_check(path, len, err, sizeof(err)) != 0)
        return folio_call_error(call, FOLIO_ST_INVALID_ARGUMENT, "%s", err);
    nlen = folio_comments_normalize(path, len, np);
    if (folio_pg.cache != NULL &&
        (hit = folio_ccache_get(folio_pg.cache, np, nlen, &hlen)) != NULL) {
        folio_stat_add(&call->w->slot->ws_comments_cache_hits, 1);
        if (folio_buf_append(call->out, hit, hlen) != 0)
            return folio_call_error(call, FOLIO_ST_RESOURCE_EXHAUSTED,
                                    "reply too large for memory");
        return 0;
    }
    folio_stat_add(&call->w->slot->ws_comments_cache_misses, 1);
    if (folio_pg.state == C_DOWN)
        return down(call);
    if ((r = folio_pg_req_get()) == NULL)
        return no_memory(call, NULL);
    memcpy(r->path, np, nlen);
    r->plen = (uint32_t)nlen;
    if ((u = find_list(np, nlen)) == NULL)
        return queue_unit(call, r, U_LIST, R_LIST);
    if (hold(call, r, R_LIST) != 0)
        return -1;
    q_push(&u->reqs, r);
    return 0;
}

static int
pg_post(struct folio_call *call, const struct folio_comment_in *in)
{
    struct req *r;
    uint64_t now = folio_unix_ms();

    if (folio_pg.state == C_DOWN)
        return down(call);
    if ((r = folio_pg_req_get()) == NULL)
        return no_memory(call, NULL);
    r->plen =
        (uint32_t)folio_comments_normalize(in->path, in->path_len, r->path);
    r->alen = (uint32_t)in->author_len;
    r->blen = (uint32_t)in->body_len;
    folio_be64_put(r->created_at, now);
    folio_be64_put(r->key, folio_pg.key_hi);
    folio_be64_put(r->key + 8, ++folio_pg.key_seq);
    if ((r->text.b_data == NULL &&
         folio_buf_init(&r->text, in->author_len + in->body_len * 2 + 2048,
                        0) != 0) ||
        folio_buf_append(&r->text, in->author, in->author_len) != 0 ||
        folio_buf_append(&r->text, in->body, in->body_len) != 0 ||
        folio_comments_encode_tail(&r->text, r->path, r->plen, in, now) != 0)
        return no_memory(call, r);
    if (hold(call, r, R_POST) != 0)
        return -1;
    q_push(&folio_pg.posts, r);
    folio_pg_kick();
    folio_pg_arm_timer();
    return 0;
}

static int
pg_delete(struct folio_call *call, uint64_t id)
{
    struct req *r;

    if (folio_pg.state == C_DOWN)
        return down(call);
    if ((r = folio_pg_req_get()) == NULL)
        return no_memory(call, NULL);
    r->id = id == 0 ? UINT64_MAX : id; /* 0 means "deleted" below */
    return queue_unit(call, r, U_DELETE, R_DELETE);
}

const struct folio_comments_backend folio_comments_pg = {
    "postgres", pg_init, pg_fini, pg_list, pg_post, pg_delete,
};
