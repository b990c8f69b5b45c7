/*
 * check_http_parse.c - the HTTP/1.1 parser (src/http_parse.c): requests
 * whole and in every split, pipelined, with Content-Length and chunked
 * bodies; every refusal (smuggling, limits, malformed lines) with its
 * status; responses as folio-bench reads them; percent-decoding and
 * query parameters.
 */
#include "config.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "src/http_parse.h"
#include "tests/check_run.h"

static const struct folio_http_limits lim = {
    FOLIO_HTTP_MAX_URI, FOLIO_HTTP_MAX_HEAD, FOLIO_HTTP_MAX_HEADERS, 1u << 20};

/* A writable copy of the text (the parser may dechunk in place). */
static char *
dup_text(const char *s, size_t n)
{
    char *p = malloc(n + 1);

    ck_assert_ptr_nonnull(p);
    memcpy(p, s, n);
    p[n] = '\0';
    return p;
}

/* Parse the whole of s at once; returns the result, the copy in *buf. */
static int
parse_once(const char *s, size_t n, const struct folio_http_limits *l,
           struct folio_http_req *r, char **buf)
{
    *buf = dup_text(s, n);
    folio_http_req_init(r, l);
    return folio_http_req_parse(r, *buf, n);
}

/*
 * Parse s fed a few bytes more at a time (1, 2, 3, 5 and 7) from a copy:
 * MORE (or ERROR, for a bad request) until the end; the final result and
 * fields must be those of the parse at once.  *r and *buf are the parse
 * one byte at a time.
 */
static int
parse_split(const char *s, size_t n, const struct folio_http_limits *l,
            struct folio_http_req *r, char **buf)
{
    static const size_t steps[] = {7, 5, 3, 2, 1};
    struct folio_http_req once;
    char *whole;
    size_t k, i;
    int rc = FOLIO_HTTP_MORE, rc1;

    rc1 = parse_once(s, n, l, &once, &whole);
    for (i = 0; i < sizeof(steps) / sizeof(steps[0]); i++) {
        if (i > 0)
            free(*buf);
        *buf = dup_text(s, n);
        folio_http_req_init(r, l);
        for (k = 0;; k += steps[i]) {
            if (k > n)
                k = n;
            rc = folio_http_req_parse(r, *buf, k);
            if (rc != FOLIO_HTTP_MORE || k == n)
                break;
        }
        ck_assert_msg(rc == rc1, "in pieces of %zu: %d, at once %d", steps[i],
                      rc, rc1);
        if (rc == FOLIO_HTTP_DONE) {
            ck_assert_uint_eq(r->total, once.total);
            ck_assert_uint_eq(r->body.len, once.body.len);
            ck_assert_uint_eq(r->flags, once.flags);
            ck_assert(memcmp(*buf + r->body.off, whole + once.body.off,
                             r->body.len) == 0);
        } else if (rc == FOLIO_HTTP_ERROR) {
            ck_assert_int_eq(r->status, once.status);
        }
    }
    free(whole);
    return rc;
}

#define S(lit) lit, sizeof(lit) - 1

static void
assert_span(const char *p, struct folio_http_span s, const char *want)
{
    ck_assert_msg(s.len == strlen(want) && memcmp(p + s.off, want, s.len) == 0,
                  "span '%.*s', want '%s'", (int)s.len, p + s.off, want);
}

START_TEST(test_get)
{
    static const char req[] = "GET /v1/comments?uri=%2Ftest HTTP/1.1\r\n"
                              "Host: localhost:7780\r\n"
                              "User-Agent: hey/0.0.1\r\n"
                              "Origin: http://example.com\r\n\r\n";
    struct folio_http_req r;
    char *p;

    ck_assert_int_eq(parse_split(S(req), &lim, &r, &p), FOLIO_HTTP_DONE);
    ck_assert_int_eq(r.method, FOLIO_HTTP_GET);
    ck_assert_int_eq(r.minor, 1);
    ck_assert_uint_eq(r.total, sizeof(req) - 1);
    ck_assert(r.flags & FOLIO_HTTP_KEEPALIVE);
    ck_assert(r.flags & FOLIO_HTTP_HEAD_DONE);
    assert_span(p, r.method_s, "GET");
    assert_span(p, r.target, "/v1/comments?uri=%2Ftest");
    assert_span(p, r.path, "/v1/comments");
    assert_span(p, r.query, "uri=%2Ftest");
    assert_span(p, r.host, "localhost:7780");
    assert_span(p, r.origin, "http://example.com");
    ck_assert_uint_eq(r.nheaders, 3);
    ck_assert_uint_eq(r.body.len, 0);
    /* Once done, the same answer without looking again. */
    ck_assert_int_eq(folio_http_req_parse(&r, p, 0), FOLIO_HTTP_DONE);
    free(p);
}
END_TEST

