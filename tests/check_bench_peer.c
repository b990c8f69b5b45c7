/*
 * check_bench_peer.c - folio-bench's peer protocols (bench/peer.c): the
 * framing of RESP, memcached text and raw replies, whole, split at every
 * byte, as errors and as garbage; the requests each workload encodes;
 * the C escapes of --raw-request.
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include <check.h>

#include "bench/bench.h"
#include "bench/escape.h"
#include "tests/check_run.h"

static struct bench_opts o;

static enum bench_frame
frame(enum bench_proto p, const char *s, size_t n, size_t *len)
{
    o.proto = p;
    return folio_bench_peer_frame(&o, s, n, len);
}

/* Whole: OK/ERROR of `want` bytes; every shorter prefix: MORE. */
static void
check_whole(enum bench_proto p, const char *s, size_t n, enum bench_frame want,
            size_t want_len)
{
    size_t len = 0, i;

    ck_assert_int_eq(frame(p, s, n, &len), want);
    ck_assert_uint_eq(len, want_len);
    for (i = 0; i < want_len; i++)
        ck_assert_msg(frame(p, s, i, &len) == BENCH_F_MORE,
                      "%.*s: a prefix of %zu bytes is not MORE", (int)n, s, i);
}

START_TEST(test_resp)
{
    static const char get[] = "$5\r\nhello\r\n+PONG\r\n";
    static const char arr[] = "*3\r\n:1\r\n$-1\r\n*1\r\n+x\r\n";
    size_t len;

    check_whole(BENCH_P_RESP, "+PONG\r\n", 7, BENCH_F_OK, 7);
    check_whole(BENCH_P_RESP, "-ERR no\r\n", 9, BENCH_F_ERROR, 9);
    check_whole(BENCH_P_RESP, ":42\r\n", 5, BENCH_F_OK, 5);
    check_whole(BENCH_P_RESP, "$-1\r\n", 5, BENCH_F_OK, 5);
    /* Two replies back to back: the first only. */
    check_whole(BENCH_P_RESP, get, sizeof(get) - 1, BENCH_F_OK, 11);
    check_whole(BENCH_P_RESP, arr, sizeof(arr) - 1, BENCH_F_OK,
                sizeof(arr) - 1);
    check_whole(BENCH_P_RESP, "*2\r\n+a\r\n-E\r\n", 12, BENCH_F_ERROR, 12);
    /* Not RESP: what a memcached or an HTTP server would say. */
    ck_assert_int_eq(frame(BENCH_P_RESP, "ERROR\r\n", 7, &len), BENCH_F_BAD);
    ck_assert_int_eq(frame(BENCH_P_RESP, "$x\r\n", 4, &len), BENCH_F_BAD);
    ck_assert_int_eq(frame(BENCH_P_RESP, "$3\r\nabcXY", 9, &len), BENCH_F_BAD);
    ck_assert_int_eq(frame(BENCH_P_RESP, "+no cr\n", 7, &len), BENCH_F_BAD);
    /* Nesting is bounded. */
    ck_assert_int_eq(
        frame(BENCH_P_RESP, "*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n+x\r\n",
              45, &len),
        BENCH_F_BAD);
}
END_TEST

START_TEST(test_memcache)
{
    static const char val[] = "VALUE k 0 5\r\nhe\r\no\r\nEND\r\n";
    static const char two[] = "VALUE a 0 1\r\nx\r\nVALUE b 3 2 77\r\nyz\r\nEND\r\n";
    size_t len;

    check_whole(BENCH_P_MEMCACHE, "VERSION 1.6.18\r\n", 16, BENCH_F_OK, 16);
    check_whole(BENCH_P_MEMCACHE, "STORED\r\n", 8, BENCH_F_OK, 8);
    check_whole(BENCH_P_MEMCACHE, "END\r\n", 5, BENCH_F_OK, 5);
    /* The data is skipped by its length, even where it holds "\r\n". */
    check_whole(BENCH_P_MEMCACHE, val, sizeof(val) - 1, BENCH_F_OK,
                sizeof(val) - 1);
    check_whole(BENCH_P_MEMCACHE, two, sizeof(two) - 1, BENCH_F_OK,
                sizeof(two) - 1);
    check_whole(BENCH_P_MEMCACHE, "ERROR\r\n", 7, BENCH_F_ERROR, 7);
    check_whole(BENCH_P_MEMCACHE, "SERVER_ERROR out of memory\r\n", 28,
                BENCH_F_ERROR, 28);
    check_whole(BENCH_P_MEMCACHE, "CLIENT_ERROR bad\r\n", 18, BENCH_F_ERROR,
                18);
    ck_assert_int_eq(frame(BENCH_P_MEMCACHE, "VALUE k 0 zz\r\n", 14, &len),
                     BENCH_F_BAD);
    ck_assert_int_eq(
        frame(BENCH_P_MEMCACHE, "VALUE k 0 1\r\nxy\r\nEND\r\n", 21, &len),
        BENCH_F_BAD);
    ck_assert_int_eq(
        frame(BENCH_P_MEMCACHE, "VALUE k 0 1\r\nx\r\nSTORED\r\n", 24, &len),
        BENCH_F_BAD);
}
END_TEST

