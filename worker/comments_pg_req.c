/*
 * comments_pg_req.c - the PostgreSQL backend's requests (see
 * comments_pg.c): the pools of requests and units, answering held calls,
 * the deadline timer, the end-of-turn kick.  The bottom of the backend:
 * comments_pg.c, comments_pg_conn.c and comments_pg_io.c call down into
 * it, and it calls none of them (it releases held calls: conn.c).
 */
#include "config.h"

#include <stdio.h>
#include <string.h>

#include "shm/stats.h"
#include "src/alloc.h"
#include "src/clock.h"
#include "src/conf.h"
#include "src/err.h"
#include "src/log.h"
#include "worker/comments_cache.h"
#include "worker/comments_pg_int.h"
#include "worker/dispatch.h"
#include "worker/worker_int.h"

#define TEXT_KEEP 16384 /* a post's buffer kept for the next one */

struct folio_pg folio_pg;

/* ---- requests ------------------------------------------------------ */

struct req *
folio_pg_req_get(struct folio_pg *pg)
{
    struct req *r = pg->free_reqs;

    if (r != NULL) {
        pg->free_reqs = r->next;
    } else if ((r = folio_calloc(1, sizeof(*r))) == NULL) {
        return NULL;
    }
    r->next = NULL;
    r->in_doubt = 0;
    r->alone = 0;
    r->client_key = 0;
    r->key_used = 0;
    r->replay = 0;
    r->id = 0;
    r->plen = 0;
    return r;
}

void
folio_pg_req_put(struct folio_pg *pg, struct req *r)
{
    if (r->text.b_cap > TEXT_KEEP)
        folio_buf_free(&r->text);
    else
        folio_buf_reset(&r->text);
    r->next = pg->free_reqs;
    pg->free_reqs = r;
}

struct unit *
folio_pg_unit_get(struct folio_pg *pg, int kind)
{
    struct unit *u = pg->free_units;

    if (u != NULL)
        pg->free_units = u->next;
    else if ((u = folio_malloc(sizeof(*u))) == NULL)
        return NULL;
    memset(u, 0, sizeof(*u));
    u->kind = (uint8_t)kind;
    return u;
}

void
folio_pg_unit_put(struct folio_pg *pg, struct unit *u)
{
    u->next = pg->free_units;
    pg->free_units = u;
}

/* The cache's size, for server.stats and /metrics. */
void
folio_pg_cache_gauge(struct folio_pg *pg)
{
    struct folio_ccache_info ci;

    if (pg->cache == NULL)
        return;
    folio_ccache_info(pg->cache, &ci);
    folio_stat_set(&pg->w->slot->ws_comments_cache_bytes, ci.bytes);
}

/* ---- answering ----------------------------------------------------- */

void
folio_pg_release_error(struct folio_pg *pg, struct req *r, int code,
                       const char *msg)
{
    char buf[512];

    if (code == FOLIO_ST_UNAVAILABLE) {
        folio_stat_add(&pg->w->slot->ws_comments_db_unavailable, 1);
        if (r->in_doubt && r->kind == R_POST) {
            /* Its commit may have happened before the connection went. */
            snprintf(buf, sizeof(buf), "%s (the comment may have been stored)",
                     msg);
            msg = buf;
        }
    }
    folio_hold_release(&r->hold, NULL, 0, code, msg);
    folio_pg_req_put(pg, r);
}

void
folio_pg_release_ok(struct folio_pg *pg, struct req *r, const void *result,
                    size_t len)
{
    folio_hold_release(&r->hold, result, len, 0, NULL);
    folio_pg_req_put(pg, r);
}

void
folio_pg_release_page(struct folio_pg *pg, struct req *r,
                      struct folio_bytes *b)
{
    folio_hold_release_page(&r->hold, b);
    folio_pg_req_put(pg, r);
}

/* Answer every request of queue q with an error. */
void
folio_pg_fail_queue(struct folio_pg *pg, struct queue *q, int code,
                    const char *msg)
{
    struct req *r;

    while ((r = q_pop(q)) != NULL)
        folio_pg_release_error(pg, r, code, msg);
}

const char *
folio_pg_unavailable_msg(struct folio_pg *pg, char *buf, size_t len)
{
    snprintf(buf, len, "the comments database is unavailable: %s", pg->why);
    return buf;
}

/* ---- deadlines ----------------------------------------------------- */

static uint64_t
nearest_deadline(struct folio_pg *pg)
{
    uint64_t d = UINT64_MAX;

    if (pg->posts.head != NULL && pg->posts.head->deadline_ms < d)
        d = pg->posts.head->deadline_ms;
    if (pg->waiting.head != NULL && pg->waiting.head->reqs.head != NULL &&
        pg->waiting.head->reqs.head->deadline_ms < d)
        d = pg->waiting.head->reqs.head->deadline_ms;
    if (pg->inflight.head != NULL && pg->inflight.head->reqs.head != NULL &&
        pg->inflight.head->reqs.head->deadline_ms < d)
        d = pg->inflight.head->reqs.head->deadline_ms;
    return d;
}

void
folio_pg_arm_timer(struct folio_pg *pg)
{
    uint64_t d = nearest_deadline(pg), now;
    struct timeval tv;

    if (d == UINT64_MAX || evtimer_pending(pg->ev_timer, NULL))
        return;
    now = folio_mono_ms();
    d = d > now ? d - now : 0;
    tv.tv_sec = (time_t)(d / 1000);
    tv.tv_usec = (suseconds_t)(d % 1000) * 1000;
    evtimer_add(pg->ev_timer, &tv);
}

void
folio_pg_kick(struct folio_pg *pg)
{
    event_active(pg->ev_kick, EV_TIMEOUT, 1);
}

/* libpq's message, first line only, into pg->why. */
const char *
folio_pg_set_why(struct folio_pg *pg, const char *msg)
{
    size_t n;

    if (msg == NULL || *msg == '\0')
        msg = "no reason given";
    n = strcspn(msg, "\n");
    snprintf(pg->why, sizeof(pg->why), "%.*s", (int)n, msg);
    return pg->why;
}
