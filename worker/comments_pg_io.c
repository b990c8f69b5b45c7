/*
 * comments_pg_io.c - the PostgreSQL backend's pipeline (see
 * comments_pg.c): units of work sent with PQsendQueryParams, each closed
 * by a Sync, and their results read back in order and answered.
 */
#include "config.h"

#include <stdio.h>
#include <string.h>

#include "shm/stats.h"
#include "src/buf.h"
#include "src/bytes.h"
#include "src/clock.h"
#include "src/conf.h"
#include "src/err.h"
#include "src/log.h"
#include "worker/comments_cache.h"
#include "worker/comments_pg_int.h"
#include "worker/worker_int.h"

/* Type oids of the parameters (pg_type.h, stable). */
#define OID_BYTEA 17
#define OID_INT8 20
#define OID_TEXT 25

#define BATCH_MAX 256          /* posts in one transaction */
#define BATCH_BYTES (4u << 20) /* or this much text */

/*
 * A stored comment starts with its map (5 entries, 6 for a reply) and its
 * id, as a uint64.
 */
static const char comment_head[5] = {'\x85', '\xa2', 'i', 'd', '\xcf'};

/*
 * A post: $1 key, $2 path, $3 author, $4 body, $5 created_at, $6 the
 * stored comment after its id, $7 the comment it replies to (NULL: none),
 * checked by folio_comments_reply_to (a comment of the page that is no
 * reply, else SQLSTATE 22023: INVALID_ARGUMENT).  Returns the row stored
 * under the key: the new one, or the one of an earlier attempt that did
 * commit (ours, re-sent after a lost connection, or the client's retry
 * with its idempotency_key): its id, whether it is the same comment, and
 * its encoding when it was stored at another time than this post's (a
 * client's retry: answered with the first one).  DO UPDATE (of the key
 * alone: no notification) rather than DO NOTHING, so that a row another
 * transaction committed since this statement's snapshot is returned too.
 */
static const char sql_post[] =
    "WITH n AS (SELECT nextval('folio_comment_ids') AS id)"
    " INSERT INTO folio_comments"
    " (id, post_key, path, author, body, created_at, reply_to, encoded)"
    " SELECT n.id, $1, $2, $3, $4, $5, folio_comments_reply_to($7, $2),"
    " (CASE WHEN $7 IS NULL THEN '\\x85a26964cf'::bytea"
    " ELSE '\\x86a26964cf'::bytea END) || int8send(n.id) || $6 FROM n"
    " ON CONFLICT (post_key) DO UPDATE SET post_key = EXCLUDED.post_key"
    " RETURNING id, (path = $2 AND author = $3 AND body = $4"
    " AND reply_to IS NOT DISTINCT FROM $7),"
    " CASE WHEN created_at = $5 THEN NULL ELSE encoded END";

/*
 * Before a post with the client's key: forget the key if it is past the
 * window ($2: the post's created_at less the window), so that the post
 * stores anew even if no pruning came by yet.
 */
static const char sql_key_cut[] = "UPDATE folio_comments SET post_key = NULL"
                                  " WHERE post_key = $1 AND created_at <= $2";

/*
 * Forget some keys past the window ($1: now less the window), at most
 * once a second per worker; rows another worker is pruning are skipped.
 */
#define PRUNE_ROWS "5000"
#define PRUNE_EVERY_MS 1000
static const char sql_prune[] =
    "UPDATE folio_comments SET post_key = NULL WHERE id IN"
    " (SELECT id FROM folio_comments WHERE post_key IS NOT NULL"
    " AND created_at <= $1 LIMIT " PRUNE_ROWS " FOR UPDATE SKIP LOCKED)";

static const char sql_list[] =
    "SELECT encoded FROM folio_comments WHERE path = $1 ORDER BY id";

static const char sql_delete[] =
    "DELETE FROM folio_comments WHERE id = $1 RETURNING path";

/* ---- sending ------------------------------------------------------- */

static int
send_stmt(struct folio_pg *pg, const char *sql, int n, const Oid *types,
          const char *const *vals, const int *lens)
{
    static const int fmts[7] = {1, 1, 1, 1, 1, 1, 1};

    return PQsendQueryParams(pg->conn, sql, n, types, vals, lens, fmts, 1) == 1
               ? 0
               : -1;
}

