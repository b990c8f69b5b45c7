/*
 * check_http.c - the HTTP face's pieces in worker/: responses written
 * into a buffer (read back with the parser folio-bench uses), CORS,
 * mouthful's JSON shapes of comments, and the JSON-RPC 2.0 envelope
 * against the real method table's signatures.
 */
#include "config.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <msgpack.h>

#include "src/buf.h"
#include "src/err.h"
#include "src/http_parse.h"
#include "src/json.h"
#include "tests/check_run.h"
#include "worker/dispatch.h"
#include "worker/http_comments.h"
#include "worker/http_jsonrpc.h"
#include "src/http_cors.h"
#include "worker/http_reply.h"

#define S(lit) lit, sizeof(lit) - 1

static struct folio_buf out, mp;
static msgpack_sbuffer sb;
static msgpack_packer pk;

static void
setup(void)
{
    ck_assert_int_eq(folio_buf_init(&out, 256, 0), 0);
    ck_assert_int_eq(folio_buf_init(&mp, 256, 0), 0);
    msgpack_sbuffer_init(&sb);
    msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
}

static void
teardown(void)
{
    folio_buf_free(&out);
    folio_buf_free(&mp);
    msgpack_sbuffer_destroy(&sb);
}

/* out as a C string. */
static const char *
str(struct folio_buf *b)
{
    folio_buf_append(b, "", 1);
    b->b_len--;
    return b->b_data + b->b_off;
}

static const struct folio_http_limits lim = {8192, 16384, 100, 1u << 20};

/* Read the response in out back as folio-bench would. */
static void
read_back(struct folio_http_req *r, int method)
{
    folio_http_req_init(r, &lim);
    ck_assert_int_eq(folio_http_res_parse(r, method, out.b_data, out.b_len),
                     FOLIO_HTTP_DONE);
    ck_assert_uint_eq(r->total, out.b_len);
}

START_TEST(test_reply_simple)
{
    struct folio_http_req r;

    ck_assert_int_eq(folio_http_reply_simple(&out, 200, 0, 0, FOLIO_HTTP_JSON,
                                             S("{\"message\":\"OK\"}")),
                     0);
    ck_assert_str_eq(str(&out),
                     "HTTP/1.1 200 OK\r\n"
                     "Server: folio\r\n"
                     "Date: Thu, 01 Jan 1970 00:00:00 GMT\r\n"
                     "Content-Type: application/json; charset=utf-8\r\n"
                     "Content-Length: 16\r\n\r\n"
                     "{\"message\":\"OK\"}");
    read_back(&r, FOLIO_HTTP_GET);
    ck_assert(r.flags & FOLIO_HTTP_KEEPALIVE);
    ck_assert_uint_eq(r.body.len, 16);
    /* The mouthful case study's date, and the cache within its second. */
    ck_assert_str_eq(folio_http_date(784111777),
                     "Date: Sun, 06 Nov 1994 08:49:37 GMT\r\n");
    ck_assert_ptr_eq(folio_http_date(784111777), folio_http_date(784111777));
    ck_assert_uint_eq(strlen(folio_http_date(1700000000)), FOLIO_HTTP_DATE_LEN);
    ck_assert_str_eq(folio_http_reason(431), "Request Header Fields Too Large");
    ck_assert_str_eq(folio_http_reason(299), "Unknown");
}
END_TEST

START_TEST(test_reply_unknown_length)
{
    struct folio_http_reply rep;
    struct folio_http_req r;
    int i;

    /* Pending bytes before: the reply is written after them. */
    folio_buf_append(&out, "xx", 2);
    folio_buf_consume(&out, 2);
    ck_assert_int_eq(
        folio_http_reply_begin(&out, &rep, 404, FOLIO_HTTP_R_CLOSE, 0), 0);
    ck_assert_int_eq(folio_buf_append(&out, S("X-Cache: MISS\r\n")), 0);
    ck_assert_int_eq(folio_http_reply_body(&out, &rep, FOLIO_HTTP_JSON,
                                           FOLIO_HTTP_LEN_UNKNOWN),
                     0);
    /* A body long enough to make the buffer grow (and move). */
    for (i = 0; i < 1000; i++)
        folio_buf_append(&out, "0123456789", 10);
    ck_assert_int_eq(folio_http_reply_end(&out, &rep), 0);
    ck_assert(strstr(str(&out), "Content-Length:        10000\r\n") != NULL);
    ck_assert(strstr(str(&out), "Connection: close\r\n") != NULL);
    read_back(&r, FOLIO_HTTP_GET);
    ck_assert_int_eq(r.status, 404);
    ck_assert_uint_eq(r.body.len, 10000);
    ck_assert(!(r.flags & FOLIO_HTTP_KEEPALIVE));
}
END_TEST

