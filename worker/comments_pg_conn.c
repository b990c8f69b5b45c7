/*
 * comments_pg_conn.c - the PostgreSQL backend's connection (see
 * comments_pg.c): PQconnectStartParams and PQconnectPoll driven by
 * libevent on PQsocket, the setup query (LISTEN, the schema created and
 * migrated, the server's durability settings), pipeline mode, and what a
 * failure does: queue again what was in flight, reconnect, back off, log
 * once per outage.  Also what the master checks before it forks.
 */
#include "config.h"

#include <stdio.h>
#include <string.h>

#include "shm/stats.h"
#include "src/clock.h"
#include "src/conf.h"
#include "src/err.h"
#include "src/log.h"
#include "worker/comments_cache.h"
#include "worker/comments_pg.h"
#include "worker/comments_pg_int.h"
#include "worker/worker_int.h"

#define BACKOFF_MIN_MS 100
#define BACKOFF_MAX_MS 2000
#define BACKOFF_HELD_MS 250 /* at most, while requests wait to be re-sent */

/* ---- the schema ---------------------------------------------------- */

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
         " FOR EACH STATEMENT EXECUTE FUNCTION folio_comments_notify();")    \
    X(2, "ALTER TABLE folio_comments ADD COLUMN reply_to bigint;"              \
         "CREATE FUNCTION folio_comments_reply_to(r bigint, p text)"           \
         " RETURNS bigint LANGUAGE plpgsql AS $f$ BEGIN"                       \
         " IF r IS NOT NULL AND NOT EXISTS (SELECT 1 FROM folio_comments"      \
         "  WHERE id = r AND path = p AND reply_to IS NULL) THEN"              \
         "  RAISE EXCEPTION '" FOLIO_COMMENTS_BAD_REPLY "'"                    \
         "  USING ERRCODE = '22023'; END IF;"                                  \
         " RETURN r; END $f$;")                                                \
    /* keys past the window are forgotten (post_key NULL), not notified */     \
    X(3, "DROP TRIGGER folio_comments_notify ON folio_comments;"               \
         "CREATE TRIGGER folio_comments_notify"                                \
         " AFTER INSERT OR DELETE OR UPDATE OF path, author, body, reply_to,"  \
         " encoded ON folio_comments"                                          \
         " FOR EACH ROW EXECUTE FUNCTION folio_comments_notify();"             \
         "CREATE INDEX folio_comments_keys ON folio_comments (created_at)"     \
         " WHERE post_key IS NOT NULL;")

#define STR_(x) #x
#define STR(x) STR_(x)
#define MIGRATION_STEP(v, sql) " IF v < " #v " THEN " sql " END IF;"

/* One simple query (one transaction): LISTEN, the schema, the settings. */
/* clang-format off */
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
/* clang-format on */

/* ---- the socket ---------------------------------------------------- */

static uint64_t
next_random(struct folio_pg *pg)
{
    /* xorshift64*: jitter, nothing secret */
    pg->rnd ^= pg->rnd >> 12;
    pg->rnd ^= pg->rnd << 25;
    pg->rnd ^= pg->rnd >> 27;
    return pg->rnd * 0x2545f4914f6cdd1dull;
}

void
folio_pg_sock_off(struct folio_pg *pg)
{
    if (pg->rd_on)
        event_del(&pg->ev_rd);
    if (pg->wr_on)
        event_del(&pg->ev_wr);
    pg->rd_on = pg->wr_on = 0;
}

/* Watch the connection's socket: rd/wr, persistent or once. */
static void
sock_watch(struct folio_pg *pg, event_callback_fn cb, int rd, int wr,
           int persist)
{
    int fd = PQsocket(pg->conn);
    short p = persist ? EV_PERSIST : 0;

    folio_pg_sock_off(pg);
    pg->sock = fd;
    if (fd < 0)
        return;
    if (rd) {
        event_assign(&pg->ev_rd, pg->w->base, fd, EV_READ | p, cb, pg);
        event_add(&pg->ev_rd, NULL);
        pg->rd_on = 1;
    }
    if (wr) {
        event_assign(&pg->ev_wr, pg->w->base, fd, EV_WRITE | p, cb, pg);
        event_add(&pg->ev_wr, NULL);
        pg->wr_on = 1;
    }
}

