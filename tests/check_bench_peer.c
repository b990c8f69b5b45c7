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
#include "src/http_parse.h"
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

/* --proto http: responses framed with their state kept, in pieces. */
START_TEST(test_http)
{
    static const char two[] = "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\n"
                              "hello"
                              "HTTP/1.1 404 Not Found\r\nTransfer-Encoding: "
                              "chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n";
    struct folio_http_req r;
    struct bench_pool p;
    char buf[sizeof(two)], err[256];
    size_t len, k, off = 0;
    enum bench_frame f = BENCH_F_MORE;

    memcpy(buf, two, sizeof(two));
    folio_bench_http_init(&r);
    for (k = 1; k <= sizeof(two) - 1 && f == BENCH_F_MORE; k++)
        f = folio_bench_http_frame(&r, buf, k, &len);
    ck_assert_int_eq(f, BENCH_F_OK);
    ck_assert_uint_eq(len, 43);
    off = len;
    folio_bench_http_init(&r);
    for (f = BENCH_F_MORE, k = 1; off + k <= sizeof(two) - 1 && f == BENCH_F_MORE;
         k++)
        f = folio_bench_http_frame(&r, buf + off, k, &len);
    ck_assert_int_eq(f, BENCH_F_ERROR);
    ck_assert_uint_eq(off + len, sizeof(two) - 1);
    folio_bench_http_init(&r);
    ck_assert_int_eq(folio_bench_http_frame(&r, (char[]){"SSH-2.0\r\n\r\n"},
                                            11, &len),
                     BENCH_F_BAD);
    folio_bench_http_init(&r);
    ck_assert_int_eq(folio_bench_http_frame(
                         &r, (char[]){"HTTP/1.1 100 Continue\r\n\r\n"}, 25,
                         &len),
                     BENCH_F_BAD);
    /* The request: a GET of --path, or a POST of --body, keep-alive. */
    memset(&o, 0, sizeof(o));
    o.proto = BENCH_P_HTTP;
    o.workload = "http";
    snprintf(o.addr, sizeof(o.addr), "127.0.0.1:7780");
    o.path = "/v1/comments?uri=/test";
    memset(&p, 0, sizeof(p));
    ck_assert_int_eq(folio_bench_pool_build(&o, &p, err, sizeof(err)), 0);
    ck_assert_int_eq(memcmp(p.bytes.b_data,
                            "GET /v1/comments?uri=/test HTTP/1.1\r\nHost: "
                            "127.0.0.1:7780\r\n",
                            53),
                     0);
    folio_bench_pool_free(&p);
    o.body = "{\"a\":1}";
    memset(&p, 0, sizeof(p));
    ck_assert_int_eq(folio_bench_pool_build(&o, &p, err, sizeof(err)), 0);
    ck_assert_ptr_nonnull(memmem(p.bytes.b_data, p.bytes.b_len,
                                 "Content-Length: 7\r\n\r\n{\"a\":1}", 27));
    ck_assert_int_eq(memcmp(p.bytes.b_data, "POST ", 5), 0);
    folio_bench_pool_free(&p);
    memset(&o, 0, sizeof(o));
}
END_TEST

/* The request at r of pool p, NUL-terminated into buf. */
static const char *
req_text(const struct bench_pool *p, const struct bench_req *r, char *buf,
         size_t cap)
{
    snprintf(buf, cap, "%.*s", (int)r->len, p->bytes.b_data + r->off);
    return buf;
}

