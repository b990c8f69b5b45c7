/*
 * e2e_keys.c - keys of foliod.conf(5) that no other suite showed taking
 * effect, each against the real foliod, with the default beside it:
 *
 *   admin_max_connections   the connection over it is answered error 8
 *                           naming the key, and closed
 *   admin_max_output_bytes  an admin client that reads nothing holds its
 *                           requests back at that much output
 *   max_output_hard_bytes   a reply larger than it is error 8 naming it
 *   comments_cache_size     0 caches no page; a small one drops the least
 *                           recently used
 *   log_level               warn: no notice or info line; a reload to
 *                           info brings them
 *   cubic_threshold_g       a cart's cubic weight is billed above it only
 */
#include "config.h"

#include <check.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <msgpack.h>

#include "src/client.h"
#include "src/err.h"
#include "src/rpc.h"
#include "tests/check_run.h"
#include "tests/comments_util.h"
#include "tests/e2e_util.h"

static struct e2e_server srv;

static void
start(const char *conf)
{
    ck_assert_msg(e2e_start(&srv, conf, NULL) == 0, "foliod did not start");
}

static void
stop(void)
{
    ck_assert_int_eq(e2e_stop(&srv), 0);
}

static double
stat_of(const char *a, const char *b, const char *c)
{
    double v = c != NULL ? e2e_server_stat(&srv, a, b, c, NULL)
                         : e2e_server_stat(&srv, a, b, NULL);

    ck_assert_msg(!isnan(v), "server.stats: no %s.%s", a, b);
    return v;
}

/* ---- admin_max_connections ---- */

START_TEST(test_admin_max_connections)
{
    struct folio_client *a[3];
    struct folio_reply r;
    int i;

    start("workers = 1\nadmin_max_connections = 2\n");
    for (i = 0; i < 2; i++) {
        ck_assert_ptr_nonnull(a[i] = e2e_connect_admin(&srv));
        ck_assert_int_eq(e2e_ping(a[i]), 0);
    }
    /* The third: answered, error 8, then closed. */
    ck_assert_ptr_nonnull(a[2] = e2e_connect_admin(&srv));
    ck_assert_int_eq(folio_client_call0(a[2], "server.ping", &r), 1);
    ck_assert_int_eq(r.code, FOLIO_ST_RESOURCE_EXHAUSTED);
    ck_assert_msg(r.message != NULL &&
                      memmem(r.message, r.message_len,
                             "admin_max_connections 2", 23) != NULL,
                  "%.*s", (int)r.message_len, r.message);
    ck_assert_int_ne(folio_client_call0(a[2], "server.ping", &r), 1);
    folio_client_close(a[2]);
    /* One place freed: taken again. */
    folio_client_close(a[1]);
    {
        uint64_t deadline = e2e_deadline(e2e_bound_ms(5000, 15000));
        int ok = 0;

        do {
            struct folio_client *b = e2e_connect_admin(&srv);

            ok = b != NULL && e2e_ping(b) == 0;
            folio_client_close(b);
        } while (!ok && e2e_wait_more(deadline));
        ck_assert_msg(ok, "the freed admin place is not taken again");
    }
    folio_client_close(a[0]);
    stop();
}
END_TEST

/* ---- admin_max_output_bytes ---- */

#define METHODS_CALLS 2000 /* 700-byte replies: 1.4 MB, under 4m */

/*
 * METHODS_CALLS server.methods pipelined on an admin connection that
 * reads nothing: with `conf`, how many the worker answered once it
 * stopped (output_waits moved), or all of them.
 */
static double
admin_unread(const char *conf, int *waited)
{
    struct folio_client *greedy;
    uint64_t deadline;
    double calls = 0, w0;
    int i;

    start(conf);
    w0 = stat_of("totals", "output_waits", NULL);
    ck_assert_ptr_nonnull(greedy = e2e_connect_admin(&srv));
    for (i = 0; i < METHODS_CALLS; i++)
        folio_client_request(greedy, 0, "server.methods", 0, NULL);
    ck_assert_int_eq(folio_client_flush(greedy), 0);
    /* Until the worker holds it back, or has answered everything. */
    deadline = e2e_deadline(e2e_bound_ms(10000, 30000));
    do {
        calls = e2e_server_stat(&srv, "totals", "methods", "server.methods",
                                "calls", NULL);
        *waited = stat_of("totals", "output_waits", NULL) > w0;
    } while (!*waited && !(calls >= METHODS_CALLS) && e2e_wait_more(deadline));
    folio_client_close(greedy);
    stop();
    return calls;
}