START_TEST(test_headers_iterate)
{
    static const char req[] = "GET / HTTP/1.1\r\nHost: h\r\n"
                              "X-A:  one two \t\r\nx-b:\r\n\r\n";
    struct folio_http_span name, value;
    struct folio_http_req r;
    uint32_t pos;
    char *p;

    ck_assert_int_eq(parse_once(S(req), &lim, &r, &p), FOLIO_HTTP_DONE);
    pos = r.start;
    ck_assert(folio_http_header_next(p, &r, &pos, &name, &value));
    assert_span(p, name, "Host");
    assert_span(p, value, "h");
    ck_assert(folio_http_header_next(p, &r, &pos, &name, &value));
    assert_span(p, name, "X-A");
    assert_span(p, value, "one two");
    ck_assert(folio_http_header_next(p, &r, &pos, &name, &value));
    assert_span(p, name, "x-b");
    assert_span(p, value, "");
    ck_assert(!folio_http_header_next(p, &r, &pos, &name, &value));
    free(p);
}
END_TEST

START_TEST(test_keepalive)
{
    static const struct {
        const char *req;
        int keep;
    } cases[] = {
        {"GET / HTTP/1.1\r\nHost: h\r\n\r\n", 1},
        {"GET / HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n", 0},
        {"GET / HTTP/1.1\r\nHost: h\r\nConnection: Upgrade, CLOSE\r\n\r\n", 0},
        {"GET / HTTP/1.0\r\n\r\n", 0},
        {"GET / HTTP/1.0\r\nConnection: Keep-Alive\r\n\r\n", 1},
        {"GET / HTTP/1.0\r\nConnection: keep-alive, close\r\n\r\n", 0},
        /* 1.2 is read as 1.1 (same major version). */
        {"GET / HTTP/1.2\r\nHost: h\r\n\r\n", 1},
        /* Bare LF line ends (RFC 9112 section 2.2 allows them). */
        {"GET / HTTP/1.1\nHost: h\n\n", 1},
    };
    struct folio_http_req r;
    size_t i;
    char *p;

    for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        ck_assert_int_eq(
            parse_split(cases[i].req, strlen(cases[i].req), &lim, &r, &p),
            FOLIO_HTTP_DONE);
        ck_assert_msg(!!(r.flags & FOLIO_HTTP_KEEPALIVE) == cases[i].keep,
                      "case %zu", i);
        free(p);
    }
}
END_TEST

START_TEST(test_pipelined)
{
    static const char reqs[] =
        "\r\n" /* a stray CRLF after a previous body: skipped */
        "POST /v1/comments HTTP/1.1\r\nHost: h\r\nContent-Length: 11\r\n\r\n"
        "{\"a\":\"bcd\"}"
        "GET /status HTTP/1.1\r\nHost: h\r\n\r\n"
        "GET /x HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n";
    struct folio_http_req r;
    char *p = dup_text(S(reqs));
    size_t off = 0, n = sizeof(reqs) - 1;

    folio_http_req_init(&r, &lim);
    ck_assert_int_eq(folio_http_req_parse(&r, p, n), FOLIO_HTTP_DONE);
    ck_assert_int_eq(r.method, FOLIO_HTTP_POST);
    ck_assert_uint_eq(r.start, 2);
    assert_span(p, r.body, "{\"a\":\"bcd\"}");
    off += r.total;
    folio_http_req_init(&r, &lim);
    ck_assert_int_eq(folio_http_req_parse(&r, p + off, n - off),
                     FOLIO_HTTP_DONE);
    assert_span(p + off, r.path, "/status");
    off += r.total;
    folio_http_req_init(&r, &lim);
    ck_assert_int_eq(folio_http_req_parse(&r, p + off, n - off),
                     FOLIO_HTTP_DONE);
    assert_span(p + off, r.path, "/x");
    ck_assert(!(r.flags & FOLIO_HTTP_KEEPALIVE));
    ck_assert_uint_eq(off + r.total, n);
    free(p);
}
END_TEST