START_TEST(test_reply_head_and_checks)
{
    struct folio_http_reply rep;
    struct folio_http_req r;

    /* HEAD: the length of the body, not the body. */
    ck_assert_int_eq(
        folio_http_reply_begin(&out, &rep, 200,
                               FOLIO_HTTP_R_NOBODY | FOLIO_HTTP_R_KEEPALIVE, 0),
        0);
    ck_assert_int_eq(
        folio_http_reply_body(&out, &rep, NULL, FOLIO_HTTP_LEN_UNKNOWN), 0);
    folio_buf_append(&out, "hello", 5);
    ck_assert_int_eq(folio_http_reply_end(&out, &rep), 0);
    ck_assert(strstr(str(&out), "Content-Length:            5\r\n\r\n") !=
              NULL);
    ck_assert(strstr(str(&out), "Connection: keep-alive\r\n") != NULL);
    ck_assert(strstr(str(&out), "hello") == NULL);
    read_back(&r, FOLIO_HTTP_HEAD);
    /* A length given that the body does not match is a bug, caught. */
    folio_buf_reset(&out);
    folio_http_reply_begin(&out, &rep, 200, 0, 0);
    folio_http_reply_body(&out, &rep, NULL, 3);
    folio_buf_append(&out, "four", 4);
    ck_assert_int_eq(folio_http_reply_end(&out, &rep), FOLIO_EINVAL);
    folio_http_reply_cancel(&out, &rep);
    ck_assert_uint_eq(folio_buf_pending(&out), 0);
}
END_TEST

START_TEST(test_reply_bounded)
{
    struct folio_buf small;

    /* A buffer that cannot hold the reply: an error, and nothing left. */
    ck_assert_int_eq(folio_buf_init(&small, 64, 64), 0);
    ck_assert_int_eq(
        folio_http_reply_simple(&small, 200, 0, 0, FOLIO_HTTP_JSON, S("{}")),
        FOLIO_ETOOBIG);
    ck_assert_uint_eq(folio_buf_pending(&small), 0);
    folio_buf_free(&small);
}
END_TEST

START_TEST(test_cors)
{
    struct folio_http_cors c;

    ck_assert_int_eq(folio_http_cors_init(&c, "*"), 0);
    ck_assert(c.any);
    ck_assert(folio_http_cors_allowed(&c, S("https://evil.example")));
    ck_assert(!folio_http_cors_allowed(&c, "", 0));
    ck_assert_int_eq(
        folio_http_cors_put(&out, &c, S("http://a.example"), 0, NULL, 0), 0);
    ck_assert_str_eq(str(&out), "Access-Control-Allow-Origin: *\r\n");
    folio_buf_reset(&out);
    ck_assert_int_eq(folio_http_cors_put(&out, &c, S("http://a.example"), 1,
                                         S("content-type, idempotency-key")),
                     0);
    ck_assert_str_eq(
        str(&out), "Access-Control-Allow-Origin: *\r\n"
                   "Access-Control-Allow-Methods: GET, POST, HEAD, OPTIONS\r\n"
                   "Access-Control-Max-Age: 43200\r\n"
                   "Access-Control-Allow-Headers: content-type, "
                   "idempotency-key\r\n");
    /* No Origin: no CORS headers. */
    folio_buf_reset(&out);
    ck_assert_int_eq(folio_http_cors_put(&out, &c, "", 0, 1, NULL, 0), 0);
    ck_assert_uint_eq(out.b_len, 0);
    folio_http_cors_free(&c);

    ck_assert_int_eq(folio_http_cors_init(&c, " https://a.example,"
                                              "http://B.example:8080 "),
                     0);
    ck_assert_uint_eq(c.n, 2);
    ck_assert(folio_http_cors_allowed(&c, S("https://A.EXAMPLE")));
    ck_assert(folio_http_cors_allowed(&c, S("http://b.example:8080")));
    ck_assert(!folio_http_cors_allowed(&c, S("http://b.example")));
    ck_assert(!folio_http_cors_allowed(&c, S("https://a.example.evil")));
    ck_assert(!folio_http_cors_allowed(&c, S("https://a.exampl")));
    folio_buf_reset(&out);
    folio_http_cors_put(&out, &c, S("https://a.example"), 0, NULL, 0);
    ck_assert_str_eq(str(&out), "Access-Control-Allow-Origin: "
                                "https://a.example\r\nVary: Origin\r\n");
    folio_buf_reset(&out);
    folio_http_cors_put(&out, &c, S("https://other.example"), 0, NULL, 0);
    ck_assert_uint_eq(out.b_len, 0);
    folio_http_cors_free(&c);

    ck_assert_int_eq(folio_http_cors_init(&c, ""), 0);
    ck_assert(!folio_http_cors_allowed(&c, S("http://a.example")));
    folio_http_cors_free(&c);
    ck_assert_int_eq(folio_http_cors_init(&c, "* http://a.example"),
                     FOLIO_EINVAL);
    ck_assert_int_eq(folio_http_cors_init(&c, "a.example"), FOLIO_EINVAL);
    ck_assert_int_eq(folio_http_cors_init(&c, "http://a.example/"),
                     FOLIO_EINVAL);
    ck_assert_int_eq(folio_http_cors_init(&c, "http://a\x01"), FOLIO_EINVAL);
    folio_http_cors_free(&c);
}
END_TEST