static int
send_post(struct folio_pg *pg, struct req *r)
{
    static const Oid types[7] = {OID_BYTEA, OID_TEXT,  OID_TEXT, OID_TEXT,
                                 OID_INT8,  OID_BYTEA, OID_INT8};
    static const Oid types_cut[2] = {OID_BYTEA, OID_INT8};
    const char *t = folio_buf_at(&r->text, 0);
    const char *vals[7];
    int lens[7];

    if (r->client_key) {
        vals[0] = (const char *)r->key;
        lens[0] = r->klen;
        vals[1] = (const char *)r->key_cut;
        lens[1] = 8;
        if (send_stmt(pg, sql_key_cut, 2, types_cut, vals, lens) != 0)
            return -1;
    }
    vals[0] = (const char *)r->key;
    lens[0] = r->klen;
    vals[1] = r->path;
    lens[1] = (int)r->plen;
    vals[2] = t;
    lens[2] = (int)r->alen;
    vals[3] = t + r->alen;
    lens[3] = (int)r->blen;
    vals[4] = (const char *)r->created_at;
    lens[4] = 8;
    vals[5] = t + r->alen + r->blen;
    lens[5] = (int)(r->tend - r->alen - r->blen);
    vals[6] = r->has_reply_to ? (const char *)r->reply_to : NULL;
    lens[6] = 8;
    return send_stmt(pg, sql_post, 7, types, vals, lens);
}

/* Send unit u (already at the tail of pg->inflight). */
static int
send_unit(struct folio_pg *pg, struct unit *u)
{
    static const Oid t_text[1] = {OID_TEXT}, t_int8[1] = {OID_INT8};
    struct req *r = u->reqs.head;
    unsigned char id[8];
    const char *v[1];
    int l[1];

    u->sent = 1;
    switch (u->kind) {
    case U_LIST:
        u->epoch = pg->cache != NULL ? folio_ccache_epoch(pg->cache) : 0;
        v[0] = r->path;
        l[0] = (int)r->plen;
        if (send_stmt(pg, sql_list, 1, t_text, v, l) != 0)
            return -1;
        break;
    case U_DELETE:
        folio_be64_put(id, r->id);
        v[0] = (const char *)id;
        l[0] = 8;
        if (send_stmt(pg, sql_delete, 1, t_int8, v, l) != 0)
            return -1;
        break;
    default:
        /* No BEGIN: the Sync commits them all, or none */
        u->cur = r;
        pg->batches_out++;
        if (folio_mono_ms() >= pg->prune_at) {
            uint64_t now = folio_unix_ms();
            unsigned char cut[8];

            pg->prune_at = folio_mono_ms() + PRUNE_EVERY_MS;
            folio_be64_put(
                cut, now > pg->key_window_ms ? now - pg->key_window_ms : 0);
            v[0] = (const char *)cut;
            l[0] = 8;
            if (send_stmt(pg, sql_prune, 1, t_int8, v, l) != 0)
                return -1;
        }
        for (; r != NULL; r = r->next)
            if (send_post(pg, r) != 0)
                return -1;
    }
    return PQpipelineSync(pg->conn) == 1 ? 0 : -1;
}

/* Take the next batch of waiting posts into a unit. */
static struct unit *
take_batch(struct folio_pg *pg)
{
    struct unit *u;
    struct req *r;
    size_t n = 0, bytes = 0;

    if ((u = folio_pg_unit_get(pg, U_BATCH)) == NULL)
        return NULL;
    while ((r = pg->posts.head) != NULL) {
        if (n > 0 && (r->alone || n >= BATCH_MAX ||
                      bytes + folio_buf_mark(&r->text) > BATCH_BYTES))
            break;
        q_push(&u->reqs, q_pop(&pg->posts));
        bytes += folio_buf_mark(&r->text);
        if (++n == 1 && r->alone)
            break;
        if (!pg->cfg->comments_group_commit)
            break;
    }
    return u;
}

int
folio_pg_send_waiting(struct folio_pg *pg)
{
    struct unit *u;

    while ((u = uq_pop(&pg->waiting)) != NULL) {
        uq_push(&pg->inflight, u);
        if (send_unit(pg, u) != 0)
            return -1;
    }
    while (pg->posts.head != NULL &&
           (pg->batches_out == 0 || !pg->cfg->comments_group_commit)) {
        if ((u = take_batch(pg)) == NULL)
            break; /* out of memory: the deadline answers them */
        uq_push(&pg->inflight, u);
        if (send_unit(pg, u) != 0)
            return -1;
    }
    return 0;
}