START_TEST(test_admin_max_output_bytes)
{
    double calls;
    int waited;

    /* The default (4m): 1.4 MB of replies are all made, none waits. */
    calls = admin_unread("workers = 1\n", &waited);
    ck_assert_msg(!waited && calls == METHODS_CALLS,
                  "default: %.0f answered, waited %d", calls, waited);
    /* 4k: held back once the socket's buffer is full, far sooner. */
    calls = admin_unread("workers = 1\nadmin_max_output_bytes = 4k\n", &waited);
    printf("keys: admin_max_output_bytes 4k: %.0f of %d server.methods "
           "answered before the worker held the rest\n",
           calls, METHODS_CALLS);
    ck_assert_msg(waited && calls < METHODS_CALLS / 2,
                  "4k: %.0f answered, waited %d", calls, waited);
}
END_TEST

/* ---- max_output_hard_bytes ---- */

/* Post n comments of `len` bytes on path. */
static void
fill_page(struct folio_client *c, const char *path, int n, size_t len)
{
    static char body[65536];
    struct folio_reply r;
    int i;

    memset(body, 'x', len);
    for (i = 0; i < n; i++) {
        ck_assert_int_eq(e2e_comment_post(c, path, "keys", body, len, &r), 0);
        ck_assert_int_eq(r.code, 0);
    }
}

START_TEST(test_max_output_hard_bytes)
{
    struct folio_client *c;
    struct folio_reply r;
    struct e2e_comment *v;

    /* 16 comments of 1000 bytes: a list of 16 KB, over a hard 8k. */
    start("workers = 1\nmax_output_bytes = 4k\nmax_output_hard_bytes = 8k\n");
    ck_assert_ptr_nonnull(c = e2e_connect(&srv));
    fill_page(c, "/hard", 16, 1000);
    ck_assert_int_eq(folio_client_call_str(c, "comments.list", "/hard", &r),
                     1);
    /*
     * Error 8.  (Its message is the store's "out of memory", not the
     * dispatcher's "over ... max_output_hard_bytes": reported with
     * issue 24, left to worker/.)
     */
    ck_assert_msg(r.code == FOLIO_ST_RESOURCE_EXHAUSTED, "%d %.*s", r.code,
                  (int)r.message_len, r.message != NULL ? r.message : "");
    printf("keys: max_output_hard_bytes 8k: a 16 KB list answered 8 \"%.*s\"\n",
           (int)r.message_len, r.message != NULL ? r.message : "");
    /* The connection goes on; a small page is listed. */
    fill_page(c, "/small", 2, 100);
    ck_assert_int_eq(e2e_comment_list(c, "/small", &v), 2);
    free(v);
    folio_client_close(c);
    stop();
    /* The default (8m): the same page is listed. */
    start("workers = 1\nmax_output_bytes = 4k\n");
    ck_assert_ptr_nonnull(c = e2e_connect(&srv));
    fill_page(c, "/hard", 16, 1000);
    ck_assert_int_eq(e2e_comment_list(c, "/hard", &v), 16);
    free(v);
    folio_client_close(c);
    stop();
}
END_TEST

/* ---- comments_cache_size ---- */

#define CACHE_PAGES 8 /* of 3 comments of 3000 bytes: 9 KB each, 72 KB */

/*
 * Every page listed once (a miss each: kept, the least recently used
 * dropped first when the cache is full), then the last and the first
 * again: the hits counted.
 */
static double
cache_hits(const char *conf)
{
    struct folio_client *c;
    struct e2e_comment *v;
    char path[32];
    double h0;
    int i;

    start(conf);
    ck_assert_ptr_nonnull(c = e2e_connect(&srv));
    for (i = 0; i < CACHE_PAGES; i++) {
        snprintf(path, sizeof(path), "/p%d", i);
        fill_page(c, path, 3, 3000);
    }
    h0 = stat_of("totals", "comments_cache_hits", NULL);
    for (i = 0; i <= CACHE_PAGES + 1; i++) {
        snprintf(path, sizeof(path), "/p%d",
                 i < CACHE_PAGES ? i : i == CACHE_PAGES ? CACHE_PAGES - 1 : 0);
        ck_assert_int_eq(e2e_comment_list(c, path, &v), 3);
        free(v);
    }
    h0 = stat_of("totals", "comments_cache_hits", NULL) - h0;
    folio_client_close(c);
    stop();
    return h0;
}