START_TEST(test_leading_empty_lines)
{
    static const char req[] =
        "\r\n\r\n\nGET /status HTTP/1.1\r\nHost: h\r\n\r\n";
    struct folio_http_req r;
    char *p;

    ck_assert_int_eq(parse_split(S(req), &lim, &r, &p), FOLIO_HTTP_DONE);
    ck_assert_uint_eq(r.start, 5);
    assert_span(p, r.path, "/status");
    free(p);
}
END_TEST

START_TEST(test_body)
{
    static const char req[] = "POST /rpc HTTP/1.1\r\nHost: h\r\n"
                              "Content-Type: text/plain\r\n"
                              "Idempotency-Key: k-1\r\n"
                              "Expect: 100-continue\r\n"
                              "Content-Length: 5\r\n\r\nhello";
    struct folio_http_req r;
    char *p;

    ck_assert_int_eq(parse_split(S(req), &lim, &r, &p), FOLIO_HTTP_DONE);
    assert_span(p, r.body, "hello");
    assert_span(p, r.content_type, "text/plain");
    assert_span(p, r.idempotency_key, "k-1");
    ck_assert(r.flags & FOLIO_HTTP_CONTINUE);
    ck_assert_uint_eq(r.content_length, 5);
    free(p);
    /* The head is known before the body: HEAD_DONE with MORE. */
    p = dup_text(S(req));
    folio_http_req_init(&r, &lim);
    ck_assert_int_eq(folio_http_req_parse(&r, p, sizeof(req) - 3),
                     FOLIO_HTTP_MORE);
    ck_assert(r.flags & FOLIO_HTTP_HEAD_DONE);
    ck_assert_uint_eq(r.content_length, 5);
    free(p);
}
END_TEST

START_TEST(test_chunked)
{
    static const char req[] =
        "POST /rpc HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n"
        "5\r\nhello\r\n"
        "6;name=value\r\n world\r\n"
        "00A \r\n, chunked!\r\n"
        "0\r\nX-Trailer: yes\r\n\r\n"
        "GET /next HTTP/1.1\r\nHost: h\r\n\r\n";
    static const char lf[] = "POST / HTTP/1.1\nHost: h\n"
                             "Transfer-Encoding: Chunked\n\n3\nabc\n0\n\n";
    struct folio_http_req r;
    size_t first =
        sizeof(req) - 1 - strlen("GET /next HTTP/1.1\r\nHost: h\r\n\r\n");
    char *p;

    ck_assert_int_eq(parse_split(S(req), &lim, &r, &p), FOLIO_HTTP_DONE);
    ck_assert(r.flags & FOLIO_HTTP_CHUNKED);
    assert_span(p, r.body, "hello world, chunked!");
    ck_assert_uint_eq(r.content_length, 21);
    ck_assert_uint_eq(r.total, first);
    /* The next request is untouched by the decoding in place. */
    ck_assert(memcmp(p + r.total, "GET /next", 9) == 0);
    free(p);
    ck_assert_int_eq(parse_split(S(lf), &lim, &r, &p), FOLIO_HTTP_DONE);
    assert_span(p, r.body, "abc");
    ck_assert_uint_eq(r.total, sizeof(lf) - 1);
    free(p);
}
END_TEST