/* ---- results ------------------------------------------------------- */

/* The RPC status of a SQLSTATE (PROTOCOL.md section 2). */
static int
status_of(const char *state)
{
    if (state[0] == '\0' || strncmp(state, "08", 2) == 0 ||
        strncmp(state, "57", 2) == 0 || strcmp(state, "25006") == 0 ||
        strncmp(state, "40", 2) == 0)
        return FOLIO_ST_UNAVAILABLE; /* connection, shutdown, standby */
    if (strncmp(state, "53", 2) == 0 || strncmp(state, "54", 2) == 0)
        return FOLIO_ST_RESOURCE_EXHAUSTED; /* disk full, limits */
    if (strncmp(state, "22", 2) == 0)
        return FOLIO_ST_INVALID_ARGUMENT; /* the text cannot be stored */
    return FOLIO_ST_INTERNAL;
}

/* A list's rows: the page's reply into pg->scratch. */
static void
list_rows(struct folio_pg *pg, struct unit *u, PGresult *res)
{
    int n = PQntuples(res), i;
    size_t max = (size_t)pg->cfg->max_message_bytes, total = 0;
    unsigned char h[5];

    folio_buf_reset(&pg->scratch);
    if (n == 0) {
        if (folio_buf_append(&pg->scratch, "\x90", 1) != 0)
            goto nomem;
        return;
    }
    for (i = 0; i < n; i++)
        total += (size_t)PQgetlength(res, i, 0);
    if (total + 5 > max) {
        u->failed = 1;
        snprintf(u->state, sizeof(u->state), "54000");
        snprintf(u->msg, sizeof(u->msg),
                 "the page's comments are over %zu bytes: too large for one "
                 "reply",
                 max);
        return;
    }
    h[0] = 0xdd;
    h[1] = (unsigned char)((unsigned)n >> 24);
    h[2] = (unsigned char)((unsigned)n >> 16);
    h[3] = (unsigned char)((unsigned)n >> 8);
    h[4] = (unsigned char)n;
    if (folio_buf_reserve(&pg->scratch, total + 5) != 0 ||
        folio_buf_append(&pg->scratch, h, 5) != 0)
        goto nomem;
    for (i = 0; i < n; i++)
        folio_buf_append(&pg->scratch, PQgetvalue(res, i, 0),
                         (size_t)PQgetlength(res, i, 0));
    return;
nomem:
    u->failed = 1;
    snprintf(u->state, sizeof(u->state), "53200");
    snprintf(u->msg, sizeof(u->msg), "out of memory");
}

/*
 * Post r's row (sql_post): its id; the stored comment when it is a first
 * one answered again (after the tail in r->text); a key another comment
 * has.
 */
static void
post_row(struct req *r, PGresult *res)
{
    r->id = folio_be64_get((const unsigned char *)PQgetvalue(res, 0, 0));
    r->key_used = PQgetvalue(res, 0, 1)[0] == 0;
    folio_buf_truncate(&r->text, r->tend);
    r->replay = 0;
    if (!PQgetisnull(res, 0, 2) &&
        folio_buf_append(&r->text, PQgetvalue(res, 0, 2),
                         (size_t)PQgetlength(res, 0, 2)) == 0)
        r->replay = 1;
}

/* A successful result of u's current statement. */
static void
result_ok(struct folio_pg *pg, struct unit *u, PGresult *res)
{
    switch (u->kind) {
    case U_LIST:
        list_rows(pg, u, res);
        break;
    case U_DELETE:
        if (PQntuples(res) == 1) {
            struct req *r = u->reqs.head;
            int len = PQgetlength(res, 0, 0);

            if (len > 0 && (size_t)len <= sizeof(r->path)) {
                memcpy(r->path, PQgetvalue(res, 0, 0), (size_t)len);
                r->plen = (uint32_t)len;
            }
            r->id = 0; /* deleted */
        }
        break;
    default:
        /* each post's row, in order (the key cuts and prunes have none) */
        if (u->cur != NULL && PQresultStatus(res) == PGRES_TUPLES_OK) {
            if (PQntuples(res) == 1 && PQnfields(res) == 3 &&
                PQgetlength(res, 0, 0) == 8 && PQgetlength(res, 0, 1) == 1) {
                post_row(u->cur, res);
            } else if (!u->failed) {
                u->failed = 1;
                snprintf(u->state, sizeof(u->state), "XX000");
                snprintf(u->msg, sizeof(u->msg),
                         "the database stored no id for a post");
            }
            u->cur = u->cur->next;
        }
    }
}

