/*
 * e2e_idem.c - idempotent posts (comments.post's idempotency_key,
 * folio-rpc(7)) end to end, on the real foliod:
 *
 *   - LMDB (e2e_idem): a post with a key, every worker killed -9, the
 *     retry on a new connection gets the same comment (id, created_at,
 *     bytes), stored once; the key with another comment gets error 9;
 *     bad keys error 3; `folio comments post --idempotency-key` twice
 *     prints one id.
 *   - Both: with comments_key_window = 1s a retry within the window gets
 *     the first comment (another comment with the key: error 9), one
 *     after it stores anew.
 *   - PostgreSQL (e2e_idem_pg, -DE2E_POSTGRES): 10 crashes (kill -9 of
 *     the postmaster and every backend, then a restart) under clients that
 *     post with keys and retry each post until it is acknowledged: every
 *     acknowledged comment is stored, none twice.  The answers 14 "may
 *     have been stored" are counted and printed (RELIABILITY.md): with the
 *     database back within comments_timeout (the first 8 crashes), posts
 *     in flight are re-sent and answered once; the last 2 keep it down
 *     past comments_timeout, so that posts are answered so, and the keys
 *     keep their retries from storing them twice (E2E_IDEM_NOKEYS=1: the
 *     clients send no key, for the figures; the test fails then).
 */
#include "config.h"

#include <sys/socket.h>
#include <sys/wait.h>

#include <arpa/inet.h>
#include <check.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "src/client.h"
#include "src/err.h"
#include "src/rpc.h"
#include "tests/check_run.h"
#include "tests/cli_util.h"
#include "tests/comments_util.h"
#include "tests/e2e_util.h"
#ifdef E2E_POSTGRES
#include "tests/pg_util.h"
#endif

static struct e2e_server srv;
#ifdef E2E_POSTGRES
static struct pg_cluster pgc;
static char db[64];
#endif

/* A post with `key`; asserts a reply came.  The reply in *r. */
static void
post_key(struct folio_client *c, const char *path, const char *body,
         const char *key, struct folio_reply *r)
{
    ck_assert_int_eq(e2e_comment_post_key(c, path, "idem", body, key, r), 0);
}

/* The comment a post was answered with (asserting it was). */
static void
posted(struct folio_reply *r, struct e2e_comment *d)
{
    struct folio_mp_cur cur = r->result;

    ck_assert_msg(r->code == 0, "error %d %.*s", r->code,
                  r->message != NULL ? (int)r->message_len : 0,
                  r->message != NULL ? r->message : "");
    ck_assert_int_eq(e2e_comment_decode(&cur, d), 0);
}

#define WINDOW_CONF "comments_key_window = 1s\ncomments_timeout = 1s\n"

/* Past comments_key_window, a retry is a new comment. */
START_TEST(test_window)
{
    struct folio_client *c;
    struct folio_reply r;
    struct e2e_comment d, d2, *v;
    uint64_t t, deadline;
    char conf[1024];

#ifdef E2E_POSTGRES
    ck_assert_int_eq(pg_start(&pgc, NULL), 0);
    ck_assert_int_eq(
        pg_new_db_conf(&pgc, db, sizeof(db), WINDOW_CONF, conf, sizeof(conf)),
        0);
#else
    snprintf(conf, sizeof(conf), "%s", WINDOW_CONF);
#endif
    ck_assert_int_eq(e2e_start(&srv, conf, NULL), 0);
    ck_assert_ptr_nonnull(c = e2e_connect(&srv));
    t = e2e_now_ms();
    post_key(c, "/window", "w", "window-1", &r);
    posted(&r, &d);
    post_key(c, "/window", "w", "window-1", &r);
    posted(&r, &d2);
    if (e2e_now_ms() < t + 1000) { /* within the window: the same one */
        ck_assert_uint_eq(d2.id, d.id);
        ck_assert_uint_eq(d2.created_at, d.created_at);
        ck_assert_uint_eq(d2.len, d.len);
    }
    post_key(c, "/window", "not w", "window-1", &r);
    if (e2e_now_ms() < t + 1000)
        ck_assert_int_eq(r.code, FOLIO_ST_FAILED_PRECONDITION);
    /* the window is the clock's: let it pass */
    deadline = t + 1100 + 5000;
    while (e2e_now_ms() < t + 1100)
        ck_assert(e2e_wait_more(deadline));
    post_key(c, "/window", "w", "window-1", &r);
    posted(&r, &d2);
    ck_assert_uint_gt(d2.id, d.id);
    ck_assert_uint_gt(d2.created_at, d.created_at);
    ck_assert_int_ge(e2e_comment_list(c, "/window", &v), 2);
    free(v);
    folio_client_close(c);
    ck_assert_int_eq(e2e_stop(&srv), 0);
#ifdef E2E_POSTGRES
    pg_destroy(&pgc);
#endif
}
END_TEST

