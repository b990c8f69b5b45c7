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

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/event.h>
#include <event2/event_struct.h>
#include <libpq-fe.h>

#include "shm/comments.h"
#include "shm/stats.h"
#include "src/alloc.h"
#include "src/buf.h"
#include "src/clock.h"
#include "src/conf.h"
#include "src/err.h"
#include "src/log.h"
#include "worker/comments_backend.h"
#include "worker/comments_cache.h"
#include "worker/comments_pg.h"
#include "worker/dispatch.h"
#include "worker/worker_int.h"

#define BATCH_MAX 256              /* posts in one transaction */
#define BATCH_BYTES (4u << 20)     /* or this much text */
#define BACKOFF_MIN_MS 100
#define BACKOFF_MAX_MS 2000
#define TEXT_KEEP 16384            /* a post's buffer kept for the next one */
#define CHANNEL "folio_comments"

/* Type oids of the parameters (pg_type.h, stable). */
#define OID_BYTEA 17
#define OID_INT8 20
#define OID_TEXT 25

/* A stored comment starts with a 5-entry map and its id, as a uint64. */
static const char comment_head[5] = {'\x85', '\xa2', 'i', 'd', '\xcf'};

/* ---- SQL ----------------------------------------------------------- */

/*
 * The schema, created and migrated at each connect, under an advisory
 * lock (workers of every host connect at once).  X(version, sql): each
 * migration, applied in order to a database older than it.
 */
#define PG_MIGRATIONS(X)                                                       \
    X(1, "CREATE SEQUENCE folio_comment_ids;"                                  \
         "CREATE TABLE folio_comments ("                                       \
         " id bigint PRIMARY KEY,"                                             \
         " path text NOT NULL,"                                                \
         " author text NOT NULL,"                                              \
         " body text NOT NULL,"                                                \
         " created_at bigint NOT NULL,"                                        \
         " post_key bytea UNIQUE,"                                             \
         " encoded bytea NOT NULL);"                                           \
         "ALTER SEQUENCE folio_comment_ids OWNED BY folio_comments.id;"        \
         "CREATE INDEX folio_comments_page ON folio_comments (path, id);"      \
         "CREATE FUNCTION folio_comments_notify() RETURNS trigger"             \
         " LANGUAGE plpgsql AS $f$ BEGIN"                                      \
         " IF TG_OP = 'TRUNCATE' THEN"                                         \
         "  PERFORM pg_notify('" CHANNEL "', ''); RETURN NULL; END IF;"        \
         " IF TG_OP <> 'INSERT' THEN"                                          \
         "  PERFORM pg_notify('" CHANNEL "', OLD.path); END IF;"               \
         " IF TG_OP <> 'DELETE' THEN"                                          \
         "  PERFORM pg_notify('" CHANNEL "', NEW.path); END IF;"               \
         " RETURN NULL; END $f$;"                                              \
         "CREATE TRIGGER folio_comments_notify"                                \
         " AFTER INSERT OR UPDATE OR DELETE ON folio_comments"                 \
         " FOR EACH ROW EXECUTE FUNCTION folio_comments_notify();"             \
         "CREATE TRIGGER folio_comments_notify_all"                            \
         " AFTER TRUNCATE ON folio_comments"                                   \
         " FOR EACH STATEMENT EXECUTE FUNCTION folio_comments_notify();")

#define STR_(x) #x
#define STR(x) STR_(x)
#define MIGRATION_STEP(v, sql) " IF v < " #v " THEN " sql " END IF;"

/* One simple query (one transaction): LISTEN, the schema, the settings. */
static const char sql_setup[] =
    "LISTEN " CHANNEL ";"
    "DO $folio$ DECLARE v integer; BEGIN"
    " PERFORM pg_advisory_xact_lock(7788020);"
    " CREATE TABLE IF NOT EXISTS folio_schema (version integer NOT NULL);"
    " SELECT max(version) INTO v FROM folio_schema;"
    " IF v IS NULL THEN INSERT INTO folio_schema VALUES (0); v := 0; END IF;"
    " IF v > " STR(FOLIO_COMMENTS_PG_SCHEMA) " THEN RAISE EXCEPTION"
    " 'the comments schema is version %, newer than this foliod''s "
    STR(FOLIO_COMMENTS_PG_SCHEMA) ": run a newer foliod', v; END IF;"
    PG_MIGRATIONS(MIGRATION_STEP)
    " UPDATE folio_schema SET version = " STR(FOLIO_COMMENTS_PG_SCHEMA) ";"
    " END $folio$;"
    "SELECT current_setting('synchronous_commit'), current_setting('fsync'),"
    " (SELECT max(version) FROM folio_schema)";

/*
 * A post: $1 key, $2 path, $3 author, $4 body, $5 created_at, $6 the
 * stored comment after its id.  Returns the id stored under the key: the
 * new one, or the one of an earlier attempt that did commit.
 */
static const char sql_post[] =
    "WITH n AS (SELECT nextval('folio_comment_ids') AS id),"
    " ins AS (INSERT INTO folio_comments"
    " (id, post_key, path, author, body, created_at, encoded)"
    " SELECT n.id, $1, $2, $3, $4, $5,"
    " '\\x85a26964cf'::bytea || int8send(n.id) || $6 FROM n"
    " ON CONFLICT (post_key) DO NOTHING RETURNING id)"
    " SELECT id FROM ins UNION ALL"
    " SELECT id FROM folio_comments WHERE post_key = $1 LIMIT 1";

static const char sql_list[] =
    "SELECT encoded FROM folio_comments WHERE path = $1 ORDER BY id";

static const char sql_delete[] =
    "DELETE FROM folio_comments WHERE id = $1 RETURNING path";

/* ---- state --------------------------------------------------------- */

enum conn_state {
    C_DOWN = 0,   /* not connected; the next attempt is on a timer */
    C_CONNECTING, /* PQconnectPoll */
    C_SETUP,      /* the setup query */
    C_READY       /* pipeline mode */
};

enum req_kind { R_LIST, R_POST, R_DELETE };