/* Push libpq's output; watch for writability while some is left. */
int
folio_pg_flush(struct folio_pg *pg)
{
    int r = PQflush(pg->conn);

    if (r < 0)
        return -1;
    if (r > 0 && !pg->wr_on) {
        event_assign(&pg->ev_wr, pg->w->base, pg->sock, EV_WRITE | EV_PERSIST,
                     folio_pg_on_io, pg);
        event_add(&pg->ev_wr, NULL);
        pg->wr_on = 1;
    } else if (r == 0 && pg->wr_on) {
        event_del(&pg->ev_wr);
        pg->wr_on = 0;
    }
    return 0;
}

void
folio_pg_on_kick(evutil_socket_t fd, short what, void *arg)
{
    struct folio_pg *pg = arg;
    if (pg->state != C_READY)
        return;
    if (folio_pg_send_waiting(pg) != 0 || folio_pg_flush(pg) != 0) {
        folio_pg_reset(pg, PQerrorMessage(pg->conn), 0);
        return;
    }
    folio_pg_arm_timer(pg);
}

/* ---- the connection's life ----------------------------------------- */

void
folio_pg_set_up(struct folio_pg *pg, int up)
{
    folio_stat_set(&pg->w->slot->ws_comments_db_up, (uint64_t)up);
}