/* Pack a stored comment as the store does (reply_to < 0: none). */
static void
pack_comment(uint64_t id, const char *path, const char *author,
             const char *body, uint64_t at, int64_t reply_to)
{
    msgpack_pack_map(&pk, reply_to >= 0 ? 6 : 5);
    msgpack_pack_str_with_body(&pk, "id", 2);
    msgpack_pack_uint64(&pk, id);
    msgpack_pack_str_with_body(&pk, "path", 4);
    msgpack_pack_str_with_body(&pk, path, strlen(path));
    msgpack_pack_str_with_body(&pk, "author", 6);
    msgpack_pack_str_with_body(&pk, author, strlen(author));
    msgpack_pack_str_with_body(&pk, "body", 4);
    msgpack_pack_str_with_body(&pk, body, strlen(body));
    msgpack_pack_str_with_body(&pk, "created_at", 10);
    msgpack_pack_uint64(&pk, at);
    if (reply_to >= 0) {
        msgpack_pack_str_with_body(&pk, "reply_to", 8);
        msgpack_pack_uint64(&pk, (uint64_t)reply_to);
    }
}

START_TEST(test_comments_json)
{
    uint32_t n = 9;

    msgpack_pack_array(&pk, 2);
    pack_comment(1, "/test/", "vik", "this is just a test", 1700000000123, -1);
    pack_comment(2, "/test/", "O'Brien", "<script>alert(1)</script>\n&",
                 1700000001000, 1);
    ck_assert_int_eq(folio_http_comments_json(&out, sb.data, sb.size, &n), 0);
    ck_assert_uint_eq(n, 2);
    ck_assert_str_eq(str(&out),
                     "[{\"Id\":1,\"ThreadId\":\"/test/\","
                     "\"Body\":\"this is just a test\",\"Author\":\"vik\","
                     "\"Confirmed\":true,"
                     "\"CreatedAt\":\"2023-11-14T22:13:20.123Z\"},"
                     "{\"Id\":2,\"ThreadId\":\"/test/\","
                     "\"Body\":\"&lt;script&gt;alert(1)&lt;/script&gt;\\n"
                     "&amp;\",\"Author\":\"O'Brien\",\"Confirmed\":true,"
                     "\"CreatedAt\":\"2023-11-14T22:13:21Z\",\"ReplyTo\":1}]");
    /* An empty thread: [] and a count of 0 (mouthful's 404). */
    msgpack_sbuffer_clear(&sb);
    msgpack_pack_array(&pk, 0);
    folio_buf_reset(&out);
    ck_assert_int_eq(folio_http_comments_json(&out, sb.data, sb.size, &n), 0);
    ck_assert_uint_eq(n, 0);
    ck_assert_str_eq(str(&out), "[]");
    /* Not comments: refused, nothing written. */
    msgpack_sbuffer_clear(&sb);
    msgpack_pack_array(&pk, 1);
    msgpack_pack_map(&pk, 1);
    msgpack_pack_str_with_body(&pk, "id", 2);
    msgpack_pack_str_with_body(&pk, "x", 1);
    folio_buf_reset(&out);
    ck_assert_int_eq(folio_http_comments_json(&out, sb.data, sb.size, &n),
                     FOLIO_EPROTO);
    ck_assert_uint_eq(out.b_len, 0);
}
END_TEST