/* A held call waiting for the database. */
struct req {
    struct folio_hold hold;
    struct req *next;
    uint64_t deadline_ms;
    uint64_t id;         /* delete: the id; post: the id stored */
    uint8_t kind;
    uint8_t in_doubt;    /* sent before a connection was lost */
    uint8_t alone;       /* post: its batch failed; commit it on its own */
    uint32_t plen;
    char path[FOLIO_COMMENTS_NPATH_MAX]; /* normalized */
    /* post: author, body, then the comment after its id */
    struct folio_buf text;
    uint32_t alen, blen;
    unsigned char key[16];
    unsigned char created_at[8]; /* big-endian, as sent */
};

struct queue {
    struct req *head, *tail;
};

enum unit_kind { U_LIST, U_BATCH, U_DELETE };

/* What one Sync closes: its requests and how their results went. */
struct unit {
    struct unit *next;
    uint8_t kind;
    uint8_t got;         /* the current statement has its result */
    uint8_t failed;
    uint8_t sent;
    uint32_t done;       /* statements whose results are complete */
    uint64_t epoch;      /* list: the cache's epoch when sent */
    struct queue reqs;   /* list: all asking that page; batch: its posts */
    struct req *cur;     /* batch: the post whose result is next */
    char state[6];       /* SQLSTATE of the first error */
    char msg[256];
};

struct uqueue {
    struct unit *head, *tail;
};

static struct {
    struct folio_worker *w;
    const struct folio_config *cfg;
    PGconn *conn;
    int state;
    int sock;
    struct event ev_rd, ev_wr; /* on sock (assigned per socket) */
    int rd_on, wr_on;
    struct event *ev_timer; /* the nearest deadline */
    struct event *ev_retry; /* backoff, and the connect time-out */
    struct event *ev_kick;  /* send what waits, at the end of the turn */
    struct queue posts;     /* waiting to be batched */
    struct uqueue waiting;  /* lists and deletes not yet sent */
    struct uqueue inflight; /* sent, in order */
    int batches_out;        /* batches in flight */
    struct req *free_reqs;
    struct unit *free_units;
    struct folio_ccache *cache;
    struct folio_buf scratch; /* a reply being built */
    uint64_t backoff_ms;
    uint64_t down_since_ms;
    uint64_t key_hi, key_seq;
    uint64_t rnd;
    int ever_up;
    int down_logged; /* the current outage was logged */
    int warned_sync;
    char why[256];   /* why the database is unavailable */
    const char *kw[10], *val[10];
} pg;

static void on_kick(evutil_socket_t fd, short what, void *arg);
static void on_timer(evutil_socket_t fd, short what, void *arg);
static void on_retry(evutil_socket_t fd, short what, void *arg);
static void connect_start(void);
static void conn_reset(const char *why, int failed_connect);

/* ---- small helpers ------------------------------------------------- */

static void
put_be64(unsigned char *p, uint64_t v)
{
    int i;

    for (i = 7; i >= 0; i--, v >>= 8)
        p[i] = (unsigned char)v;
}

static uint64_t
get_be64(const unsigned char *p)
{
    uint64_t v = 0;
    int i;

    for (i = 0; i < 8; i++)
        v = v << 8 | p[i];
    return v;
}

/* libpq's message, first line only, into pg.why. */
static const char *
set_why(const char *msg)
{
    size_t n;

    if (msg == NULL || *msg == '\0')
        msg = "no reason given";
    n = strcspn(msg, "\n");
    snprintf(pg.why, sizeof(pg.why), "%.*s", (int)n, msg);
    return pg.why;
}

static uint64_t
next_random(void)
{
    /* xorshift64*: jitter, nothing secret */
    pg.rnd ^= pg.rnd >> 12;
    pg.rnd ^= pg.rnd << 25;
    pg.rnd ^= pg.rnd >> 27;
    return pg.rnd * 0x2545f4914f6cdd1dull;
}

static void
q_push(struct queue *q, struct req *r)
{
    r->next = NULL;
    if (q->tail != NULL)
        q->tail->next = r;
    else
        q->head = r;
    q->tail = r;
}

static struct req *
q_pop(struct queue *q)
{
    struct req *r = q->head;

    if (r != NULL) {
        q->head = r->next;
        if (q->head == NULL)
            q->tail = NULL;
        r->next = NULL;
    }
    return r;
}

/* Put queue `front` before q (both in order). */
static void
q_prepend(struct queue *q, struct queue *front)
{
    if (front->head == NULL)
        return;
    front->tail->next = q->head;
    if (q->tail == NULL)
        q->tail = front->tail;
    q->head = front->head;
    front->head = front->tail = NULL;
}

static void
uq_push(struct uqueue *q, struct unit *u)
{
    u->next = NULL;
    if (q->tail != NULL)
        q->tail->next = u;
    else
        q->head = u;
    q->tail = u;
}

static struct unit *
uq_pop(struct uqueue *q)
{
    struct unit *u = q->head;

    if (u != NULL) {
        q->head = u->next;
        if (q->head == NULL)
            q->tail = NULL;
        u->next = NULL;
    }
    return u;
}

static struct req *
req_get(void)
{
    struct req *r = pg.free_reqs;

    if (r != NULL) {
        pg.free_reqs = r->next;
    } else if ((r = folio_calloc(1, sizeof(*r))) == NULL) {
        return NULL;
    }
    r->next = NULL;
    r->in_doubt = 0;
    r->alone = 0;
    r->id = 0;
    r->plen = 0;
    return r;
}

static void
req_put(struct req *r)
{
    if (r->text.b_cap > TEXT_KEEP)
        folio_buf_free(&r->text);
    else
        folio_buf_reset(&r->text);
    r->next = pg.free_reqs;
    pg.free_reqs = r;
}

static struct unit *
unit_get(int kind)
{
    struct unit *u = pg.free_units;

    if (u != NULL)
        pg.free_units = u->next;
    else if ((u = folio_malloc(sizeof(*u))) == NULL)
        return NULL;
    memset(u, 0, sizeof(*u));
    u->kind = (uint8_t)kind;
    return u;
}

static void
unit_put(struct unit *u)
{
    u->next = pg.free_units;
    pg.free_units = u;
}

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

/* The cache's size, for server.stats and /metrics. */
static void
cache_gauge(void)
{
    struct folio_ccache_info ci;

    if (pg.cache == NULL)
        return;
    folio_ccache_info(pg.cache, &ci);
    folio_stat_set(&pg.w->slot->ws_comments_cache_bytes, ci.bytes);
}

