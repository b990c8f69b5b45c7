/*
 * fuzz_http.c - libFuzzer target: the HTTP/1.1 parser (src/http_parse.c)
 * over the bytes of a connection: pipelined requests, read whole and in
 * pieces whose sizes the input's first byte chooses.
 *
 * Oracle, for every request of the stream:
 *   - the parse in pieces ends as the parse of everything at once: same
 *     result, same length, same body bytes, same status on error;
 *   - every span lies inside the request (head spans inside the head,
 *     the body after it), the body is its Content-Length (or, chunked,
 *     no longer than the bytes that carried it);
 *   - an error has a status the face answers (400 411 413 414 417 431
 *     501 505) and a reason;
 *   - limits hold: no head longer than max_head is accepted, no target
 *     longer than max_uri, no more than max_headers lines, no body over
 *     max_body;
 *   - the path and query decode (or fail) within their own length, and
 *     the query's parameters end.
 * The same bytes are then read as responses (folio-bench's side): no
 * crash, spans inside the message.
 */
#include "config.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "src/http_parse.h"
#include "tests/fuzz_harness.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Small limits, so that short inputs reach them. */
static const struct folio_http_limits lim = {256, 1024, 16, 2048};

int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    return 0;
}

static void
check_span(struct folio_http_span s, size_t from, size_t to, const char *what)
{
    if (s.len > 0 && (s.off < from || (size_t)s.off + s.len > to))
        fuzz_fail("%s span [%u, +%u) outside [%zu, %zu)", what, s.off, s.len,
                  from, to);
}

static void
check_status(const struct folio_http_req *r)
{
    switch (r->status) {
    case 400:
    case 411:
    case 413:
    case 414:
    case 417:
    case 431:
    case 501:
    case 505:
        break;
    default:
        fuzz_fail("error status %d", r->status);
    }
    if (r->why == NULL || r->why[0] == '\0')
        fuzz_fail("error %d without a reason", r->status);
}

/* The request at p[0..len) (a copy the parser may rewrite) read whole. */
static void
check_request(const char *p, const struct folio_http_req *r, size_t len)
{
    struct folio_http_query q;
    const char *k, *v;
    size_t kl, vl;
    char scratch[2048];
    long n;

    if (r->total > len || r->head_len > r->total || r->start >= r->head_len)
        fuzz_fail("lengths: total %llu head %u start %u of %zu",
                  (unsigned long long)r->total, r->head_len, r->start, len);
    if (r->head_len > lim.max_head)
        fuzz_fail("a head of %u bytes accepted", r->head_len);
    if (r->target.len > lim.max_uri)
        fuzz_fail("a target of %u bytes accepted", r->target.len);
    if (r->nheaders > lim.max_headers)
        fuzz_fail("%u header lines accepted", r->nheaders);
    if (r->content_length > lim.max_body || r->body.len != r->content_length)
        fuzz_fail("body %u, content length %llu", r->body.len,
                  (unsigned long long)r->content_length);
    if (!(r->flags & FOLIO_HTTP_CHUNKED) &&
        r->total != r->head_len + r->content_length)
        fuzz_fail("total %llu != head %u + body %llu",
                  (unsigned long long)r->total, r->head_len,
                  (unsigned long long)r->content_length);
    if (r->body.off != r->head_len || r->body.off + r->body.len > r->total)
        fuzz_fail("body span outside the request");
    check_span(r->method_s, r->start, r->head_len, "method");
    check_span(r->target, r->start, r->head_len, "target");
    check_span(r->path, r->target.off, r->target.off + r->target.len, "path");
    check_span(r->query, r->target.off, r->target.off + r->target.len, "query");
    check_span(r->host, r->start, r->head_len, "host");
    check_span(r->origin, r->start, r->head_len, "origin");
    check_span(r->content_type, r->start, r->head_len, "content-type");
    check_span(r->idempotency_key, r->start, r->head_len, "idempotency-key");
    if (r->method == FOLIO_HTTP_OTHER && r->method_s.len == 0)
        fuzz_fail("no method");
    n = folio_http_unescape(p + r->path.off, r->path.len, scratch, 0);
    if (n > (long)r->path.len)
        fuzz_fail("path decoded longer than it is");
    n = folio_http_unescape(p + r->query.off, r->query.len, scratch, 1);
    if (n > (long)r->query.len)
        fuzz_fail("query decoded longer than it is");
    q.p = p + r->query.off;
    q.end = q.p + r->query.len;
    while (folio_http_query_next(&q, &k, &kl, &v, &vl))
        if (k < p + r->query.off || v + vl > q.end || kl + vl > r->query.len)
            fuzz_fail("query parameter outside the query");
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct folio_http_req whole, piece;
    size_t off = 0, chunk, k;
    char *a, *b;
    int ra, rb, rounds = 0;

    if (size < 1)
        return 0;
    chunk = (size_t)(data[0] % 16) + 1;
    data++;
    size--;
    /* Two copies: the parser may rewrite a chunked body in place. */
    if ((a = malloc(size + 1)) == NULL || (b = malloc(size + 1)) == NULL)
        fuzz_fail("no memory");
    memcpy(a, data, size);
    memcpy(b, data, size);
    while (off < size && rounds++ < 64) {
        folio_http_req_init(&whole, &lim);
        ra = folio_http_req_parse(&whole, a + off, size - off);
        folio_http_req_init(&piece, &lim);
        rb = FOLIO_HTTP_MORE;
        for (k = chunk < size - off ? chunk : size - off;; k += chunk) {
            if (k > size - off)
                k = size - off;
            rb = folio_http_req_parse(&piece, b + off, k);
            if (rb != FOLIO_HTTP_MORE || k == size - off)
                break;
        }
        if (ra != rb)
            fuzz_fail("at byte %zu: whole %d, in pieces of %zu %d", off, ra,
                      chunk, rb);
        if (ra == FOLIO_HTTP_ERROR) {
            check_status(&whole);
            if (whole.status != piece.status)
                fuzz_fail("whole %d, in pieces %d", whole.status, piece.status);
            break;
        }
        if (ra == FOLIO_HTTP_MORE) {
            if (!!(whole.flags & FOLIO_HTTP_HEAD_DONE) !=
                !!(piece.flags & FOLIO_HTTP_HEAD_DONE))
                fuzz_fail("head done whole %d, in pieces %d",
                          !!(whole.flags & FOLIO_HTTP_HEAD_DONE),
                          !!(piece.flags & FOLIO_HTTP_HEAD_DONE));
            break;
        }
        if (whole.total != piece.total || whole.body.len != piece.body.len ||
            whole.flags != piece.flags ||
            memcmp(a + off + whole.body.off, b + off + piece.body.off,
                   whole.body.len) != 0)
            fuzz_fail("at byte %zu: whole and in pieces differ", off);
        check_request(a + off, &whole, size - off);
        off += (size_t)whole.total;
    }
    /* The same bytes as a stream of responses to GETs. */
    memcpy(a, data, size);
    off = 0;
    rounds = 0;
    while (off < size && rounds++ < 64) {
        folio_http_req_init(&whole, &lim);
        ra = folio_http_res_parse(&whole, FOLIO_HTTP_GET, a + off, size - off);
        if (ra != FOLIO_HTTP_DONE)
            break;
        if (whole.total > size - off ||
            whole.body.off + whole.body.len > whole.total)
            fuzz_fail("response spans outside the message");
        off += (size_t)whole.total;
    }
    free(a);
    free(b);
    return 0;
}
