/*
 * e2e_http.c - the HTTP face (folio-http(7)) end to end, with the
 * clients the case studies used, started by the tests: curl for every
 * route, Python's http.client for keep-alive, the mouthful case study's
 * 100 curl POSTs then hey, and a socket of our own for pipelining, the
 * allocation count and the hostile requests.  A missing client is a
 * skip of the suite (saying so), a failure under CI (e2e_require).
 */
#include "config.h"

#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <check.h>
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>
#include <msgpack.h>

#include "src/addr.h"
#include "src/buf.h"
#include "src/client.h"
#include "src/http_parse.h"
#include "src/rpc.h"
#include "tests/check_run.h"
#include "tests/comments_util.h"
#include "tests/e2e_util.h"

static struct e2e_server srv;

#ifdef E2E_POSTGRES
#include "tests/pg_util.h"

static struct pg_cluster pgc;
#endif

#define FREIGHT                                                                \
    "freight_dir = " FOLIO_SRCDIR "/data/freight\n"                            \
    "catalog = " FOLIO_SRCDIR "/data/catalog.csv\n"

static void
start(const char *conf)
{
#ifdef E2E_POSTGRES
    char text[2048], db[64];

    /* A database of its own: a fresh schema, ids from 1. */
    ck_assert_int_eq(
        pg_new_db_conf(&pgc, db, sizeof(db), conf, text, sizeof(text)), 0);
    conf = text;
#endif
    ck_assert_msg(e2e_start(&srv, conf, NULL) == 0, "foliod did not start");
    ck_assert_msg(srv.http[0] != '\0', "no http line in the ready file");
}

static void
stop_clean(void)
{
    ck_assert_int_eq(e2e_stop(&srv), 0);
}