/* Requests refused, with the status each must get. */
static const struct {
    const char *req;
    int status;
    const char *what;
} bad[] = {
    {"POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 3\r\n"
     "Transfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
     400, "CL and TE"},
    {"POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n"
     "Content-Length: 3\r\n\r\nabc",
     400, "TE and CL"},
    {"POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 3\r\n"
     "Content-Length: 3\r\n\r\nabc",
     400, "two CL"},
    {"POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 3, 3\r\n\r\nabc", 400,
     "CL list"},
    {"POST / HTTP/1.1\r\nHost: h\r\nContent-Length: -1\r\n\r\n", 400,
     "negative CL"},
    {"POST / HTTP/1.1\r\nHost: h\r\nContent-Length: +1\r\n\r\n", 400, "+CL"},
    {"POST / HTTP/1.1\r\nHost: h\r\nContent-Length: \r\n\r\n", 400, "empty CL"},
    {"POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 0x10\r\n\r\n", 400,
     "hex CL"},
    {"POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 99999999999999999999"
     "\r\n\r\n",
     400, "CL overflow"},
    {"POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 1048577\r\n\r\n", 413,
     "CL over the limit"},
    {"POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: gzip, chunked\r\n"
     "\r\n",
     501, "TE gzip"},
    {"POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n"
     "Transfer-Encoding: chunked\r\n\r\n",
     400, "two TE"},
    {"POST / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", 400,
     "TE in 1.0"},
    {"GET / HTTP/1.1\r\nHost: h\rX: y\r\n\r\n", 400, "bare CR in a header"},
    {"GET / HTTP/1.1\r\nHost: h\r\nX: a\x01 b\r\n\r\n", 400, "CTL in value"},
    {"GET / HTTP/1.1\r\nHost: h\r\nX: a\r\n folded\r\n\r\n", 400, "obs-fold"},
    {"GET / HTTP/1.1\r\nHost : h\r\n\r\n", 400, "space before colon"},
    {"GET / HTTP/1.1\r\nHost h\r\n\r\n", 400, "no colon"},
    {"GET / HTTP/1.1\r\n: h\r\n\r\n", 400, "empty name"},
    {"GET / HTTP/1.1\r\n\r\n", 400, "no Host"},
    {"GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n", 400, "two Hosts"},
    {"GET / HTTP/2.0\r\nHost: h\r\n\r\n", 505, "HTTP/2.0"},
    {"GET / HTTP/0.9\r\n\r\n", 505, "HTTP/0.9"},
    {"GET / HTTP/1.1x\r\nHost: h\r\n\r\n", 400, "version garbage"},
    {"GET / http/1.1\r\nHost: h\r\n\r\n", 400, "version case"},
    {"GET /\r\n\r\n", 400, "no version"},
    {"GET  / HTTP/1.1\r\nHost: h\r\n\r\n", 400, "two spaces"},
    {"GET / HTTP/1.1 \r\nHost: h\r\n\r\n", 400, "space after version"},
    {"G(T / HTTP/1.1\r\nHost: h\r\n\r\n", 400, "not a token"},
    {"GET /a\x7f HTTP/1.1\r\nHost: h\r\n\r\n", 400, "DEL in target"},
    {"GET a/b HTTP/1.1\r\nHost: h\r\n\r\n", 400, "relative target"},
    {"GET http:/// HTTP/1.1\r\nHost: h\r\n\r\n", 400, "no authority"},
    {"\rGET / HTTP/1.1\r\nHost: h\r\n\r\n", 400, "bare CR first"},
    {"GET / HTTP/1.1\r\nHost: h\r\nExpect: 200-ok\r\n\r\n", 417, "Expect"},
    {"POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n"
     "1234567890abcdef0\r\n",
     400, "chunk size too large"},
    {"POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n"
     "100001\r\n",
     413, "chunked over the limit"},
    {"POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n"
     "3\r\nabcd\r\n0\r\n\r\n",
     400, "chunk longer than its size"},
    {"POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n"
     "x\r\n",
     400, "no chunk size"},
    {"POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n"
     "3\rabc\r\n",
     400, "bare CR in a size line"},
    {"POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n"
     "3\r\nabc\r\n0\r\nX: \x01\r\n\r\n",
     400, "CTL in a trailer"},
};

START_TEST(test_refused)
{
    struct folio_http_req r;
    size_t i;
    char *p;
    int rc;

    for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        rc = parse_split(bad[i].req, strlen(bad[i].req), &lim, &r, &p);
        ck_assert_msg(rc == FOLIO_HTTP_ERROR && r.status == bad[i].status,
                      "%s: rc %d status %d, want %d", bad[i].what, rc, r.status,
                      bad[i].status);
        ck_assert_ptr_nonnull(r.why);
        /* Sticky: the same answer again. */
        ck_assert_int_eq(folio_http_req_parse(&r, p, strlen(bad[i].req)),
                         FOLIO_HTTP_ERROR);
        free(p);
    }
}
END_TEST