/* ---- answering ----------------------------------------------------- */

static void
release_error(struct req *r, int code, const char *msg)
{
    char buf[512];

    if (code == FOLIO_ST_UNAVAILABLE) {
        folio_stat_add(&pg.w->slot->ws_comments_db_unavailable, 1);
        if (r->in_doubt && r->kind == R_POST) {
            /* Its commit may have happened before the connection went. */
            snprintf(buf, sizeof(buf),
                     "%s (the comment may have been stored)", msg);
            msg = buf;
        }
    }
    folio_hold_release(&r->hold, NULL, 0, code, msg);
    req_put(r);
}

static void
release_ok(struct req *r, const void *result, size_t len)
{
    folio_hold_release(&r->hold, result, len, 0, NULL);
    req_put(r);
}

/* Answer every request of queue q with an error. */
static void
fail_queue(struct queue *q, int code, const char *msg)
{
    struct req *r;

    while ((r = q_pop(q)) != NULL)
        release_error(r, code, msg);
}

static void
fail_units(struct uqueue *q, int code, const char *msg)
{
    struct unit *u;

    while ((u = uq_pop(q)) != NULL) {
        fail_queue(&u->reqs, code, msg);
        unit_put(u);
    }
}

static const char *
unavailable_msg(char *buf, size_t len)
{
    snprintf(buf, len, "the comments database is unavailable: %s", pg.why);
    return buf;
}

/* ---- the timer of deadlines ---------------------------------------- */

static uint64_t
nearest_deadline(void)
{
    uint64_t d = UINT64_MAX;

    if (pg.posts.head != NULL && pg.posts.head->deadline_ms < d)
        d = pg.posts.head->deadline_ms;
    if (pg.waiting.head != NULL && pg.waiting.head->reqs.head != NULL &&
        pg.waiting.head->reqs.head->deadline_ms < d)
        d = pg.waiting.head->reqs.head->deadline_ms;
    if (pg.inflight.head != NULL && pg.inflight.head->reqs.head != NULL &&
        pg.inflight.head->reqs.head->deadline_ms < d)
        d = pg.inflight.head->reqs.head->deadline_ms;
    return d;
}

static void
arm_timer(void)
{
    uint64_t d = nearest_deadline(), now;
    struct timeval tv;

    if (d == UINT64_MAX || evtimer_pending(pg.ev_timer, NULL))
        return;
    now = folio_now_ms();
    d = d > now ? d - now : 0;
    tv.tv_sec = (time_t)(d / 1000);
    tv.tv_usec = (suseconds_t)(d % 1000) * 1000;
    evtimer_add(pg.ev_timer, &tv);
}

static void
kick(void)
{
    event_active(pg.ev_kick, EV_TIMEOUT, 1);
}

/* ---- the socket's events ------------------------------------------- */

static void
sock_off(void)
{
    if (pg.rd_on)
        event_del(&pg.ev_rd);
    if (pg.wr_on)
        event_del(&pg.ev_wr);
    pg.rd_on = pg.wr_on = 0;
}

/* Watch the connection's socket: rd/wr, persistent or once. */
static void
sock_watch(event_callback_fn cb, int rd, int wr, int persist)
{
    int fd = PQsocket(pg.conn);
    short p = persist ? EV_PERSIST : 0;

    sock_off();
    pg.sock = fd;
    if (fd < 0)
        return;
    if (rd) {
        event_assign(&pg.ev_rd, pg.w->base, fd, EV_READ | p, cb, NULL);
        event_add(&pg.ev_rd, NULL);
        pg.rd_on = 1;
    }
    if (wr) {
        event_assign(&pg.ev_wr, pg.w->base, fd, EV_WRITE | p, cb, NULL);
        event_add(&pg.ev_wr, NULL);
        pg.wr_on = 1;
    }
}

/* ---- sending ------------------------------------------------------- */

static void on_io(evutil_socket_t fd, short what, void *arg);

/* Push libpq's output; watch for writability while some is left. */
static int
flush_out(void)
{
    int r = PQflush(pg.conn);

    if (r < 0)
        return -1;
    if (r > 0 && !pg.wr_on) {
        event_assign(&pg.ev_wr, pg.w->base, pg.sock, EV_WRITE | EV_PERSIST,
                     on_io, NULL);
        event_add(&pg.ev_wr, NULL);
        pg.wr_on = 1;
    } else if (r == 0 && pg.wr_on) {
        event_del(&pg.ev_wr);
        pg.wr_on = 0;
    }
    return 0;
}

static int
send_stmt(const char *sql, int n, const Oid *types, const char *const *vals,
          const int *lens)
{
    static const int fmts[6] = {1, 1, 1, 1, 1, 1};

    return PQsendQueryParams(pg.conn, sql, n, types, vals, lens, fmts, 1) ==
                   1
               ? 0
               : -1;
}

static int
send_post(struct req *r)
{
    static const Oid types[6] = {OID_BYTEA, OID_TEXT, OID_TEXT,
                                 OID_TEXT,  OID_INT8, OID_BYTEA};
    const char *t = folio_buf_at(&r->text, 0);
    const char *vals[6];
    int lens[6];

    vals[0] = (const char *)r->key;
    lens[0] = sizeof(r->key);
    vals[1] = r->path;
    lens[1] = (int)r->plen;
    vals[2] = t;
    lens[2] = (int)r->alen;
    vals[3] = t + r->alen;
    lens[3] = (int)r->blen;
    vals[4] = (const char *)r->created_at;
    lens[4] = 8;
    vals[5] = t + r->alen + r->blen;
    lens[5] = (int)(folio_buf_mark(&r->text) - r->alen - r->blen);
    return send_stmt(sql_post, 6, types, vals, lens);
}