/* Read a POST body given as JSON text. */
static int
post_read(const char *json, struct folio_http_comment_post *p, char *err)
{
    struct folio_json_err e;

    folio_buf_reset(&mp);
    ck_assert_int_eq(folio_json_to_mp(json, strlen(json), 32, &mp, &e), 0);
    return folio_http_comment_post_read(mp.b_data, mp.b_len, p, err, 256);
}

static void
assert_field(const char *s, uint32_t len, const char *want)
{
    ck_assert_msg(len == strlen(want) && memcmp(s, want, len) == 0,
                  "'%.*s', want '%s'", (int)len, s, want);
}

START_TEST(test_comment_post_read)
{
    struct folio_http_comment_post p;
    char err[256];

    /* The case study's curl. */
    ck_assert_int_eq(post_read("{\"path\": \"/test\",\"body\": \"this is just "
                               "a test\",\"author\": \"vik\"}",
                               &p, err),
                     0);
    assert_field(p.path, p.path_len, "/test");
    assert_field(p.body, p.body_len, "this is just a test");
    assert_field(p.author, p.author_len, "vik");
    ck_assert(!p.has_email && !p.has_reply_to);
    /* The widget's: capitalized keys, ReplyTo null, then a reply. */
    ck_assert_int_eq(post_read("{\"Body\":\"hi\",\"Author\":\"a\",\"Path\":"
                               "\"/p\",\"ReplyTo\":null}",
                               &p, err),
                     0);
    assert_field(p.body, p.body_len, "hi");
    ck_assert(!p.has_reply_to);
    ck_assert_int_eq(post_read("{\"Body\":\"hi\",\"Author\":\"a\",\"Path\":"
                               "\"/p\",\"ReplyTo\":12}",
                               &p, err),
                     0);
    ck_assert(p.has_reply_to && p.reply_to == 12);
    ck_assert_int_eq(post_read("{\"replyto\":\"34\"}", &p, err), 0);
    ck_assert(p.has_reply_to && p.reply_to == 34);
    /* The last of a repeated key wins, whatever its case, as in Go. */
    ck_assert_int_eq(
        post_read("{\"body\":\"a\",\"BODY\":\"b\",\"x\":[1,{}]}", &p, err), 0);
    assert_field(p.body, p.body_len, "b");
    ck_assert(!p.has_path);
    /* The honeypot: any string in email; null is none. */
    ck_assert_int_eq(post_read("{\"email\":\"bot@spam\"}", &p, err), 0);
    ck_assert(p.has_email);
    assert_field(p.email, p.email_len, "bot@spam");
    ck_assert_int_eq(post_read("{\"Email\":null}", &p, err), 0);
    ck_assert(!p.has_email);
    /* Wrong types: a message naming the field. */
    ck_assert_int_eq(post_read("{\"body\":5}", &p, err), FOLIO_EINVAL);
    ck_assert(strstr(err, "body must be a string") != NULL);
    ck_assert_int_eq(post_read("{\"replyTo\":\"x1\"}", &p, err), FOLIO_EINVAL);
    ck_assert_int_eq(post_read("{\"replyTo\":-1}", &p, err), FOLIO_EINVAL);
    ck_assert_int_eq(post_read("{\"replyTo\":1.5}", &p, err), FOLIO_EINVAL);
    ck_assert_int_eq(post_read("{\"email\":1}", &p, err), FOLIO_EINVAL);
    ck_assert_int_eq(post_read("[\"body\"]", &p, err), FOLIO_EINVAL);
    ck_assert(strstr(err, "must be a JSON object") != NULL);
}
END_TEST