/* Read the setup query's results; become READY when they are all in. */
static void
setup_results(struct folio_pg *pg)
{
    PGresult *res;
    char failed[256] = "";

    while (!PQisBusy(pg->conn)) {
        if ((res = PQgetResult(pg->conn)) == NULL)
            break;
        switch (PQresultStatus(res)) {
        case PGRES_COMMAND_OK:
            break;
        case PGRES_TUPLES_OK:
            if (PQntuples(res) == 1 && PQnfields(res) == 3 &&
                !pg->warned_sync) {
                /* binary results are only for the extended protocol */
                const char *sc = PQgetvalue(res, 0, 0);
                const char *fs = PQgetvalue(res, 0, 1);

                if (strcmp(sc, "off") == 0 || strcmp(fs, "off") == 0) {
                    folio_log_warnx(
                        "comments: PostgreSQL runs with synchronous_commit "
                        "= %s, fsync = %s: a comment acknowledged just before "
                        "it crashes can be lost",
                        sc, fs);
                    pg->warned_sync = 1;
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
    if (PQisBusy(pg->conn))
        return;
    if (failed[0] != '\0') {
        folio_pg_reset(pg, failed, 1);
        return;
    }
    if (PQenterPipelineMode(pg->conn) != 1) {
        folio_pg_reset(pg, PQerrorMessage(pg->conn), 1);
        return;
    }
    pg->state = C_READY;
    sock_watch(pg, folio_pg_on_io, 1, 0, 1);
    /* Notifications sent while we were away are lost. */
    if (pg->cache != NULL)
        folio_ccache_clear(pg->cache);
    folio_stat_add(&pg->w->slot->ws_comments_db_connects, 1);
    folio_pg_set_up(pg, 1);
    pg->backoff_ms = 0;
    if (!pg->ever_up)
        folio_log_notice("comments: PostgreSQL %s:%s, database %s, user %s: "
                         "connected (schema version %d)",
                         PQhost(pg->conn), PQport(pg->conn), PQdb(pg->conn),
                         PQuser(pg->conn), FOLIO_COMMENTS_PG_SCHEMA);
    else if (pg->down_logged)
        folio_log_notice(
            "comments: PostgreSQL %s:%s: reconnected after %llu "
            "ms; the page cache starts anew",
            PQhost(pg->conn), PQport(pg->conn),
            (unsigned long long)(folio_mono_ms() - pg->down_since_ms));
    pg->ever_up = 1;
    pg->down_logged = 0;
    folio_pg_kick(pg);
}

void
folio_pg_on_io(evutil_socket_t fd, short what, void *arg)
{
    struct folio_pg *pg = arg;
    PostgresPollingStatusType ps;

    switch (pg->state) {
    case C_CONNECTING:
        ps = PQconnectPoll(pg->conn);
        if (ps == PGRES_POLLING_FAILED) {
            folio_pg_reset(pg, PQerrorMessage(pg->conn), 1);
        } else if (ps == PGRES_POLLING_OK) {
            evtimer_del(pg->ev_retry);
            if (PQsetnonblocking(pg->conn, 1) != 0 ||
                PQsendQuery(pg->conn, sql_setup) != 1) {
                folio_pg_reset(pg, PQerrorMessage(pg->conn), 1);
                return;
            }
            pg->state = C_SETUP;
            sock_watch(pg, folio_pg_on_io, 1, 0, 1);
            if (folio_pg_flush(pg) != 0)
                folio_pg_reset(pg, PQerrorMessage(pg->conn), 1);
        } else {
            /* the socket may change as libpq tries the next address */
            sock_watch(pg, folio_pg_on_io, ps == PGRES_POLLING_READING,
                       ps == PGRES_POLLING_WRITING, 0);
        }
        return;
    case C_SETUP:
        if (((what & EV_READ) && PQconsumeInput(pg->conn) != 1) ||
            folio_pg_flush(pg) != 0) {
            folio_pg_reset(pg, PQerrorMessage(pg->conn), 1);
            return;
        }
        setup_results(pg);
        return;
    case C_READY:
        if (((what & EV_READ) && PQconsumeInput(pg->conn) != 1) ||
            folio_pg_flush(pg) != 0) {
            folio_pg_reset(pg, PQerrorMessage(pg->conn), 0);
            return;
        }
        if (folio_pg_read_results(pg) != 0) {
            folio_pg_read_notifies(pg);
            folio_pg_reset(pg, pg->why, 0);
            return;
        }
        folio_pg_read_notifies(pg);
        if (PQstatus(pg->conn) == CONNECTION_BAD) {
            folio_pg_reset(pg, PQerrorMessage(pg->conn), 0);
            return;
        }
        if (pg->waiting.head != NULL || pg->posts.head != NULL)
            folio_pg_kick(pg);
        folio_pg_arm_timer(pg);
        return;
    default:
        return;
    }
}

/*
 * The database is down: answer 14 what was never sent (posts, lists and
 * deletes: nothing of them done), keep what was (in_doubt) for the
 * reconnect.  Returns whether any is kept.
 */
static int
fail_unsent(struct folio_pg *pg, const char *msg)
{
    struct queue keep = {NULL, NULL};
    struct uqueue units = pg->waiting;
    struct unit *u;
    struct req *r;

    while ((r = q_pop(&pg->posts)) != NULL) {
        if (r->in_doubt)
            q_push(&keep, r);
        else
            folio_pg_release_error(pg, r, FOLIO_ST_UNAVAILABLE, msg);
    }
    pg->posts = keep;
    pg->waiting.head = pg->waiting.tail = NULL;
    while ((u = uq_pop(&units)) != NULL) {
        if (u->reqs.head != NULL && u->reqs.head->in_doubt) {
            uq_push(&pg->waiting, u); /* a delete sent once */
            continue;
        }
        folio_pg_fail_queue(pg, &u->reqs, FOLIO_ST_UNAVAILABLE, msg);
        folio_pg_unit_put(pg, u);
    }
    return pg->posts.head != NULL || pg->waiting.head != NULL;
}

/*
 * The connection failed (or never came up, failed_connect): close it.
 * What was in flight waits again, in order, with its deadline: posts are
 * sent again (their keys make that safe), deletes too (then a missing id
 * means our first attempt deleted it).  After losing a working connection
 * the first reconnect is at once; after a failed attempt the database is
 * down: what was never sent is answered 14 (nothing of it stored) and the
 * next attempt is on the backoff timer, while what was sent waits for a
 * reconnect until its own deadline (comments_timeout, on_timer), which
 * alone answers it 14 "may have been stored": each is answered once, and
 * the attempts are at most BACKOFF_HELD_MS apart meanwhile.
 */
void
folio_pg_reset(struct folio_pg *pg, const char *why, int failed_connect)
{
    struct unit *u;
    struct uqueue keep = {NULL, NULL};
    char msg[384];
    int was_up = pg->state == C_READY, held;

    if (why != pg->why)
        folio_pg_set_why(pg, why);
    folio_pg_sock_off(pg);
    evtimer_del(pg->ev_retry);
    if (pg->conn != NULL)
        PQfinish(pg->conn);
    pg->conn = NULL;
    pg->sock = -1;
    pg->batches_out = 0;
    folio_pg_set_up(pg, 0);
    while ((u = uq_pop(&pg->inflight)) != NULL) {
        struct req *r;

        for (r = u->reqs.head; r != NULL && u->sent; r = r->next)
            r->in_doubt = r->kind != R_LIST;
        if (u->kind == U_BATCH || u->reqs.head == NULL) {
            q_prepend(&pg->posts, &u->reqs); /* in order, before newer */
            folio_pg_unit_put(pg, u);
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
        keep.tail->next = pg->waiting.head;
        if (pg->waiting.tail == NULL)
            pg->waiting.tail = keep.tail;
        pg->waiting.head = keep.head;
    }
    if (!pg->down_logged) {
        pg->down_since_ms = folio_mono_ms();
        if (was_up || pg->ever_up)
            folio_log_warnx("comments: lost PostgreSQL: %s; reconnecting "
                            "(cached pages are still served)",
                            pg->why);
        else
            folio_log_warnx("comments: cannot reach PostgreSQL: %s; "
                            "retrying (posts and uncached lists answer "
                            "UNAVAILABLE meanwhile)",
                            pg->why);
        pg->down_logged = 1;
    }
    if (!failed_connect) {
        folio_pg_connect(pg); /* at once: the database was there */
        return;
    }
    pg->state = C_DOWN;
    folio_pg_unavailable_msg(pg, msg, sizeof(msg));
    held = fail_unsent(pg, msg);
    folio_pg_cache_gauge(pg);
    folio_pg_arm_timer(pg);
    {
        uint64_t b = pg->backoff_ms == 0 ? BACKOFF_MIN_MS : pg->backoff_ms * 2;
        struct timeval tv;

        if (b > BACKOFF_MAX_MS)
            b = BACKOFF_MAX_MS;
        pg->backoff_ms = b;
        if (held && b > BACKOFF_HELD_MS)
            b = BACKOFF_HELD_MS;
        b = b * 4 / 5 +
            next_random(pg) % (b / 5 + 1); /* jitter: workers differ */
        tv.tv_sec = (time_t)(b / 1000);
        tv.tv_usec = (suseconds_t)(b % 1000) * 1000;
        evtimer_add(pg->ev_retry, &tv);
    }
}

/* The server's NOTICEs (the schema's "already exists, skipping"). */
static void
on_notice(void *arg, const char *msg)
{
    folio_log_debug("comments: PostgreSQL: %.*s", (int)strcspn(msg, "\n"), msg);
}

void
folio_pg_connect(struct folio_pg *pg)
{
    struct timeval tv;

    pg->conn = PQconnectStartParams(pg->kw, pg->val, 1);
    if (pg->conn == NULL) {
        folio_pg_reset(pg, "out of memory", 1);
        return;
    }
    PQsetNoticeProcessor(pg->conn, on_notice, NULL);
    if (PQstatus(pg->conn) == CONNECTION_BAD) {
        folio_pg_reset(pg, PQerrorMessage(pg->conn), 1);
        return;
    }
    pg->state = C_CONNECTING;
    sock_watch(pg, folio_pg_on_io, 0, 1,
               0); /* as if PQconnectPoll said WRITING */
    tv.tv_sec = (time_t)(pg->cfg->comments_timeout_ms / 1000);
    tv.tv_usec = (suseconds_t)(pg->cfg->comments_timeout_ms % 1000) * 1000;
    evtimer_add(pg->ev_retry, &tv); /* the connect's deadline */
}

void
folio_pg_on_retry(evutil_socket_t fd, short what, void *arg)
{
    struct folio_pg *pg = arg;
    if (pg->state == C_DOWN)
        folio_pg_connect(pg);
    else if (pg->state == C_CONNECTING || pg->state == C_SETUP)
        folio_pg_reset(pg, "timed out connecting (comments_timeout)", 1);
}

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

/*
 * The rights the workers' setup and requests need (sql_setup creates with
 * IF NOT EXISTS at each connect: CREATE in the schema, always), as one
 * row: the first missing one's name, or NULL.
 */
static const char sql_rights[] =
    "SELECT CASE"
    " WHEN current_schema() IS NULL THEN 'a schema (search_path is empty)'"
    " WHEN NOT has_schema_privilege(current_schema(), 'CREATE')"
    "  THEN 'CREATE on schema ' || current_schema()"
    /* A table not there yet: NULL, not false (the functions are strict). */
    " WHEN NOT has_table_privilege(to_regclass('folio_comments')::oid,"
    "  'SELECT, INSERT, DELETE')"
    "  THEN 'SELECT, INSERT, DELETE on folio_comments'"
    " WHEN NOT has_table_privilege(to_regclass('folio_schema')::oid,"
    "  'SELECT, INSERT, UPDATE')"
    "  THEN 'SELECT, INSERT, UPDATE on folio_schema'"
    " WHEN NOT has_sequence_privilege(to_regclass('folio_comment_ids')::oid,"
    "  'USAGE')"
    "  THEN 'USAGE on sequence folio_comment_ids'"
    " END";

int
folio_comments_pg_probe(const char *dsn, int timeout_s, char *msg, size_t len)
{
    char t[16];
    const char *kw[] = {"connect_timeout", "application_name", "dbname", NULL};
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
        /* A server that answered and said no: what it was told is wrong. */
        if (c != NULL && PQpingParams(kw, val, 1) == PQPING_OK)
            rc = FOLIO_ECONFIG;
        goto done;
    }
    res = PQexec(c, sql_rights);
    if (PQresultStatus(res) == PGRES_TUPLES_OK && PQntuples(res) == 1 &&
        !PQgetisnull(res, 0, 0)) {
        snprintf(msg, len, "user %s in database %s lacks %s", PQuser(c),
                 PQdb(c), PQgetvalue(res, 0, 0));
        PQclear(res);
        rc = FOLIO_ECONFIG;
        goto done;
    }
    PQclear(res);
    res = PQexec(c, "SELECT current_setting('synchronous_commit'),"
                    " to_regclass('folio_schema') IS NOT NULL");
    if (PQresultStatus(res) == PGRES_TUPLES_OK && PQntuples(res) == 1) {
        char sync[32], version[64] = "none yet (made at the first start)";

        snprintf(sync, sizeof(sync), "%s", PQgetvalue(res, 0, 0));
        if (strcmp(PQgetvalue(res, 0, 1), "t") == 0) {
            PQclear(res);
            res = PQexec(c, "SELECT max(version) FROM folio_schema");
            if (PQresultStatus(res) == PGRES_TUPLES_OK &&
                PQntuples(res) == 1)
                snprintf(version, sizeof(version), "%s",
                         PQgetvalue(res, 0, 0));
        }
        snprintf(msg, len,
                 "PostgreSQL %s:%s, database %s, user %s: schema version "
                 "%s, synchronous_commit = %s",
                 PQhost(c), PQport(c), PQdb(c), PQuser(c), version, sync);
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