#ifndef E2E_POSTGRES

/* Kill -9 every worker; wait for as many new ones, serving. */
static void
kill_workers(void)
{
    pid_t w[8], now[8];
    int n = e2e_workers(&srv, w, 8), i, m, fresh;
    uint64_t deadline = e2e_deadline(e2e_bound_ms(10000, 30000));

    ck_assert_int_ge(n, 1);
    for (i = 0; i < n; i++)
        ck_assert_int_eq(kill(w[i], SIGKILL), 0);
    do {
        m = e2e_workers(&srv, now, 8);
        for (i = 0, fresh = 0; i < m; i++)
            fresh += !e2e_pid_in(now[i], w, n);
        if (fresh == n)
            break;
    } while (e2e_wait_more(deadline));
    ck_assert_int_eq(fresh, n);
}

START_TEST(test_lmdb_retry)
{
    struct folio_client *c;
    struct folio_reply r;
    struct e2e_comment d, d2, *v;
    unsigned char first[512];
    size_t flen;
    uint64_t deadline;

    ck_assert_int_eq(e2e_start(&srv, "workers = 2\n", NULL), 0);
    ck_assert_ptr_nonnull(c = e2e_connect(&srv));
    post_key(c, "/idem", "the first", "retry-1", &r);
    posted(&r, &d);
    ck_assert_uint_le(d.len, sizeof(first));
    memcpy(first, d.start, d.len);
    flen = d.len;
    folio_client_close(c);

    /* The client did not get its answer, say: every worker dies. */
    kill_workers();
    deadline = e2e_deadline(e2e_bound_ms(5000, 15000));
    while ((c = e2e_connect(&srv)) == NULL || e2e_ping(c) != 0) {
        if (c != NULL)
            folio_client_close(c);
        ck_assert_msg(e2e_wait_more(deadline), "no worker serves");
    }
    post_key(c, "/idem", "the first", "retry-1", &r);
    posted(&r, &d2);
    ck_assert_uint_eq(d2.id, d.id);
    ck_assert_uint_eq(d2.created_at, d.created_at);
    ck_assert_uint_eq(d2.len, flen);
    ck_assert_int_eq(memcmp(d2.start, first, flen), 0);

    /* The key with another comment: 9, nothing stored. */
    post_key(c, "/idem", "not the first", "retry-1", &r);
    ck_assert_int_eq(r.code, FOLIO_ST_FAILED_PRECONDITION);
    ck_assert_ptr_nonnull(
        memmem(r.message, r.message_len, "idempotency_key", 15));
    post_key(c, "/elsewhere", "the first", "retry-1", &r);
    ck_assert_int_eq(r.code, FOLIO_ST_FAILED_PRECONDITION);

    /* Bad keys: 3, saying why. */
    post_key(c, "/idem", "x", "", &r);
    ck_assert_int_eq(r.code, FOLIO_ST_INVALID_ARGUMENT);
    ck_assert_ptr_nonnull(memmem(r.message, r.message_len,
                                 "idempotency_key must be 1 to 128", 32));
    {
        msgpack_packer *pk =
            folio_client_request(c, 0, "comments.post", 1, NULL);

        msgpack_pack_map(pk, 4);
        folio_pack_cstr(pk, "path");
        folio_pack_cstr(pk, "/idem");
        folio_pack_cstr(pk, "author");
        folio_pack_cstr(pk, "a");
        folio_pack_cstr(pk, "body");
        folio_pack_cstr(pk, "b");
        folio_pack_cstr(pk, "idempotency_key");
        msgpack_pack_int(pk, 7);
        ck_assert_int_eq(folio_client_flush(c), 0);
        ck_assert_int_eq(folio_client_reply(c, &r), 1);
        ck_assert_int_eq(r.code, FOLIO_ST_INVALID_ARGUMENT);
        ck_assert_ptr_nonnull(memmem(r.message, r.message_len,
                                     "idempotency_key must be a str", 29));
    }
    ck_assert_int_eq(e2e_comment_list(c, "/idem", &v), 1);
    free(v);
    folio_client_close(c);

    /* folio(1): the same key twice, one comment */
    {
        struct cli_run cr;
        const char *argv[] = {"--json", "-H",
                              srv.addr, "comments",
                              "post",   "--idempotency-key",
                              "cli-1",  "/idem/cli",
                              "folio",  "from the command line",
                              NULL};
        char *id1;

        cli_expect(&cr, NULL, argv, 0);
        ck_assert_ptr_nonnull(id1 = strstr(cr.out, "\"id\""));
        id1 = strdup(id1);
        id1[strcspn(id1, ",")] = '\0';
        cli_run_free(&cr);
        cli_expect(&cr, NULL, argv, 0);
        cli_has(cr.out, id1);
        cli_run_free(&cr);
        free(id1);
        ck_assert_ptr_nonnull(c = e2e_connect(&srv));
        ck_assert_int_eq(e2e_comment_list(c, "/idem/cli", &v), 1);
        free(v);
        folio_client_close(c);
    }
    ck_assert_int_eq(e2e_stop(&srv), 0);
}
END_TEST