START_TEST(test_comment_post_params)
{
    struct folio_http_comment_post p;
    struct folio_comment_view v;
    struct folio_mp_cur c;
    const char *k, *s;
    uint32_t n, klen, slen;
    uint64_t u;
    char err[256];

    ck_assert_int_eq(post_read("{\"path\":\"/t\",\"author\":\"a\",\"body\":"
                               "\"b\",\"replyTo\":7}",
                               &p, err),
                     0);
    ck_assert_int_eq(folio_http_comment_post_params(&out, &p, S("key-1")), 0);
    folio_mp_cur_init(&c, out.b_data, out.b_len);
    ck_assert_int_eq(folio_mp_read_map(&c, &n), 0);
    ck_assert_uint_eq(n, 5);
    ck_assert_int_eq(folio_mp_read_str(&c, &k, &klen), 0);
    ck_assert(folio_mp_str_eq(k, klen, "path"));
    ck_assert_int_eq(folio_mp_read_str(&c, &s, &slen), 0);
    assert_field(s, slen, "/t");
    folio_mp_skip(&c);
    folio_mp_skip(&c);
    folio_mp_skip(&c);
    folio_mp_skip(&c);
    ck_assert_int_eq(folio_mp_read_str(&c, &k, &klen), 0);
    ck_assert(folio_mp_str_eq(k, klen, "reply_to"));
    ck_assert_int_eq(folio_mp_read_uint(&c, &u), 0);
    ck_assert_uint_eq(u, 7);
    ck_assert_int_eq(folio_mp_read_str(&c, &k, &klen), 0);
    ck_assert(folio_mp_str_eq(k, klen, "idempotency_key"));
    ck_assert_int_eq(folio_mp_read_str(&c, &s, &slen), 0);
    assert_field(s, slen, "key-1");
    ck_assert(c.p == c.end);

    /* The created comment, as mouthful answers the POST. */
    msgpack_sbuffer_clear(&sb);
    pack_comment(42, "/t/", "a", "<b>hi</b>", 0, 7);
    folio_mp_cur_init(&c, sb.data, sb.size);
    ck_assert_int_eq(folio_http_comment_read(&c, &v), 0);
    folio_buf_reset(&out);
    ck_assert_int_eq(folio_http_comment_created_json(&out, &v, 0, NULL, 0), 0);
    ck_assert_str_eq(str(&out), "{\"id\":42,\"path\":\"/t/\",\"body\":"
                                "\"&lt;b&gt;hi&lt;/b&gt;\",\"author\":\"a\","
                                "\"replyTo\":7}");
    folio_buf_reset(&out);
    v.has_reply_to = 0;
    ck_assert_int_eq(folio_http_comment_created_json(&out, &v, 1, S("e@x")), 0);
    ck_assert_str_eq(str(&out), "{\"id\":42,\"path\":\"/t/\",\"body\":"
                                "\"&lt;b&gt;hi&lt;/b&gt;\",\"author\":\"a\","
                                "\"email\":\"e@x\"}");
}
END_TEST

/* Read a JSON-RPC request given as JSON text. */
static int
rpc_read(const char *json, struct folio_jsonrpc_call *call, const char **why)
{
    struct folio_json_err e;
    struct folio_mp_cur c;

    folio_buf_reset(&mp);
    ck_assert_int_eq(folio_json_to_mp(json, strlen(json), 32, &mp, &e), 0);
    folio_mp_cur_init(&c, mp.b_data, mp.b_len);
    return folio_jsonrpc_read(&c, call, why);
}