/* Send unit u (already at the tail of pg.inflight). */
static int
send_unit(struct unit *u)
{
    static const Oid t_text[1] = {OID_TEXT}, t_int8[1] = {OID_INT8};
    struct req *r = u->reqs.head;
    unsigned char id[8];
    const char *v[1];
    int l[1];

    u->sent = 1;
    switch (u->kind) {
    case U_LIST:
        u->epoch = pg.cache != NULL ? folio_ccache_epoch(pg.cache) : 0;
        v[0] = r->path;
        l[0] = (int)r->plen;
        if (send_stmt(sql_list, 1, t_text, v, l) != 0)
            return -1;
        break;
    case U_DELETE:
        put_be64(id, r->id);
        v[0] = (const char *)id;
        l[0] = 8;
        if (send_stmt(sql_delete, 1, t_int8, v, l) != 0)
            return -1;
        break;
    default:
        /* No BEGIN: the Sync commits them all, or none */
        u->cur = r;
        pg.batches_out++;
        for (; r != NULL; r = r->next)
            if (send_post(r) != 0)
                return -1;
    }
    return PQpipelineSync(pg.conn) == 1 ? 0 : -1;
}

/* Take the next batch of waiting posts into a unit. */
static struct unit *
take_batch(void)
{
    struct unit *u;
    struct req *r;
    size_t n = 0, bytes = 0;

    if ((u = unit_get(U_BATCH)) == NULL)
        return NULL;
    while ((r = pg.posts.head) != NULL) {
        if (n > 0 && (r->alone || n >= BATCH_MAX ||
                      bytes + folio_buf_mark(&r->text) > BATCH_BYTES))
            break;
        q_push(&u->reqs, q_pop(&pg.posts));
        bytes += folio_buf_mark(&r->text);
        if (++n == 1 && r->alone)
            break;
        if (!pg.cfg->comments_group_commit)
            break;
    }
    return u;
}

static void
on_kick(evutil_socket_t fd, short what, void *arg)
{
    struct unit *u;

    if (pg.state != C_READY)
        return;
    while ((u = uq_pop(&pg.waiting)) != NULL) {
        uq_push(&pg.inflight, u);
        if (send_unit(u) != 0)
            goto lost;
    }
    while (pg.posts.head != NULL &&
           (pg.batches_out == 0 || !pg.cfg->comments_group_commit)) {
        if ((u = take_batch()) == NULL)
            break; /* out of memory: the deadline answers them */
        uq_push(&pg.inflight, u);
        if (send_unit(u) != 0)
            goto lost;
    }
    if (flush_out() != 0)
        goto lost;
    arm_timer();
    return;
lost:
    conn_reset(PQerrorMessage(pg.conn), 0);
}

/* ---- results ------------------------------------------------------- */