static void
result_error(struct unit *u, PGresult *res)
{
    const char *st = PQresultErrorField(res, PG_DIAG_SQLSTATE);
    const char *m = PQresultErrorField(res, PG_DIAG_MESSAGE_PRIMARY);

    if (u->failed)
        return;
    u->failed = 1;
    snprintf(u->state, sizeof(u->state), "%s", st != NULL ? st : "");
    snprintf(u->msg, sizeof(u->msg), "%s",
             m != NULL ? m : PQresultErrorMessage(res));
    u->msg[strcspn(u->msg, "\n")] = '\0';
}

/* The post's reply: the map head, its id, then the stored tail. */
static int
post_reply(struct folio_pg *pg, struct req *r)
{
    unsigned char id[8];
    size_t tail = r->alen + r->blen;

    folio_buf_reset(&pg->scratch);
    if (r->replay)
        return folio_buf_append(&pg->scratch, folio_buf_at(&r->text, r->tend),
                                folio_buf_mark(&r->text) - r->tend);
    folio_be64_put(id, r->id);
    return folio_buf_append(&pg->scratch, r->has_reply_to ? "\x86" : "\x85",
                            1) != 0 ||
                   folio_buf_append(&pg->scratch, comment_head + 1,
                                    sizeof(comment_head) - 1) != 0 ||
                   folio_buf_append(&pg->scratch, id, 8) != 0 ||
                   folio_buf_append(&pg->scratch, folio_buf_at(&r->text, tail),
                                    r->tend - tail) != 0
               ? -1
               : 0;
}

/* The RPC status of u's error; a failure of ours (13) is logged. */
static int
unit_status(const struct unit *u, const char *what)
{
    int code = status_of(u->state);

    if (code == FOLIO_ST_INTERNAL)
        folio_log_errorx("comments: PostgreSQL: %s: %s (SQLSTATE %s)", what,
                         u->msg, u->state);
    return code;
}

static void
complete_batch(struct folio_pg *pg, struct unit *u)
{
    struct req *r;
    int code;

    pg->batches_out--;
    if (!u->failed) {
        /* Our own cache first: a client may list the page next. */
        for (r = u->reqs.head; r != NULL; r = r->next)
            if (pg->cache != NULL)
                folio_ccache_drop(pg->cache, r->path, r->plen);
        while ((r = q_pop(&u->reqs)) != NULL) {
            if (r->key_used)
                folio_pg_release_error(pg, r, FOLIO_ST_FAILED_PRECONDITION,
                                       FOLIO_COMMENTS_KEY_USED);
            else if (post_reply(pg, r) != 0)
                folio_pg_release_error(pg, r, FOLIO_ST_RESOURCE_EXHAUSTED,
                                       "out of memory");
            else
                folio_pg_release_ok(pg, r, folio_buf_at(&pg->scratch, 0),
                                    folio_buf_mark(&pg->scratch));
        }
        return;
    }
    code = status_of(u->state);
    if (u->reqs.head != NULL && u->reqs.head->next != NULL &&
        code != FOLIO_ST_UNAVAILABLE) {
        /* One post may spoil the batch: commit each on its own. */
        for (r = u->reqs.head; r != NULL; r = r->next)
            r->alone = 1;
        q_prepend(&pg->posts, &u->reqs);
        return;
    }
    folio_pg_fail_queue(pg, &u->reqs, unit_status(u, "post"), u->msg);
}