START_TEST(test_comments_cache_size)
{
    double big = cache_hits("workers = 1\n"),
           small = cache_hits("workers = 1\ncomments_cache_size = 64k\n"),
           none = cache_hits("workers = 1\ncomments_cache_size = 0\n");

    printf("keys: comments_cache_size: hits of the last and the first of 8 "
           "pages of 9 KB listed again: %.0f (64m), %.0f (64k), %.0f (0)\n",
           big, small, none);
    ck_assert_double_eq(big, 2);   /* both still there */
    ck_assert_double_eq(small, 1); /* 64k holds the last, not the first */
    ck_assert_double_eq(none, 0);  /* no cache */
}
END_TEST

/* ---- log_level ---- */

START_TEST(test_log_level)
{
    FILE *f;

    start(NULL); /* info, the default */
    ck_assert(e2e_log_has(&srv, "[info] worker 0 started"));
    ck_assert(e2e_log_has(&srv, "[notice] ready"));
    stop();
    start("log_level = warn\n");
    ck_assert(!e2e_log_has(&srv, "[info]"));
    ck_assert(!e2e_log_has(&srv, "[notice]"));
    /* A reload to info: its own lines are there again. */
    ck_assert_ptr_nonnull(f = fopen(srv.conf, "a"));
    fputs("log_level = info\n", f);
    ck_assert_int_eq(fclose(f), 0);
    ck_assert_int_eq(kill(srv.pid, SIGHUP), 0);
    ck_assert_int_eq(e2e_wait_ready(&srv, 2, E2E_READY_MS), 0);
    ck_assert_int_eq(e2e_wait_log(&srv, "[notice] reloaded: generation 2",
                                  e2e_bound_ms(5000, 15000)),
                     0);
    stop();
}
END_TEST

/* ---- cubic_threshold_g ---- */

/* The billed weight of a 100 g cart of 30 x 30 x 30 cm (4500 g cubic). */
static double
billed_g(void)
{
    struct folio_client *c = e2e_connect(&srv);
    struct folio_reply r;
    msgpack_packer *pk;
    double billed;

    ck_assert_ptr_nonnull(c);
    pk = folio_client_request(c, 0, "freight.quote", 2, NULL);
    folio_pack_cstr(pk, "01310-100");
    msgpack_pack_array(pk, 1);
    msgpack_pack_map(pk, 5);
    folio_pack_cstr(pk, "weight_g");
    msgpack_pack_int(pk, 100);
    folio_pack_cstr(pk, "qty");
    msgpack_pack_int(pk, 1);
    folio_pack_cstr(pk, "length_cm");
    msgpack_pack_int(pk, 30);
    folio_pack_cstr(pk, "width_cm");
    msgpack_pack_int(pk, 30);
    folio_pack_cstr(pk, "height_cm");
    msgpack_pack_int(pk, 30);
    ck_assert_int_eq(folio_client_flush(c), 0);
    ck_assert_int_eq(folio_client_reply(c, &r), 1);
    ck_assert_msg(r.code == 0, "quote: %d %.*s", r.code, (int)r.message_len,
                  r.message != NULL ? r.message : "");
    ck_assert_double_eq(e2e_stat_num(&r, "cubic_weight_g", NULL), 4500);
    billed = e2e_stat_num(&r, "billed_weight_g", NULL);
    folio_client_close(c);
    return billed;
}

START_TEST(test_cubic_threshold_g)
{
    static const char tables[] =
        "freight_dir = " FOLIO_SRCDIR "/data/freight\n"
        "catalog = " FOLIO_SRCDIR "/data/catalog.csv\n";
    char conf[1024];

    start(tables); /* 5000 g, the default: 4500 g cubic is not billed */
    ck_assert_double_eq(billed_g(), 100);
    stop();
    snprintf(conf, sizeof(conf), "%scubic_threshold_g = 4000\n", tables);
    start(conf);
    ck_assert_double_eq(billed_g(), 4500);
    stop();
}
END_TEST

int
main(void)
{
    Suite *s = suite_create("e2e_keys");
    TCase *tc = tcase_create("keys");

    setvbuf(stdout, NULL, _IOLBF, 0);
    tcase_set_timeout(tc, 90);
    tcase_add_test(tc, test_admin_max_connections);
    tcase_add_test(tc, test_admin_max_output_bytes);
    tcase_add_test(tc, test_max_output_hard_bytes);
    tcase_add_test(tc, test_comments_cache_size);
    tcase_add_test(tc, test_log_level);
    tcase_add_test(tc, test_cubic_threshold_g);
    suite_add_tcase(s, tc);
    return folio_check_run(s);
}
