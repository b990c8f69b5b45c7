/*
 * peer.c - the protocols of folio's peers, so that one client drives
 * every server a benchmark compares (--proto): Redis's RESP, memcached's
 * text protocol, HTTP/1.1 (foliod's HTTP face, nginx: a GET or POST,
 * keep-alive, read with src/http_parse.c), and a raw mode (a fixed
 * request; a reply of fixed length or ending with a terminator) for
 * anything else.  The engine
 * (engine.c) sends the pool's fixed bytes and frames the replies here,
 * in order, as it matches msgpack-RPC replies by msgid.
 *
 * Requests are encoded once, into the pool, like msgpack-RPC ones; the
 * framing reads the input in place and allocates nothing.
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <sys/socket.h>

#include "bench/bench.h"
#include "src/http_parse.h"
#include "src/json.h"
#include "src/rpc.h"

static const char *const proto_names[] = {"msgpack", "resp", "memcache",
                                          "raw", "http"};

const char *
folio_bench_proto_name(enum bench_proto p)
{
    return (unsigned)p < sizeof(proto_names) / sizeof(proto_names[0])
               ? proto_names[p]
               : "?";
}

int
folio_bench_proto_parse(const char *s, enum bench_proto *out)
{
    unsigned i;

    for (i = 0; i < sizeof(proto_names) / sizeof(proto_names[0]); i++) {
        if (strcmp(s, proto_names[i]) == 0) {
            *out = (enum bench_proto)i;
            return 0;
        }
    }
    if (strcmp(s, "redis") == 0) {
        *out = BENCH_P_RESP;
        return 0;
    }
    if (strcmp(s, "memcached") == 0) {
        *out = BENCH_P_MEMCACHE;
        return 0;
    }
    return -1;
}

/* ---- framing ---- */

/* The end of the line starting at p: the index after "\r\n", or 0. */
static size_t
line_end(const char *p, size_t avail)
{
    const char *nl;

    if ((nl = memchr(p, '\n', avail)) == NULL)
        return 0;
    return (size_t)(nl - p) + 1;
}

/* A decimal (optionally negative) integer from p to the '\r'. */
static int
line_int(const char *p, size_t n, long long *v)
{
    long long x = 0;
    size_t i = 0;
    int neg = 0;

    if (n > 0 && p[0] == '-') {
        neg = 1;
        i = 1;
    }
    if (i >= n || p[i] < '0' || p[i] > '9')
        return -1;
    for (; i < n && p[i] >= '0' && p[i] <= '9'; i++) {
        if (x > (1LL << 52))
            return -1;
        x = x * 10 + (p[i] - '0');
    }
    if (i != n)
        return -1;
    *v = neg ? -x : x;
    return 0;
}

#define RESP_MAX_DEPTH 8

/* One RESP value at p: its length in *len, BENCH_F_* (error: '-'). */
static enum bench_frame
resp_value(const char *p, size_t avail, size_t *len, int depth)
{
    size_t e, at, l;
    long long n, i;
    enum bench_frame f, worst = BENCH_F_OK;

    if (avail == 0)
        return BENCH_F_MORE;
    if ((e = line_end(p, avail)) == 0)
        return avail > 65536 ? BENCH_F_BAD : BENCH_F_MORE;
    if (e < 3 || p[e - 2] != '\r')
        return BENCH_F_BAD;
    switch (p[0]) {
    case '+':
    case ':':
        *len = e;
        return BENCH_F_OK;
    case '-':
        *len = e;
        return BENCH_F_ERROR;
    case '$':
        if (line_int(p + 1, e - 3, &n) != 0 || n < -1)
            return BENCH_F_BAD;
        if (n == -1) {
            *len = e;
            return BENCH_F_OK;
        }
        if (avail < e + (size_t)n + 2)
            return BENCH_F_MORE;
        if (p[e + (size_t)n] != '\r' || p[e + (size_t)n + 1] != '\n')
            return BENCH_F_BAD;
        *len = e + (size_t)n + 2;
        return BENCH_F_OK;
    case '*':
        if (depth >= RESP_MAX_DEPTH || line_int(p + 1, e - 3, &n) != 0 ||
            n < -1)
            return BENCH_F_BAD;
        for (i = 0, at = e; i < n; i++) {
            if ((f = resp_value(p + at, avail - at, &l, depth + 1)) ==
                    BENCH_F_MORE ||
                f == BENCH_F_BAD)
                return f;
            if (f == BENCH_F_ERROR)
                worst = f;
            at += l;
        }
        *len = at;
        return worst;
    default:
        return BENCH_F_BAD;
    }
}