START_TEST(test_limits)
{
    struct folio_http_limits small = {64, 256, 4, 100};
    struct folio_http_req r;
    char req[1024], *p;
    int rc, i, n;

    /* A target over max_uri in a complete line: 414. */
    n = snprintf(req, sizeof(req), "GET /%070d HTTP/1.1\r\nHost: h\r\n\r\n", 1);
    ck_assert_int_eq(parse_once(req, (size_t)n, &small, &r, &p),
                     FOLIO_HTTP_ERROR);
    ck_assert_int_eq(r.status, 414);
    free(p);
    /* A request line that never ends: 414 as soon as it cannot fit. */
    n = snprintf(req, sizeof(req), "GET /%0200d", 1);
    ck_assert_int_eq(parse_once(req, (size_t)n, &small, &r, &p),
                     FOLIO_HTTP_ERROR);
    ck_assert_int_eq(r.status, 414);
    free(p);
    /* A head over max_head, ended or not: 431. */
    n = snprintf(req, sizeof(req),
                 "GET / HTTP/1.1\r\nHost: h\r\nX: %0300d\r\n\r\n", 1);
    ck_assert_int_eq(parse_once(req, (size_t)n, &small, &r, &p),
                     FOLIO_HTTP_ERROR);
    ck_assert_int_eq(r.status, 431);
    free(p);
    ck_assert_int_eq(parse_once(req, 250, &small, &r, &p), FOLIO_HTTP_MORE);
    free(p);
    ck_assert_int_eq(parse_once(req, 260, &small, &r, &p), FOLIO_HTTP_ERROR);
    ck_assert_int_eq(r.status, 431);
    free(p);
    /* More header lines than max_headers: 431. */
    n = snprintf(req, sizeof(req), "GET / HTTP/1.1\r\nHost: h\r\n");
    for (i = 0; i < 4; i++)
        n += snprintf(req + n, sizeof(req) - (size_t)n, "X%d: y\r\n", i);
    n += snprintf(req + n, sizeof(req) - (size_t)n, "\r\n");
    ck_assert_int_eq(parse_once(req, (size_t)n, &small, &r, &p),
                     FOLIO_HTTP_ERROR);
    ck_assert_int_eq(r.status, 431);
    free(p);
    /* Both limits crossed: the one crossed first decides, whole or in
     * pieces (here the head's, after empty lines; then the line's). */
    memset(req, '\n', 200);
    n = 200 + snprintf(req + 200, sizeof(req) - 200, "GET /%0200d", 1);
    ck_assert_int_eq(parse_split(req, (size_t)n, &small, &r, &p),
                     FOLIO_HTTP_ERROR);
    ck_assert_int_eq(r.status, 431);
    free(p);
    n = snprintf(req, sizeof(req), "GET /%0300d HTTP/1.1\r\n", 1);
    ck_assert_int_eq(parse_split(req, (size_t)n, &small, &r, &p),
                     FOLIO_HTTP_ERROR);
    ck_assert_int_eq(r.status, 414);
    free(p);
    /* Empty lines only, forever: refused within max_head. */
    memset(req, '\n', 300);
    rc = parse_once(req, 300, &small, &r, &p);
    ck_assert_int_eq(rc, FOLIO_HTTP_ERROR);
    ck_assert_int_eq(r.status, 400);
    free(p);
    /* A body of exactly max_body is fine. */
    n = snprintf(req, sizeof(req),
                 "POST / HTTP/1.1\r\nHost: h\r\n"
                 "Content-Length: 100\r\n\r\n%0100d",
                 7);
    ck_assert_int_eq(parse_once(req, (size_t)n, &small, &r, &p),
                     FOLIO_HTTP_DONE);
    free(p);
}
END_TEST