/* A peer that takes each connection and closes it: no answer, ever. */
struct closer {
    int fd;
    atomic_int stop;
    pthread_t th;
};

static void *
closer_run(void *arg)
{
    struct closer *k = arg;
    int fd;

    while (!atomic_load(&k->stop))
        if ((fd = accept(k->fd, NULL, NULL)) >= 0)
            close(fd);
    return NULL;
}

/*
 * folio(1): a connection lost before the answer is tried again with the
 * key, then said (exit 3); no server at all is said at once, not retried.
 */
START_TEST(test_cli_retries)
{
    struct sockaddr_in sin = {0};
    struct closer k = {0};
    struct cli_run cr;
    socklen_t sl = sizeof(sin);
    char addr[32];
    const char *argv[] = {"-H", addr, "comments", "post", "--retries",
                          "2",  "/p", "a",        "b",    NULL};
    int one = 1;

    sin.sin_family = AF_INET;
    sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ck_assert_int_ge(k.fd = socket(AF_INET, SOCK_STREAM, 0), 0);
    setsockopt(k.fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    ck_assert_int_eq(bind(k.fd, (struct sockaddr *)&sin, sizeof(sin)), 0);
    ck_assert_int_eq(listen(k.fd, 16), 0);
    ck_assert_int_eq(getsockname(k.fd, (struct sockaddr *)&sin, &sl), 0);
    ck_assert_int_eq(pthread_create(&k.th, NULL, closer_run, &k), 0);
    snprintf(addr, sizeof(addr), "127.0.0.1:%d", ntohs(sin.sin_port));
    cli_expect(&cr, NULL, argv, 3);
    /* The peer's close is a FIN or, with the request unread, a reset. */
    cli_has(cr.err, "trying again in 0.2 s with idempotency key ");
    cli_has(cr.err, "(retry 2 of 2)");
    cli_run_free(&cr);
    argv[5] = "0";
    cli_expect(&cr, NULL, argv, 3);
    ck_assert_ptr_null(strstr(cr.err, "trying again"));
    cli_run_free(&cr);
    atomic_store(&k.stop, 1);
    shutdown(k.fd, SHUT_RDWR); /* wakes the accept */
    pthread_join(k.th, NULL);
    close(k.fd);
    /* No server: nothing sent, said at once. */
    snprintf(addr, sizeof(addr), "127.0.0.1:%d", e2e_free_port());
    argv[5] = "2";
    cli_expect(&cr, NULL, argv, 3);
    cli_has(cr.err, "cannot connect to");
    ck_assert_ptr_null(strstr(cr.err, "trying again"));
    cli_run_free(&cr);
}
END_TEST

#else /* E2E_POSTGRES */

#define NPOSTERS 4
#define NCRASHES 10
#define NLONG 2         /* the last crashes: down past comments_timeout */
#define TIMEOUT_MS 2000 /* comments_timeout */

static atomic_int stop;
static atomic_int ambiguous_all; /* every poster's "may have been stored" */

struct ack {
    uint64_t id;
    int n;
};

/* A client posting with keys, each post sent until acknowledged. */
struct poster {
    int index;
    struct ack *acks;
    int nacks, cap;
    atomic_int acked;
    int ambiguous;   /* answered 14 "may have been stored" */
    int unavailable; /* answered 14, not stored */
    int lost;        /* no answer: the connection failed */
    int failed;
    char why[256];
};

static void *
poster_run(void *arg)
{
    struct poster *p = arg;
    struct folio_client *c = e2e_connect(&srv);
    struct folio_reply r;
    struct e2e_comment d;
    char body[64], key[64];
    /* E2E_IDEM_NOKEYS: a client without keys, for the figures */
    int n, keys = getenv("E2E_IDEM_NOKEYS") == NULL;
    uint64_t deadline = 0;

    for (n = 0;; n++) {
        snprintf(body, sizeof(body), "post %d of client %d", n, p->index);
        snprintf(key, sizeof(key), "k-%d-%d", p->index, n);
        for (;;) { /* this post until acknowledged */
            if (atomic_load(&stop) && deadline == 0)
                deadline = e2e_deadline(e2e_bound_ms(20000, 60000));
            if (deadline != 0 && e2e_now_ms() > deadline) {
                p->failed = 1;
                snprintf(p->why, sizeof(p->why),
                         "post %d not acknowledged in time", n);
                goto out;
            }
            if (c == NULL && (c = e2e_connect(&srv)) == NULL) {
                e2e_pace_ms(50);
                continue;
            }
            if (e2e_comment_post_key(c, "/crash", "poster", body,
                                     keys ? key : NULL, &r) != 0) {
                p->lost++;
                folio_client_close(c);
                c = NULL;
                continue;
            }
            if (r.code == 0)
                break;
            if (r.code != FOLIO_ST_UNAVAILABLE) {
                p->failed = 1;
                snprintf(p->why, sizeof(p->why), "post %d: error %d %.*s", n,
                         r.code, r.message != NULL ? (int)r.message_len : 0,
                         r.message != NULL ? r.message : "");
                goto out;
            }
            if (r.message != NULL &&
                memmem(r.message, r.message_len, "may have been stored", 20)) {
                p->ambiguous++;
                atomic_fetch_add(&ambiguous_all, 1);
            } else
                p->unavailable++;
            e2e_pace_ms(50); /* the client's backoff */
        }
        {
            struct folio_mp_cur cur = r.result;

            if (e2e_comment_decode(&cur, &d) != 0 ||
                !folio_mp_str_eq(d.body, d.body_len, body)) {
                p->failed = 1;
                snprintf(p->why, sizeof(p->why), "post %d: bad reply", n);
                goto out;
            }
        }
        if (p->nacks == p->cap) {
            p->cap = p->cap ? p->cap * 2 : 256;
            p->acks = realloc(p->acks, (size_t)p->cap * sizeof(*p->acks));
        }
        p->acks[p->nacks].id = d.id;
        p->acks[p->nacks].n = n;
        p->nacks++;
        atomic_fetch_add(&p->acked, 1);
        if (atomic_load(&stop))
            break;
    }
out:
    if (c != NULL)
        folio_client_close(c);
    return NULL;
}

static int
acked(struct poster *ps)
{
    int i, n = 0;

    for (i = 0; i < NPOSTERS; i++)
        n += atomic_load(&ps[i].acked);
    return n;
}

START_TEST(test_pg_crashes)
{
    struct poster ps[NPOSTERS];
    pthread_t th[NPOSTERS];
    char conf[1024], out[64], *sql;
    size_t cap, len;
    int i, k, total, ambiguous = 0, unavailable = 0, lost = 0;
    int right, stored, dups;
    uint64_t deadline, t0;

    /* our own cluster, a child of this process (pg_kill9 reaps it) */
    ck_assert_int_eq(pg_start(&pgc, NULL), 0);
    ck_assert_int_eq(pg_new_db_conf(&pgc, db, sizeof(db),
                                    "workers = 2\ncomments_timeout = 2s\n",
                                    conf, sizeof(conf)),
                     0);
    ck_assert_int_eq(e2e_start(&srv, conf, NULL), 0);
    memset(ps, 0, sizeof(ps));
    atomic_store(&stop, 0);
    atomic_store(&ambiguous_all, 0);
    for (i = 0; i < NPOSTERS; i++) {
        ps[i].index = i;
        ck_assert_int_eq(pthread_create(&th[i], NULL, poster_run, &ps[i]), 0);
    }
    t0 = e2e_now_ms();
    for (k = 0; k < NCRASHES; k++) {
        /* posting goes on (after the restart) before each crash */
        int goal = acked(ps) + 20;

        deadline = e2e_deadline(e2e_bound_ms(15000, 45000));
        while (acked(ps) < goal)
            ck_assert_msg(e2e_wait_more(deadline),
                          "crash %d: posting did not resume (%d acked)", k,
                          acked(ps));
        ck_assert_int_eq(pg_kill9(&pgc), 0);
        if (k >= NCRASHES - NLONG) {
            /*
             * Down for longer than comments_timeout: the posts in flight
             * are answered 14 "may have been stored" (wait for one, or
             * for the timeout and a margin), and their retries with the
             * key must not store them twice.
             */
            int seen = atomic_load(&ambiguous_all);

            deadline = e2e_deadline(
                e2e_bound_ms(TIMEOUT_MS + 3000, TIMEOUT_MS + 10000));
            while (atomic_load(&ambiguous_all) == seen &&
                   e2e_wait_more(deadline))
                ;
        }
        ck_assert_int_eq(pg_restart(&pgc), 0);
    }
    deadline = e2e_deadline(e2e_bound_ms(15000, 45000));
    {
        int goal = acked(ps) + 20;

        while (acked(ps) < goal)
            ck_assert_msg(e2e_wait_more(deadline),
                          "posting did not resume after the last crash");
    }
    atomic_store(&stop, 1);
    for (i = 0; i < NPOSTERS; i++)
        pthread_join(th[i], NULL);
    for (i = 0, total = 0; i < NPOSTERS; i++) {
        ck_assert_msg(!ps[i].failed, "client %d: %s", i, ps[i].why);
        total += ps[i].nacks;
        ambiguous += ps[i].ambiguous;
        unavailable += ps[i].unavailable;
        lost += ps[i].lost;
    }
    /*
     * Every post was sent until acknowledged with its key: the table
     * holds exactly the acknowledged comments, each once, each where it
     * was said to be.
     */
    cap = (size_t)total * 48 + 256;
    ck_assert_ptr_nonnull(sql = malloc(cap));
    len = (size_t)snprintf(sql, cap,
                           "SELECT count(*) FROM folio_comments f JOIN "
                           "(VALUES ");
    for (i = 0, k = 0; i < NPOSTERS; i++) {
        int j;

        for (j = 0; j < ps[i].nacks; j++, k++)
            len += (size_t)snprintf(
                sql + len, cap - len,
                "%s(%llu::bigint, 'post %d of client %d')", k > 0 ? "," : "",
                (unsigned long long)ps[i].acks[j].id, ps[i].acks[j].n, i);
    }
    snprintf(sql + len, cap - len,
             ") v(id, b) ON f.id = v.id AND f.body = v.b");
    ck_assert_int_eq(pg_query(&pgc, db, sql, out, sizeof(out)), 1);
    right = atoi(out);
    free(sql);
    ck_assert_int_eq(pg_query(&pgc, db, "SELECT count(*) FROM folio_comments",
                              out, sizeof(out)),
                     1);
    stored = atoi(out);
    ck_assert_int_eq(pg_query(&pgc, db,
                              "SELECT count(*) - count(DISTINCT body) FROM "
                              "folio_comments",
                              out, sizeof(out)),
                     1);
    dups = atoi(out);
    printf("e2e_idem_pg: %d crashes in %.1f s, %s: %d posts acknowledged, "
           "%d stored, %d duplicates; answers 14 \"may have been stored\": "
           "%d (%.1f per crash), 14 not stored: %d, connections lost: %d\n",
           NCRASHES, (double)(e2e_now_ms() - t0) / 1000,
           getenv("E2E_IDEM_NOKEYS") != NULL ? "no keys" : "keys", total,
           stored, dups, ambiguous, (double)ambiguous / NCRASHES, unavailable,
           lost);
    fflush(stdout); /* before an assertion may end this process */
    ck_assert_int_eq(right, total);
    ck_assert_msg(stored == total, "%d comments stored, %d acknowledged",
                  stored, total);
    ck_assert_msg(dups == 0, "%d duplicate comments", dups);
    for (i = 0; i < NPOSTERS; i++)
        free(ps[i].acks);
    ck_assert_int_eq(e2e_stop(&srv), 0);
    pg_destroy(&pgc);
}
END_TEST

#endif /* E2E_POSTGRES */

static Suite *
idem_suite(void)
{
    Suite *s = suite_create("idem");
    TCase *tc = tcase_create("idem");

    tcase_set_timeout(tc, 240);
#ifndef E2E_POSTGRES
    tcase_add_test(tc, test_lmdb_retry);
    tcase_add_test(tc, test_cli_retries);
#else
    tcase_add_test(tc, test_pg_crashes);
#endif
    tcase_add_test(tc, test_window);
    suite_add_tcase(s, tc);
    return s;
}

int
main(void)
{
#ifdef E2E_POSTGRES
    pg_require();
#endif
    return folio_check_run(idem_suite());
}