START_TEST(test_jsonrpc_read)
{
    struct folio_jsonrpc_call call;
    const char *why, *s;
    uint32_t len;
    uint64_t u;

    ck_assert_int_eq(rpc_read("{\"jsonrpc\":\"2.0\",\"method\":"
                              "\"corpus.match_count\",\"params\":[\"hello\"],"
                              "\"id\":1}",
                              &call, &why),
                     0);
    ck_assert(
        folio_mp_str_eq(call.method, call.method_len, "corpus.match_count"));
    ck_assert(!call.by_name && call.nparams == 1 && call.has_id);
    ck_assert_int_eq(folio_mp_read_str(&call.params, &s, &len), 0);
    assert_field(s, len, "hello");
    ck_assert_int_eq(folio_mp_read_uint(&call.id, &u), 0);
    ck_assert_uint_eq(u, 1);
    /* A notification: no id.  An id of null is a request. */
    ck_assert_int_eq(
        rpc_read("{\"method\":\"server.ping\",\"jsonrpc\":\"2.0\"}", &call,
                 &why),
        0);
    ck_assert(!call.has_id && call.nparams == 0);
    ck_assert_int_eq(rpc_read("{\"jsonrpc\":\"2.0\",\"method\":\"m\","
                              "\"id\":null,\"params\":{\"a\":1,\"b\":2}}",
                              &call, &why),
                     0);
    ck_assert(call.has_id && call.by_name && call.nparams == 2);
    /* Not requests. */
    ck_assert_int_eq(rpc_read("{\"method\":\"m\",\"id\":1}", &call, &why),
                     FOLIO_JSONRPC_INVALID_REQUEST);
    ck_assert(strstr(why, "2.0") != NULL);
    ck_assert(call.has_id); /* answered with its id */
    ck_assert_int_eq(
        rpc_read("{\"jsonrpc\":\"1.0\",\"method\":\"m\"}", &call, &why),
        FOLIO_JSONRPC_INVALID_REQUEST);
    ck_assert_int_eq(rpc_read("{\"jsonrpc\":\"2.0\",\"id\":2}", &call, &why),
                     FOLIO_JSONRPC_INVALID_REQUEST);
    ck_assert_str_eq(why, "no method");
    ck_assert_int_eq(
        rpc_read("{\"jsonrpc\":\"2.0\",\"method\":1}", &call, &why),
        FOLIO_JSONRPC_INVALID_REQUEST);
    ck_assert_int_eq(rpc_read("{\"jsonrpc\":\"2.0\",\"method\":\"m\","
                              "\"params\":\"x\"}",
                              &call, &why),
                     FOLIO_JSONRPC_INVALID_REQUEST);
    ck_assert_int_eq(rpc_read("{\"jsonrpc\":\"2.0\",\"method\":\"m\","
                              "\"id\":[1]}",
                              &call, &why),
                     FOLIO_JSONRPC_INVALID_REQUEST);
    ck_assert(!call.has_id); /* answered with id null */
    ck_assert_int_eq(rpc_read("7", &call, &why), FOLIO_JSONRPC_INVALID_REQUEST);
}
END_TEST

/* Params by name for `method`, from the real table's signature. */
static int
by_name(const char *method, const char *params, uint32_t *n, char *err)
{
    struct folio_jsonrpc_call call;
    const struct folio_method *m;
    struct folio_json_err e;
    unsigned row;

    m = folio_method_find(method, (uint32_t)strlen(method), &row);
    ck_assert_ptr_nonnull(m);
    folio_buf_reset(&mp);
    ck_assert_int_eq(folio_json_to_mp(params, strlen(params), 32, &mp, &e), 0);
    memset(&call, 0, sizeof(call));
    folio_mp_cur_init(&call.params, mp.b_data, mp.b_len);
    call.by_name = 1;
    folio_buf_reset(&out);
    return folio_jsonrpc_by_name(m->signature, &call, &out, n, err, 256);
}