START_TEST(test_targets)
{
    struct folio_http_req r;
    char *p;

    ck_assert_int_eq(
        parse_once(S("GET http://Example.com:80/a/b?c=d#frag HTTP/1.1\r\n"
                     "Host: example.com\r\n\r\n"),
                   &lim, &r, &p),
        FOLIO_HTTP_DONE);
    ck_assert(r.flags & FOLIO_HTTP_ABSOLUTE);
    assert_span(p, r.path, "/a/b");
    assert_span(p, r.query, "c=d");
    free(p);
    ck_assert_int_eq(
        parse_once(S("GET https://h?q HTTP/1.1\r\nHost: h\r\n\r\n"), &lim, &r,
                   &p),
        FOLIO_HTTP_DONE);
    assert_span(p, r.path, "");
    assert_span(p, r.query, "q");
    free(p);
    ck_assert_int_eq(
        parse_once(S("OPTIONS * HTTP/1.1\r\nHost: h\r\n\r\n"), &lim, &r, &p),
        FOLIO_HTTP_DONE);
    ck_assert(r.flags & FOLIO_HTTP_ASTERISK);
    free(p);
    /* An unknown method is a token: parsed, the caller answers 501. */
    ck_assert_int_eq(
        parse_once(S("BREW /pot HTTP/1.1\r\nHost: h\r\n\r\n"), &lim, &r, &p),
        FOLIO_HTTP_DONE);
    ck_assert_int_eq(r.method, FOLIO_HTTP_OTHER);
    assert_span(p, r.method_s, "BREW");
    free(p);
    ck_assert_int_eq(
        parse_once(S("get / HTTP/1.1\r\nHost: h\r\n\r\n"), &lim, &r, &p),
        FOLIO_HTTP_DONE);
    ck_assert_int_eq(r.method, FOLIO_HTTP_OTHER);
    free(p);
    ck_assert_str_eq(folio_http_method_name(FOLIO_HTTP_OPTIONS), "OPTIONS");
}
END_TEST

START_TEST(test_unescape)
{
    char out[64];
    long n;

    n = folio_http_unescape(S("%2Fa%20b+c%41%e2%80%94"), out, 0);
    ck_assert_int_eq(n, 10);
    ck_assert(memcmp(out, "/a b+cA\xe2\x80\x94", 10) == 0);
    n = folio_http_unescape(S("a+b%2B"), out, 1);
    ck_assert_int_eq(n, 4);
    ck_assert(memcmp(out, "a b+", 4) == 0);
    ck_assert_int_eq(folio_http_unescape(S("%zz"), out, 0), -1);
    ck_assert_int_eq(folio_http_unescape(S("%4"), out, 0), -1);
    ck_assert_int_eq(folio_http_unescape(S("a%"), out, 1), -1);
    ck_assert_int_eq(folio_http_unescape(S("%00"), out, 0), -1);
    ck_assert_int_eq(folio_http_unescape(S(""), out, 0), 0);
    /* In place. */
    strcpy(out, "x%41y");
    ck_assert_int_eq(folio_http_unescape(out, 5, out, 0), 3);
    ck_assert(memcmp(out, "xAy", 3) == 0);
}
END_TEST

START_TEST(test_query)
{
    static const char q[] = "uri=%2Ftest%2Fpage&&sku=A%3A1&sku=B:2&flag&"
                            "u%72l=x&e=";
    struct folio_http_query it = {q, q + sizeof(q) - 1};
    const char *k, *v;
    size_t kl, vl, n;
    char out[64];
    int count = 0;

    ck_assert_int_eq(folio_http_query_get(S(q), "uri", out, sizeof(out), &n),
                     1);
    ck_assert_uint_eq(n, 10);
    ck_assert(memcmp(out, "/test/page", 10) == 0);
    ck_assert_int_eq(folio_http_query_get(S(q), "sku", out, sizeof(out), &n),
                     1);
    ck_assert(n == 3 && memcmp(out, "A:1", 3) == 0);
    ck_assert_int_eq(folio_http_query_get(S(q), "url", out, sizeof(out), &n),
                     1);
    ck_assert(n == 1 && out[0] == 'x');
    ck_assert_int_eq(folio_http_query_get(S(q), "flag", out, sizeof(out), &n),
                     1);
    ck_assert_uint_eq(n, 0);
    ck_assert_int_eq(folio_http_query_get(S(q), "e", out, sizeof(out), &n), 1);
    ck_assert_uint_eq(n, 0);
    ck_assert_int_eq(folio_http_query_get(S(q), "none", out, sizeof(out), &n),
                     0);
    ck_assert_int_eq(folio_http_query_get(S(q), "uri", out, 4, &n), -1);
    ck_assert_int_eq(folio_http_query_get(S("a=%zz"), "a", out, 64, &n), -1);
    while (folio_http_query_next(&it, &k, &kl, &v, &vl))
        count++;
    ck_assert_int_eq(count, 6);
}
END_TEST