START_TEST(test_raw)
{
    size_t len;

    o.raw_reply_len = 9;
    check_whole(BENCH_P_RAW, "0123456789", 10, BENCH_F_OK, 9);
    o.raw_reply_len = 0;
    o.raw_reply_end = "\r\n";
    o.raw_reply_end_len = 2;
    check_whole(BENCH_P_RAW, "+PONG\r\n+PONG\r\n", 14, BENCH_F_OK, 7);
    ck_assert_int_eq(frame(BENCH_P_RAW, "abc", 3, &len), BENCH_F_MORE);
    o.raw_reply_end = NULL;
    o.raw_reply_end_len = 0;
}
END_TEST

START_TEST(test_unescape)
{
    size_t len;
    char *s;

    s = folio_bench_unescape("\\x94\\x00\\x01\\xabserver.ping\\x90", &len);
    ck_assert_ptr_nonnull(s);
    ck_assert_uint_eq(len, 16);
    ck_assert_int_eq((unsigned char)s[0], 0x94);
    ck_assert_int_eq(s[1], 0);
    ck_assert_int_eq(memcmp(s + 4, "server.ping", 11), 0);
    free(s);
    s = folio_bench_unescape("PING\\r\\n\\t\\\\\\0", &len);
    ck_assert_ptr_nonnull(s);
    ck_assert_uint_eq(len, 9);
    ck_assert_int_eq(memcmp(s, "PING\r\n\t\\\0", 9), 0);
    free(s);
    ck_assert_ptr_null(folio_bench_unescape("\\q", &len));
    ck_assert_ptr_null(folio_bench_unescape("\\x4", &len));
    ck_assert_ptr_null(folio_bench_unescape("\\", &len));
}
END_TEST

/* The requests of each workload, and what they expect. */
START_TEST(test_pools)
{
    struct bench_pool p;
    char err[256];

    memset(&o, 0, sizeof(o));
    o.value_size = 10;
    o.proto = BENCH_P_RESP;
    o.workload = "ping";
    memset(&p, 0, sizeof(p));
    ck_assert_int_eq(folio_bench_pool_build(&o, &p, err, sizeof(err)), 0);
    ck_assert_uint_eq(p.n, 1);
    ck_assert_int_eq(memcmp(p.bytes.b_data, "PING\r\n", 6), 0);
    ck_assert_int_eq(p.reqs[0].expect, BENCH_X_BYTES);
    folio_bench_pool_free(&p);

    o.workload = "get";
    memset(&p, 0, sizeof(p));
    ck_assert_int_eq(folio_bench_pool_build(&o, &p, err, sizeof(err)), 0);
    ck_assert_int_eq(p.reqs[0].expect, BENCH_X_LEN);
    /* "$10\r\n" + 10 bytes + "\r\n" */
    ck_assert_int_eq(p.reqs[0].x_int, 17);
    folio_bench_pool_free(&p);

    o.proto = BENCH_P_MEMCACHE;
    o.key = "k";
    memset(&p, 0, sizeof(p));
    ck_assert_int_eq(folio_bench_pool_build(&o, &p, err, sizeof(err)), 0);
    ck_assert_int_eq(memcmp(p.bytes.b_data, "get k\r\n", 7), 0);
    /* "VALUE k 0 10\r\n" + 10 + "\r\nEND\r\n" */
    ck_assert_int_eq(p.reqs[0].x_int, 14 + 10 + 7);
    folio_bench_pool_free(&p);

    o.workload = "corpus";
    memset(&p, 0, sizeof(p));
    ck_assert_int_ne(folio_bench_pool_build(&o, &p, err, sizeof(err)), 0);
    ck_assert_ptr_nonnull(strstr(err, "version, get, set"));

    o.proto = BENCH_P_RAW;
    o.workload = "raw";
    memset(&p, 0, sizeof(p));
    ck_assert_int_ne(folio_bench_pool_build(&o, &p, err, sizeof(err)), 0);
    ck_assert_ptr_nonnull(strstr(err, "--raw-request"));
    memset(&o, 0, sizeof(o));
}
END_TEST

static Suite *
suite(void)
{
    Suite *s = suite_create("bench_peer");
    TCase *tc = tcase_create("peer");

    tcase_add_test(tc, test_resp);
    tcase_add_test(tc, test_memcache);
    tcase_add_test(tc, test_raw);
    tcase_add_test(tc, test_unescape);
    tcase_add_test(tc, test_pools);
    suite_add_tcase(s, tc);
    return s;
}

int
main(void)
{
    return folio_check_run(suite());
}