static void
complete_list(struct folio_pg *pg, struct unit *u)
{
    struct req *r = u->reqs.head;
    struct folio_bytes *b;
    size_t len = folio_buf_mark(&pg->scratch);
    int fresh;

    if (r == NULL)
        return;
    if (u->failed) {
        folio_pg_fail_queue(pg, &u->reqs, unit_status(u, "list"), u->msg);
        return;
    }
    fresh = pg->cache != NULL &&
            folio_ccache_fresh(pg->cache, r->path, r->plen, u->epoch);
    /*
     * Cached, or large: one copy of the page, which every list of this
     * unit's sends by reference (and later ones, from the cache).
     */
    if ((fresh || len >= FOLIO_REF_MIN) &&
        folio_bytes_copy(folio_buf_at(&pg->scratch, 0), len, &b) == 0) {
        if (fresh) {
            folio_ccache_put(pg->cache, r->path, r->plen, b);
            folio_pg_cache_gauge(pg);
        }
        while ((r = q_pop(&u->reqs)) != NULL)
            folio_pg_release_page(pg, r, b);
        folio_bytes_unref(b);
        return;
    }
    /* The reply stays in scratch: releasing touches nothing of ours. */
    while ((r = q_pop(&u->reqs)) != NULL)
        folio_pg_release_ok(pg, r, folio_buf_at(&pg->scratch, 0), len);
}

static void
complete_delete(struct folio_pg *pg, struct unit *u)
{
    struct req *r = q_pop(&u->reqs);
    char msg[96];

    if (r == NULL)
        return;
    if (u->failed) {
        folio_pg_release_error(pg, r, unit_status(u, "delete"), u->msg);
        return;
    }
    if (r->id != 0 && !r->in_doubt) {
        snprintf(msg, sizeof(msg), "no comment with id %llu",
                 (unsigned long long)r->id);
        folio_pg_release_error(pg, r, FOLIO_ST_NOT_FOUND, msg);
        return;
    }
    /* Deleted now, or by our attempt before the connection was lost. */
    if (r->plen > 0 && pg->cache != NULL)
        folio_ccache_drop(pg->cache, r->path, r->plen);
    folio_pg_release_ok(pg, r, "\xc3", 1);
}

/* A unit's Sync arrived: answer its requests. */
static void
complete(struct folio_pg *pg, struct unit *u)
{
    switch (u->kind) {
    case U_LIST:
        complete_list(pg, u);
        break;
    case U_DELETE:
        complete_delete(pg, u);
        break;
    default:
        complete_batch(pg, u);
    }
    folio_pg_unit_put(pg, u);
}

/* A server error that means this connection cannot go on. */
static int
fatal_state(const char *state)
{
    return strncmp(state, "08", 2) == 0 || strncmp(state, "57", 2) == 0 ||
           strcmp(state, "25006") == 0;
}

/*
 * Read every result that has arrived.  Returns 0, or -1 when the
 * connection must be reset (pg->why says why).
 */
int
folio_pg_read_results(struct folio_pg *pg)
{
    struct unit *u;
    PGresult *res;
    int reset = 0;

    while ((u = pg->inflight.head) != NULL) {
        if (PQisBusy(pg->conn))
            break;
        if ((res = PQgetResult(pg->conn)) == NULL) {
            if (!u->got)
                break; /* nothing more for now */
            u->done++;
            u->got = 0;
            continue;
        }
        switch (PQresultStatus(res)) {
        case PGRES_PIPELINE_SYNC:
            if (u->failed && fatal_state(u->state)) {
                /* Left in flight: folio_pg_reset sends it again. */
                folio_pg_set_why(pg, u->msg);
                reset = 1;
            } else {
                uq_pop(&pg->inflight);
                complete(pg, u);
            }
            break;
        case PGRES_COMMAND_OK:
        case PGRES_TUPLES_OK:
            if (!u->failed)
                result_ok(pg, u, res);
            u->got = 1;
            break;
        case PGRES_PIPELINE_ABORTED:
            u->got = 1;
            break;
        default:
            result_error(u, res);
            u->got = 1;
        }
        PQclear(res);
        if (reset)
            break;
    }
    return reset ? -1 : 0;
}

void
folio_pg_read_notifies(struct folio_pg *pg)
{
    PGnotify *n;

    while ((n = PQnotifies(pg->conn)) != NULL) {
        if (pg->cache != NULL) {
            if (n->extra[0] == '\0')
                folio_ccache_clear(pg->cache);
            else
                folio_ccache_drop(pg->cache, n->extra, strlen(n->extra));
        }
        folio_stat_add(&pg->w->slot->ws_comments_cache_invalidations, 1);
        PQfreemem(n);
    }
    folio_pg_cache_gauge(pg);
}