START_TEST(test_response)
{
    static const char res[] = "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n"
                              "Content-Type: text/plain\r\n\r\nhello"
                              "HTTP/1.1 404 Not Found\r\n"
                              "Transfer-Encoding: chunked\r\n\r\n"
                              "3\r\nabc\r\n0\r\n\r\n";
    struct folio_http_req r;
    char *p = dup_text(S(res));
    size_t off;

    folio_http_req_init(&r, &lim);
    ck_assert_int_eq(folio_http_res_parse(&r, FOLIO_HTTP_GET, p, 20),
                     FOLIO_HTTP_MORE);
    ck_assert_int_eq(
        folio_http_res_parse(&r, FOLIO_HTTP_GET, p, sizeof(res) - 1),
        FOLIO_HTTP_DONE);
    ck_assert_int_eq(r.status, 200);
    assert_span(p, r.method_s, "OK");
    assert_span(p, r.body, "hello");
    ck_assert(r.flags & FOLIO_HTTP_KEEPALIVE);
    off = r.total;
    folio_http_req_init(&r, &lim);
    ck_assert_int_eq(folio_http_res_parse(&r, FOLIO_HTTP_GET, p + off,
                                          sizeof(res) - 1 - off),
                     FOLIO_HTTP_DONE);
    ck_assert_int_eq(r.status, 404);
    assert_span(p + off, r.body, "abc");
    ck_assert_uint_eq(off + r.total, sizeof(res) - 1);
    free(p);

    /* No body: a HEAD's answer, 204, 304, 1xx. */
    p = dup_text(S("HTTP/1.1 200 OK\r\nContent-Length: 99\r\n\r\n"));
    folio_http_req_init(&r, &lim);
    ck_assert_int_eq(folio_http_res_parse(&r, FOLIO_HTTP_HEAD, p, strlen(p)),
                     FOLIO_HTTP_DONE);
    ck_assert_uint_eq(r.body.len, 0);
    free(p);
    p = dup_text(S("HTTP/1.1 100 Continue\r\n\r\n"));
    folio_http_req_init(&r, &lim);
    ck_assert_int_eq(folio_http_res_parse(&r, FOLIO_HTTP_POST, p, strlen(p)),
                     FOLIO_HTTP_DONE);
    ck_assert_int_eq(r.status, 100);
    free(p);
    /* Read to EOF: no length, HTTP/1.0; the status line without reason. */
    p = dup_text(S("HTTP/1.0 200\r\n\r\nsome bytes"));
    folio_http_req_init(&r, &lim);
    ck_assert_int_eq(folio_http_res_parse(&r, FOLIO_HTTP_GET, p, strlen(p)),
                     FOLIO_HTTP_MORE);
    ck_assert(r.flags & FOLIO_HTTP_CLOSE_DELIM);
    ck_assert(!(r.flags & FOLIO_HTTP_KEEPALIVE));
    assert_span(p, r.body, "some bytes");
    assert_span(p, r.method_s, "");
    free(p);
    /* Not HTTP. */
    p = dup_text(S("SSH-2.0-OpenSSH_9.2\r\n\r\n"));
    folio_http_req_init(&r, &lim);
    ck_assert_int_eq(folio_http_res_parse(&r, FOLIO_HTTP_GET, p, strlen(p)),
                     FOLIO_HTTP_ERROR);
    free(p);
    p = dup_text(S("HTTP/1.1 2x0 OK\r\n\r\n"));
    folio_http_req_init(&r, &lim);
    ck_assert_int_eq(folio_http_res_parse(&r, FOLIO_HTTP_GET, p, strlen(p)),
                     FOLIO_HTTP_ERROR);
    free(p);
}
END_TEST

int
main(void)
{
    Suite *s = suite_create("http_parse");
    TCase *tc = tcase_create("http_parse");

    tcase_add_test(tc, test_get);
    tcase_add_test(tc, test_headers_iterate);
    tcase_add_test(tc, test_keepalive);
    tcase_add_test(tc, test_pipelined);
    tcase_add_test(tc, test_leading_empty_lines);
    tcase_add_test(tc, test_body);
    tcase_add_test(tc, test_chunked);
    tcase_add_test(tc, test_refused);
    tcase_add_test(tc, test_limits);
    tcase_add_test(tc, test_targets);
    tcase_add_test(tc, test_unescape);
    tcase_add_test(tc, test_query);
    tcase_add_test(tc, test_response);
    suite_add_tcase(s, tc);
    return folio_check_run(s);
}