/* Run a shell command; its stdout in out (NUL-terminated); its status. */
static int run(char *out, size_t cap, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static int
run(char *out, size_t cap, const char *fmt, ...)
{
    char cmd[8192];
    va_list ap;
    size_t n = 0, k;
    FILE *f;
    int st;

    va_start(ap, fmt);
    vsnprintf(cmd, sizeof(cmd), fmt, ap);
    va_end(ap);
    ck_assert_ptr_nonnull(f = popen(cmd, "r"));
    while (n + 1 < cap && (k = fread(out + n, 1, cap - 1 - n, f)) > 0)
        n += k;
    out[n] = '\0';
    st = pclose(f);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/*
 * curl: the arguments (a format) after "curl -s"; prints the body, then a
 * line "HTTP <status>".  Returns the status, the body in out.
 */
static int curl(char *out, size_t cap, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static int
curl(char *out, size_t cap, const char *fmt, ...)
{
    char args[4096], *tail;
    va_list ap;
    int st = 0;

    va_start(ap, fmt);
    vsnprintf(args, sizeof(args), fmt, ap);
    va_end(ap);
    ck_assert_int_eq(run(out, cap,
                         "curl -s --max-time 20 -w '\\nHTTP %%{http_code}' %s",
                         args),
                     0);
    ck_assert_ptr_nonnull(tail = strrchr(out, '\n'));
    ck_assert_int_eq(sscanf(tail, "\nHTTP %d", &st), 1);
    *tail = '\0';
    return st;
}

/*
 * GET the comments of `uri` (curl) until the list has n of them, n times
 * in a row: with PostgreSQL, a worker drops a page from its cache when
 * the database's notification of a post by another worker comes
 * (folio-rpc(7)), a few milliseconds later; with LMDB, at once.
 */
static void
list_until(const char *uri, size_t n, char *out, size_t cap)
{
    uint64_t end = e2e_now_ms() + 10000;
    json_error_t je;
    json_t *j;
    int row = 0, st;

    while (row < 5) {
        ck_assert_msg(e2e_now_ms() < end, "the list never had %zu comments", n);
        st = curl(out, cap, "'http://%s/v1/comments?uri=%s'", srv.http, uri);
        j = st == 200 ? json_loads(out, 0, &je) : NULL;
        row = j != NULL && json_array_size(j) == n ? row + 1 : 0;
        json_decref(j);
    }
}

/* ---- a client of our own: one socket, pipelined or not ---- */

struct hc {
    int fd;
    struct folio_buf in;
};

static const struct folio_http_limits res_lim = {8192, 65536, 100, 64u << 20};

static void
hc_open(struct hc *h, const char *addr)
{
    struct folio_addr a;
    char why[128];

    ck_assert_int_eq(folio_addr_parse(addr, &a, why, sizeof(why)), 0);
    ck_assert_int_ge(h->fd = folio_addr_connect(&a, 5000), 0);
    ck_assert_int_eq(folio_buf_init(&h->in, 65536, 0), 0);
}

static void
hc_close(struct hc *h)
{
    close(h->fd);
    folio_buf_free(&h->in);
}

static void
hc_send(struct hc *h, const char *s, size_t n)
{
    ssize_t k;

    while (n > 0) {
        k = send(h->fd, s, n, MSG_NOSIGNAL);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0)
            return; /* closed: the reads will say */
        s += k;
        n -= (size_t)k;
    }
}

/*
 * Read one response to a request of `method` within 10 s: 0 with *r
 * parsed and *msg its bytes (valid until hc_next), -1 at EOF (or a
 * timeout, or not HTTP).
 */
static int
hc_read(struct hc *h, int method, struct folio_http_req *r, char **msg)
{
    uint64_t end = e2e_now_ms() + 10000;
    struct pollfd pfd = {h->fd, POLLIN, 0};
    ssize_t k;
    int rc;

    folio_http_req_init(r, &res_lim);
    for (;;) {
        *msg = h->in.b_data + h->in.b_off;
        rc = folio_http_res_parse(r, method, *msg, folio_buf_pending(&h->in));
        if (rc == FOLIO_HTTP_DONE)
            return 0;
        if (rc == FOLIO_HTTP_ERROR)
            return -1;
        if (e2e_now_ms() >= end ||
            poll(&pfd, 1, (int)(end - e2e_now_ms())) <= 0)
            return -1;
        ck_assert_int_eq(folio_buf_reserve(&h->in, 65536), 0);
        k = recv(h->fd, h->in.b_data + h->in.b_len, folio_buf_space(&h->in), 0);
        if (k <= 0)
            return -1;
        h->in.b_len += (size_t)k;
    }
}

/* Past the response hc_read gave. */
static void
hc_next(struct hc *h, const struct folio_http_req *r)
{
    folio_buf_consume(&h->in, (size_t)r->total);
}

/* Whether the server closed the connection (EOF within 10 s). */
static int
hc_closed(struct hc *h)
{
    struct pollfd pfd = {h->fd, POLLIN, 0};
    char b[4096];
    uint64_t end = e2e_now_ms() + 10000;
    ssize_t k;

    while (e2e_now_ms() < end && poll(&pfd, 1, (int)(end - e2e_now_ms())) > 0) {
        k = recv(h->fd, b, sizeof(b), 0);
        if (k == 0 || (k < 0 && errno != EINTR && errno != EAGAIN))
            return 1;
    }
    return 0;
}

/* One request on a fresh connection: its status, body in out. */
static int
request(const char *raw, size_t n, char *out, size_t cap)
{
    struct folio_http_req r;
    struct hc h;
    char *msg;
    int st = -1;

    hc_open(&h, srv.http);
    hc_send(&h, raw, n);
    if (hc_read(&h, FOLIO_HTTP_GET, &r, &msg) == 0) {
        st = r.status;
        snprintf(out, cap, "%.*s", (int)r.body.len, msg + r.body.off);
    } else {
        out[0] = '\0';
    }
    hc_close(&h);
    return st;
}

#define S(lit) lit, sizeof(lit) - 1

/* ---- every route, with curl ---- */

/* mouthful's widget posting a reply with markup, and an Idempotency-Key */
#define WIDGET_POST                                                            \
    "-X POST http://%s/v1/comments -H 'Content-Type: text/plain' "             \
    "-H 'Idempotency-Key: k-1' --data '{\"Body\":\"<script>alert(1)"           \
    "</script><img src=x onerror=alert(2)>\",\"Author\":\"O'\\''Brien"         \
    "\",\"Path\":\"test\",\"ReplyTo\":%lld}'"

START_TEST(test_routes)
{
    static char out[65536];
    json_t *j;
    json_error_t je;
    long long id1, id2;

    start(FREIGHT);
    /* /status, GET and HEAD */
    ck_assert_int_eq(curl(out, sizeof(out), "http://%s/status", srv.http), 200);
    ck_assert_str_eq(out, "{\"message\":\"OK\"}");
    ck_assert_int_eq(curl(out, sizeof(out), "-I http://%s/status", srv.http),
                     200);
    ck_assert_ptr_nonnull(strstr(out, "Content-Length: 16\r\n"));
    ck_assert_ptr_null(strstr(out, "OK\"}"));

    /* comments: none, then posts as the case study and the widget do */
    ck_assert_int_eq(
        curl(out, sizeof(out), "'http://%s/v1/comments?uri=/test'", srv.http),
        404);
    ck_assert_str_eq(out, "\"Thread not found\"");
    ck_assert_int_eq(
        curl(out, sizeof(out), "'http://%s/v1/comments'", srv.http), 400);
    ck_assert_int_eq(
        curl(out, sizeof(out),
             "--request POST --url http://%s/v1/comments --header "
             "'content-type: application/json' --data '{\"path\": "
             "\"/test\",\"body\": \"this is just a test\",\"author\": "
             "\"vik\"}'",
             srv.http),
        200);
    ck_assert_ptr_nonnull(j = json_loads(out, 0, &je));
    ck_assert_str_eq(json_string_value(json_object_get(j, "path")), "/test/");
    ck_assert_str_eq(json_string_value(json_object_get(j, "body")),
                     "this is just a test");
    id1 = json_integer_value(json_object_get(j, "id"));
    ck_assert_int_gt(id1, 0);
    json_decref(j);
    /* The widget: capitalized keys, text/plain, a reply, markup. */
    ck_assert_int_eq(curl(out, sizeof(out), WIDGET_POST, srv.http, id1), 200);
    ck_assert_ptr_nonnull(j = json_loads(out, 0, &je));
    ck_assert_int_eq(json_integer_value(json_object_get(j, "replyTo")), id1);
    id2 = json_integer_value(json_object_get(j, "id"));
    ck_assert_ptr_null(
        strchr(json_string_value(json_object_get(j, "body")), '<'));
    json_decref(j);
    /* Its retry with the Idempotency-Key: the first one, not a second */
    ck_assert_int_eq(curl(out, sizeof(out), WIDGET_POST, srv.http, id1), 200);
    ck_assert_ptr_nonnull(j = json_loads(out, 0, &je));
    ck_assert_int_eq(json_integer_value(json_object_get(j, "id")), id2);
    json_decref(j);
    /* the key again for another comment: 422, as Stripe answers */
    ck_assert_int_eq(
        curl(out, sizeof(out),
             "-X POST http://%s/v1/comments -H 'Idempotency-Key: k-1' "
             "--data '{\"body\":\"other\",\"author\":\"a\","
             "\"path\":\"/test\"}'",
             srv.http),
        422);
    ck_assert_ptr_nonnull(strstr(out, "idempotency_key"));
    ck_assert_int_eq(
        curl(out, sizeof(out),
             "-X POST http://%s/v1/comments -H 'Idempotency-Key: %0129d' "
             "--data '{\"body\":\"other\",\"author\":\"a\","
             "\"path\":\"/test\"}'",
             srv.http, 0),
        400);
    ck_assert_ptr_nonnull(strstr(out, "idempotency_key must be 1 to 128"));
    /* A reply to a reply, and the honeypot: 400, then 200 but not stored. */
    ck_assert_int_eq(
        curl(out, sizeof(out),
             "-X POST http://%s/v1/comments --data '{\"body\":\"x\","
             "\"author\":\"a\",\"path\":\"/test\",\"replyTo\":\"%lld\"}'",
             srv.http, id2),
        400);
    ck_assert_ptr_nonnull(strstr(out, "reply_to"));
    ck_assert_int_eq(
        curl(out, sizeof(out),
             "-X POST http://%s/v1/comments --data '{\"body\":\"spam\","
             "\"author\":\"bot\",\"path\":\"/test\",\"email\":\"b@x\"}'",
             srv.http),
        200);
    ck_assert_ptr_nonnull(strstr(out, "\"email\":\"b@x\""));
    ck_assert_int_eq(curl(out, sizeof(out),
                          "-X POST http://%s/v1/comments --data '{'", srv.http),
                     400);
    ck_assert_ptr_nonnull(strstr(out, "invalid JSON"));
    /* The thread: two comments, mouthful's fields, the markup escaped. */
    list_until("%2Ftest", 2, out, sizeof(out));
    ck_assert_ptr_nonnull(j = json_loads(out, 0, &je));
    ck_assert_uint_eq(json_array_size(j), 2);
    ck_assert_int_eq(
        json_integer_value(json_object_get(json_array_get(j, 0), "Id")), id1);
    ck_assert_str_eq(
        json_string_value(json_object_get(json_array_get(j, 0), "ThreadId")),
        "/test/");
    ck_assert(json_is_true(json_object_get(json_array_get(j, 1), "Confirmed")));
    ck_assert_int_eq(
        json_integer_value(json_object_get(json_array_get(j, 1), "ReplyTo")),
        id1);
    ck_assert_str_eq(
        json_string_value(json_object_get(json_array_get(j, 1), "Author")),
        "O'Brien");
    ck_assert_str_eq(
        json_string_value(json_object_get(json_array_get(j, 1), "Body")),
        "&lt;script&gt;alert(1)&lt;/script&gt;&lt;img src=x "
        "onerror=alert(2)&gt;");
    ck_assert_ptr_nonnull(strstr(
        json_string_value(json_object_get(json_array_get(j, 0), "CreatedAt")),
        "Z"));
    json_decref(j);

    /* freight: POST by name, GET with SKUs, an uncovered CEP is 404 */
    ck_assert_int_eq(
        curl(out, sizeof(out),
             "-X POST http://%s/v1/freight/quote --data '{\"cep\":"
             "\"01310-100\",\"items\":[{\"weight_g\":1500,\"qty\":1}]}'",
             srv.http),
        200);
    ck_assert_ptr_nonnull(strstr(out, "\"billed_weight_g\":1500"));
    ck_assert_int_eq(
        curl(out, sizeof(out),
             "'http://%s/v1/freight/quote?cep=01310100&sku=BOOK-00001:2"
             "&sku=BOOK-00002'",
             srv.http),
        200);
    ck_assert_ptr_nonnull(strstr(out, "\"weight_g\":2396"));
    ck_assert_int_eq(
        curl(out, sizeof(out),
             "-X POST http://%s/v1/freight/quote --data '{\"cep\":"
             "\"00500-000\",\"items\":[{\"weight_g\":1500,\"qty\":1}]}'",
             srv.http),
        404);
    ck_assert_ptr_nonnull(strstr(out, "\"code\":5"));
    ck_assert_int_eq(
        curl(out, sizeof(out),
             "-X POST http://%s/v1/freight/quote --data '{\"cep\":1}'",
             srv.http),
        400);
    ck_assert_int_eq(
        curl(out, sizeof(out), "http://%s/v1/freight/info", srv.http), 200);
    ck_assert_ptr_nonnull(strstr(out, "\"carriers\":"));

    /* JSON-RPC: one, a batch, notifications only, by name, errors */
    ck_assert_int_eq(
        curl(out, sizeof(out),
             "-X POST http://%s/rpc --data '{\"jsonrpc\":\"2.0\",\"method\":"
             "\"server.ping\",\"id\":\"a\"}'",
             srv.http),
        200);
    ck_assert_str_eq(out, "{\"jsonrpc\":\"2.0\",\"result\":\"pong\","
                          "\"id\":\"a\"}");
    ck_assert_int_eq(
        curl(out, sizeof(out),
             "-X POST http://%s/rpc --data '[{\"jsonrpc\":\"2.0\",\"method\":"
             "\"freight.quote\",\"params\":{\"cep\":\"00500000\",\"items\":"
             "[{\"weight_g\":1,\"qty\":1}]},\"id\":1},{\"jsonrpc\":\"2.0\","
             "\"method\":\"server.ping\"},{\"jsonrpc\":\"2.0\",\"method\":"
             "\"no.such\",\"id\":2},{\"foo\":1},{\"jsonrpc\":\"2.0\","
             "\"method\":\"server.stats\",\"id\":3},{\"jsonrpc\":\"2.0\","
             "\"method\":\"comments.post\",\"params\":{\"path\":\"/rpc\","
             "\"author\":\"r\",\"body\":\"over JSON-RPC\"},\"id\":4}]'",
             srv.http),
        200);
    ck_assert_ptr_nonnull(j = json_loads(out, 0, &je));
    ck_assert_uint_eq(json_array_size(j), 5); /* the notification: none */
    ck_assert_int_eq(
        json_integer_value(json_object_get(
            json_object_get(json_array_get(j, 0), "error"), "code")),
        -32005);
    ck_assert_int_eq(
        json_integer_value(json_object_get(
            json_object_get(json_array_get(j, 1), "error"), "code")),
        -32601);
    ck_assert_int_eq(
        json_integer_value(json_object_get(
            json_object_get(json_array_get(j, 2), "error"), "code")),
        -32600);
    ck_assert(json_is_null(json_object_get(json_array_get(j, 2), "id")));
    ck_assert_int_eq(
        json_integer_value(json_object_get(
            json_object_get(json_array_get(j, 3), "error"), "code")),
        -32007);
    ck_assert_str_eq(
        json_string_value(json_object_get(
            json_object_get(json_array_get(j, 4), "result"), "body")),
        "over JSON-RPC");
    json_decref(j);
    ck_assert_int_eq(
        curl(out, sizeof(out),
             "-i -X POST http://%s/rpc --data '[{\"jsonrpc\":\"2.0\","
             "\"method\":\"server.ping\"}]'",
             srv.http),
        204);
    ck_assert_int_eq(
        curl(out, sizeof(out), "-X POST http://%s/rpc --data '[1,'", srv.http),
        200);
    ck_assert_ptr_nonnull(strstr(out, "-32700"));
    ck_assert_int_eq(
        curl(out, sizeof(out), "-X POST http://%s/rpc --data '[]'", srv.http),
        200);
    ck_assert_ptr_nonnull(strstr(out, "-32600"));

    /* CORS: preflight, and the header on answers to an Origin */
    ck_assert_int_eq(
        curl(out, sizeof(out),
             "-i -X OPTIONS http://%s/v1/comments -H 'Origin: "
             "http://blog.example' -H 'Access-Control-Request-Method: POST' "
             "-H 'Access-Control-Request-Headers: content-type'",
             srv.http),
        204);
    ck_assert_ptr_nonnull(strstr(out, "Access-Control-Allow-Origin: *\r\n"));
    ck_assert_ptr_nonnull(
        strstr(out, "Access-Control-Allow-Headers: content-type\r\n"));
    ck_assert_ptr_null(strstr(out, "Content-Length"));
    ck_assert_int_eq(
        curl(out, sizeof(out),
             "-i http://%s/status -H 'Origin: http://blog.example'", srv.http),
        200);
    ck_assert_ptr_nonnull(strstr(out, "Access-Control-Allow-Origin: *\r\n"));
    ck_assert_int_eq(curl(out, sizeof(out), "-i http://%s/status", srv.http),
                     200);
    ck_assert_ptr_null(strstr(out, "Access-Control"));

    /* What there is not: 404, 405 with Allow, 501 */
    ck_assert_int_eq(curl(out, sizeof(out), "http://%s/nothing", srv.http),
                     404);
    ck_assert_ptr_nonnull(strstr(out, "\"message\":"));
    ck_assert_int_eq(
        curl(out, sizeof(out), "-i -X DELETE http://%s/v1/comments", srv.http),
        405);
    ck_assert_ptr_nonnull(strstr(out, "Allow: GET, HEAD, POST, OPTIONS"));
    ck_assert_int_eq(
        curl(out, sizeof(out), "-X BREW http://%s/status", srv.http), 501);
    /* The server stays up and counted it all. */
    ck_assert_double_gt(e2e_server_stat(&srv, "totals", "http_requests", NULL),
                        25);
    ck_assert_double_gt(e2e_server_stat(&srv, "totals", "http_errors", NULL),
                        8);
    stop_clean();
}
END_TEST

/* ---- the corpus routes need the corpus ---- */

START_TEST(test_corpus_routes)
{
    static char out[65536];
    char conf[512];
    const char *corpus = e2e_corpus();

    if (!e2e_want(corpus != NULL, "corpus",
                  "no corpus (configure --with-corpus, or ../shared/corpus)"))
        return;
    snprintf(conf, sizeof(conf), "corpus = %s\n", corpus);
    start(conf);
    ck_assert_int_eq(
        curl(out, sizeof(out), "'http://%s/v1/corpus/count?q=hello'", srv.http),
        200);
    ck_assert_str_eq(out, "{\"count\":349}");
    ck_assert_int_eq(
        curl(out, sizeof(out),
             "'http://%s/v1/corpus/count?q=to+be%%2C+or+not+to+be'", srv.http),
        200);
    ck_assert_str_eq(out, "{\"count\":1}");
    ck_assert_int_eq(
        curl(out, sizeof(out),
             "'http://%s/v1/corpus/search?q=insolence&limit=2&offset=1'",
             srv.http),
        200);
    ck_assert_ptr_nonnull(strstr(out, "{\"count\":14,\"lines\":[{"));
    ck_assert_int_eq(curl(out, sizeof(out),
                          "'http://%s/v1/corpus/search?q=x&limit=z'", srv.http),
                     400);
    ck_assert_int_eq(
        curl(out, sizeof(out), "'http://%s/v1/corpus/count'", srv.http), 400);
    ck_assert_int_eq(
        curl(out, sizeof(out), "http://%s/v1/corpus/info", srv.http), 200);
    ck_assert_ptr_nonnull(strstr(out, "\"files\":42"));
    stop_clean();
}
END_TEST

/* ---- keep-alive with Python's http.client; pipelining by hand ---- */

START_TEST(test_keepalive_python)
{
    static char out[8192];
    char script[512], script_text[4096];
    double accepted0, accepted1;

    start(NULL);
    accepted0 = e2e_server_stat(&srv, "totals", "conns_accepted", NULL);
    snprintf(script, sizeof(script), "%s/keepalive.py", srv.dir);
    snprintf(script_text, sizeof(script_text),
             "import http.client, json, sys\n"
             "host, port = sys.argv[1].rsplit(':', 1)\n"
             "c = http.client.HTTPConnection(host, int(port), timeout=10)\n"
             "for i in range(50):\n"
             "    body = json.dumps({'path': '/ka', 'author': 'p%%d' %% i,"
             " 'body': 'keep-alive %%d' %% i})\n"
             "    c.request('POST', '/v1/comments', body)\n"
             "    r = c.getresponse()\n"
             "    assert r.status == 200, r.status\n"
             "    assert json.loads(r.read())['author'] == 'p%%d' %% i\n"
             "c.request('GET', '/v1/comments?uri=/ka')\n"
             "r = c.getresponse()\n"
             "assert r.status == 200\n"
             "assert r.getheader('Connection') is None\n"
             "print(len(json.loads(r.read())))\n"
             "c.request('GET', '/status', headers={'Connection': 'close'})\n"
             "r = c.getresponse()\n"
             "assert r.getheader('Connection') == 'close'\n"
             "r.read()\n"
             "c.close()\n");
    ck_assert_int_eq(e2e_write_file(script, script_text), 0);
    ck_assert_int_eq(
        run(out, sizeof(out), "python3 %s %s 2>&1", script, srv.http), 0);
    ck_assert_str_eq(out, "50\n");
    accepted1 = e2e_server_stat(&srv, "totals", "conns_accepted", NULL);
    /* One connection for the 52 requests (and the stats' own: admin). */
    ck_assert_double_le(accepted1 - accepted0, 3);
    stop_clean();
}
END_TEST

START_TEST(test_pipelining)
{
    static char reqs[65536];
    struct folio_http_req r;
    struct hc h;
    char *msg, want[64];
    size_t n = 0;
    int i;

    start(NULL);
    /* 40 requests in one write, of three routes, and one HTTP/1.0. */
    for (i = 0; i < 40; i++) {
        if (i % 3 == 0) {
            char body[96];
            int bl = snprintf(body, sizeof(body),
                              "{\"jsonrpc\":\"2.0\",\"method\":\"server."
                              "ping\",\"id\":%d}",
                              i);

            n += (size_t)snprintf(reqs + n, sizeof(reqs) - n,
                                  "POST /rpc HTTP/1.1\r\nHost: h\r\n"
                                  "Content-Length: %d\r\n\r\n%s",
                                  bl, body);
        } else if (i % 3 == 1)
            n += (size_t)snprintf(reqs + n, sizeof(reqs) - n,
                                  "GET /v1/comments?uri=/p%d HTTP/1.1\r\n"
                                  "Host: h\r\n\r\n",
                                  i);
        else
            n += (size_t)snprintf(reqs + n, sizeof(reqs) - n,
                                  "HEAD /status HTTP/1.1\r\nHost: h\r\n\r\n");
    }
    n += (size_t)snprintf(reqs + n, sizeof(reqs) - n,
                          "GET /status HTTP/1.0\r\n\r\n");
    hc_open(&h, srv.http);
    hc_send(&h, reqs, n);
    for (i = 0; i < 40; i++) {
        ck_assert_int_eq(hc_read(&h,
                                 i % 3 == 2 ? FOLIO_HTTP_HEAD : FOLIO_HTTP_GET,
                                 &r, &msg),
                         0);
        if (i % 3 == 0) {
            ck_assert_int_eq(r.status, 200);
            snprintf(want, sizeof(want), "\"id\":%d}", i);
            ck_assert_msg(memmem(msg + r.body.off, r.body.len, want,
                                 strlen(want)) != NULL,
                          "answer %d out of order: %.*s", i, (int)r.body.len,
                          msg + r.body.off);
        } else if (i % 3 == 1) {
            ck_assert_int_eq(r.status, 404);
        } else {
            ck_assert_int_eq(r.status, 200);
            ck_assert_uint_eq(r.body.len, 0);
        }
        ck_assert(r.flags & FOLIO_HTTP_KEEPALIVE);
        hc_next(&h, &r);
    }
    /* HTTP/1.0 without keep-alive: answered, then closed. */
    ck_assert_int_eq(hc_read(&h, FOLIO_HTTP_GET, &r, &msg), 0);
    ck_assert_int_eq(r.status, 200);
    ck_assert(!(r.flags & FOLIO_HTTP_KEEPALIVE));
    hc_next(&h, &r);
    ck_assert(hc_closed(&h));
    hc_close(&h);
    stop_clean();
}
END_TEST

/* ---- the mouthful case study, as written ---- */

/* s HTML-escaped as the face serves a body (checked apart from it). */
static void
html_escaped(const char *s, size_t n, char *out, size_t cap)
{
    size_t i, o = 0;
    const char *e;

    for (i = 0; i < n && o + 8 < cap; i++) {
        switch (s[i]) {
        case '&':
            e = "&amp;";
            break;
        case '<':
            e = "&lt;";
            break;
        case '>':
            e = "&gt;";
            break;
        case '"':
            e = "&quot;";
            break;
        case '\'':
            e = "&#39;";
            break;
        default:
            out[o++] = s[i];
            continue;
        }
        memcpy(out + o, e, strlen(e));
        o += strlen(e);
    }
    out[o] = '\0';
}

START_TEST(test_case_study)
{
    static char out[262144], cmd[2048];
    struct folio_client *c;
    struct e2e_comment *v;
    json_t *j, *e;
    json_error_t je;
    char esc[256], when[64];
    size_t len;
    time_t t;
    struct tm tm;
    int i, n, ok;

    start(NULL);
    /* 100 posts, exactly the case study's command but the port. */
    snprintf(cmd, sizeof(cmd),
             "for i in $(seq 100); do curl -s --request POST --url "
             "http://%s/v1/comments --header 'content-type: "
             "application/json' --data '{\"path\": \"/test\",\"body\": "
             "\"this is just a test\",\"author\": \"vik\"}' -o /dev/null "
             "-w '%%{http_code}\\n' || exit 1; done | sort | uniq -c",
             srv.http);
    ck_assert_int_eq(run(out, sizeof(out), "%s", cmd), 0);
    ck_assert_msg(strstr(out, "100 200") != NULL, "%s", out);
    /* The body every GET gets, against comments.list's comments. */
    list_until("/test", 100, out, sizeof(out));
    len = strlen(out);
    ck_assert_ptr_nonnull(j = json_loads(out, 0, &je));
    ck_assert_ptr_nonnull(c = e2e_connect(&srv));
    n = e2e_comment_list(c, "/test", &v);
    ck_assert_int_eq(n, 100);
    ck_assert_uint_eq(json_array_size(j), 100);
    for (i = 0; i < n; i++) {
        e = json_array_get(j, (size_t)i);
        ck_assert_int_eq(json_integer_value(json_object_get(e, "Id")),
                         (json_int_t)v[i].id);
        html_escaped(v[i].body, v[i].body_len, esc, sizeof(esc));
        ck_assert_str_eq(json_string_value(json_object_get(e, "Body")), esc);
        ck_assert(json_string_length(json_object_get(e, "Author")) ==
                      v[i].author_len &&
                  memcmp(json_string_value(json_object_get(e, "Author")),
                         v[i].author, v[i].author_len) == 0);
        t = (time_t)(v[i].created_at / 1000);
        gmtime_r(&t, &tm);
        strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%S", &tm);
        ck_assert_msg(
            strncmp(json_string_value(json_object_get(e, "CreatedAt")), when,
                    strlen(when)) == 0,
            "CreatedAt %s, want %s...",
            json_string_value(json_object_get(e, "CreatedAt")), when);
    }
    free(v);
    json_decref(j);
    folio_client_close(c);
    /* hey, as the case study ran it, shorter: 0 errors, every answer the
     * same length as the body above. */
    ck_assert_int_eq(run(out, sizeof(out),
                         "hey -n 4000 -c 20 'http://%s/v1/comments?uri=/test' "
                         "2>&1",
                         srv.http),
                     0);
    ck_assert_msg(strstr(out, "[200]\t4000 responses") != NULL, "hey: %s", out);
    ck_assert_msg(strstr(out, "Error distribution") == NULL, "hey: %s", out);
    snprintf(cmd, sizeof(cmd), "Size/request:\t%zu bytes", len);
    ok = strstr(out, cmd) != NULL;
    ck_assert_msg(ok, "hey's answers are not %zu bytes: %s", len, out);
    stop_clean();
}
END_TEST

/* ---- 0 allocations per read request over HTTP ---- */

START_TEST(test_zero_allocations)
{
    static char reqs[1 << 16];
    static const char get[] = "GET /v1/comments?uri=/zero HTTP/1.1\r\n"
                              "Host: h\r\nUser-Agent: hey/0.0.1\r\n\r\n";
    static const char status[] = "GET /status HTTP/1.1\r\nHost: h\r\n\r\n";
    static const char ping[] = "POST /rpc HTTP/1.1\r\nHost: h\r\n"
                               "Content-Length: 47\r\n\r\n"
                               "{\"jsonrpc\":\"2.0\",\"method\":"
                               "\"server.ping\",\"id\":1}";
    struct folio_client *c, *a;
    struct folio_http_req r;
    struct folio_reply rep;
    struct hc h[4];
    double before = -1, after;
    size_t n;
    char *msg;
    int i, j, k, round, bad = 0;

    start(NULL);
    ck_assert_ptr_nonnull(c = e2e_connect(&srv));
    ck_assert_ptr_nonnull(a = e2e_connect_admin(&srv));
    for (i = 0; i < 50; i++)
        ck_assert_int_eq(e2e_comment_post(c, "/zero", "someone",
                                          "an ordinary comment", 19, &rep),
                         0);
    for (k = 0; k < 4; k++)
        hc_open(&h[k], srv.http);
    /* 20 requests a round on each connection: lists, status, ping. */
    for (n = 0, i = 0; i < 20; i++) {
        const char *q = i % 4 == 0 ? status : i % 4 == 1 ? ping : get;
        size_t ql = i % 4 == 0   ? sizeof(status) - 1
                    : i % 4 == 1 ? sizeof(ping) - 1
                                 : sizeof(get) - 1;

        memcpy(reqs + n, q, ql);
        n += ql;
    }
    for (round = 0; round < 300; round++) {
        for (k = 0; k < 4; k++) {
            hc_send(&h[k], reqs, n);
            for (i = 0; i < 20; i++) {
                if (hc_read(&h[k], FOLIO_HTTP_GET, &r, &msg) != 0 ||
                    r.status != 200)
                    bad++;
                else
                    hc_next(&h[k], &r);
            }
        }
        /*
         * Warm: a whole round that allocated nothing, then count.  The
         * admin connection asks every round, counted too: one quiet for
         * 10 s gives its grown reply buffer back (worker/conn.c,
         * SHRINK_IDLE_MS), and under ASan these rounds can last longer.
         */
        ck_assert_int_eq(e2e_stats(a, &rep), 0);
        after = e2e_stat_num(&rep, "totals", "alloc_calls", NULL);
        if (round < 60) {
            if (round > 0 && after == before)
                round = 60;
            before = after;
        }
    }
    ck_assert_int_eq(e2e_stats(a, &rep), 0);
    after = e2e_stat_num(&rep, "totals", "alloc_calls", NULL);
    ck_assert_int_eq(bad, 0);
    ck_assert_msg(before > 0, "no allocation counted at all");
    ck_assert_msg(after == before,
                  "%d HTTP requests made %.0f heap allocations",
                  (300 - 60) * 4 * 20, after - before);
    for (j = 0; j < 4; j++)
        hc_close(&h[j]);
    folio_client_close(c);
    folio_client_close(a);
    stop_clean();
}
END_TEST

/* ---- folio-bench --proto http: a GET and a POST, keep-alive ---- */

START_TEST(test_bench)
{
    static char out[16384];
    struct folio_client *c;
    struct folio_reply rep;
    int n;
    struct e2e_comment *v;

    start(FREIGHT);
    ck_assert_ptr_nonnull(c = e2e_connect(&srv));
    ck_assert_int_eq(e2e_comment_post(c, "/bench", "b", "read me", 7, &rep), 0);
    ck_assert_int_eq(run(out, sizeof(out),
                         FOLIO_BUILDDIR
                         "/folio-bench --proto http -H %s "
                         "--path '/v1/comments?uri=/bench' -c 4 -d 1 "
                         "--admin %s 2>&1",
                         srv.http, srv.admin),
                     0);
    ck_assert_msg(strstr(out, " 0 errors\n") != NULL &&
                      strstr(out, "server (server.stats)") != NULL,
                  "%s", out);
    ck_assert_int_eq(run(out, sizeof(out),
                         FOLIO_BUILDDIR
                         "/folio-bench --proto http -H %s "
                         "--path /v1/comments -c 2 -n 200 --body "
                         "'{\"path\":\"/bench\",\"author\":\"fb\","
                         "\"body\":\"posted\"}' 2>&1",
                         srv.http),
                     0);
    ck_assert_msg(strstr(out, "sent 200: 200 ok, 0 errors") != NULL, "%s", out);
    n = e2e_comment_list(c, "/bench", &v);
    ck_assert_int_ge(n, 201);
    free(v);
    /* An error status counts as an error. */
    ck_assert_int_ne(run(out, sizeof(out),
                         FOLIO_BUILDDIR "/folio-bench --proto http -H %s "
                                        "--path /nothing -c 1 -n 5 2>&1",
                         srv.http),
                     0);
    ck_assert_ptr_nonnull(strstr(out, "5 errors"));
    /* The workloads over the face: the same carts, pages and posts. */
    ck_assert_int_eq(run(out, sizeof(out),
                         FOLIO_BUILDDIR
                         "/folio-bench --proto http -H %s -w freight "
                         "--catalog " FOLIO_SRCDIR "/data/catalog.csv "
                         "--uncovered 20 -c 2 -n 400 2>&1",
                         srv.http),
                     0);
    ck_assert_msg(strstr(out, "(over HTTP)") != NULL &&
                      strstr(out, "5 NOT_FOUND") != NULL &&
                      strstr(out, "0 unexpected errors") != NULL,
                  "%s", out);
    ck_assert_int_eq(run(out, sizeof(out),
                         FOLIO_BUILDDIR
                         "/folio-bench --proto http -H %s -w comments "
                         "--pages 5 --write-ratio 0.5 -c 2 -n 200 2>&1",
                         srv.http),
                     0);
    ck_assert_msg(strstr(out, "comments.post") != NULL, "%s", out);
    n = e2e_comment_list(c, "/bench/page-1/", &v);
    ck_assert_int_gt(n, 0);
    free(v);
    folio_client_close(c);
    stop_clean();
}
END_TEST

/* ---- a browser: mouthful's widget's requests, from another origin ---- */

/*
 * The widget's page (client/src/components/client/index.js): a POST of a
 * comment as it sends one (JSON as text/plain: no preflight), one as
 * application/json (a preflight), then the list, each Body inserted with
 * innerHTML as the widget's dangerouslySetInnerHTML does.
 */
static const char widget_page[] =
    "<!doctype html><html><head><meta charset=\"utf-8\"></head><body>\n"
    "<div id=\"mouthful-comments\"></div><pre id=\"log\"></pre>\n"
    "<script>\n"
    "var host = '%s';\n"
    "function log(s) { document.getElementById('log').textContent += s + "
    "'\\n'; }\n"
    "function xhr(method, url, type, body, then) {\n"
    "  var x = new XMLHttpRequest();\n"
    "  x.open(method, host + url, true);\n"
    "  if (type) x.setRequestHeader('Content-Type', type);\n"
    "  x.onreadystatechange = function () { if (x.readyState == 4) then(x); "
    "};\n"
    "  x.send(body);\n"
    "}\n"
    "var bad = '<script>window.pwned = 1</' + 'script><img src=x "
    "onerror=\"window.pwned = 2\">hello <b>bold</b> & \\'quoted\\'';\n"
    "xhr('POST', '/v1/comments', null, JSON.stringify({Body: bad, Author: "
    "'widget', Path: '/page', ReplyTo: null}), function (p) {\n"
    "  log('post ' + p.status);\n"
    "  xhr('POST', '/v1/comments', 'application/json', JSON.stringify("
    "{body: 'second', author: 'json', path: '/page'}), function (q) {\n"
    "    log('json ' + q.status);\n"
    "    xhr('GET', '/v1/comments?uri=' + encodeURIComponent('/page'), null,"
    " null, function (g) {\n"
    "      log('get ' + g.status);\n"
    "      var d = document.getElementById('mouthful-comments');\n"
    "      if (g.status == 200) JSON.parse(g.responseText).forEach(function (c)"
    " {\n"
    "        var e = document.createElement('div');\n"
    "        e.className = 'comment';\n"
    "        e.innerHTML = c.Body;\n"
    "        d.appendChild(e);\n"
    "      });\n"
    "      setTimeout(function () {\n"
    "        log('markup ' + d.querySelectorAll('script, img, b').length);\n"
    "        log('pwned ' + (window.pwned || 0));\n"
    "        document.body.setAttribute('data-state', 'done');\n"
    "      }, 200);\n"
    "    });\n"
    "  });\n"
    "});\n"
    "</script></body></html>\n";

/* Render the page at url in headless Chromium; its DOM in *dom. */
static void
chromium_dom(const char *url, char **dom)
{
    char cmd[2048], out[300], err[300], udd[300];
    int status;

    snprintf(out, sizeof(out), "%s/dom.html", srv.dir);
    snprintf(err, sizeof(err), "%s/chromium.log", srv.dir);
    snprintf(udd, sizeof(udd), "%s/chromium-profile", srv.dir);
    snprintf(cmd, sizeof(cmd),
             "timeout 90 chromium --headless --no-sandbox --disable-gpu "
             "--disable-background-networking --disable-component-update "
             "--disable-sync --no-first-run --enable-logging=stderr "
             "--virtual-time-budget=20000 --user-data-dir='%s' "
             "--dump-dom '%s' >'%s' 2>'%s'",
             udd, url, out, err);
    status = system(cmd);
    ck_assert_msg(status == 0, "chromium failed (%d), see %s", status, err);
    ck_assert_ptr_nonnull(*dom = e2e_read_file(out));
}

START_TEST(test_browser)
{
    char page[8192], dir[300], path[400], url[256], port[16], host[160];
    const char *py[] = {"python3",     "-m",        "http.server",
                        "--bind",      "127.0.0.1", port,
                        "--directory", dir,         NULL};
    char *dom;
    pid_t web;
    int p;

    start(NULL);
    /* The page, on a server of another origin (another port). */
    snprintf(dir, sizeof(dir), "%s/folio-site.XXXXXX",
             getenv("TMPDIR") != NULL ? getenv("TMPDIR") : "/tmp");
    ck_assert_ptr_nonnull(mkdtemp(dir));
    snprintf(host, sizeof(host), "http://%s", srv.http);
    snprintf(page, sizeof(page), widget_page, host);
    snprintf(path, sizeof(path), "%s/index.html", dir);
    ck_assert_int_eq(e2e_write_file(path, page), 0);
    ck_assert_int_gt(p = e2e_free_port(), 0);
    snprintf(port, sizeof(port), "%d", p);
    snprintf(path, sizeof(path), "%s/web.log", dir);
    ck_assert_int_gt(web = e2e_spawn(py, path), 0);
    snprintf(url, sizeof(url), "127.0.0.1:%d", p);
    {
        /* Up when it answers (python prints nothing before). */
        uint64_t end = e2e_now_ms() + 15000;
        char body[64];

        while (e2e_http_status(url, "/index.html", body, sizeof(body)) != 200)
            ck_assert_msg(e2e_now_ms() < end, "the page server did not start");
    }
    snprintf(url, sizeof(url), "http://127.0.0.1:%d/index.html", p);
    chromium_dom(url, &dom);
    ck_assert_msg(strstr(dom, "data-state=\"done\"") != NULL,
                  "the page did not finish: %.2000s", dom);
    ck_assert_msg(strstr(dom, "post 200\njson 200\nget 200\nmarkup 0\n"
                              "pwned 0\n") != NULL,
                  "%.2000s", strstr(dom, "<pre"));
    /* Shown as text: the markup escaped, in the page as typed. */
    ck_assert_msg(strstr(dom, "<div class=\"comment\">&lt;script&gt;window."
                              "pwned = 1&lt;/script&gt;&lt;img src=x onerror="
                              "\"window.pwned = 2\"&gt;hello &lt;b&gt;bold"
                              "&lt;/b&gt; &amp; 'quoted'</div>") != NULL,
                  "%.3000s", strstr(dom, "mouthful-comments"));
    free(dom);
    stop_clean();

    /* Origins allowed: not the page's.  The browser keeps the answers from
     * it (the posts are sent: a CORS "simple" request is; not read). */
    start("http_cors_origins = https://blog.example\n");
    snprintf(host, sizeof(host), "http://%s", srv.http);
    snprintf(page, sizeof(page), widget_page, host);
    snprintf(path, sizeof(path), "%s/index.html", dir);
    ck_assert_int_eq(e2e_write_file(path, page), 0);
    chromium_dom(url, &dom);
    ck_assert_msg(strstr(dom, "post 0\njson 0\nget 0\n") != NULL, "%.2000s",
                  strstr(dom, "<pre"));
    free(dom);
    kill(web, SIGTERM);
    waitpid(web, NULL, 0);
    e2e_rm_rf(dir);
    stop_clean();
}
END_TEST

/* ---- JMeter: the freight case study's plan, short ---- */

START_TEST(test_jmeter)
{
    static char out[8192];
    char conf[512], path[600], csv[64];
    double share;
    long samples, other, not_found, uncovered = 0, partial = 0, n;
    const char *line;
    FILE *f;

    start(FREIGHT);
    /* 20 virtual users, ramped up in a second, for 5 s (the benchmark: 240
     * and 480 for 120 s); the budget is measured there, not here. */
    snprintf(conf, sizeof(conf), "%s/jmeter", srv.dir);
    ck_assert_int_eq(run(out, sizeof(out),
                         "JMETER_OUT=%s CATALOG=%s/data/catalog.csv sh "
                         "%s/bench/freight-jmeter.sh %s 20 1 5 2>&1",
                         conf, FOLIO_SRCDIR, FOLIO_SRCDIR, srv.http),
                     0);
    ck_assert_ptr_nonnull(line = strstr(out, "samples="));
    ck_assert_int_eq(sscanf(line, "samples=%ld", &samples), 1);
    ck_assert_ptr_nonnull(strstr(line, "other=0 "));
    ck_assert_int_eq(sscanf(strstr(line, "other="), "other=%ld", &other), 1);
    ck_assert_int_eq(
        sscanf(strstr(line, "share_404="), "share_404=%lf", &share), 1);
    /* At least a request per virtual user (how many more: the machine's
     * speed, not asserted). */
    ck_assert_msg(samples >= 20, "%s", out);
    ck_assert_int_eq(other, 0);
    /* Every uncovered CEP of the plan's CSV (the case study's 7.53%) was
     * answered 404 and no other: as many 404s as uncovered CEPs among the
     * lines sent, give or take the 20 users' requests cut at the end. */
    ck_assert_int_eq(
        sscanf(strstr(line, "not_found="), "not_found=%ld", &not_found), 1);
    snprintf(path, sizeof(path), "%s/freight-jmeter.csv", conf);
    ck_assert_ptr_nonnull(f = fopen(path, "r"));
    /* JMeter starts the CSV again at its end (recycle): the lines sent are
     * its whole turns, then the first samples % lines of it. */
    for (n = 0; fgets(csv, sizeof(csv), f) != NULL; n++) {
        if (strncmp(csv, "00", 2) != 0)
            continue;
        partial += n < samples % 10000;
        uncovered++;
    }
    fclose(f);
    ck_assert_int_eq(n, 10000);
    uncovered = uncovered * (samples / 10000) + partial;
    ck_assert_msg(labs(not_found - uncovered) <= 20,
                  "%ld answered 404, %ld CEPs uncovered in the %ld lines sent: "
                  "%s",
                  not_found, uncovered, samples, out);
    ck_assert_msg(samples < 1000 || (share > 6.5 && share < 8.5), "%s", out);
    stop_clean();
}
END_TEST

/* ---- hostile requests: a status or a close, never a crash ---- */

static const struct {
    const char *req;
    int status; /* 0: closed with no answer */
} hostile[] = {
    {"POST /rpc HTTP/1.1\r\nHost: h\r\nContent-Length: 5\r\n"
     "Transfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
     400},
    {"POST /rpc HTTP/1.1\r\nHost: h\r\nContent-Length: 5\r\n"
     "Content-Length: 6\r\n\r\nhello!",
     400},
    {"POST /rpc HTTP/1.1\r\nHost: h\r\nContent-Length: 5x\r\n\r\nhello", 400},
    {"POST /rpc HTTP/1.1\r\nHost: h\r\nContent-Length: 999999999\r\n\r\n", 413},
    {"POST /rpc HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: gzip\r\n\r\n", 501},
    {"POST /rpc HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n"
     "zz\r\n",
     400},
    {"GET / HTTP/2.0\r\nHost: h\r\n\r\n", 505},
    {"GET / HTTP/1.1\r\n\r\n", 400},
    {"GET / HTTP/1.1\r\nHost: h\r\nBad Header: x\r\n\r\n", 400},
    {"GET / HTTP/1.1\r\nHost: h\r\nX: a\r\n b\r\n\r\n", 400},
    {"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03 not TLS\r\n\r\n", 400},
    {"GET / HTTP/1.1\r\nHost: h\r\nExpect: 200-nothing\r\n\r\n", 417},
};

START_TEST(test_hostile)
{
    static char big[40000], out[4096];
    struct folio_http_req r;
    struct folio_client *c;
    struct hc h;
    char *msg;
    size_t i, n;

    start("request_timeout = 1s\n");
    for (i = 0; i < sizeof(hostile) / sizeof(hostile[0]); i++) {
        hc_open(&h, srv.http);
        /* and a good request after it, never answered */
        hc_send(&h, hostile[i].req, strlen(hostile[i].req));
        hc_send(&h, S("GET /status HTTP/1.1\r\nHost: h\r\n\r\n"));
        ck_assert_msg(hc_read(&h, FOLIO_HTTP_GET, &r, &msg) == 0,
                      "case %zu: no answer", i);
        ck_assert_msg(r.status == hostile[i].status, "case %zu: %d, want %d", i,
                      r.status, hostile[i].status);
        ck_assert_ptr_nonnull(
            memmem(msg + r.body.off, r.body.len, "\"message\":", 10));
        ck_assert(!(r.flags & FOLIO_HTTP_KEEPALIVE));
        hc_next(&h, &r);
        ck_assert_msg(hc_closed(&h), "case %zu: not closed", i);
        ck_assert_uint_eq(folio_buf_pending(&h.in), 0);
        hc_close(&h);
    }
    /* Limits: a long URI, a large head, many headers. */
    n = (size_t)snprintf(big, sizeof(big), "GET /");
    memset(big + n, 'a', 9000);
    n += 9000;
    n += (size_t)snprintf(big + n, sizeof(big) - n,
                          " HTTP/1.1\r\nHost: h\r\n\r\n");
    ck_assert_int_eq(request(big, n, out, sizeof(out)), 414);
    n = (size_t)snprintf(big, sizeof(big),
                         "GET / HTTP/1.1\r\nHost: h\r\n"
                         "X-Big: ");
    memset(big + n, 'b', 20000);
    n += 20000;
    n += (size_t)snprintf(big + n, sizeof(big) - n, "\r\n\r\n");
    ck_assert_int_eq(request(big, n, out, sizeof(out)), 431);
    n = (size_t)snprintf(big, sizeof(big), "GET / HTTP/1.1\r\nHost: h\r\n");
    for (i = 0; i < 120; i++)
        n += (size_t)snprintf(big + n, sizeof(big) - n, "X-%zu: v\r\n", i);
    n += (size_t)snprintf(big + n, sizeof(big) - n, "\r\n");
    ck_assert_int_eq(request(big, n, out, sizeof(out)), 431);
    /* A slow client: one byte, then nothing: 408 within request_timeout. */
    hc_open(&h, srv.http);
    hc_send(&h, S("GET /status HT"));
    ck_assert_int_eq(hc_read(&h, FOLIO_HTTP_GET, &r, &msg), 0);
    ck_assert_int_eq(r.status, 408);
    hc_next(&h, &r);
    ck_assert(hc_closed(&h));
    hc_close(&h);
    /* Every worker still serves, and counted the bad input. */
    ck_assert_ptr_nonnull(c = e2e_connect(&srv));
    ck_assert_int_eq(e2e_ping(c), 0);
    folio_client_close(c);
    ck_assert_double_ge(
        e2e_server_stat(&srv, "totals", "protocol_errors", NULL), 14);
    ck_assert_double_ge(e2e_server_stat(&srv, "totals", "timeouts", NULL), 1);
    stop_clean();
}
END_TEST

/* ---- listeners: off, several; kept through a reload ---- */

START_TEST(test_listeners)
{
    char out[4096], *ready;
    struct folio_http_req r;
    struct hc h;
    char *msg;

    ck_assert_int_eq(e2e_start(&srv, "http_listen = off\n", NULL), 0);
    ck_assert_str_eq(srv.http, "");
    ck_assert_ptr_nonnull(ready = e2e_read_file(srv.ready));
    ck_assert_ptr_null(strstr(ready, "\nhttp "));
    free(ready);
    stop_clean();

    /* With the suite's 127.0.0.1:0, a second address. */
    start("http_listen = 127.0.0.2:0\n");
    ck_assert_ptr_nonnull(ready = e2e_read_file(srv.ready));
    ck_assert_ptr_nonnull(msg = strstr(ready, "\nhttp 127.0.0.2:"));
    snprintf(out, sizeof(out), "%.*s", (int)strcspn(msg + 6, "\n"), msg + 6);
    free(ready);
    hc_open(&h, out);
    hc_send(&h, S("GET /status HTTP/1.1\r\nHost: h\r\n\r\n"));
    ck_assert_int_eq(hc_read(&h, FOLIO_HTTP_GET, &r, &msg), 0);
    ck_assert_int_eq(r.status, 200);
    hc_close(&h);
    ck_assert_int_eq(
        request(S("GET /status HTTP/1.1\r\nHost: h\r\n\r\n"), out, sizeof(out)),
        200);
    /* A keep-alive connection through a reload: still answered. */
    hc_open(&h, srv.http);
    hc_send(&h, S("GET /status HTTP/1.1\r\nHost: h\r\n\r\n"));
    ck_assert_int_eq(hc_read(&h, FOLIO_HTTP_GET, &r, &msg), 0);
    hc_next(&h, &r);
    ck_assert_int_eq(kill(srv.pid, SIGHUP), 0);
    ck_assert_int_eq(e2e_wait_ready(&srv, 2, E2E_READY_MS), 0);
    hc_send(&h, S("GET /status HTTP/1.1\r\nHost: h\r\n\r\n"));
    ck_assert_int_eq(hc_read(&h, FOLIO_HTTP_GET, &r, &msg), 0);
    ck_assert_int_eq(r.status, 200);
    hc_close(&h);
    ck_assert_int_eq(
        request(S("GET /status HTTP/1.1\r\nHost: h\r\n\r\n"), out, sizeof(out)),
        200);
    stop_clean();
}
END_TEST

/* ---- limits: max_connections, and a client one byte at a time ---- */

START_TEST(test_limits)
{
    static const char req[] = "GET /status HTTP/1.1\r\nHost: h\r\n\r\n";
    struct pollfd pfd;
    struct folio_http_req r;
    struct hc h[3];
    char *msg;
    size_t i;
    int k;

    /* One worker, two connections: the third is answered 503, closed. */
    start("workers = 1\nmax_connections = 2\nrequest_timeout = 1s\n");
    for (k = 0; k < 3; k++) {
        hc_open(&h[k], srv.http);
        hc_send(&h[k], S(req));
        ck_assert_int_eq(hc_read(&h[k], FOLIO_HTTP_GET, &r, &msg), 0);
        ck_assert_int_eq(r.status, k < 2 ? 200 : 503);
        if (k == 2) {
            ck_assert_ptr_nonnull(memmem(msg + r.body.off, r.body.len,
                                         "too many connections", 20));
            ck_assert(!(r.flags & FOLIO_HTTP_KEEPALIVE));
        }
        hc_next(&h[k], &r);
    }
    ck_assert(hc_closed(&h[2]));
    hc_close(&h[2]);
    /* The two kept: still answered. */
    for (k = 0; k < 2; k++) {
        hc_send(&h[k], S(req));
        ck_assert_int_eq(hc_read(&h[k], FOLIO_HTTP_GET, &r, &msg), 0);
        ck_assert_int_eq(r.status, 200);
        hc_next(&h[k], &r);
    }
    hc_close(&h[1]);
    /*
     * A client that sends its request a byte every 200 ms: 408 once
     * request_timeout (1 s) is over, long before the request is whole.
     */
    hc_open(&h[1], srv.http);
    pfd.fd = h[1].fd;
    pfd.events = POLLIN;
    for (i = 0; i < sizeof(req) - 1; i++) {
        hc_send(&h[1], req + i, 1);
        if (poll(&pfd, 1, 200) > 0)
            break;
    }
    ck_assert_msg(i < sizeof(req) - 1, "the whole request was sent");
    ck_assert_int_eq(hc_read(&h[1], FOLIO_HTTP_GET, &r, &msg), 0);
    ck_assert_int_eq(r.status, 408);
    hc_next(&h[1], &r);
    ck_assert(hc_closed(&h[1]));
    hc_close(&h[1]);
    hc_close(&h[0]);
    ck_assert_double_ge(e2e_server_stat(&srv, "totals", "timeouts", NULL), 1);
    stop_clean();
}
END_TEST

int
main(void)
{
    /* Each test, and whether it runs on PostgreSQL too (what the comments
     * backend changes: lists, posts, the cache). */
    const struct {
        const TTest *t;
        int pg;
    } tests[] = {
        {test_routes, 1},
        {test_corpus_routes, 0},
        {test_keepalive_python, 1},
        {test_pipelining, 0},
        {test_case_study, 1},
        {test_zero_allocations, 1},
        {test_bench, 0},
        {test_browser, 0},
        {test_jmeter, 0},
        {test_hostile, 0},
        {test_listeners, 0},
        {test_limits, 0},
    };
    Suite *s = suite_create("e2e_http");
    TCase *tc = tcase_create("http");
    size_t i;
    int pg = 0;

    signal(SIGPIPE, SIG_IGN);
    tcase_set_timeout(tc, 240);
    /* The clients the tests start: curl, hey, Python's http.client, and
     * for the suite on LMDB only, headless Chromium and JMeter. */
    e2e_require("curl", "curl");
    e2e_require("hey", "hey");
    e2e_require("python3", "python3");
#ifndef E2E_POSTGRES
    e2e_require("chromium", "chromium");
    e2e_require("jmeter", "jmeter");
    e2e_require("java", "openjdk-17-jdk-headless");
#endif
#ifdef E2E_POSTGRES
    pg_require();
    if (pg_start(&pgc, NULL) != 0)
        return EXIT_FAILURE;
    pg = 1;
#endif
    for (i = 0; i < sizeof(tests) / sizeof(tests[0]); i++)
        if (!pg || tests[i].pg)
            tcase_add_test(tc, tests[i].t);
    suite_add_tcase(s, tc);
    return folio_check_run(s);
}