START_TEST(test_jsonrpc_by_name)
{
    struct folio_mp_cur c;
    const char *s;
    uint32_t n, len;
    char err[256];

    /* In the signature's order, whatever the object's. */
    ck_assert_int_eq(by_name("corpus.search",
                             "{\"opts\":{\"limit\":2},\"query\":\"to be\"}", &n,
                             err),
                     0);
    ck_assert_uint_eq(n, 2);
    folio_mp_cur_init(&c, out.b_data, out.b_len);
    ck_assert_int_eq(folio_mp_read_str(&c, &s, &len), 0);
    assert_field(s, len, "to be");
    ck_assert_int_eq(folio_mp_read_map(&c, &len), 0);
    ck_assert_uint_eq(len, 1);
    ck_assert_int_eq(by_name("corpus.search", "{\"query\":\"x\"}", &n, err), 0);
    ck_assert_uint_eq(n, 1);
    ck_assert_int_eq(by_name("corpus.search", "{\"opts\":{}}", &n, err),
                     FOLIO_JSONRPC_INVALID_PARAMS);
    ck_assert_str_eq(err, "missing param \"query\"");
    ck_assert_int_eq(
        by_name("corpus.search", "{\"query\":\"x\",\"q\":1}", &n, err),
        FOLIO_JSONRPC_INVALID_PARAMS);
    ck_assert_str_eq(err, "unknown param \"q\"");
    ck_assert_int_eq(by_name("freight.quote",
                             "{\"items\":[],\"cep\":\"01310-100\"}", &n, err),
                     0);
    ck_assert_uint_eq(n, 2);
    folio_mp_cur_init(&c, out.b_data, out.b_len);
    ck_assert_int_eq(folio_mp_read_str(&c, &s, &len), 0);
    assert_field(s, len, "01310-100");
    /* comments.post's one param is the object itself. */
    ck_assert_int_eq(
        by_name("comments.post",
                "{\"path\":\"/p\",\"author\":\"a\",\"body\":\"b\"}", &n, err),
        0);
    ck_assert_uint_eq(n, 1);
    folio_mp_cur_init(&c, out.b_data, out.b_len);
    ck_assert_int_eq(folio_mp_read_map(&c, &len), 0);
    ck_assert_uint_eq(len, 3);
    ck_assert_int_eq(by_name("server.ping", "{}", &n, err), 0);
    ck_assert_uint_eq(n, 0);
    ck_assert_int_eq(by_name("server.ping", "{\"x\":1}", &n, err),
                     FOLIO_JSONRPC_INVALID_PARAMS);
}
END_TEST

START_TEST(test_jsonrpc_put)
{
    struct folio_mp_cur id, res;

    msgpack_pack_str_with_body(&pk, "abc", 3);
    msgpack_pack_array(&pk, 2);
    msgpack_pack_int(&pk, 349);
    msgpack_pack_nil(&pk);
    folio_mp_cur_init(&id, sb.data, sb.size);
    res = id;
    folio_mp_skip(&res);
    ck_assert_int_eq(folio_jsonrpc_put_result(&out, &id, &res), 0);
    ck_assert_str_eq(
        str(&out),
        "{\"jsonrpc\":\"2.0\",\"result\":[349,null],\"id\":\"abc\"}");
    folio_buf_reset(&out);
    ck_assert_int_eq(folio_jsonrpc_put_error(&out, NULL, folio_jsonrpc_code(5),
                                             S("no band covers \"1\""), 5),
                     0);
    ck_assert_str_eq(str(&out),
                     "{\"jsonrpc\":\"2.0\",\"error\":{\"code\":-32005,"
                     "\"message\":\"no band covers \\\"1\\\"\",\"data\":"
                     "{\"code\":5,\"status\":\"NOT_FOUND\"}},\"id\":null}");
    folio_buf_reset(&out);
    ck_assert_int_eq(folio_jsonrpc_put_error(&out, &id,
                                             FOLIO_JSONRPC_PARSE_ERROR,
                                             S("parse error"), 0),
                     0);
    ck_assert_str_eq(str(&out), "{\"jsonrpc\":\"2.0\",\"error\":{\"code\":"
                                "-32700,\"message\":\"parse error\"},"
                                "\"id\":\"abc\"}");
    ck_assert_int_eq(folio_jsonrpc_code(3), -32602);
    ck_assert_int_eq(folio_jsonrpc_code(12), -32601);
    ck_assert_int_eq(folio_jsonrpc_code(13), -32603);
    ck_assert_int_eq(folio_jsonrpc_code(11), -32011);
    ck_assert_int_eq(folio_jsonrpc_code(14), -32014);
}
END_TEST

int
main(void)
{
    Suite *s = suite_create("http");
    TCase *tc = tcase_create("http");

    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, test_reply_simple);
    tcase_add_test(tc, test_reply_unknown_length);
    tcase_add_test(tc, test_reply_head_and_checks);
    tcase_add_test(tc, test_reply_bounded);
    tcase_add_test(tc, test_cors);
    tcase_add_test(tc, test_comments_json);
    tcase_add_test(tc, test_comment_post_read);
    tcase_add_test(tc, test_comment_post_params);
    tcase_add_test(tc, test_jsonrpc_read);
    tcase_add_test(tc, test_jsonrpc_by_name);
    tcase_add_test(tc, test_jsonrpc_put);
    suite_add_tcase(s, tc);
    return folio_check_run(s);
}