/* -w WORKLOAD --proto http: the same requests, as the HTTP face's. */
START_TEST(test_http_workloads)
{
    struct bench_pool p;
    char err[256], t[2048];
    uint32_t i, lists = 0, posts = 0, quotes = 0;

    memset(&o, 0, sizeof(o));
    o.proto = BENCH_P_HTTP;
    o.workload = "ping";
    snprintf(o.addr, sizeof(o.addr), "127.0.0.1:7780");
    memset(&p, 0, sizeof(p));
    ck_assert_int_eq(folio_bench_pool_build(&o, &p, err, sizeof(err)), 0);
    ck_assert_uint_eq(p.n, 1);
    ck_assert_str_eq(req_text(&p, &p.reqs[0], t, sizeof(t)),
                     "GET /status HTTP/1.1\r\nHost: 127.0.0.1:7780\r\n"
                     "User-Agent: folio-bench/" PACKAGE_VERSION "\r\n\r\n");
    ck_assert_uint_eq(p.reqs[0].kind, BENCH_K_PING);
    ck_assert_ptr_nonnull(strstr(p.desc, "over HTTP"));
    folio_bench_pool_free(&p);

    o.workload = "comments";
    o.pages = 50;
    o.zipf = 1.0;
    o.write_ratio = 0.5;
    memset(&p, 0, sizeof(p));
    ck_assert_int_eq(folio_bench_pool_build(&o, &p, err, sizeof(err)), 0);
    for (i = 0; i < p.n; i++) {
        req_text(&p, &p.reqs[i], t, sizeof(t));
        ck_assert_uint_le(p.reqs[i].len, p.maxlen);
        if (p.reqs[i].kind == BENCH_K_LIST) {
            lists++;
            ck_assert_msg(strncmp(t, "GET /v1/comments?uri=/bench/page-", 33) ==
                              0,
                          "%s", t);
            ck_assert(p.reqs[i].ok_codes & BENCH_CODE(FOLIO_ST_NOT_FOUND));
        } else {
            ck_assert_uint_eq(p.reqs[i].kind, BENCH_K_POST);
            posts++;
            ck_assert_msg(strncmp(t, "POST /v1/comments HTTP/1.1\r\n", 28) == 0,
                          "%s", t);
            ck_assert_ptr_nonnull(
                strstr(t, "\r\n\r\n{\"path\":\"/bench/page-"));
            ck_assert_ptr_nonnull(strstr(t, "\"author\":\"folio-bench\","
                                            "\"body\":\"Comment "));
        }
    }
    ck_assert_uint_gt(lists, 0);
    ck_assert_uint_gt(posts, 0);
    ck_assert_str_eq(p.code_why[FOLIO_ST_NOT_FOUND], "pages without comments");
    folio_bench_pool_free(&p);

    o.workload = "freight";
    o.uncovered = 50;
    memset(&p, 0, sizeof(p));
    ck_assert_int_eq(folio_bench_pool_build(&o, &p, err, sizeof(err)), 0);
    for (i = 0; i < p.n; i++) {
        req_text(&p, &p.reqs[i], t, sizeof(t));
        ck_assert_uint_eq(p.reqs[i].kind, BENCH_K_QUOTE);
        ck_assert_msg(strncmp(t, "POST /v1/freight/quote HTTP/1.1\r\n", 33) ==
                          0,
                      "%s", t);
        ck_assert_ptr_nonnull(strstr(t, "\r\n\r\n{\"cep\":\""));
        ck_assert_ptr_nonnull(strstr(t, "\",\"items\":[{\"weight_g\":"));
        ck_assert(p.reqs[i].ok_codes & (BENCH_CODE(FOLIO_ST_NOT_FOUND) |
                                        BENCH_CODE(FOLIO_ST_OUT_OF_RANGE)));
        quotes++;
    }
    ck_assert_uint_gt(quotes, 0);
    folio_bench_pool_free(&p);

    /* Any other method: JSON-RPC 2.0 on /rpc. */
    o.workload = "search";
    memset(&p, 0, sizeof(p));
    ck_assert_int_eq(folio_bench_pool_build(&o, &p, err, sizeof(err)), 0);
    req_text(&p, &p.reqs[0], t, sizeof(t));
    ck_assert_msg(strncmp(t, "POST /rpc HTTP/1.1\r\n", 19) == 0, "%s", t);
    ck_assert_ptr_nonnull(
        strstr(t, "{\"jsonrpc\":\"2.0\",\"method\":\"corpus.search\","
                  "\"params\":[\""));
    ck_assert_ptr_nonnull(strstr(t, "],\"id\":1}"));
    folio_bench_pool_free(&p);
    memset(&o, 0, sizeof(o));
}
END_TEST

/* The code of an error reply of the HTTP face, and the JSON-RPC error. */
static int
code_of(const char *reply)
{
    return folio_bench_http_code(reply, strlen(reply));
}

START_TEST(test_http_codes)
{
    static const char rpc[] =
        "HTTP/1.1 200 OK\r\nContent-Length: 101\r\n\r\n"
        "{\"jsonrpc\":\"2.0\",\"error\":{\"code\":-32005,"
        "\"message\":\"x\",\"data\":{\"code\":5,\"status\":"
        "\"NOT_FOUND\"}},\"id\":1}";
    struct folio_http_req r;
    char buf[sizeof(rpc)];
    size_t len;

    ck_assert_int_eq(code_of(rpc), FOLIO_ST_NOT_FOUND);
    memcpy(buf, rpc, sizeof(rpc));
    folio_bench_http_init(&r);
    ck_assert_int_eq(folio_bench_http_frame(&r, buf, sizeof(rpc) - 1, &len),
                     BENCH_F_ERROR);
    ck_assert_uint_eq(len, sizeof(rpc) - 1);
    ck_assert_int_eq(code_of("HTTP/1.1 400 Bad Request\r\n\r\n{\"message\":"
                             "\"x\",\"status\":\"OUT_OF_RANGE\",\"code\":11}"),
                     FOLIO_ST_OUT_OF_RANGE);
    /* No code in the body: the status's. */
    ck_assert_int_eq(code_of("HTTP/1.1 404 Not Found\r\n\r\n"
                             "\"Thread not found\""),
                     FOLIO_ST_NOT_FOUND);
    ck_assert_int_eq(code_of("HTTP/1.1 418 I'm a teapot\r\n\r\n"),
                     FOLIO_ST_MAX);
    ck_assert_int_eq(code_of("{\"code\":99}"), FOLIO_ST_MAX);
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
    tcase_add_test(tc, test_http);
    tcase_add_test(tc, test_http_workloads);
    tcase_add_test(tc, test_http_codes);
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