static int
starts(const char *p, size_t n, const char *word)
{
    size_t wl = strlen(word);

    return n >= wl && memcmp(p, word, wl) == 0;
}

/*
 * memcached's text replies: VALUE blocks up to END, or one line.  The
 * data of a VALUE block is skipped by its announced length.
 */
static enum bench_frame
memcache_reply(const char *p, size_t avail, size_t *len)
{
    const char *b, *end, *sp;
    size_t at = 0, e;
    long long n;
    int field;

    for (;;) {
        if ((e = line_end(p + at, avail - at)) == 0)
            return avail - at > 65536 ? BENCH_F_BAD : BENCH_F_MORE;
        if (!starts(p + at, e, "VALUE ")) {
            *len = at + e;
            if (at > 0 && !starts(p + at, e, "END\r\n"))
                return BENCH_F_BAD;
            if (starts(p + at, e, "ERROR") ||
                starts(p + at, e, "CLIENT_ERROR") ||
                starts(p + at, e, "SERVER_ERROR"))
                return BENCH_F_ERROR;
            return BENCH_F_OK;
        }
        /* VALUE <key> <flags> <bytes> [<cas>]\r\n: skip key and flags. */
        end = p + at + e - (e >= 2 && p[at + e - 2] == '\r' ? 2 : 1);
        for (b = p + at + 6, field = 0; b < end && field < 2; b++)
            if (*b == ' ')
                field++;
        if (field < 2)
            return BENCH_F_BAD;
        sp = memchr(b, ' ', (size_t)(end - b));
        if (line_int(b, (size_t)((sp != NULL ? sp : end) - b), &n) != 0 ||
            n < 0)
            return BENCH_F_BAD;
        at += e;
        if (avail < at + (size_t)n + 2)
            return BENCH_F_MORE;
        if (p[at + (size_t)n] != '\r' || p[at + (size_t)n + 1] != '\n')
            return BENCH_F_BAD;
        at += (size_t)n + 2;
    }
}

static enum bench_frame
raw_reply(const struct bench_opts *o, const char *p, size_t avail,
          size_t *len)
{
    const char *end = o->raw_reply_end;
    size_t el = o->raw_reply_end_len, i;

    if (o->raw_reply_len > 0) {
        if (avail < o->raw_reply_len)
            return BENCH_F_MORE;
        *len = o->raw_reply_len;
        return BENCH_F_OK;
    }
    for (i = 0; i + el <= avail; i++) {
        if (memcmp(p + i, end, el) == 0) {
            *len = i + el;
            return BENCH_F_OK;
        }
    }
    return avail > (1u << 20) ? BENCH_F_BAD : BENCH_F_MORE;
}

/* Responses read with the parser of foliod's HTTP face: bounds. */
static const char rpc_error[] = "{\"jsonrpc\":\"2.0\",\"error\":";
static const struct folio_http_limits http_lim = {0, 65536, 200, 1u << 30};

void
folio_bench_http_init(struct folio_http_req *r)
{
    folio_http_req_init(r, &http_lim);
}