/* A list's rows: the page's reply into pg.scratch. */
static void
list_rows(struct unit *u, PGresult *res)
{
    int n = PQntuples(res), i;
    size_t max = (size_t)pg.cfg->max_message_bytes, total = 0;
    unsigned char h[5];

    folio_buf_reset(&pg.scratch);
    if (n == 0) {
        if (folio_buf_append(&pg.scratch, "\x90", 1) != 0)
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
    if (folio_buf_reserve(&pg.scratch, total + 5) != 0 ||
        folio_buf_append(&pg.scratch, h, 5) != 0)
        goto nomem;
    for (i = 0; i < n; i++)
        folio_buf_append(&pg.scratch, PQgetvalue(res, i, 0),
                         (size_t)PQgetlength(res, i, 0));
    return;
nomem:
    u->failed = 1;
    snprintf(u->state, sizeof(u->state), "53200");
    snprintf(u->msg, sizeof(u->msg), "out of memory");
}

/* A successful result of u's current statement. */
static void
result_ok(struct unit *u, PGresult *res)
{
    switch (u->kind) {
    case U_LIST:
        list_rows(u, res);
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
        /* each post's id, in order */
        if (u->cur != NULL && PQresultStatus(res) == PGRES_TUPLES_OK) {
            if (PQntuples(res) == 1 && PQgetlength(res, 0, 0) == 8) {
                u->cur->id = get_be64(
                    (const unsigned char *)PQgetvalue(res, 0, 0));
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
post_reply(struct req *r)
{
    unsigned char id[8];
    size_t tail = r->alen + r->blen;

    folio_buf_reset(&pg.scratch);
    put_be64(id, r->id);
    return folio_buf_append(&pg.scratch, comment_head,
                            sizeof(comment_head)) != 0 ||
                   folio_buf_append(&pg.scratch, id, 8) != 0 ||
                   folio_buf_append(&pg.scratch,
                                    folio_buf_at(&r->text, tail),
                                    folio_buf_mark(&r->text) - tail) != 0
               ? -1
               : 0;
}

static void
complete_batch(struct unit *u)
{
    struct req *r;
    int code;

    pg.batches_out--;
    if (!u->failed) {
        /* Our own cache first: a client may list the page next. */
        for (r = u->reqs.head; r != NULL; r = r->next)
            if (pg.cache != NULL)
                folio_ccache_drop(pg.cache, r->path, r->plen);
        while ((r = q_pop(&u->reqs)) != NULL) {
            if (post_reply(r) != 0)
                release_error(r, FOLIO_ST_RESOURCE_EXHAUSTED,
                              "out of memory");
            else
                release_ok(r, folio_buf_at(&pg.scratch, 0),
                           folio_buf_mark(&pg.scratch));
        }
        return;
    }
    code = status_of(u->state);
    if (u->reqs.head != NULL && u->reqs.head->next != NULL &&
        code != FOLIO_ST_UNAVAILABLE) {
        /* One post may spoil the batch: commit each on its own. */
        for (r = u->reqs.head; r != NULL; r = r->next)
            r->alone = 1;
        q_prepend(&pg.posts, &u->reqs);
        return;
    }
    if (code == FOLIO_ST_INTERNAL)
        folio_log_errorx("comments: PostgreSQL: post: %s (SQLSTATE %s)",
                         u->msg, u->state);
    fail_queue(&u->reqs, code, u->msg);
}

static void
complete_list(struct unit *u)
{
    struct req *r = u->reqs.head;
    int code;

    if (r == NULL)
        return;
    if (u->failed) {
        code = status_of(u->state);
        if (code == FOLIO_ST_INTERNAL)
            folio_log_errorx("comments: PostgreSQL: list: %s (SQLSTATE %s)",
                             u->msg, u->state);
        fail_queue(&u->reqs, code, u->msg);
        return;
    }
    if (pg.cache != NULL &&
        folio_ccache_fresh(pg.cache, r->path, r->plen, u->epoch)) {
        folio_ccache_put(pg.cache, r->path, r->plen,
                         folio_buf_at(&pg.scratch, 0),
                         folio_buf_mark(&pg.scratch));
        cache_gauge();
    }
    /* The reply stays in scratch: releasing touches nothing of ours. */
    while ((r = q_pop(&u->reqs)) != NULL)
        release_ok(r, folio_buf_at(&pg.scratch, 0),
                   folio_buf_mark(&pg.scratch));
}

static void
complete_delete(struct unit *u)
{
    struct req *r = q_pop(&u->reqs);
    char msg[96];
    int code;

    if (r == NULL)
        return;
    if (u->failed) {
        code = status_of(u->state);
        if (code == FOLIO_ST_INTERNAL)
            folio_log_errorx("comments: PostgreSQL: delete: %s (SQLSTATE %s)",
                             u->msg, u->state);
        release_error(r, code, u->msg);
        return;
    }
    if (r->id != 0 && !r->in_doubt) {
        snprintf(msg, sizeof(msg), "no comment with id %llu",
                 (unsigned long long)r->id);
        release_error(r, FOLIO_ST_NOT_FOUND, msg);
        return;
    }
    /* Deleted now, or by our attempt before the connection was lost. */
    if (r->plen > 0 && pg.cache != NULL)
        folio_ccache_drop(pg.cache, r->path, r->plen);
    release_ok(r, "\xc3", 1);
}

/* A unit's Sync arrived: answer its requests. */
static void
complete(struct unit *u)
{
    switch (u->kind) {
    case U_LIST:
        complete_list(u);
        break;
    case U_DELETE:
        complete_delete(u);
        break;
    default:
        complete_batch(u);
    }
    unit_put(u);
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
 * connection must be reset (pg.why says why).
 */
static int
read_results(void)
{
    struct unit *u;
    PGresult *res;
    int reset = 0;

    while ((u = pg.inflight.head) != NULL) {
        if (PQisBusy(pg.conn))
            break;
        if ((res = PQgetResult(pg.conn)) == NULL) {
            if (!u->got)
                break; /* nothing more for now */
            u->done++;
            u->got = 0;
            continue;
        }
        switch (PQresultStatus(res)) {
        case PGRES_PIPELINE_SYNC:
            if (u->failed && fatal_state(u->state)) {
                /* Left in flight: conn_reset sends it again. */
                set_why(u->msg);
                reset = 1;
            } else {
                uq_pop(&pg.inflight);
                complete(u);
            }
            break;
        case PGRES_COMMAND_OK:
        case PGRES_TUPLES_OK:
            if (!u->failed)
                result_ok(u, res);
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

static void
read_notifies(void)
{
    PGnotify *n;

    while ((n = PQnotifies(pg.conn)) != NULL) {
        if (pg.cache != NULL) {
            if (n->extra[0] == '\0')
                folio_ccache_clear(pg.cache);
            else
                folio_ccache_drop(pg.cache, n->extra, strlen(n->extra));
        }
        folio_stat_add(&pg.w->slot->ws_comments_cache_invalidations, 1);
        PQfreemem(n);
    }
    cache_gauge();
}

/* ---- the connection's life ----------------------------------------- */

static void
set_up(int up)
{
    folio_stat_set(&pg.w->slot->ws_comments_db_up, (uint64_t)up);
}

/* Read the setup query's results; become READY when they are all in. */
static void
setup_results(void)
{
    PGresult *res;
    char failed[256] = "";

    while (!PQisBusy(pg.conn)) {
        if ((res = PQgetResult(pg.conn)) == NULL)
            break;
        switch (PQresultStatus(res)) {
        case PGRES_COMMAND_OK:
            break;
        case PGRES_TUPLES_OK:
            if (PQntuples(res) == 1 && PQnfields(res) == 3 &&
                !pg.warned_sync) {
                /* binary results are only for the extended protocol */
                const char *sc = PQgetvalue(res, 0, 0);
                const char *fs = PQgetvalue(res, 0, 1);

                if (strcmp(sc, "off") == 0 || strcmp(fs, "off") == 0) {
                    folio_log_warnx(
                        "comments: PostgreSQL runs with synchronous_commit "
                        "= %s, fsync = %s: a comment acknowledged just before "
                        "it crashes can be lost",
                        sc, fs);
                    pg.warned_sync = 1;
                }
            }
            break;
        default:
            if (failed[0] == '\0')
                snprintf(failed, sizeof(failed), "%s",
                         PQresultErrorMessage(res));
        }
        PQclear(res);
    }
    if (PQisBusy(pg.conn))
        return;
    if (failed[0] != '\0') {
        conn_reset(failed, 1);
        return;
    }
    if (PQenterPipelineMode(pg.conn) != 1) {
        conn_reset(PQerrorMessage(pg.conn), 1);
        return;
    }
    pg.state = C_READY;
    sock_watch(on_io, 1, 0, 1);
    /* Notifications sent while we were away are lost. */
    if (pg.cache != NULL)
        folio_ccache_clear(pg.cache);
    folio_stat_add(&pg.w->slot->ws_comments_db_connects, 1);
    set_up(1);
    pg.backoff_ms = 0;
    if (!pg.ever_up)
        folio_log_notice("comments: PostgreSQL %s:%s, database %s, user %s: "
                         "connected (schema version %d)",
                         PQhost(pg.conn), PQport(pg.conn), PQdb(pg.conn),
                         PQuser(pg.conn), FOLIO_COMMENTS_PG_SCHEMA);
    else if (pg.down_logged)
        folio_log_notice("comments: PostgreSQL %s:%s: reconnected after %llu "
                         "ms; the page cache starts anew",
                         PQhost(pg.conn), PQport(pg.conn),
                         (unsigned long long)(folio_now_ms() -
                                              pg.down_since_ms));
    pg.ever_up = 1;
    pg.down_logged = 0;
    kick();
}

static void
on_io(evutil_socket_t fd, short what, void *arg)
{
    PostgresPollingStatusType ps;

    switch (pg.state) {
    case C_CONNECTING:
        ps = PQconnectPoll(pg.conn);
        if (ps == PGRES_POLLING_FAILED) {
            conn_reset(PQerrorMessage(pg.conn), 1);
        } else if (ps == PGRES_POLLING_OK) {
            evtimer_del(pg.ev_retry);
            if (PQsetnonblocking(pg.conn, 1) != 0 ||
                PQsendQuery(pg.conn, sql_setup) != 1) {
                conn_reset(PQerrorMessage(pg.conn), 1);
                return;
            }
            pg.state = C_SETUP;
            sock_watch(on_io, 1, 0, 1);
            if (flush_out() != 0)
                conn_reset(PQerrorMessage(pg.conn), 1);
        } else {
            /* the socket may change as libpq tries the next address */
            sock_watch(on_io, ps == PGRES_POLLING_READING,
                       ps == PGRES_POLLING_WRITING, 0);
        }
        return;
    case C_SETUP:
        if (((what & EV_READ) && PQconsumeInput(pg.conn) != 1) ||
            flush_out() != 0) {
            conn_reset(PQerrorMessage(pg.conn), 1);
            return;
        }
        setup_results();
        return;
    case C_READY:
        if (((what & EV_READ) && PQconsumeInput(pg.conn) != 1) ||
            flush_out() != 0) {
            conn_reset(PQerrorMessage(pg.conn), 0);
            return;
        }
        if (read_results() != 0) {
            read_notifies();
            conn_reset(pg.why, 0);
            return;
        }
        read_notifies();
        if (PQstatus(pg.conn) == CONNECTION_BAD) {
            conn_reset(PQerrorMessage(pg.conn), 0);
            return;
        }
        if (pg.waiting.head != NULL || pg.posts.head != NULL)
            kick();
        arm_timer();
        return;
    default:
        return;
    }
}

/*
 * The connection failed (or never came up, failed_connect): close it.
 * What was in flight waits again, in order, with its deadline: posts are
 * sent again (their keys make that safe), deletes too (then a missing id
 * means our first attempt deleted it).  After losing a working connection
 * the first reconnect is at once; after a failed attempt the database is
 * down: everything waiting is answered 14 and the next attempt is on the
 * backoff timer.
 */
static void
conn_reset(const char *why, int failed_connect)
{
    struct unit *u;
    struct uqueue keep = {NULL, NULL};
    char msg[384];
    int was_up = pg.state == C_READY;

    if (why != pg.why)
        set_why(why);
    sock_off();
    evtimer_del(pg.ev_retry);
    if (pg.conn != NULL)
        PQfinish(pg.conn);
    pg.conn = NULL;
    pg.sock = -1;
    pg.batches_out = 0;
    set_up(0);
    while ((u = uq_pop(&pg.inflight)) != NULL) {
        struct req *r;

        for (r = u->reqs.head; r != NULL && u->sent; r = r->next)
            r->in_doubt = r->kind != R_LIST;
        if (u->kind == U_BATCH || u->reqs.head == NULL) {
            q_prepend(&pg.posts, &u->reqs); /* in order, before newer */
            unit_put(u);
            continue;
        }
        u->sent = 0;
        u->done = 0;
        u->got = 0;
        u->failed = 0;
        uq_push(&keep, u);
    }
    /* What was in flight goes before what had not been sent. */
    if (keep.head != NULL) {
        keep.tail->next = pg.waiting.head;
        if (pg.waiting.tail == NULL)
            pg.waiting.tail = keep.tail;
        pg.waiting.head = keep.head;
    }
    if (!pg.down_logged) {
        pg.down_since_ms = folio_now_ms();
        if (was_up || pg.ever_up)
            folio_log_warnx("comments: lost PostgreSQL: %s; reconnecting "
                            "(cached pages are still served)",
                            pg.why);
        else
            folio_log_warnx("comments: cannot reach PostgreSQL: %s; "
                            "retrying (posts and uncached lists answer "
                            "UNAVAILABLE meanwhile)",
                            pg.why);
        pg.down_logged = 1;
    }
    if (!failed_connect) {
        connect_start(); /* at once: the database was there */
        return;
    }
    pg.state = C_DOWN;
    unavailable_msg(msg, sizeof(msg));
    fail_queue(&pg.posts, FOLIO_ST_UNAVAILABLE, msg);
    fail_units(&pg.waiting, FOLIO_ST_UNAVAILABLE, msg);
    cache_gauge();
    {
        uint64_t b = pg.backoff_ms == 0 ? BACKOFF_MIN_MS : pg.backoff_ms * 2;
        struct timeval tv;

        if (b > BACKOFF_MAX_MS)
            b = BACKOFF_MAX_MS;
        pg.backoff_ms = b;
        b = b * 4 / 5 + next_random() % (b / 5 + 1); /* jitter: workers differ */
        tv.tv_sec = (time_t)(b / 1000);
        tv.tv_usec = (suseconds_t)(b % 1000) * 1000;
        evtimer_add(pg.ev_retry, &tv);
    }
}

/* The server's NOTICEs (the schema's "already exists, skipping"). */
static void
on_notice(void *arg, const char *msg)
{
    folio_log_debug("comments: PostgreSQL: %.*s", (int)strcspn(msg, "\n"),
                    msg);
}

static void
connect_start(void)
{
    struct timeval tv;

    pg.conn = PQconnectStartParams(pg.kw, pg.val, 1);
    if (pg.conn == NULL) {
        conn_reset("out of memory", 1);
        return;
    }
    PQsetNoticeProcessor(pg.conn, on_notice, NULL);
    if (PQstatus(pg.conn) == CONNECTION_BAD) {
        conn_reset(PQerrorMessage(pg.conn), 1);
        return;
    }
    pg.state = C_CONNECTING;
    sock_watch(on_io, 0, 1, 0); /* as if PQconnectPoll said WRITING */
    tv.tv_sec = (time_t)(pg.cfg->comments_timeout_ms / 1000);
    tv.tv_usec = (suseconds_t)(pg.cfg->comments_timeout_ms % 1000) * 1000;
    evtimer_add(pg.ev_retry, &tv); /* the connect's deadline */
}

static void
on_retry(evutil_socket_t fd, short what, void *arg)
{
    if (pg.state == C_DOWN)
        connect_start();
    else if (pg.state == C_CONNECTING || pg.state == C_SETUP)
        conn_reset("timed out connecting (comments_timeout)", 1);
}

/* Answer, from the front, what waited past its deadline in q. */
static void
expire_queue(struct queue *q, uint64_t now, const char *msg)
{
    while (q->head != NULL && q->head->deadline_ms <= now)
        release_error(q_pop(q), FOLIO_ST_UNAVAILABLE, msg);
}

static void
on_timer(evutil_socket_t fd, short what, void *arg)
{
    static const char late[] =
        "no answer from the comments database within comments_timeout";
    static const char doubt[] =
        "no answer from the comments database within comments_timeout "
        "(the comment may or may not be stored)";
    uint64_t now = folio_now_ms();
    struct unit *u;

    struct uqueue keep = {NULL, NULL};

    expire_queue(&pg.posts, now, late);
    /* A release may queue more: take the waiting units out first. */
    keep = pg.waiting;
    pg.waiting.head = pg.waiting.tail = NULL;
    while ((u = uq_pop(&keep)) != NULL) {
        expire_queue(&u->reqs, now, late);
        if (u->reqs.head != NULL)
            uq_push(&pg.waiting, u);
        else
            unit_put(u);
    }
    u = pg.inflight.head;
    if (u != NULL && u->reqs.head != NULL &&
        u->reqs.head->deadline_ms <= now) {
        /*
         * The database sits on what we sent: answer what is late, and
         * start over on a new connection (results come in order: nothing
         * behind it can come first).
         */
        for (u = pg.inflight.head; u != NULL; u = u->next)
            expire_queue(&u->reqs, now, u->kind == U_LIST ? late : doubt);
        conn_reset("no answer within comments_timeout", 0);
    }
    arm_timer();
}

/* ---- the backend --------------------------------------------------- */

static int
pg_init(struct folio_worker *w)
{
    const struct folio_config *cfg = w->cfg;
    uint64_t seed[2] = {0, 0};
    int i = 0;

    memset(&pg, 0, sizeof(pg));
    pg.w = w;
    pg.cfg = cfg;
    pg.sock = -1;
    if (getrandom(seed, sizeof(seed), 0) != (ssize_t)sizeof(seed)) {
        seed[0] = (uint64_t)getpid() << 32 ^ folio_unix_ms();
        seed[1] = folio_now_ns();
    }
    pg.key_hi = seed[0];
    pg.rnd = seed[1] | 1;
    /* Defaults the connection string may override, then what it may not. */
    pg.kw[i] = "application_name";
    pg.val[i++] = "foliod";
    pg.kw[i] = "keepalives_idle";
    pg.val[i++] = "5";
    pg.kw[i] = "keepalives_interval";
    pg.val[i++] = "1";
    pg.kw[i] = "keepalives_count";
    pg.val[i++] = "3";
    pg.kw[i] = "dbname";
    pg.val[i++] = cfg->comments_dsn;
    pg.kw[i] = "client_encoding";
    pg.val[i++] = "UTF8";
    pg.kw[i] = NULL;
    pg.val[i] = NULL;
    if ((pg.ev_timer = evtimer_new(w->base, on_timer, NULL)) == NULL ||
        (pg.ev_retry = evtimer_new(w->base, on_retry, NULL)) == NULL ||
        (pg.ev_kick = event_new(w->base, -1, 0, on_kick, NULL)) == NULL ||
        folio_buf_init(&pg.scratch, 65536, 0) != 0 ||
        (cfg->comments_cache_size > 0 &&
         folio_ccache_new(cfg->comments_cache_size, &pg.cache) != 0)) {
        folio_log_errorx("comments: no memory for the PostgreSQL backend");
        folio_comments_pg.fini(w);
        return FOLIO_ENOMEM;
    }
    snprintf(pg.why, sizeof(pg.why), "not connected yet");
    set_up(0);
    connect_start();
    return 0;
}

static void
pg_fini(struct folio_worker *w)
{
    struct req *r;
    struct unit *u;

    /* Held calls still here: their connections are gone (worker exit). */
    while ((u = uq_pop(&pg.inflight)) != NULL || 
           (u = uq_pop(&pg.waiting)) != NULL) {
        q_prepend(&pg.posts, &u->reqs);
        unit_put(u);
    }
    while ((r = q_pop(&pg.posts)) != NULL)
        req_put(r);
    while ((r = pg.free_reqs) != NULL) {
        pg.free_reqs = r->next;
        folio_buf_free(&r->text);
        folio_free(r);
    }
    while ((u = pg.free_units) != NULL) {
        pg.free_units = u->next;
        folio_free(u);
    }
    sock_off();
    if (pg.conn != NULL)
        PQfinish(pg.conn);
    if (pg.ev_timer != NULL)
        event_free(pg.ev_timer);
    if (pg.ev_retry != NULL)
        event_free(pg.ev_retry);
    if (pg.ev_kick != NULL)
        event_free(pg.ev_kick);
    folio_ccache_free(pg.cache);
    folio_buf_free(&pg.scratch);
    memset(&pg, 0, sizeof(pg));
}

/* Hold `call` in request r; -1 (after folio_call_error) if it cannot be. */
static int
hold(struct folio_call *call, struct req *r, int kind)
{
    if (folio_call_hold(call, &r->hold) != 0) {
        req_put(r);
        return folio_call_error(call, FOLIO_ST_UNAVAILABLE,
                                "the comments database answers only "
                                "requests of a connection");
    }
    r->kind = (uint8_t)kind;
    r->deadline_ms = folio_now_ms() + pg.cfg->comments_timeout_ms;
    return 0;
}

static int
no_memory(struct folio_call *call, struct req *r)
{
    if (r != NULL)
        req_put(r);
    return folio_call_error(call, FOLIO_ST_RESOURCE_EXHAUSTED,
                            "out of memory");
}

static int
down(struct folio_call *call)
{
    char msg[384];

    folio_stat_add(&pg.w->slot->ws_comments_db_unavailable, 1);
    return folio_call_error(call, FOLIO_ST_UNAVAILABLE, "%s",
                            unavailable_msg(msg, sizeof(msg)));
}

/*
 * A list of page np that a new one may share: one not sent yet, or one
 * on its way that no invalidation of the page has overtaken.
 */
static struct unit *
find_list(const char *np, size_t nlen)
{
    struct unit *u;
    struct uqueue *qs[2] = {&pg.waiting, &pg.inflight};
    int i;

    for (i = 0; i < 2; i++)
        for (u = qs[i]->head; u != NULL; u = u->next)
            if (u->kind == U_LIST && u->reqs.head != NULL &&
                u->reqs.head->plen == nlen &&
                memcmp(u->reqs.head->path, np, nlen) == 0 &&
                (!u->sent ||
                 (pg.cache != NULL &&
                  folio_ccache_fresh(pg.cache, np, nlen, u->epoch))))
                return u;
    return NULL;
}

/* Queue a list or delete unit of one request r, holding call. */
static int
queue_unit(struct folio_call *call, struct req *r, int ukind, int rkind)
{
    struct unit *u;

    if ((u = unit_get(ukind)) == NULL)
        return no_memory(call, r);
    if (hold(call, r, rkind) != 0) {
        unit_put(u);
        return -1;
    }
    q_push(&u->reqs, r);
    uq_push(&pg.waiting, u);
    kick();
    arm_timer();
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
    if (pg.cache != NULL &&
        (hit = folio_ccache_get(pg.cache, np, nlen, &hlen)) != NULL) {
        folio_stat_add(&call->w->slot->ws_comments_cache_hits, 1);
        if (folio_buf_append(call->out, hit, hlen) != 0)
            return folio_call_error(call, FOLIO_ST_RESOURCE_EXHAUSTED,
                                    "reply too large for memory");
        return 0;
    }
    folio_stat_add(&call->w->slot->ws_comments_cache_misses, 1);
    if (pg.state == C_DOWN)
        return down(call);
    if ((r = req_get()) == NULL)
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

    if (pg.state == C_DOWN)
        return down(call);
    if ((r = req_get()) == NULL)
        return no_memory(call, NULL);
    r->plen = (uint32_t)folio_comments_normalize(in->path, in->path_len,
                                                 r->path);
    r->alen = (uint32_t)in->author_len;
    r->blen = (uint32_t)in->body_len;
    put_be64(r->created_at, now);
    put_be64(r->key, pg.key_hi);
    put_be64(r->key + 8, ++pg.key_seq);
    if ((r->text.b_data == NULL &&
         folio_buf_init(&r->text, in->author_len + in->body_len * 2 + 2048,
                        0) != 0) ||
        folio_buf_append(&r->text, in->author, in->author_len) != 0 ||
        folio_buf_append(&r->text, in->body, in->body_len) != 0 ||
        folio_comments_encode_tail(&r->text, r->path, r->plen, in, now) != 0)
        return no_memory(call, r);
    if (hold(call, r, R_POST) != 0)
        return -1;
    q_push(&pg.posts, r);
    kick();
    arm_timer();
    return 0;
}

static int
pg_delete(struct folio_call *call, uint64_t id)
{
    struct req *r;

    if (pg.state == C_DOWN)
        return down(call);
    if ((r = req_get()) == NULL)
        return no_memory(call, NULL);
    r->id = id == 0 ? UINT64_MAX : id; /* 0 means "deleted" below */
    return queue_unit(call, r, U_DELETE, R_DELETE);
}

const struct folio_comments_backend folio_comments_pg = {
    "postgres", pg_init, pg_fini, pg_list, pg_post, pg_delete,
};

/* ---- for the master ------------------------------------------------- */

int
folio_comments_pg_dsn_check(const char *dsn, char *err, size_t errlen)
{
    PQconninfoOption *o;
    char *why = NULL;

    if (dsn == NULL)
        return 0;
    if ((o = PQconninfoParse(dsn, &why)) != NULL) {
        PQconninfoFree(o);
        return 0;
    }
    /*
     * libpq's message may quote the string, password and all: pass on
     * only the ones that name a keyword.
     */
    if (why != NULL && strncmp(why, "invalid connection option", 25) == 0)
        snprintf(err, errlen, "comments_dsn: %.*s", (int)strcspn(why, "\n"),
                 why);
    else
        snprintf(err, errlen,
                 "comments_dsn is not a libpq connection string "
                 "(\"host=... dbname=...\" or \"postgresql://...\")");
    PQfreemem(why);
    return FOLIO_ECONFIG;
}

int
folio_comments_pg_probe(const char *dsn, int timeout_s, char *msg, size_t len)
{
    char t[16];
    const char *kw[] = {"connect_timeout", "application_name", "dbname",
                        NULL};
    const char *val[] = {t, "foliod --check-config", dsn, NULL};
    PGresult *res;
    PGconn *c;
    int rc = -1;

    snprintf(t, sizeof(t), "%d", timeout_s);
    c = PQconnectdbParams(kw, val, 1);
    if (c == NULL || PQstatus(c) != CONNECTION_OK) {
        snprintf(msg, len, "%.*s",
                 c != NULL ? (int)strcspn(PQerrorMessage(c), "\n") : 13,
                 c != NULL ? PQerrorMessage(c) : "out of memory");
        goto done;
    }
    res = PQexec(c, "SELECT current_setting('synchronous_commit'),"
                    " (SELECT max(version) FROM folio_schema)"
                    " FROM (SELECT to_regclass('folio_schema') r) s"
                    " WHERE r IS NOT NULL"
                    " UNION ALL SELECT current_setting('synchronous_commit'),"
                    " NULL WHERE to_regclass('folio_schema') IS NULL");
    if (PQresultStatus(res) == PGRES_TUPLES_OK && PQntuples(res) == 1) {
        snprintf(msg, len,
                 "PostgreSQL %s:%s, database %s, user %s: schema version "
                 "%s, synchronous_commit = %s",
                 PQhost(c), PQport(c), PQdb(c), PQuser(c),
                 PQgetisnull(res, 0, 1) ? "none yet (created at the first "
                                          "start)"
                                        : PQgetvalue(res, 0, 1),
                 PQgetvalue(res, 0, 0));
        rc = 0;
    } else {
        snprintf(msg, len, "%.*s",
                 (int)strcspn(PQresultErrorMessage(res), "\n"),
                 PQresultErrorMessage(res));
    }
    PQclear(res);
done:
    PQfinish(c);
    return rc;
}