enum bench_frame
folio_bench_http_frame(struct folio_http_req *r, char *p, size_t avail,
                       size_t *len)
{
    switch (folio_http_res_parse(r, FOLIO_HTTP_GET, p, avail)) {
    case FOLIO_HTTP_MORE:
        /* A body to the close would never end a reply: not ours. */
        return (r->flags & FOLIO_HTTP_CLOSE_DELIM) ? BENCH_F_BAD
                                                   : BENCH_F_MORE;
    case FOLIO_HTTP_DONE:
        *len = (size_t)r->total;
        if (r->status < 200) /* 1xx: never asked for (no Expect) */
            return BENCH_F_BAD;
        /* A JSON-RPC error comes with 200 (folio-http(7)). */
        return r->status >= 400 || (r->body.len >= sizeof(rpc_error) - 1 &&
                                    memcmp(p + r->body.off, rpc_error,
                                           sizeof(rpc_error) - 1) == 0)
                   ? BENCH_F_ERROR
                   : BENCH_F_OK;
    default:
        return BENCH_F_BAD;
    }
}

enum bench_frame
folio_bench_peer_frame(const struct bench_opts *o, const char *p,
                       size_t avail, size_t *len)
{
    switch (o->proto) {
    case BENCH_P_RESP:
        return resp_value(p, avail, len, 0);
    case BENCH_P_MEMCACHE:
        return memcache_reply(p, avail, len);
    case BENCH_P_RAW:
        return raw_reply(o, p, avail, len);
    default:
        return BENCH_F_BAD;
    }
}

/* ---- requests ---- */

static const char *
key_of(const struct bench_opts *o)
{
    return o->key != NULL ? o->key : BENCH_DEFAULT_KEY;
}

/* The value get reads and set writes: value_size bytes of 'x'. */
static char *
make_value(const struct bench_opts *o)
{
    char *v = malloc((size_t)o->value_size + 1);

    if (v != NULL) {
        memset(v, 'x', o->value_size);
        v[o->value_size] = '\0';
    }
    return v;
}

static int
push_bytes(struct bench_pool *p, const void *bytes, size_t len,
           enum bench_expect expect, int64_t x_int, const char *x_str)
{
    uint32_t start = (uint32_t)p->bytes.b_len;

    if (folio_buf_append(&p->bytes, bytes, len) != 0)
        return -1;
    return folio_bench_pool_push(p, start, BENCH_K_PEER, expect, x_int, x_str,
                                 0);
}

/* A SET (RESP) or set (memcached) of the key to v into buf; its length. */
static int
format_set(const struct bench_opts *o, const char *v, char *buf, size_t cap)
{
    const char *k = key_of(o);

    if (o->proto == BENCH_P_RESP)
        return snprintf(buf, cap, "*3\r\n$3\r\nSET\r\n$%zu\r\n%s\r\n$%u\r\n%s\r\n",
                        strlen(k), k, o->value_size, v);
    return snprintf(buf, cap, "set %s 0 0 %u\r\n%s\r\n", k, o->value_size, v);
}

/*
 * --proto http: GET --path, or POST --body to it, HTTP/1.1 (keep-alive);
 * any 2xx answer is right, 4xx and 5xx are errors.
 */
static int
http_pool(const struct bench_opts *o, struct bench_pool *p, char *err,
          size_t errlen)
{
    const char *path = o->path != NULL ? o->path : "/status";
    size_t blen = o->body != NULL ? strlen(o->body) : 0;
    size_t cap = strlen(path) + strlen(o->addr) + blen + 256;
    char *buf = malloc(cap);
    int n, rc;

    if (buf == NULL) {
        snprintf(err, errlen, "out of memory encoding requests");
        return FOLIO_ENOMEM;
    }
    if (o->body != NULL)
        n = snprintf(buf, cap,
                     "POST %s HTTP/1.1\r\nHost: %s\r\n"
                     "User-Agent: folio-bench/" PACKAGE_VERSION "\r\n"
                     "Content-Type: application/json\r\n"
                     "Content-Length: %zu\r\n\r\n%s",
                     path, o->addr, blen, o->body);
    else
        n = snprintf(buf, cap,
                     "GET %s HTTP/1.1\r\nHost: %s\r\n"
                     "User-Agent: folio-bench/" PACKAGE_VERSION "\r\n\r\n",
                     path, o->addr);
    rc = push_bytes(p, buf, (size_t)n, BENCH_X_NONE, 0, NULL);
    free(buf);
    if (rc != 0) {
        snprintf(err, errlen, "out of memory encoding requests");
        return FOLIO_ENOMEM;
    }
    snprintf(p->desc, sizeof(p->desc), "http: %s %.100s%s",
             o->body != NULL ? "POST" : "GET", path,
             o->body != NULL ? " with a JSON body" : "");
    return 0;
}

/* The JSON of the msgpack params at *c: n of them, as an array. */
static int
put_params(struct folio_buf *b, struct folio_mp_cur *c, uint32_t n)
{
    uint32_t i;

    if (folio_buf_append(b, "[", 1) != 0)
        return -1;
    for (i = 0; i < n; i++)
        if ((i > 0 && folio_buf_append(b, ",", 1) != 0) ||
            folio_json_put_mp(b, c, -1, 0) != 0)
            return -1;
    return folio_buf_append(b, "]", 1);
}

/*
 * The HTTP request of foliod's HTTP face (folio-http(7)) that asks what
 * the msgpack-RPC request m does, appended to out: its target into
 * target[cap], its JSON body (none for a GET) into body.
 */
static int
http_of_rpc(const struct bench_opts *o, const struct bench_req *r,
            struct folio_rpc_msg *m, struct folio_buf *body,
            struct folio_buf *out)
{
    static const char hex[] = "0123456789ABCDEF";
    const char *s, *target = "/rpc";
    char uri[512];
    uint32_t n, i;
    size_t k = 0;
    int len;

    folio_buf_reset(body);
    if (r->kind == BENCH_K_PING) {
        target = "/status";
    } else if (r->kind == BENCH_K_LIST && m->nparams == 1 &&
               folio_mp_read_str(&m->params, &s, &n) == 0) {
        /* GET /v1/comments?uri=PATH, the path percent-encoded. */
        k = (size_t)snprintf(uri, sizeof(uri), "/v1/comments?uri=");
        for (i = 0; i < n && k + 3 < sizeof(uri); i++) {
            unsigned char ch = (unsigned char)s[i];

            if ((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
                (ch >= '0' && ch <= '9') || strchr("/-._~", ch) != NULL) {
                uri[k++] = (char)ch;
            } else {
                uri[k++] = '%';
                uri[k++] = hex[ch >> 4];
                uri[k++] = hex[ch & 15];
            }
        }
        if (i < n)
            return -1;
        uri[k] = '\0';
        target = uri;
    } else if (r->kind == BENCH_K_POST && m->nparams == 1) {
        target = "/v1/comments";
        if (folio_json_put_mp(body, &m->params, -1, 0) != 0)
            return -1;
    } else if (r->kind == BENCH_K_QUOTE && m->nparams == 2) {
        /* freight.quote(cep, items) as the case study posts it. */
        target = "/v1/freight/quote";
        if (folio_buf_append(body, "{\"cep\":", 7) != 0 ||
            folio_json_put_mp(body, &m->params, -1, 0) != 0 ||
            folio_buf_append(body, ",\"items\":", 9) != 0 ||
            folio_json_put_mp(body, &m->params, -1, 0) != 0 ||
            folio_buf_append(body, "}", 1) != 0)
            return -1;
    } else {
        /* Any other method: JSON-RPC 2.0, by name, params by position. */
        if (folio_buf_append(body, "{\"jsonrpc\":\"2.0\",\"method\":", 26) !=
                0 ||
            folio_json_put_str(body, m->method, m->method_len, 0) != 0 ||
            folio_buf_append(body, ",\"params\":", 10) != 0 ||
            put_params(body, &m->params, m->nparams) != 0 ||
            folio_buf_append(body, ",\"id\":1}", 8) != 0)
            return -1;
    }
    if (folio_buf_reserve(out, strlen(target) + strlen(o->addr) + 160) != 0)
        return -1;
    if (folio_buf_pending(body) == 0)
        len = snprintf(out->b_data + out->b_len, folio_buf_space(out),
                       "GET %s HTTP/1.1\r\nHost: %s\r\n"
                       "User-Agent: folio-bench/" PACKAGE_VERSION "\r\n\r\n",
                       target, o->addr);
    else
        len = snprintf(out->b_data + out->b_len, folio_buf_space(out),
                       "POST %s HTTP/1.1\r\nHost: %s\r\n"
                       "User-Agent: folio-bench/" PACKAGE_VERSION "\r\n"
                       "Content-Type: application/json\r\n"
                       "Content-Length: %zu\r\n\r\n",
                       target, o->addr, folio_buf_pending(body));
    out->b_len += (size_t)len;
    return folio_buf_append(out, folio_buf_at(body, 0),
                            folio_buf_pending(body));
}

int
folio_bench_http_of_pool(const struct bench_opts *o, struct bench_pool *p,
                         char *err, size_t errlen)
{
    struct folio_buf out, body;
    struct folio_rpc_msg m;
    struct bench_req *r;
    const char *why;
    uint32_t i;
    size_t start, k;
    int rc = 0;

    if (folio_buf_init(&out, 65536, 0) != 0 ||
        folio_buf_init(&body, 4096, 0) != 0) {
        folio_buf_free(&out);
        snprintf(err, errlen, "out of memory encoding requests");
        return FOLIO_ENOMEM;
    }
    p->maxlen = 0;
    for (i = 0; i < p->n && rc == 0; i++) {
        r = &p->reqs[i];
        start = out.b_len;
        if (folio_rpc_parse(p->bytes.b_data + r->off, r->len, &m, &why) != 0 ||
            http_of_rpc(o, r, &m, &body, &out) != 0) {
            rc = FOLIO_ENOMEM;
            break;
        }
        r->off = (uint32_t)start;
        r->len = (uint32_t)(out.b_len - start);
        r->expect = BENCH_X_NONE; /* a status and JSON: not compared */
        if (r->kind == BENCH_K_LIST) {
            /* mouthful's 404 "Thread not found" for a page without any */
            r->ok_codes |= BENCH_CODE(FOLIO_ST_NOT_FOUND);
            p->ok_codes |= BENCH_CODE(FOLIO_ST_NOT_FOUND);
            p->code_why[FOLIO_ST_NOT_FOUND] =
                p->code_why[FOLIO_ST_NOT_FOUND] != NULL &&
                        p->code_why[FOLIO_ST_NOT_FOUND][0] != 'p'
                    ? "the uncovered CEPs, pages without comments"
                    : "pages without comments";
        }
        if (r->len > p->maxlen)
            p->maxlen = r->len;
    }
    folio_buf_free(&body);
    if (rc != 0) {
        folio_buf_free(&out);
        snprintf(err, errlen, "out of memory encoding requests");
        return rc;
    }
    folio_buf_free(&p->bytes);
    p->bytes = out;
    k = strlen(p->desc);
    snprintf(p->desc + k, sizeof(p->desc) - k, " (over HTTP)");
    return 0;
}

int
folio_bench_http_code(const char *p, size_t len)
{
    /* The HTTP statuses of folio-http(7)'s table, back to their codes. */
    static const struct {
        int http, code;
    } by_status[] = {
        {400, FOLIO_ST_INVALID_ARGUMENT}, {403, FOLIO_ST_PERMISSION_DENIED},
        {404, FOLIO_ST_NOT_FOUND},        {429, FOLIO_ST_RESOURCE_EXHAUSTED},
        {500, FOLIO_ST_INTERNAL},         {501, FOLIO_ST_UNIMPLEMENTED},
        {503, FOLIO_ST_UNAVAILABLE}};
    static const char *const keys[] = {"\"data\":{\"code\":", "\"code\":"};
    const char *at, *end = p + len;
    size_t i, kl;
    long v;
    int st;

    for (i = 0; i < 2; i++) {
        kl = strlen(keys[i]);
        for (at = p; at + kl < end; at++) {
            if (memcmp(at, keys[i], kl) != 0)
                continue;
            for (at += kl, v = 0; at < end && *at >= '0' && *at <= '9'; at++)
                if ((v = v * 10 + (*at - '0')) >= FOLIO_ST_MAX)
                    return FOLIO_ST_MAX;
            return at < end && (*at == ',' || *at == '}') ? (int)v
                                                          : FOLIO_ST_MAX;
        }
    }
    /* No code in the body (mouthful's "Thread not found"): the status's. */
    if (len > 12 && memcmp(p, "HTTP/1.", 7) == 0 &&
        sscanf(p + 9, "%3d", &st) == 1)
        for (i = 0; i < sizeof(by_status) / sizeof(by_status[0]); i++)
            if (by_status[i].http == st)
                return by_status[i].code;
    return FOLIO_ST_MAX;
}

int
folio_bench_peer_pool(const struct bench_opts *o, struct bench_pool *p,
                      char *err, size_t errlen)
{
    const char *w = o->workload, *k = key_of(o);
    char *v = NULL, *buf = NULL;
    size_t cap;
    int n, rc = 0;

    if (o->proto == BENCH_P_RAW) {
        if (o->raw_request == NULL || o->raw_request_len == 0) {
            snprintf(err, errlen, "--proto raw needs --raw-request");
            return FOLIO_EINVAL;
        }
        if (o->raw_reply_len == 0 && o->raw_reply_end_len == 0) {
            snprintf(err, errlen,
                     "--proto raw needs --raw-reply-len or --raw-reply-end");
            return FOLIO_EINVAL;
        }
        if (push_bytes(p, o->raw_request, o->raw_request_len, BENCH_X_NONE, 0,
                       NULL) != 0)
            goto nomem;
        snprintf(p->desc, sizeof(p->desc), "raw: %zu-byte request, %s",
                 o->raw_request_len,
                 o->raw_reply_len > 0 ? "fixed-length reply"
                                      : "reply up to its terminator");
        return 0;
    }
    if (o->proto == BENCH_P_HTTP)
        return http_pool(o, p, err, errlen);
    cap = (size_t)o->value_size + strlen(k) + 128;
    if ((v = make_value(o)) == NULL || (buf = malloc(cap)) == NULL)
        goto nomem;
    if (strcmp(w, "ping") == 0 && o->proto == BENCH_P_RESP) {
        /* Inline, as redis-benchmark's ping_inline sends it. */
        rc = push_bytes(p, "PING\r\n", 6, BENCH_X_BYTES, 7, "+PONG\r\n");
        snprintf(p->desc, sizeof(p->desc), "resp: PING (inline)");
    } else if ((strcmp(w, "version") == 0 || strcmp(w, "ping") == 0) &&
               o->proto == BENCH_P_MEMCACHE) {
        rc = push_bytes(p, "version\r\n", 9, BENCH_X_PREFIX, 8, "VERSION ");
        snprintf(p->desc, sizeof(p->desc), "memcache: version");
    } else if (strcmp(w, "get") == 0) {
        if (o->proto == BENCH_P_RESP) {
            n = snprintf(buf, cap, "*2\r\n$3\r\nGET\r\n$%zu\r\n%s\r\n",
                         strlen(k), k);
            /* $N\r\n + value + \r\n */
            rc = push_bytes(p, buf, (size_t)n, BENCH_X_LEN,
                            (int64_t)snprintf(NULL, 0, "$%u\r\n",
                                              o->value_size) +
                                o->value_size + 2,
                            NULL);
        } else {
            n = snprintf(buf, cap, "get %s\r\n", k);
            rc = push_bytes(p, buf, (size_t)n, BENCH_X_LEN,
                            (int64_t)snprintf(NULL, 0, "VALUE %s 0 %u\r\n", k,
                                              o->value_size) +
                                o->value_size + 7,
                            NULL);
        }
        snprintf(p->desc, sizeof(p->desc), "%s: get of a %u-byte value",
                 folio_bench_proto_name(o->proto), o->value_size);
    } else if (strcmp(w, "set") == 0) {
        n = format_set(o, v, buf, cap);
        rc = o->proto == BENCH_P_RESP
                 ? push_bytes(p, buf, (size_t)n, BENCH_X_BYTES, 5, "+OK\r\n")
                 : push_bytes(p, buf, (size_t)n, BENCH_X_BYTES, 8,
                              "STORED\r\n");
        snprintf(p->desc, sizeof(p->desc), "%s: set of a %u-byte value",
                 folio_bench_proto_name(o->proto), o->value_size);
    } else {
        snprintf(err, errlen, "unknown workload '%s' for --proto %s (%s)", w,
                 folio_bench_proto_name(o->proto),
                 o->proto == BENCH_P_RESP ? "ping, get, set"
                                          : "version, get, set");
        free(v);
        free(buf);
        return FOLIO_EINVAL;
    }
    free(v);
    free(buf);
    if (rc != 0)
        goto nomem;
    return 0;
nomem:
    free(v);
    free(buf);
    snprintf(err, errlen, "out of memory encoding requests");
    return FOLIO_ENOMEM;
}

int
folio_bench_peer_setup(const struct bench_opts *o, const struct folio_addr *a,
                       char *err, size_t errlen)
{
    char *v = NULL, *buf = NULL, reply[256];
    size_t cap, got = 0, len;
    ssize_t n;
    int fd = -1, rc = -1, len_set;
    enum bench_frame f;

    if (o->proto == BENCH_P_MSGPACK || o->proto == BENCH_P_RAW ||
        strcmp(o->workload, "get") != 0)
        return 0;
    cap = (size_t)o->value_size + strlen(key_of(o)) + 128;
    if ((v = make_value(o)) == NULL || (buf = malloc(cap)) == NULL) {
        snprintf(err, errlen, "out of memory");
        goto out;
    }
    len_set = format_set(o, v, buf, cap);
    if ((fd = folio_addr_connect(a, 5000)) == -1) {
        snprintf(err, errlen,
                 "cannot connect to %s (%s): %s: is the server running there?",
                 o->addr, o->addr_from, strerror(errno));
        goto out;
    }
    if (send(fd, buf, (size_t)len_set, MSG_NOSIGNAL) != len_set) {
        snprintf(err, errlen, "storing the value to get: %s", strerror(errno));
        goto out;
    }
    for (;;) {
        n = recv(fd, reply + got, sizeof(reply) - 1 - got, 0);
        if (n <= 0) {
            snprintf(err, errlen, "storing the value to get: %s",
                     n == 0 ? "the server closed the connection"
                            : strerror(errno));
            goto out;
        }
        got += (size_t)n;
        f = folio_bench_peer_frame(o, reply, got, &len);
        if (f == BENCH_F_MORE && got < sizeof(reply) - 1)
            continue;
        reply[got] = '\0';
        if (f == BENCH_F_OK &&
            (strncmp(reply, "+OK", 3) == 0 || strncmp(reply, "STORED", 6) == 0))
            rc = 0;
        else
            snprintf(err, errlen, "storing the value to get: the server "
                                  "answered %.60s",
                     reply);
        break;
    }
out:
    if (fd != -1)
        close(fd);
    free(v);
    free(buf);
    return rc;
}
